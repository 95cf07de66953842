"""Finding submission files and reading their docstring header without importing them.

A lineage file starts with a docstring holding ``Key: value`` lines: Version, Parent, Change,
Verdict (``slower``: ✗, slower than its parent, kept for the lesson; ``mixed``: ≈, faster on some
shapes and slower on others; absent otherwise), Arch (``any``, ``sm_90a``, ``sm_100a``), Analogue
(the writeup version), Measured. Any other file that defines ``custom_kernel(data)`` (a GPU MODE
submission, unmodified) runs too; with no header its arch is taken as ``any``.

A lineage is ``submissions/<problem>/submission_vN.py``; versions that lost (Verdict: slower) live
in its ``attic/`` folder under the same name and number. ``resolve`` finds a version in either
place; ``versions`` lists the main folder, or with ``include_attic`` both.
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
VERDICTS = {"slower": "✗", "mixed": "≈"}  # a docstring's Verdict -> the mark beside the version in tables
ATTIC = "attic"  # the folder of a lineage that keeps its ✗ versions, out of the main listing
# NOTE: every key a lineage docstring uses, story fields (why, prediction) included: a line of an
# unknown key would read as the previous value's continuation (an Analogue swallowing the Prediction).
_HEADER_KEYS = ("version", "parent", "change", "why", "verdict", "arch", "analogue", "prediction", "measured")
_ONE_WORD_KEYS = ("arch", "verdict")  # their value is the first word; the rest of the line is a comment
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
    def verdict(self) -> str | None:
        """``slower`` or ``mixed`` from the docstring's Verdict line (``load`` refuses other values), else None."""
        return self.header.get("verdict") or None

    @property
    def mark(self) -> str:
        """✗ (slower), ≈ (mixed) or "": what lineage tables show after the version."""
        return VERDICTS.get(self.verdict or "", "")

    @property
    def in_attic(self) -> bool:
        """Whether the file is in its lineage's attic/ folder."""
        try:
            return self.path.resolve().parent == (paths.submissions_dir() / self.problem / ATTIC).resolve()
        except OSError:
            return False

    @property
    def parent(self) -> str | None:
        """The Parent line's first version token (``v1`` of "v1 (v2, the integer decode, was a
        regression)"): the rest of the line is a remark. None for ``none`` or no Parent line."""
        m = re.match(r"\s*(v\d+)\b", self.header.get("parent", ""))
        return m.group(1) if m else None

    @property
    def analogue(self) -> str | None:
        a = self.header.get("analogue", "").strip()
        return None if a.lower() in ("", "none", "-") else a

    @property
    def compiles_cuda(self) -> bool:
        """Whether the file calls ``load_inline`` with CUDA sources (a GPU MODE CUDA submission, which
        has no Arch line): such a file needs a GPU whatever its header says."""
        try:
            tree = ast.parse(self.path.read_bytes())
        except (OSError, SyntaxError):
            return False
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name == "load_inline" and (len(node.args) >= 3 or any(k.arg == "cuda_sources" for k in node.keywords)):
                    return True
        return False

    @property
    def order(self) -> int:
        m = re.fullmatch(r"v(\d+)", self.label)
        return int(m.group(1)) if m else 10**6


def check_problem(problem: str) -> None:
    if problem not in PROBLEMS:
        raise UserError(f"unknown problem {problem!r}; expected one of {', '.join(PROBLEMS)}")


def _lineage_files(problem: str, include_attic: bool) -> dict[str, Path]:
    """label -> file of the lineage's versions (the main folder's, and with ``include_attic`` the
    attic's). A number in both folders is refused: which one ran would depend on who asked."""
    lineage = paths.submissions_dir() / problem
    found: dict[str, Path] = {}
    for folder in (lineage, lineage / ATTIC) if include_attic else (lineage,):
        for f in folder.glob("submission_v*.py"):
            m = _VERSION_FILE.match(f.name)
            if not m:
                continue
            label = f"v{int(m.group(1))}"
            if label in found:
                raise UserError(f"{problem} {label} is both {found[label]} and {f}: a number names one version, "
                                "keep one of the files")
            found[label] = f
    return found


def versions(problem: str, include_attic: bool = False, strict: bool = False) -> list[Submission]:
    """The lineage's versions in number order: the main folder's, or with ``include_attic`` the
    attic's ✗ versions among them. A file of the lineage that cannot be loaded as a version (a
    syntax error, no custom_kernel, a bad Arch or Verdict line; ``unreadable`` says which and why) is
    left out: a half-written vN stops only what names it (`nvfp4 test P vN`), never the listing,
    tables and records of the others. ``strict`` raises its error instead (build's check of the
    whole ladder, which CI runs)."""
    found, failed = _lineage(problem, include_attic)
    if strict and failed:
        raise UserError(next(iter(failed.values())))
    return sorted(found, key=lambda s: s.order)


def unreadable(problem: str, include_attic: bool = False) -> dict[str, str]:
    """Label -> why, for each file of the lineage that ``versions`` leaves out (its load's error)."""
    return _lineage(problem, include_attic)[1]


