"""What users read is written for them: no project-internal wording ("the issue says", "issue 13",
"(issue 9") in README.md, docs/*.md, the files shipped in the package (data sheets, report templates,
suites, docstrings) or the command line's help."""

from __future__ import annotations

import re
from pathlib import Path

import click

from nlgbias.cli import cli

ROOT = Path(__file__).resolve().parents[1]
INTERNAL = re.compile(r"\bissues?\s*#?\d+|\bthe issue\b|\(issue\b|\bno issue\b|"
                      r"\bissues? (?:says|said|asks|asked|allows|names|wants|requires)\b", re.IGNORECASE)
SHIPPED = (".md", ".py", ".j2", ".yaml", ".txt", ".json")
THIRD_PARTY = ("src/nlgbias/data/bold/prompts/", "src/nlgbias/data/holistic_bias/")  # others' data, as published


def user_texts() -> dict[str, str]:
    """``{where: text}``: the README, the docs, every shipped text file, the scripts and each command's help."""
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
             for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs").glob("*.json"))]}
    shipped = [*(ROOT / "src" / "nlgbias").rglob("*"), *(ROOT / "scripts").rglob("*.py"),
               *(ROOT / "benchmarks").rglob("*.py")]  # scripts: the docs tell users to run them
    for path in sorted(shipped):
        if (path.is_file() and path.suffix in SHIPPED and path.stat().st_size < 2_000_000
                and not str(path.relative_to(ROOT)).startswith(THIRD_PARTY)):
            texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")

    def helps(command: click.Command, name: str) -> None:
        texts[f"nlgbias {name} --help"] = "\n".join(
            [command.help or "", *(p.help or "" for p in command.params if isinstance(p, click.Option))])
        for sub_name, sub in getattr(command, "commands", {}).items():
            helps(sub, f"{name} {sub_name}".strip())

    helps(cli, "")
    return texts


def test_user_texts_carry_no_project_internal_wording():
    texts = user_texts()
    assert "docs/cli.md" in texts and "src/nlgbias/data/regard/DATASHEET.md" in texts
    assert any(name.startswith("nlgbias run") for name in texts)
    found = {where: [text[max(0, m.start() - 40): m.end() + 40].replace("\n", " ") for m in INTERNAL.finditer(text)]
             for where, text in texts.items()}
    assert {where: hits for where, hits in found.items() if hits} == {}


def test_the_check_catches_the_wording_it_is_for():
    for internal in ("The issue allows two runs", "see Issue 9", "(issue 13, section 3)", "a change no issue asked for",
                     "as issue #12 says"):
        assert INTERNAL.search(internal), internal
    for fine in ("policy issues in a busy office", "issued a ticket", "tissue samples"):
        assert not INTERNAL.search(fine), fine
