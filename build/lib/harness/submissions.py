"""Finding submission files and reading their docstring header without importing them.

A lineage file starts with a docstring holding ``Key: value`` lines: Version, Parent, Change,
Arch (``any``, ``sm_90a``, ``sm_100a``), Analogue (the writeup version), Measured. Any other file
that defines ``custom_kernel(data)`` (a GPU MODE submission, unmodified) runs too; with no
header its arch is taken as ``any``.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from harness import paths
from harness.errors import UserError
from reference import PROBLEMS

ARCHES = ("any", "sm_90", "sm_90a", "sm_100a")
_HEADER_KEYS = ("version", "parent", "change", "arch", "analogue", "measured")
_VERSION_FILE = re.compile(r"^submission_v(\d+)\.py$")


@dataclass(frozen=True)
class Submission:
    problem: str
    label: str  # v3, or the file name for a path
    path: Path
    header: dict
    sha256: str  # of the file's bytes
    source_hash: str  # of the code without its docstring: the build cache key

    @property
    def arch(self) -> str:
        return self.header.get("arch", "any")

    @property
    def change(self) -> str:
        return self.header.get("change", "")

    @property
    def summary(self) -> str:
        """The change's first sentence, whole (for one-line listings)."""
        text = self.change
        m = re.search(r"(?<=[a-z0-9)\]])\.\s|;\s", text)
        return text[:m.start() + 1].rstrip(";") if m else text

    @property
    def analogue(self) -> str | None:
        a = self.header.get("analogue", "").strip()
        return None if a.lower() in ("", "none", "-") else a

    @property
    def order(self) -> int:
        m = re.fullmatch(r"v(\d+)", self.label)
        return int(m.group(1)) if m else 10**6


def check_problem(problem: str) -> None:
    if problem not in PROBLEMS:
        raise UserError(f"unknown problem {problem!r}; expected one of {', '.join(PROBLEMS)}")


def versions(problem: str) -> list[Submission]:
    check_problem(problem)
    folder = paths.submissions_dir() / problem
    found = []
    for f in folder.glob("submission_v*.py"):
        m = _VERSION_FILE.match(f.name)
        if m:
            found.append(load(problem, f, label=f"v{int(m.group(1))}"))
    return sorted(found, key=lambda s: s.order)


def resolve(problem: str, version: str) -> Submission:
    """``vN`` (or ``N``) from the lineage, or a path to any file defining ``custom_kernel``."""
    check_problem(problem)
    v = version.strip()
    if re.fullmatch(r"v?\d+", v):
        label = "v" + v.lstrip("v")
        path = paths.submissions_dir() / problem / f"submission_{label}.py"
        if not path.exists():
            known = ", ".join(s.label for s in versions(problem)) or "none"
            raise UserError(f"{problem} has no version {label} (known: {known})")
        return load(problem, path, label=label)
    path = Path(v).expanduser()
    if not path.exists():
        raise UserError(f"no such version or file: {version!r} (use vN or a path to a .py file)")
    if not path.is_file():
        raise UserError(f"{version!r} is not a file")
    return load(problem, path.resolve(), label=path.name)


def parse_header(docstring: str | None) -> dict:
    """The ``Key: value`` lines of a docstring (Version, Parent, Change, Arch, Analogue, Measured); a
    value continues on the lines after it until a blank line or the next key (a Change line wrapped
    at 100 columns is one sentence, not its first 90 characters)."""
    header: dict = {}
    current = None
    for line in (docstring or "").splitlines():
        m = re.match(r"^\s*([A-Za-z]+)\s*:\s*(.*?)\s*$", line)
        if m and m.group(1).lower() in _HEADER_KEYS:
            key = m.group(1).lower()
            current = key if key not in header else None
            if current:
                header[current] = m.group(2)
        elif not line.strip():
            current = None
        elif current and current != "arch":
            header[current] = f"{header[current]} {line.strip()}".strip()
    if "arch" in header:
        header["arch"] = header["arch"].split()[0].rstrip(",;.") if header["arch"] else "any"
    return header


def load(problem: str, path: Path, label: str) -> Submission:
    data = path.read_bytes()
    try:
        tree = ast.parse(data, filename=str(path))
    except SyntaxError as exc:
        raise UserError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    defines_kernel = any(
        (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "custom_kernel")
        or (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "custom_kernel" for t in node.targets))
        or (isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == "custom_kernel" for a in node.names))
        for node in tree.body)
    if not defines_kernel:
        raise UserError(f"{path} does not define custom_kernel(data)")
    header = parse_header(ast.get_docstring(tree))
    arch = header.get("arch", "any")
    if arch not in ARCHES:
        raise UserError(f"{path}: Arch {arch!r} in the docstring is not one of {', '.join(ARCHES)}")
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    code = ast.unparse(ast.Module(body=body, type_ignores=[]))
    return Submission(problem, label, path, header, hashlib.sha256(data).hexdigest(),
                      hashlib.sha256(code.encode()).hexdigest())


def in_lab(sub: Submission) -> bool:
    """Whether ``sub`` is a file of this lab's submissions/ tree (the team's own code): only those
    share a process in ``compare``; anything else runs isolated."""
    try:
        sub.path.resolve().relative_to(paths.submissions_dir().resolve())
        return True
    except ValueError:
        return False
