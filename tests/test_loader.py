"""harness.loader.import_submission: a submission's custom_kernel, imported inside its own build
folder (keyed by its source hash), a stale torch lock cleared, a file without a kernel refused."""

from __future__ import annotations

import pytest

from harness import build_cache, loader, submissions

# The kernel hands back what load_inline would see at import: the extensions folder.
SOURCE = ('"""Version: v7"""\nimport os\nIMPORTED_IN = os.environ.get("TORCH_EXTENSIONS_DIR")\n\n'
          "def custom_kernel(data):\n    return IMPORTED_IN\n")


@pytest.fixture
def submission(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", "untouched")  # restored after the test: the import sets it
    path = tmp_path / "submission_v7.py"
    path.write_text(SOURCE)
    return submissions.load("gemm", path, "v7")


def test_the_kernel_is_imported_in_its_versions_build_folder(submission):
    kernel = loader.import_submission(submission.path, submission.label)  # the hash computed from the file
    assert kernel(None) == str(build_cache.extensions_dir(submission.source_hash))
    again = loader.import_submission(str(submission.path), "other label", source_hash=submission.source_hash)
    assert again is not kernel and again(None) == kernel(None)  # a module of its own, the same build folder


def test_a_stale_torch_lock_is_removed_and_said(submission):
    lock = build_cache.extensions_dir(submission.source_hash) / "nvfp4_ext" / "lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    told = []
    loader.import_submission(submission.path, submission.label, on_progress=told.append)
    assert not lock.exists() and told == [f"removed a stale torch lock left by a killed build: {lock}"]


def test_a_file_without_a_callable_kernel_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", "untouched")
    path = tmp_path / "no_kernel.py"
    path.write_text("custom_kernel = 3\n")
    with pytest.raises(AttributeError, match="does not define a callable custom_kernel"):
        loader.import_submission(path, "no_kernel.py")
