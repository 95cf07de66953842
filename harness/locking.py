"""The one way the harness shares a file between processes: an ``flock``, which dies with its
holder (a killed run never leaves a lock behind), and writes that a reader never sees half of.

Every shared file goes through here: leaderboard.csv (rewritten in place, so it is locked itself:
``open_locked``), the compiled manifest and ceilings.json (replaced whole by a rename, so they are
locked through a ``.<name>.lock`` beside them: ``held``, ``update_json``) and a version's build
folder (``harness.build_cache.building``).

NOTE: ceilings.json had been read, changed and written with no lock and one temporary name shared by
every writer: 4 processes storing 200 entries each kept 105 of the 800 (a run with --gpus has one
writer per GPU). Under ``update_json`` they keep all 800 (tests/test_locking.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from pathlib import Path
from typing import IO, Callable, Iterator


@contextlib.contextmanager
def open_locked(path: Path, mode: str = "a+", *, shared: bool = False, wait: bool = True,
                on_wait: Callable[[str], None] | None = None, doing: str = "", **open_args) -> Iterator[IO | None]:
    """``path`` opened with ``mode`` and an flock held on it while the block runs (``shared``: a
    reader's lock, which writers wait for). ``on_wait`` is told once when another process holds it
    (what that one is ``doing``, by default holding the file), then how long it waited. ``wait=False``:
    where another holds it, the block runs at once with None instead of the file."""
    with open(path, mode, **open_args) as f:
        kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            fcntl.flock(f.fileno(), kind | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield None
                return
            if on_wait:
                on_wait(f"waiting for another process {doing or 'holding ' + path.name}")
            t0 = time.monotonic()
            fcntl.flock(f.fileno(), kind)
            if on_wait:
                on_wait(f"waited {time.monotonic() - t0:.1f} s for {path.name}")
        try:
            yield f
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def lock_path(path: Path) -> Path:
    """The lock file of a file that is replaced whole (a lock on the file itself would be lost
    with the inode the rename replaces)."""
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """An exclusive lock for ``path`` (through ``lock_path``) while the block runs: read, change and
    write it inside, and no other writer's change is lost."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_locked(lock_path(path), "a"):
        yield


def write_atomically(path: Path, text: str) -> None:
    """``text`` into a temporary file of this writer's own beside ``path``, renamed over it: a
    reader (or a writer killed half-way) never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_json(path: Path) -> dict:
    """The JSON object in ``path``; {} where it is missing, unreadable or not an object (a cache:
    what it lacks is measured again)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update_json(path: Path, change: Callable[[dict], None]) -> dict:
    """Applies ``change`` to the JSON object in ``path`` (``read_json``) and writes it back, all
    under ``held(path)``; returns the object written."""
    with held(path):
        data = read_json(path)
        change(data)
        write_atomically(path, json.dumps(data, indent=1))
        return data
