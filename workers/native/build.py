"""Build a worker's C file into a shared object with the system gcc, once, and load it.

    lib = shared_library(Path("ina_core.c"))     # ctypes.CDLL; CompileError if it fails

Why cached: a worker process starts per run and must not pay a compile (~1 s) each time.
The cache key is the sha256 of the source and of the compiler command, so an edited
file or changed flags never load a stale object. Folder: $GDML_CACHE_DIR, else
$XDG_CACHE_HOME/gdml-workers, else ~/.cache/gdml-workers. The object is written under a
temporary name and renamed into place, so workers starting together never load half a file.

No -ffast-math, and no contraction of a*b+c into fused multiply-adds: the C must round
every operation as Python's floats do (the client's decisions compare times).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

CC = "gcc"
FLAGS = ("-O2", "-shared", "-fPIC", "-std=gnu11", "-ffp-contract=off")


class CompileError(RuntimeError):
    """gcc is missing or refused the source."""


def cache_dir() -> Path:
    if os.environ.get("GDML_CACHE_DIR"):
        return Path(os.environ["GDML_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gdml-workers"


def shared_library(source: Path) -> ctypes.CDLL:
    text = source.read_bytes()
    command = [CC, *FLAGS]
    key = hashlib.sha256(text + b"\0" + " ".join(command).encode()).hexdigest()[:24]
    target = cache_dir() / f"{source.stem}-{key}.so"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        try:
            proc = subprocess.run([*command, "-o", tmp, str(source), "-lm"],
                                  capture_output=True, text=True)
        except OSError as e:                        # no gcc on PATH
            os.unlink(tmp)
            raise CompileError(f"cannot run {CC}: {e}") from None
        if proc.returncode != 0:
            os.unlink(tmp)
            lines = proc.stderr.strip().splitlines() or ["no output"]
            first = next((ln for ln in lines if "error" in ln), lines[-1])   # one line: a warning's
            err = CompileError(f"{CC} failed on {source.name}: {first.strip()}")
            err.output = proc.stderr            # all of it, for whoever debugs the C
            raise err
        os.replace(tmp, target)
    return ctypes.CDLL(str(target))
