"""Where things live: the lab's working tree (shapes.yaml, submissions/), the build cache, the leaderboard.

The harness's code and the lab's data are found separately: ``CODE_ROOT`` is where the ``harness``
package sits (a checkout, or site-packages after a non-editable install); ``REPO_ROOT`` is the
working tree that holds ``shapes.yaml`` and ``submissions/``: ``NVFP4_ROOT`` if set, else the
checkout the code came from, else the current folder or the nearest parent holding both.
"""

from __future__ import annotations

import os
from pathlib import Path

CODE_ROOT = Path(__file__).resolve().parent.parent


def _is_lab(folder: Path) -> bool:
    return (folder / "shapes.yaml").is_file() and (folder / "submissions").is_dir()


def find_root() -> Path:
    """The lab's working tree (see the module's docstring). When none is found, the code's folder:
    the first file read from it then fails with ``missing_root_hint`` in its message."""
    named = os.environ.get("NVFP4_ROOT")
    if named:
        return Path(named).expanduser().resolve()
    if _is_lab(CODE_ROOT):
        return CODE_ROOT
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if _is_lab(folder):
            return folder
    return CODE_ROOT


REPO_ROOT = find_root()


def missing_root_hint() -> str:
    return (f"no lab working tree found (looked for shapes.yaml and submissions/ in {REPO_ROOT}): "
            "run from the lab's checkout or set NVFP4_ROOT to it")


def shapes_path() -> Path:
    """shapes.yaml, or the file named by ``NVFP4_SHAPES``."""
    return Path(os.environ.get("NVFP4_SHAPES", REPO_ROOT / "shapes.yaml"))


def build_dir() -> Path:
    """The build cache (load_inline outputs, measured ceilings, child logs); ``NVFP4_BUILD_DIR``."""
    return Path(os.environ.get("NVFP4_BUILD_DIR", REPO_ROOT / ".build"))


def leaderboard_path() -> Path:
    return Path(os.environ.get("NVFP4_LEADERBOARD", REPO_ROOT / "leaderboard.csv"))


def submissions_dir() -> Path:
    return REPO_ROOT / "submissions"
