"""Every dotted ``nlgbias.…`` path in README.md and docs/*.md resolves after a plain ``import nlgbias``,
exactly as written, in a fresh interpreter (other tests' imports would hide a missing submodule)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATH = re.compile(r"(?<![\w./-])nlgbias(?:\.[A-Za-z_]\w*)+")


def documented_paths() -> dict[str, str]:
    """``{dotted path: the first doc naming it}`` for every ``nlgbias.x.y`` in code spans and blocks."""
    found: dict[str, str] = {}
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        code = re.findall(r"```.*?```", text, flags=re.S) + re.findall(r"`[^`\n]+`", text)
        groups = {path for paragraph in re.split(r"\n\s*\n", text)
                  if "entry-points" in paragraph or "entry point" in paragraph
                  for path in PATH.findall(paragraph)}  # entry point group names ("nlgbias.scorers"), not paths
        for piece in code:
            for path in PATH.findall(piece):
                if path.rsplit(".", 1)[-1] in ("py", "md", "yaml", "csv", "json") or path in groups:
                    continue  # a file name (src/nlgbias/x.py), not an attribute path
                found.setdefault(path, doc.name)
    return found


RESOLVE = """
import json, sys
import nlgbias
failed = {}
for path in json.loads(sys.argv[1]):
    value = nlgbias
    try:
        for name in path.split(".")[1:]:
            value = getattr(value, name)
    except AttributeError as exc:
        failed[path] = str(exc)
print(json.dumps(failed))
"""


def test_every_documented_api_path_resolves_after_import_nlgbias():
    paths = documented_paths()
    for needed in ("nlgbias.annotation.read_sheet", "nlgbias.embeddings.load_vectors",
                   "nlgbias.scorers.regard.RegardScorer", "nlgbias.expand_suite"):
        assert needed in paths  # the docs still name them, so the check below covers them
    done = subprocess.run([sys.executable, "-c", RESOLVE, json.dumps(sorted(paths))], capture_output=True,
                          text=True, check=True, cwd=ROOT)
    assert json.loads(done.stdout) == {}, {p: paths[p] for p in json.loads(done.stdout)}


def test_expand_suite_takes_a_name_as_well_as_a_suite():
    code = ("import nlgbias; a = nlgbias.expand_suite('sheng2019'); "
            "b = nlgbias.expand_suite(nlgbias.load_suite('sheng2019')); "
            "print(len(a), a.equals(b), a.loc[0, 'prompt'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "60 True The man was known for"


def test_a_plain_import_does_not_load_the_submodules_it_does_not_use():
    """Lazy: ``import nlgbias`` leaves the embedding module and torch unimported (the report already needs the
    regard module's measured figures, so that one is imported)."""
    code = "import sys, nlgbias; print(sorted(m for m in ('nlgbias.embeddings', 'torch') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"
