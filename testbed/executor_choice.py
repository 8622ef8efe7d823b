"""Choosing a sweep executor by name (`gdml sweep --executor local|ray`).

Apart from testbed/executors.py because the Ray executor imports that module: choosing it
there would make the two import each other.
"""
from __future__ import annotations

import sys

from testbed.executors import EXECUTORS, RAY_INSTALL, Executor, ExecutorError, LocalExecutor


def make_executor(name: str, *, ray_address: str | None = None, require_root: bool = True) -> Executor:
    """The executor called `name`. ray_address: an existing cluster (`auto` or the head's
    `host:6379`; default RAY_ADDRESS, else a one-machine cluster started here);
    require_root: the runner needs root on the machines (the real lifecycle does)."""
    if name == "local":
        if ray_address:
            raise ExecutorError("--ray-address: only with --executor ray")
        return LocalExecutor()
    if name == "ray":
        try:
            from testbed.executor_ray import RayExecutor
        except ImportError as e:
            if (e.name or "").split(".")[0] != "ray":
                raise
            raise ExecutorError(f"--executor ray: Ray is not installed in {sys.prefix}: "
                                f"{RAY_INSTALL} (in a checkout: pip install -e '.[ray]'), on "
                                f"every machine of the cluster") from None
        return RayExecutor(address=ray_address, require_root=require_root)
    raise ExecutorError(f"--executor: unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
