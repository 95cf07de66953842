"""Where the lab is found: NVFP4_ROOT, the checkout the code came from, or the current folder's
nearest ancestor holding shapes.yaml and submissions/ (a non-editable install)."""
from __future__ import annotations

from harness import paths


def _lab(folder):
    (folder / "submissions").mkdir(parents=True)
    (folder / "shapes.yaml").write_text("{}\n")
    return folder


def test_nvfp4_root_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("NVFP4_ROOT", str(tmp_path))
    assert paths.find_root() == tmp_path.resolve()


def test_installed_code_finds_the_lab_from_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("NVFP4_ROOT", raising=False)
    monkeypatch.setattr(paths, "CODE_ROOT", tmp_path / "site-packages")  # code away from any lab
    lab = _lab(tmp_path / "lab")
    (lab / "submissions" / "gemm").mkdir()
    monkeypatch.chdir(lab / "submissions" / "gemm")
    assert paths.find_root() == lab.resolve()


def test_no_lab_anywhere_falls_back_to_the_code_and_says_how_to_fix_it(tmp_path, monkeypatch):
    monkeypatch.delenv("NVFP4_ROOT", raising=False)
    monkeypatch.setattr(paths, "CODE_ROOT", tmp_path / "site-packages")
    monkeypatch.chdir(tmp_path)
    assert paths.find_root() == tmp_path / "site-packages"
    assert "NVFP4_ROOT" in paths.missing_root_hint()