def _lineage(problem: str, include_attic: bool) -> tuple[list[Submission], dict[str, str]]:
    """The lineage's files loaded: the versions, and label -> error for the files that cannot be."""
    check_problem(problem)
    found, failed = [], {}
    for label, f in _lineage_files(problem, include_attic).items():
        try:
            found.append(_load_listed(problem, f, label))
        except UserError as exc:
            failed[label] = str(exc)
    return found, failed


def _load_listed(problem: str, path: Path, label: str) -> Submission:
    """``load``, remembered per file content: one command reads its lineages several times (the listing,
    the records' code hashes, the unreadable ones), ~200 files at ~3 ms each (ast.unparse for the hash);
    reading and hashing the bytes is what stays."""
    data = path.read_bytes()
    # NOTE: keyed by content, not mtime (a test rewrites a file with the same size within one tick); a
    # Submission is frozen, so one object can be shared; a load that raises is not remembered.
    key = (problem, str(path), label, hashlib.sha256(data).hexdigest())
    if key not in _LOADED:
        _LOADED[key] = load(problem, path, label=label, data=data)
    return _LOADED[key]


_LOADED: dict[tuple[str, str, str, str], Submission] = {}


def resolve(problem: str, version: str) -> Submission:
    """``vN`` (or ``N``) from the lineage, its attic included, ``peer`` or ``peer-fp32`` (cuBLAS on
    dequantised operands, harness/probes/peer.py), or a path to any file defining ``custom_kernel``."""
    check_problem(problem)
    v = version.strip()
    if re.fullmatch(r"[vV]?\d+", v):  # v3, V3 and 3 name one version
        label = "v" + v.lstrip("vV")
        files = _lineage_files(problem, include_attic=True)
        if label not in files:
            known = ", ".join(sorted(files, key=lambda name: int(name[1:]))) or "none"
            raise UserError(f"{problem} has no version {label} (known: {known})")
        return load(problem, files[label], label=label)
    from harness.probes import PEER_LABELS, peer_file
    if v in PEER_LABELS:  # the issues' cuBLAS peer, runnable beside any version (harness/probes/peer.py)
        return load(problem, peer_file(problem, v), label=v)
    path = Path(v).expanduser()
    if not path.exists():
        raise UserError(f"no such version or file: {version!r} (use vN or a path to a .py file)")
    if not path.is_file():
        raise UserError(f"{version!r} is not a file")
    return load(problem, path.resolve(), label=path.name)


def parse_header(docstring: str | None) -> dict:
    """The ``Key: value`` lines of a docstring (Version, Parent, Change, Why, Verdict, Arch, Analogue,
    Prediction, Measured); a value continues on the lines after it until a blank line or the next
    key (a Change line wrapped at 100 columns is one sentence, not its first 90 characters). Arch
    and Verdict are one word each (Verdict lower-cased), with no continuation."""
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
        elif current and current not in _ONE_WORD_KEYS:
            header[current] = f"{header[current]} {line.strip()}".strip()
    if "arch" in header:
        header["arch"] = header["arch"].split()[0].rstrip(",;.") if header["arch"] else "any"
    if "verdict" in header:
        header["verdict"] = header["verdict"].split()[0].rstrip(",;.").lower() if header["verdict"] else ""
    return header


def code_hash(data: bytes, path: str | Path = "<submission>") -> str:
    """The hash of a submission's code without its docstring (``Submission.source_hash``, the build
    cache's key): a docstring edit never rebuilds. Raises UserError on a syntax error."""
    return _hash_of_code(_parse(data, path))


def _hash_of_code(tree: ast.Module) -> str:
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    return hashlib.sha256(ast.unparse(ast.Module(body=body, type_ignores=[])).encode()).hexdigest()


def _parse(data: bytes, path: str | Path) -> ast.Module:
    try:
        return ast.parse(data, filename=str(path))
    except SyntaxError as exc:
        raise UserError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None


def load(problem: str, path: Path, label: str, data: bytes | None = None) -> Submission:
    data = path.read_bytes() if data is None else data
    tree = _parse(data, path)
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
    if "verdict" in header and header["verdict"] not in VERDICTS:
        raise UserError(f"{path}: Verdict {header['verdict']!r} in the docstring is not one of {', '.join(VERDICTS)} "
                        "(leave the line out for a version that is neither)")
    return Submission(problem, label, path, header, hashlib.sha256(data).hexdigest(), _hash_of_code(tree))


def is_peer(sub: Submission) -> bool:
    """Whether ``sub`` is the harness's cuBLAS peer (``peer``, ``peer-fp32``: harness/probes/peer.py)."""
    from harness.probes import PEERS_DIR
    return sub.path.resolve().is_relative_to(PEERS_DIR)


def in_lab(sub: Submission) -> bool:
    """Whether ``sub`` is the team's own code - a file of this lab's submissions/ tree or the
    harness's cuBLAS peer: only those share a process in ``compare``; anything else runs isolated."""
    return sub.path.resolve().is_relative_to(paths.submissions_dir().resolve()) or is_peer(sub)
