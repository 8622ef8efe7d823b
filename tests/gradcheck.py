"""Central finite differences of a model's loss, the reference its analytic gradient is
checked against (tests/test_workload.py, tests/test_models.py)."""
import numpy as np


def finite_difference_gradient(m, x, y, eps=1e-6):
    """d loss / d params of model m on (x, y), one parameter at a time; m.params restored."""
    num, base = np.zeros(m.size), m.params.copy()
    for i in range(m.size):
        for sign in (1, -1):
            m.params = base.copy()
            m.params[i] += sign * eps
            num[i] += sign * m.loss_and_grad(x, y)[0] / (2 * eps)
    m.params = base
    return num
