"""A version built with extra preprocessor defines: the marks build and the ablation stand-ins.

A version opts in to a probe in its own CUDA source: ``NVFP4_MARK(id)`` (compiled out unless
``NVFP4_MARKS`` is defined; :mod:`harness.probes.marks`), or a stand-in under its own switch, e.g.

    #if NVFP4_ABLATE_NO_MMA
        acc[s] = __uint_as_float(__float_as_uint(acc[s]) ^ frag[s][0]);  // keeps the decode live
    #else
        wgmma(...);
    #endif

and lists its switches in a module constant the probe reads without importing the file::

    ABLATIONS = {"no_mma": ["NVFP4_ABLATE_NO_MMA"],
                 "copies_only": ["NVFP4_ABLATE_NO_MMA", "NVFP4_ABLATE_NO_DECODE"]}

The probe never edits the version's text. While the version is imported, torch's ``load_inline``
is wrapped (:func:`extension_build`) so the version's own call gets ``-D<define>`` for each define,
on both the CUDA and the host compiler's flags, and an extension name of its own (so a variant and
the plain build can live in one process); the build goes to a build-cache folder keyed by the
version's source hash and the defines (:func:`variant_hash`), so a variant compiles once per machine
and never overwrites the plain build.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness import paths
from harness.errors import UserError
from harness.submissions import Submission

_DEFINE = re.compile(r"^[A-Za-z_]\w*(=[^\s,]*)?$")
_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")
FULL = "full"  # the version as it is: every ablation is timed against it


@dataclass(frozen=True)
class Variant:
    name: str
    defines: tuple[str, ...] = field(default_factory=tuple)

    @property
    def tag(self) -> str:
        """A C identifier fragment naming this build (the extension's suffix)."""
        return re.sub(r"\W", "_", self.name)


def parse_variant(text: str) -> Variant:
    """``NAME=DEFINE[,DEFINE...]`` (a define is ``FLAG`` or ``FLAG=VALUE``): the ``--variant`` option."""
    name, sep, defines = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name) or not defines.strip():
        raise UserError(f"--variant {text!r}: expected NAME=DEFINE[,DEFINE...], e.g. no_mma=NVFP4_ABLATE_NO_MMA")
    if name == FULL:
        raise UserError(f"--variant {text!r}: {FULL!r} is the version as it is (always timed); pick another name")
    return Variant(name, _defines(defines.split(","), f"--variant {text!r}"))


def _defines(items, where: str) -> tuple[str, ...]:
    out = []
    for item in items:
        d = str(item).strip()
        if d.startswith("-D"):
            d = d[2:]
        if not _DEFINE.match(d):
            raise UserError(f"{where}: {item!r} is not a preprocessor define (FLAG or FLAG=VALUE)")
        out.append(d)
    return tuple(out)


def module_constant(path: Path, name: str):
    """The literal value of a module-level ``name = ...`` in ``path`` (None when absent); the file
    is parsed, never executed. A value that is not a literal is an error naming its line."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                raise UserError(f"{path}:{node.lineno}: {name} must be a literal (it is read without importing "
                                "the file)") from None
    return None


def declared_ablations(sub: Submission) -> list[Variant]:
    """The version's ``ABLATIONS`` (name -> list of defines), in its order; [] without one."""
    table = module_constant(sub.path, "ABLATIONS")
    if table is None:
        return []
    if not isinstance(table, dict) or not all(isinstance(v, (list, tuple)) for v in table.values()):
        raise UserError(f"{sub.path}: ABLATIONS must map a variant's name to a list of defines")
    variants = []
    for name, defines in table.items():
        if not isinstance(name, str) or not _NAME.match(name) or name == FULL:
            raise UserError(f"{sub.path}: ABLATIONS: {name!r} is not a variant name (letters, digits, _ . -; "
                            f"not {FULL!r})")
        variants.append(Variant(name, _defines(defines, f"{sub.path}: ABLATIONS[{name!r}]")))
    return variants


