"""``nvfp4 diff``: the change between two versions, as the writeup presents each step: both
versions' header (Change, Parent, Arch, Analogue), then the code as a unified diff without the
docstring (whose edits, timings mostly, are counted, not shown unless asked), the CUDA and C++
sources (the contract constants) apart from the Python around them.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from pathlib import Path

from harness import contract
from harness.submissions import Submission

SOURCE_KEYS = ("CUDA_SRC", "CPP_SRC")  # the constants shown as their own sections


@dataclass
class Section:
    title: str
    lines: list  # unified diff lines, empty when the two sides are the same
    added: int = 0
    removed: int = 0


@dataclass
class VersionDiff:
    a: Submission
    b: Submission
    docstring: Section
    sections: list = field(default_factory=list)  # Python, then CUDA_SRC / CPP_SRC where either has it
    notes: list = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not any(s.lines for s in self.sections)


@dataclass
class _Parts:
    docstring: str
    python: list  # the file's lines without the docstring, each source constant folded to one line
    sources: dict  # constant -> its text


def _split(path: Path) -> tuple[_Parts, str | None]:
    """The docstring, the Python around the sources, the sources; a note when they cannot be split."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    drop: dict[int, str | None] = {}  # 0-based line -> replacement (None: removed)
    docstring = ast.get_docstring(tree, clean=False) or ""
    if docstring:
        node = tree.body[0]
        for i in range(node.lineno - 1, node.end_lineno):
            drop[i] = None
    note = None
    sources: dict[str, str] = {}
    try:
        c = contract.read(path)
        values = {"CUDA_SRC": c.cuda_src, "CPP_SRC": c.cpp_src}
    except contract.ContractError as exc:
        values, note = {}, f"{path.name}: {exc}; its sources are diffed as Python"
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        name = getattr(target, "id", None)
        if name in SOURCE_KEYS and values.get(name) is not None:
            sources[name] = values[name]
            drop[node.lineno - 1] = f"{name} = ...  # diffed below"
            for i in range(node.lineno, node.end_lineno):
                drop[i] = None
    python = []
    for i, line in enumerate(lines):
        if i in drop:
            if drop[i] is not None:
                python.append(drop[i])
        else:
            python.append(line)
    while python and not python[0].strip():  # the blank lines the docstring left
        python.pop(0)
    return _Parts(docstring, python, sources), note


def _section(title: str, a: list[str], b: list[str], name_a: str, name_b: str, context: int) -> Section:
    lines = list(difflib.unified_diff(a, b, name_a, name_b, n=context, lineterm=""))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return Section(title, lines, added, removed)


def diff(a: Submission, b: Submission, context: int = 3) -> VersionDiff:
    pa, note_a = _split(a.path)
    pb, note_b = _split(b.path)
    doc = _section("docstring", pa.docstring.splitlines(), pb.docstring.splitlines(), a.label, b.label, context)
    result = VersionDiff(a, b, doc, notes=[n for n in (note_a, note_b) if n])
    result.sections.append(_section("Python", pa.python, pb.python, a.label, b.label, context))
    for key in SOURCE_KEYS:
        if key in pa.sources or key in pb.sources:
            result.sections.append(_section(key, pa.sources.get(key, "").splitlines(),
                                            pb.sources.get(key, "").splitlines(), f"{a.label}:{key}",
                                            f"{b.label}:{key}", context))
    if b.parent and b.parent != a.label:
        result.notes.append(f"{b.label}'s parent is {b.parent}, not {a.label}")
    return result
