"""Where things live: the repo root, shapes.yaml, the build cache, the leaderboard."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


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
