"""The built wheel holds every file the package reads at run time.

Package data is read through :mod:`nlgbias.resources` only, so a file that is in ``src/nlgbias`` but
not in the wheel works in an editable install and fails for every user of ``pip install``.  This
builds the wheel (about 10 s) and checks that each tracked non-code file under ``src/nlgbias`` is in
it; ``.ci/wheel-smoke`` then installs that wheel in a clean environment and runs every command.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "nlgbias"


def _shipped_files() -> list[str]:
    """Tracked files under src/nlgbias that are not Python code, as paths inside the wheel."""
    listed = subprocess.run(["git", "ls-files", "src/nlgbias"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0 or not listed.stdout.strip():
        pytest.skip("not a git checkout: the tracked files are unknown")
    return sorted(p.removeprefix("src/") for p in listed.stdout.split() if not p.endswith(".py"))


def test_every_data_file_is_in_the_wheel(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("nlgbias-*.whl")
    inside = set(zipfile.ZipFile(wheel).namelist())
    wanted = _shipped_files()
    assert "nlgbias/data/annotation/worked_examples.yaml" in wanted
    missing = [name for name in wanted if name not in inside]
    assert not missing, f"{len(missing)} package files are not in the wheel: {missing[:10]}"


def test_package_data_is_read_through_resources_only():
    """No module finds its data next to ``__file__`` (that path is not where a wheel puts data)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.Name) and node.id == "__file__" for node in ast.walk(tree)):
            offenders.append(str(path.relative_to(PACKAGE)))
    assert offenders == []
