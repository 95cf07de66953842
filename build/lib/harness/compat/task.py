"""Stand-in for GPU MODE's ``task`` module, so their submissions (``from task import input_t,
output_t``) import unmodified. Only the type names exist here."""

from typing import Any, TypeVar

input_t = TypeVar("input_t", bound=tuple)
output_t = TypeVar("output_t", bound=Any)
