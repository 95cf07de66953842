"""The build cache's import lock: a torch ``lock`` file left by a killed build is removed (torch
would poll it forever), and one owned by a live build is not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from torch.utils.file_baton import FileBaton

from harness import build_cache, paths

HASH = "0123456789abcdef0123"


@pytest.fixture(autouse=True)
def own_build_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NVFP4_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.delenv("NVFP4_EXTENSIONS_DIR", raising=False)
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)


def torch_lock() -> str:
    """Where load_inline's FileBaton for an extension named ``nvfp4_x`` lives."""
    d = build_cache.extensions_dir(HASH) / "nvfp4_x"
    d.mkdir(parents=True, exist_ok=True)
    return str(d / "lock")


def holder(body: str) -> subprocess.Popen:
    """A child that holds ``building(HASH)``, runs ``body`` inside it, and prints 'in' first."""
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(paths.REPO_ROOT)!r})
        from harness import build_cache
        with build_cache.building({HASH!r}):
            print("in", flush=True)
    """) + textwrap.indent(textwrap.dedent(body), "    ")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    assert proc.stdout.readline().strip() == "in"
    return proc


def test_building_points_torch_at_the_versions_folder():
    with build_cache.building(HASH) as removed:
        assert os.environ["TORCH_EXTENSIONS_DIR"] == str(build_cache.extensions_dir(HASH))
        assert removed == []


def test_stale_lock_is_removed_so_torch_can_build():
    lock = torch_lock()
    assert FileBaton(lock).try_acquire()  # what a build takes, and a killed build never releases
    assert not FileBaton(lock).try_acquire()  # without the fix every later import waits on this forever
    with build_cache.building(HASH) as removed:
        assert [str(p) for p in removed] == [lock]
        baton = FileBaton(lock)
        assert baton.try_acquire()
        baton.release()


def test_lock_of_a_build_killed_while_holding_the_folder_is_removed():
    lock = torch_lock()
    proc = holder(f"""
        open({lock!r}, "w").close()
        print("locked", flush=True)
        time.sleep(60)
    """)
    # NOTE: killed only once the lock exists (under load, killing at 'in' beat the file's creation)
    assert proc.stdout.readline().strip() == "locked"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert os.path.exists(lock)
    with build_cache.building(HASH) as removed:
        assert [str(p) for p in removed] == [lock]


def test_live_build_is_waited_for_and_its_lock_left_alone():
    lock = torch_lock()
    proc = holder(f"""
        open({lock!r}, "w").close()
        time.sleep(1.0)
        import os
        os.unlink({lock!r})  # the build finished and released its baton
    """)
    told = []
    t0 = time.monotonic()
    with build_cache.building(HASH, on_wait=told.append) as removed:
        waited = time.monotonic() - t0
        assert removed == []  # the live build's lock was never touched: it removed its own
    proc.wait(timeout=30)
    assert proc.returncode == 0
    assert waited > 0.5
    assert told[0].startswith("waiting for another process building") and told[1].startswith("waited ")
