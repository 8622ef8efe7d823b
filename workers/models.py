"""The small classifiers the model workload trains, forward and backward in numpy.

- `logreg`: softmax regression.
- `mlp`: one hidden layer of 32 tanh units.
- `cnn` (grayscale image data sets): a 3x3 convolution with 8 output channels ('same' zero padding)
  + ReLU + 2x2 max-pool + a dense layer to the classes. The convolution is a matrix product
  over im2col patches, its weight stored in that layout: (3 x 3 x input channels, 8).

Parameters are one flat float64 vector (what the workers aggregate); each tensor is a view
of it, named, so the tensor list is also the gradient's layer structure. Loss: mean
cross-entropy over the batch.
"""
from __future__ import annotations

import numpy as np

from workers.datasets import DataShape

_INIT = 12                 # seed stream of the initial weights
NAMES = ("logreg", "mlp", "cnn")


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def cross_entropy(probs: np.ndarray, y: np.ndarray) -> float:
    return float(-np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, None)).mean())


class Model:
    """Named tensors over one flat parameter vector; subclasses give _forward/_backward."""

    name = "model"
    random_init = True        # symmetric weights never learn; logreg is convex and starts at 0

    def __init__(self, tensors: list[tuple[str, tuple[int, ...]]], seed: int = 0):
        self.tensors = tensors
        self.shapes = [shape for _, shape in tensors]
        self.layers = [(name, int(np.prod(shape))) for name, shape in tensors]
        self.size = sum(n for _, n in self.layers)
        self.params = np.zeros(self.size)
        if self.random_init:    # matrices: N(0, 1/fan_in), fan_in the first axis; biases 0
            rng = np.random.default_rng([seed, _INIT])
            for shape, v in zip(self.shapes, self.unpack(self.params)):
                if len(shape) == 2:
                    v[...] = rng.normal(0, 1 / np.sqrt(shape[0]), shape)

    def unpack(self, flat: np.ndarray) -> list[np.ndarray]:
        out, off = [], 0
        for shape in self.shapes:
            n = int(np.prod(shape))
            out.append(flat[off:off + n].reshape(shape))
            off += n
        return out

    def forward(self, x: np.ndarray, params: np.ndarray | None = None):
        """(class probabilities, what the backward pass needs)."""
        return self._forward(x, self.unpack(self.params if params is None else params))

    def loss_and_grad(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean cross-entropy over the batch and its gradient (flat, float64)."""
        p = self.unpack(self.params)
        probs, cache = self._forward(x, p)
        n = len(y)
        d = probs.copy()           # d loss / d logits
        d[np.arange(n), y] -= 1.0
        d /= n
        grads = self._backward(d, cache, p)
        return cross_entropy(probs, y), np.concatenate([g.reshape(-1) for g in grads])

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """(mean cross-entropy loss, accuracy) on a labelled set."""
        probs, _ = self.forward(x)
        return cross_entropy(probs, y), float((probs.argmax(axis=1) == y).mean())

    def test_metrics(self, x: np.ndarray, y: np.ndarray) -> dict:
        """What the worker logs of the model on the test set: {loss, accuracy} (a model
        with more, e.g. the sparse workload's AUC, adds its keys)."""
        loss, acc = self.evaluate(x, y)
        return {"loss": loss, "accuracy": acc}

    def _forward(self, x, p):
        raise NotImplementedError

    def _backward(self, d, cache, p):
        raise NotImplementedError


class LogReg(Model):
    name, random_init = "logreg", False

    def __init__(self, dims: int, classes: int, seed: int = 0):
        super().__init__([("dense.weight", (dims, classes)), ("dense.bias", (classes,))], seed)

    def _forward(self, x, p):
        return _softmax(x @ p[0] + p[1]), x

    def _backward(self, d, x, p):
        return [x.T @ d, d.sum(axis=0)]


class MLP(Model):
    name = "mlp"

    def __init__(self, dims: int, classes: int, hidden: int = 32, seed: int = 0):
        super().__init__([("hidden.weight", (dims, hidden)), ("hidden.bias", (hidden,)),
                          ("out.weight", (hidden, classes)), ("out.bias", (classes,))], seed)

    def _forward(self, x, p):
        h = np.tanh(x @ p[0] + p[1])
        return _softmax(h @ p[2] + p[3]), (x, h)

    def _backward(self, d, cache, p):
        x, h = cache
        dh = (d @ p[2].T) * (1.0 - h * h)
        return [x.T @ dh, dh.sum(axis=0), h.T @ d, d.sum(axis=0)]


# ---------------------------------------------------------------- convolution helpers
def im2col(img: np.ndarray, k: int) -> np.ndarray:
    """(n, h, w, c) images -> (n, h*w, k*k*c): the k x k patch around every pixel ('same'
    zero padding, odd k), patch offsets row-major, channels last within an offset."""
    n, h, w, c = img.shape
    pad = k // 2
    padded = np.pad(img, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    cols = np.empty((n, h, w, k * k, c))
    for di in range(k):
        for dj in range(k):
            cols[:, :, :, di * k + dj, :] = padded[:, di:di + h, dj:dj + w, :]
    return cols.reshape(n, h * w, k * k * c)


def maxpool2(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2x2 max-pool of (n, h, w, c), h and w even -> (pooled (n, h/2, w/2, c), the index 0..3
    of each window's maximum: one winner per window, even when values tie, e.g. at ReLU's 0)."""
    n, h, w, c = a.shape
    win = a.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, h // 2, w // 2, c, 4)
    arg = win.argmax(axis=-1)
    return np.take_along_axis(win, arg[..., None], axis=-1)[..., 0], arg


def maxpool2_backward(d: np.ndarray, arg: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The pooled gradient routed back to each window's maximum, as an array of `shape`."""
    n, h, w, c = shape
    win = np.zeros((n, h // 2, w // 2, c, 4))
    np.put_along_axis(win, arg[..., None], d[..., None], axis=-1)
    return win.reshape(n, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(shape)


class CNN(Model):
    name = "cnn"
    kernel = 3

    def __init__(self, image: tuple[int, int], classes: int, channels: int = 8, seed: int = 0):
        h, w = image
        if h % 2 or w % 2:
            raise ValueError(f"cnn: image sides must be even for the 2x2 pool (got {h}x{w})")
        self.image, self.channels = (h, w), channels
        pooled = (h // 2) * (w // 2) * channels
        super().__init__([("conv.weight", (self.kernel * self.kernel, channels)),
                          ("conv.bias", (channels,)),
                          ("dense.weight", (pooled, classes)), ("dense.bias", (classes,))], seed)

    def _forward(self, x, p):
        n, (h, w) = len(x), self.image
        cols = im2col(x.reshape(n, h, w, 1), self.kernel)       # (n, h*w, 9)
        z = cols @ p[0] + p[1]                                  # (n, h*w, channels)
        a = np.maximum(z, 0.0).reshape(n, h, w, self.channels)
        pooled, arg = maxpool2(a)
        flat = pooled.reshape(n, -1)
        return _softmax(flat @ p[2] + p[3]), (cols, z, arg, a.shape, flat)

    def _backward(self, d, cache, p):
        cols, z, arg, a_shape, flat = cache
        d_flat = d @ p[2].T
        d_a = maxpool2_backward(d_flat.reshape(arg.shape), arg, a_shape)
        d_z = d_a.reshape(z.shape) * (z > 0)
        k2 = cols.shape[-1]
        return [cols.reshape(-1, k2).T @ d_z.reshape(-1, self.channels), d_z.sum(axis=(0, 1)),
                flat.T @ d, d.sum(axis=0)]


def build_model(name: str, shape: DataShape, seed: int = 0) -> Model:
    """The model `name` for a data set of this shape."""
    if name == "logreg":
        return LogReg(shape.dims, shape.classes, seed=seed)
    if name == "mlp":
        return MLP(shape.dims, shape.classes, seed=seed)
    if name == "cnn":
        if shape.image is None:
            raise ValueError("workload.name: cnn needs an image data set (use dataset: digits)")
        return CNN(shape.image, shape.classes, seed=seed)
    raise ValueError(f"workload.name: unknown model {name!r} (use {', '.join(NAMES[:-1])} or {NAMES[-1]})")
