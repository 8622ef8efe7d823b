"""Layer structure of published models, for synthetic gradients of a realistic shape.

Each preset is the list of a model's parameter tensors, (name, shape), in the order and with
the names of the canonical implementation's `named_parameters()`, generated from the
architecture (blocks, channel widths, strides do not matter: only parameter shapes do).
Their totals are the published parameter counts:

  resnet50      25,557,032  torchvision.models.resnet50 (num_params in its weights' metadata)
  vgg16        138,357,544  torchvision.models.vgg16 (no batch norm)
  alexnet       61,100,840  torchvision.models.alexnet (the one-GPU variant of Krizhevsky 2012)
  mobilenet_v2   3,504,872  torchvision.models.mobilenet_v2 (width 1.0)
  bert_base    109,482,240  Hugging Face transformers BertModel, bert-base-uncased (pooler
                            included); Devlin et al. 2019 give "110M"

Batch-norm running statistics are buffers, not parameters, and are not aggregated; 1000
ImageNet classes; BERT's vocabulary is 30,522 word pieces.

`scale` shrinks every tensor's size by the same factor (at least one value each), so a run
of a big model's structure fits a small machine: the layer boundaries keep their order and
relative sizes.
"""
from __future__ import annotations

import math
from typing import Iterator

Shape = tuple[int, ...]
IMAGENET_CLASSES = 1000


def _norm(name: str, c: int) -> Iterator[tuple[str, Shape]]:
    """Batch or layer norm: a scale and a shift per channel."""
    yield f"{name}.weight", (c,)
    yield f"{name}.bias", (c,)


def _linear(name: str, n_in: int, n_out: int) -> Iterator[tuple[str, Shape]]:
    yield f"{name}.weight", (n_out, n_in)
    yield f"{name}.bias", (n_out,)


def _conv(name: str, c_in: int, c_out: int, k: int, bias: bool = False,
          groups: int = 1) -> Iterator[tuple[str, Shape]]:
    yield f"{name}.weight", (c_out, c_in // groups, k, k)
    if bias:
        yield f"{name}.bias", (c_out,)


def resnet50() -> Iterator[tuple[str, Shape]]:
    """He et al. 2016, the bottleneck variant: stages of 3, 4, 6, 3 blocks (1x1, 3x3, 1x1
    convolutions, expansion 4), a projection shortcut in every stage's first block."""
    yield from _conv("conv1", 3, 64, 7)
    yield from _norm("bn1", 64)
    c_in = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), start=1):
        c_out = 4 * width
        for b in range(blocks):
            p = f"layer{stage}.{b}"
            yield from _conv(f"{p}.conv1", c_in, width, 1)
            yield from _norm(f"{p}.bn1", width)
            yield from _conv(f"{p}.conv2", width, width, 3)
            yield from _norm(f"{p}.bn2", width)
            yield from _conv(f"{p}.conv3", width, c_out, 1)
            yield from _norm(f"{p}.bn3", c_out)
            if b == 0:       # channels (and, after stage 1, resolution) change: projection
                yield from _conv(f"{p}.downsample.0", c_in, c_out, 1)
                yield from _norm(f"{p}.downsample.1", c_out)
            c_in = c_out
    yield from _linear("fc", c_in, IMAGENET_CLASSES)


def _plain_cnn(convs, fcs, image_side: int) -> Iterator[tuple[str, Shape]]:
    """A torchvision-style `features` Sequential (conv, ReLU[, pool] ...) then `classifier`.
    convs: (c_out, kernel, modules after it) in order; fcs: (index in classifier, n_out)."""
    idx, c_in = 0, 3
    for c_out, k, after in convs:
        yield from _conv(f"features.{idx}", c_in, c_out, k, bias=True)
        idx, c_in = idx + 1 + after, c_out
    n_in = c_in * image_side * image_side       # the adaptive pool's fixed output
    for i, n_out in fcs:
        yield from _linear(f"classifier.{i}", n_in, n_out)
        n_in = n_out


def vgg16() -> Iterator[tuple[str, Shape]]:
    """Simonyan & Zisserman 2015, configuration D: 13 3x3 convolutions in five groups (64,
    128, 256, 512, 512 channels, a max-pool after each group), 7x7 pooled, three dense layers."""
    convs = []
    for channels, n in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        convs += [(channels, 3, 1)] * (n - 1) + [(channels, 3, 2)]   # ReLU; ReLU + max-pool
    return _plain_cnn(convs, [(0, 4096), (3, 4096), (6, IMAGENET_CLASSES)], 7)


