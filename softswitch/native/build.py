"""Compile generated C with the system compiler, once per distinct source, and load it.

    load_library(source) -> ctypes.CDLL

The shared object is cached in a folder keyed by the sha256 of everything it is built
from (the generated source, the hand-written runtime files, the compiler command), so a
switch restarted with the same program loads in milliseconds and a changed runtime never
reuses a stale build. The folder: $SOFTSWITCH_CACHE_DIR, else $XDG_CACHE_HOME/gdml-softswitch,
else ~/.cache/gdml-softswitch. A compile error raises BuildError with gcc's output.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

RUNTIME_DIR = Path(__file__).parent / "c"
RUNTIME_FILES = ("ssrt.h", "ssrt.c", "ss_ctx.h", "ss_switch.c", "ss_loop.c", "ss_linkem.c", "ss_pcap.c")
CC = os.environ.get("SOFTSWITCH_CC", "gcc")
CFLAGS = ("-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-std=gnu11", "-D_GNU_SOURCE")
LDLIBS = ("-lm",)     # the delay lines' jitter (sqrt, log, cos)


class BuildError(Exception):
    """The C compiler is missing or refused the generated source; the message says which
    and carries the compiler's output."""


def cache_dir() -> Path:
    explicit = os.environ.get("SOFTSWITCH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gdml-softswitch"


def build_key(source: str) -> str:
    h = hashlib.sha256()
    h.update(source.encode())
    for name in RUNTIME_FILES:
        path = RUNTIME_DIR / name
        if path.exists():
            h.update(name.encode() + b"\0" + path.read_bytes())
    h.update(" ".join((CC,) + CFLAGS + LDLIBS).encode())
    return h.hexdigest()


def compile_source(source: str) -> Path:
    """The path of the shared object built from `source` (built now if not cached)."""
    key = build_key(source)
    folder = cache_dir()
    so = folder / f"pipeline-{key[:32]}.so"
    if so.exists():
        return so
    if shutil.which(CC) is None:
        raise BuildError(f"no C compiler: {CC} is not on PATH (install gcc and libc6-dev, "
                         f"e.g. apt-get install gcc libc6-dev, or set SOFTSWITCH_CC)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BuildError(f"cannot create the build cache {folder}: {e.strerror}; "
                         f"set SOFTSWITCH_CACHE_DIR to a writable folder") from e
    with tempfile.TemporaryDirectory(dir=folder, prefix="build-") as tmp:
        c_file = Path(tmp) / f"pipeline-{key[:32]}.c"
        c_file.write_text(source)
        out = Path(tmp) / so.name
        cmd = [CC, *CFLAGS, "-I", str(RUNTIME_DIR), "-o", str(out), str(c_file), str(RUNTIME_DIR / "ssrt.c"), *LDLIBS]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"{CC} failed (exit {r.returncode}) on the generated pipeline; "
                             f"please report it with the program:\n{r.stderr.strip()}")
        os.replace(out, so)    # atomic: a concurrent loader sees no half-written file
    return so


def build_executable(c_file: Path) -> Path:
    """A standalone C program (the benchmark's do-nothing relay), built once per content
    into the same cache; BuildError as for the pipeline."""
    text = Path(c_file).read_bytes()
    key = hashlib.sha256(text + " ".join((CC, "-O2")).encode()).hexdigest()
    exe = cache_dir() / f"{Path(c_file).stem}-{key[:32]}"
    if exe.exists():
        return exe
    if shutil.which(CC) is None:
        raise BuildError(f"no C compiler: {CC} is not on PATH (install gcc and libc6-dev)")
    exe.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=exe.parent, prefix="build-") as tmp:
        out = Path(tmp) / exe.name
        r = subprocess.run([CC, "-O2", "-D_GNU_SOURCE", "-o", str(out), str(c_file)], capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"{CC} failed (exit {r.returncode}) on {c_file}:\n{r.stderr.strip()}")
        os.replace(out, exe)
    return exe


def load_library(source: str) -> ctypes.CDLL:
    return ctypes.CDLL(str(compile_source(source)))
