"""Where things live: the lab's working tree (shapes.yaml, submissions/), the build cache, the leaderboard.

The harness's code and the lab's data are found separately: ``CODE_ROOT`` is where the ``harness``
package sits (a checkout, or site-packages after a non-editable install); ``REPO_ROOT`` is the
working tree that holds ``shapes.yaml`` and ``submissions/``: ``NVFP4_ROOT`` if set, else the
checkout that encloses the current folder (its nearest parent holding both), else the checkout
the code came from.

NOTE: the code's checkout came first once: the ``nvfp4`` entry point installed (editable) from one
checkout and run inside a second listed, recorded into and wrote new versions into the first.
Now the working folder's checkout is the lab, and where the code comes from another checkout the
command stops (``checkout_conflict``) rather than run one tree's code on another's versions.
"""

from __future__ import annotations

import os
from pathlib import Path

CODE_ROOT = Path(__file__).resolve().parent.parent


def _is_lab(folder: Path) -> bool:
    return (folder / "shapes.yaml").is_file() and (folder / "submissions").is_dir()


def enclosing_lab() -> Path | None:
    """The nearest folder from the current one up that holds shapes.yaml and submissions/."""
    here = Path.cwd().resolve()
    return next((folder for folder in (here, *here.parents) if _is_lab(folder)), None)


def find_root() -> Path:
    """The lab's working tree (see the module's docstring). When none is found, the code's folder:
    the first file read from it then fails with ``missing_root_hint`` in its message."""
    named = os.environ.get("NVFP4_ROOT")
    if named:
        return Path(named).expanduser().resolve()
    return enclosing_lab() or CODE_ROOT


REPO_ROOT = find_root()


def checkout_conflict() -> str | None:
    """Why a command must not run here, or None: the working folder is inside one checkout and the
    harness's code comes from another (an ``nvfp4`` installed from elsewhere). NVFP4_ROOT, set,
    says which lab is meant: no conflict then."""
    if os.environ.get("NVFP4_ROOT") or not _is_lab(CODE_ROOT) or REPO_ROOT == CODE_ROOT:
        return None
    return (f"this folder is in the checkout {REPO_ROOT}, but this nvfp4 runs the code of {CODE_ROOT}: "
            f"run `python -m harness` from {REPO_ROOT}, `pip install -e {REPO_ROOT}`, or set NVFP4_ROOT to the "
            "lab you mean")


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