def alexnet() -> Iterator[tuple[str, Shape]]:
    """Krizhevsky et al. 2012 as torchvision has it (one GPU; 64, 192, 384, 256, 256
    channels), 6x6 pooled, three dense layers."""
    convs = [(64, 11, 2), (192, 5, 2), (384, 3, 1), (256, 3, 1), (256, 3, 2)]
    return _plain_cnn(convs, [(1, 4096), (4, 4096), (6, IMAGENET_CLASSES)], 6)


def mobilenet_v2() -> Iterator[tuple[str, Shape]]:
    """Sandler et al. 2018: a 3x3 stem of 32 channels, 17 inverted residual blocks (1x1
    expansion by t, 3x3 depthwise, 1x1 linear projection; each conv with batch norm), a 1x1
    conv to 1280 channels, one dense layer. (t, channels, repeats) per stage, width 1.0."""
    stages = ((1, 16, 1), (6, 24, 2), (6, 32, 3), (6, 64, 4), (6, 96, 3), (6, 160, 3), (6, 320, 1))
    yield from _conv("features.0.0", 3, 32, 3)
    yield from _norm("features.0.1", 32)
    c_in, idx = 32, 1
    for t, c_out, repeats in stages:
        for _ in range(repeats):
            p, hidden = f"features.{idx}.conv", c_in * t
            j = 0
            if t != 1:
                yield from _conv(f"{p}.0.0", c_in, hidden, 1)
                yield from _norm(f"{p}.0.1", hidden)
                j = 1
            yield from _conv(f"{p}.{j}.0", hidden, hidden, 3, groups=hidden)   # depthwise
            yield from _norm(f"{p}.{j}.1", hidden)
            yield from _conv(f"{p}.{j + 1}", hidden, c_out, 1)
            yield from _norm(f"{p}.{j + 2}", c_out)
            c_in, idx = c_out, idx + 1
    yield from _conv(f"features.{idx}.0", c_in, 1280, 1)
    yield from _norm(f"features.{idx}.1", 1280)
    yield from _linear("classifier.1", 1280, IMAGENET_CLASSES)


def bert_base(vocab: int = 30522, hidden: int = 768, layers: int = 12, ffn: int = 3072,
              positions: int = 512, token_types: int = 2) -> Iterator[tuple[str, Shape]]:
    """Devlin et al. 2019, BERT-base: embeddings (word, position, segment, layer norm), 12
    encoder layers (query, key, value, attention output, layer norm, feed-forward 768 ->
    3072 -> 768, layer norm), the pooler (one dense layer on the first token)."""
    yield "embeddings.word_embeddings.weight", (vocab, hidden)
    yield "embeddings.position_embeddings.weight", (positions, hidden)
    yield "embeddings.token_type_embeddings.weight", (token_types, hidden)
    yield from _norm("embeddings.LayerNorm", hidden)
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for part in ("query", "key", "value"):
            yield from _linear(f"{p}.attention.self.{part}", hidden, hidden)
        yield from _linear(f"{p}.attention.output.dense", hidden, hidden)
        yield from _norm(f"{p}.attention.output.LayerNorm", hidden)
        yield from _linear(f"{p}.intermediate.dense", hidden, ffn)
        yield from _linear(f"{p}.output.dense", ffn, hidden)
        yield from _norm(f"{p}.output.LayerNorm", hidden)
    yield from _linear("pooler.dense", hidden, hidden)


PRESETS = {"resnet50": resnet50, "vgg16": vgg16, "alexnet": alexnet,
           "mobilenet_v2": mobilenet_v2, "bert_base": bert_base}
NAMES = tuple(PRESETS)


def tensors(preset: str) -> list[tuple[str, Shape]]:
    """(name, shape) of every parameter tensor of the preset, in the model's order."""
    if preset not in PRESETS:
        raise ValueError(f"workload.preset: unknown preset {preset!r} (known: {', '.join(NAMES)})")
    return list(PRESETS[preset]())


def layers(preset: str, scale: float = 1.0) -> list[tuple[str, int]]:
    """(name, values) per tensor, each shrunk by `scale` (rounded, at least 1 value)."""
    if not 0 < scale <= 1:
        raise ValueError(f"workload.scale: must be in (0, 1] (got {scale:g})")
    return [(name, max(1, round(math.prod(shape) * scale))) for name, shape in tensors(preset)]


def size(preset: str, scale: float = 1.0) -> int:
    """Values of one gradient of the preset at `scale`."""
    return sum(n for _, n in layers(preset, scale))