def variant_hash(sub: Submission, defines: tuple[str, ...]) -> str:
    """The build-cache key of ``sub`` built with ``defines`` (the plain build's key when there are none)."""
    if not defines:
        return sub.source_hash
    return hashlib.sha256(f"{sub.source_hash}|{' '.join(defines)}".encode()).hexdigest()


@contextlib.contextmanager
def extension_build(defines: tuple[str, ...], tag: str):
    """While active, every ``torch.utils.cpp_extension.load_inline`` call gets ``-D<define>`` for
    each of ``defines`` (CUDA and host flags) and its extension name suffixed ``_<tag>``; yields the
    list of extension modules built, in order. Versions import ``load_inline`` by name at their top
    level, which is why the wrap must be in place before the import, and is undone after it."""
    import torch.utils.cpp_extension as cpp_extension
    original = cpp_extension.load_inline
    built: list = []
    flags = [f"-D{d}" for d in defines]

    @functools.wraps(original)  # NOTE: its signature is torch's (harness.fast_build binds arguments by it)
    def load_inline(*args, **kwargs):
        args = list(args)
        if args:
            args[0] = f"{args[0]}_{tag}"
        else:
            kwargs["name"] = f"{kwargs['name']}_{tag}"
        kwargs["extra_cuda_cflags"] = [*(kwargs.get("extra_cuda_cflags") or []), *flags]
        kwargs["extra_cflags"] = [*(kwargs.get("extra_cflags") or []), *flags]
        module = original(*args, **kwargs)
        built.append(module)
        return module

    cpp_extension.load_inline = load_inline
    try:
        yield built
    finally:
        cpp_extension.load_inline = original


@dataclass
class Built:
    kernel: object  # the variant's custom_kernel
    module: object  # the submission's Python module
    extensions: list  # the extension modules its load_inline calls built


def import_variant(sub: Submission, variant: Variant, on_progress=None) -> Built:
    """``sub``'s custom_kernel built with ``variant``'s defines (the plain version for none)."""
    from harness import loader
    if not variant.defines:
        kernel = loader.import_submission(sub.path, sub.label, source_hash=sub.source_hash, on_progress=on_progress)
        return Built(kernel, sys.modules[kernel.__module__], [])
    with extension_build(variant.defines, variant.tag) as built:
        kernel = loader.import_submission(sub.path, f"{sub.label}+{variant.tag}",
                                          source_hash=variant_hash(sub, variant.defines), on_progress=on_progress)
    return Built(kernel, sys.modules[kernel.__module__], built)


def build_in_children(sub: Submission, variants: list[Variant], jobs: int | None = None,
                      timeout_s: float = 1800.0) -> list[tuple[Variant, str]]:
    """Build every variant at once, each in a child process (nvcc is CPU-bound and the builds are
    independent; a crashing build costs only its child). Returns (variant, the child's last lines)
    for each that failed."""
    jobs = max(1, jobs or os.cpu_count() or 1)
    pending, failures = list(variants), []
    while pending:
        batch, pending = pending[:jobs], pending[jobs:]
        children = []
        for v in batch:
            spec = json.dumps({"problem": sub.problem, "path": str(sub.path), "label": sub.label, "name": v.name,
                               "defines": list(v.defines)})
            child = subprocess.Popen([sys.executable, "-m", "harness.probes.variants", spec], cwd=paths.REPO_ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            children.append((v, child))
        for v, child in children:
            try:
                out, _ = child.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                child.kill()
                out, _ = child.communicate()
                out += f"\n(build killed after {timeout_s:.0f} s)".encode()
            if child.returncode != 0:
                failures.append((v, " | ".join(out.decode(errors="replace").strip().splitlines()[-4:])))
    return failures


def _child(argv: list[str]) -> int:
    """``python -m harness.probes.variants SPEC``: build one variant (import it) and exit."""
    from harness import submissions
    spec = json.loads(argv[0])
    sub = submissions.load(spec["problem"], Path(spec["path"]), spec["label"])
    import_variant(sub, Variant(spec["name"], tuple(spec["defines"])))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
