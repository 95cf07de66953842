"""The compile contract: what a submission hands ``load_inline``, readable without importing it.

Importing a submission compiles it, and compiling through torch needs a CUDA build of torch; a
CPU-only CI machine has nvcc but no such torch. So a submission that compiles CUDA keeps its
sources and flags in module-level constants, passes them to ``load_inline`` unchanged, and the
harness reads them here with ``ast`` (literal values only, nothing is executed):

- ``CUDA_SRC`` (str, required to compile): the ``cuda_sources``.
- ``CPP_SRC`` (str): the ``cpp_sources`` (usually the declarations of the bound functions).
- ``FUNCTIONS`` (list of str): the ``functions`` bound by ``load_inline``.
- ``CUDA_FLAGS`` (list of str): the ``extra_cuda_cflags``; an ``-gencode``/``-arch`` here wins,
  otherwise the harness compiles for the docstring's ``Arch``.
- ``CPP_FLAGS`` (list of str): the ``extra_cflags``.
- ``NO_IMPLICIT_HEADERS`` (bool): as given to ``load_inline`` (default False: torch prepends
  ``torch/types.h``, ``cuda.h`` and ``cuda_runtime.h`` to the CUDA source).
- ``EXTENSION_NAME`` (str): the ``name`` (defines ``TORCH_EXTENSION_NAME``).

A value may be a string, a ``+`` of strings, a list or tuple of strings, or the name of another
such constant defined earlier in the file. Anything else is refused with the line number.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

_STR_KEYS = ("CUDA_SRC", "CPP_SRC", "EXTENSION_NAME")
_LIST_KEYS = ("FUNCTIONS", "CUDA_FLAGS", "CPP_FLAGS")
_BOOL_KEYS = ("NO_IMPLICIT_HEADERS",)
KEYS = _STR_KEYS + _LIST_KEYS + _BOOL_KEYS

# What load_inline puts before the CUDA source unless no_implicit_headers=True.
IMPLICIT_CUDA_PRELUDE = ("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")
IMPLICIT_CPP_PRELUDE = ("#include <torch/extension.h>",)


class ContractError(Exception):
    """A contract constant the harness cannot read (not a literal, wrong type)."""


@dataclass(frozen=True)
class Contract:
    cuda_src: str | None = None
    cpp_src: str | None = None
    functions: tuple[str, ...] = ()
    cuda_flags: tuple[str, ...] = ()
    cpp_flags: tuple[str, ...] = ()
    no_implicit_headers: bool = False
    extension_name: str = "nvfp4_compile_check"
    lines: dict = field(default_factory=dict, compare=False)  # constant -> line it is defined on

    @property
    def compiles_cuda(self) -> bool:
        return bool(self.cuda_src and self.cuda_src.strip())

    def cuda_file_text(self, prelude: bool | None = None) -> str:
        """The .cu file exactly as load_inline writes it (cuda.cu); ``prelude=False`` leaves out the
        implicit torch #includes (a faster compile-only check of a source that uses nothing of torch)."""
        with_prelude = prelude is not False and not self.no_implicit_headers
        parts = list(IMPLICIT_CUDA_PRELUDE) if with_prelude else []
        return "\n".join([*parts, self.cuda_src or ""])

    def cpp_file_text(self) -> str:
        """The .cpp file as load_inline writes it (main.cpp): prelude, declarations, bindings."""
        parts = [] if self.no_implicit_headers else list(IMPLICIT_CPP_PRELUDE)
        parts.append(self.cpp_src or "")
        if self.functions:
            parts.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
            parts += [f'm.def("{f}", torch::wrap_pybind_function({f}), "{f}");' for f in self.functions]
            parts.append("}")
        return "\n".join(parts)


def _value(node: ast.AST, known: dict, key: str):
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool)):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, known, key), _value(node.right, known, key)
        if type(left) is type(right) and isinstance(left, (str, tuple)):
            return left + right
        raise ContractError(f"line {node.lineno}: {key}: + of a {type(left).__name__} and a {type(right).__name__}")
    if isinstance(node, (ast.List, ast.Tuple)):
        return tuple(_value(elt, known, key) for elt in node.elts)
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    raise ContractError(f"line {node.lineno}: {key} must be a literal (a string, a + of strings, a list of "
                        f"strings, or the name of such a constant defined above it), not {ast.unparse(node)!r}")


def read(path: Path) -> Contract:
    """The contract constants of the file at ``path`` (defaults where absent)."""
    tree = ast.parse(Path(path).read_bytes(), filename=str(path))
    known: dict = {}  # every module-level literal seen so far, so constants may build on each other
    found: dict = {}
    lines: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        if name in KEYS:
            found[name] = _value(value, known, name)
            known[name] = found[name]
            lines[name] = node.lineno
        else:
            try:
                known[name] = _value(value, known, name)
            except ContractError:
                known.pop(name, None)  # not a literal: fine unless a contract constant refers to it
    return _checked(found, lines)


def _checked(found: dict, lines: dict) -> Contract:
    kwargs = {}
    for key, value in found.items():
        where = f"line {lines[key]}: {key}"
        if key in _STR_KEYS:
            if not isinstance(value, str):
                raise ContractError(f"{where} must be a string")
        elif key in _LIST_KEYS:
            if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                raise ContractError(f"{where} must be a list of strings")
        elif not isinstance(value, bool):
            raise ContractError(f"{where} must be True or False")
        kwargs[key.lower()] = value
    return Contract(**kwargs, lines=lines)
