"""docs/adding-a-scheme.md is a tested example: every code block it shows is in the file it
names (so the page cannot drift from the code), and the scheme it builds is registered with
exactly the files the page lists. Running it end to end is tests/test_schemes_e2e.py (every
registered scheme)."""
import re
import textwrap
from pathlib import Path

import schemes

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "adding-a-scheme.md"


def blocks() -> list[tuple[str, str]]:
    """(file the step names: its last backquoted path, code) for each python block."""
    out, step, code = [], None, None
    for line in DOC.read_text().splitlines():
        head = re.match(r"\d\. .*?`([\w/.]+\.py)`", line)
        if head:
            step = head.group(1)
        elif line.strip() == "```python":
            code = []
        elif line.strip() == "```" and code is not None:
            out.append((step, textwrap.dedent("\n".join(code))))
            code = None
        elif code is not None:
            code.append(line)
    return out


def test_every_code_block_is_in_the_file_it_names():
    found = blocks()
    assert [f for f, _ in found] == ["schemes/alltoall/plan.py", "schemes/alltoall/communicator.py",
                                     "schemes/alltoall/model.py", "schemes/alltoall/__init__.py",
                                     "schemes/__init__.py"]
    for path, code in found:
        source = (REPO / path).read_text()
        lines = [l.strip() for l in code.splitlines() if l.strip()]
        src = [l.strip() for l in source.splitlines()]
        start = src.index(lines[0])   # the block is a contiguous run of the file's lines
        assert src[start:start + len(lines)] == lines, path


def test_the_example_is_a_registered_scheme_of_one_folder():
    s = schemes.get("alltoall")
    assert s.communicator.startswith("schemes.alltoall.")
    folder = REPO / "schemes" / "alltoall"
    assert {p.name for p in folder.glob("*") if p.name != "__pycache__"} == \
        {"__init__.py", "plan.py", "communicator.py", "model.py", "README.md"}
