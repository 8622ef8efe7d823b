"""C code of the workers' hot paths, compiled at first use (build.py)."""
