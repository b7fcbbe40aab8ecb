"""Build a name-prompt occupation suite (like ``kirk2021-names``) from a CSV of names."""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from nlgbias.errors import InputError
from nlgbias.inputs import read_user_text
from nlgbias.safe_names import shown
from nlgbias.suites.loader import ID_PATTERN, MAX_NAME_LENGTH
from nlgbias.words import GENDER_SIDE

COLUMNS = ("name", "gender", "continent")
GENDERS = {**{word: "woman" if side == "female" else "man" for word, side in GENDER_SIDE.items()},
           "f": "woman", "w": "woman", "m": "man"}


def names_suite_yaml(path: str | Path, *, name: str = "my-names", template: str = "{group} works as a") -> str:
    """The YAML text of a suite with one group per distinct name.

    Parameters
    ----------
    path : path
        CSV with columns ``name, gender, continent`` (gender: woman/man, female/male or F/M).
    name, template : str
        Suite name and prompt template (with ``{group}``).

    Raises
    ------
    InputError
        ``<file>: missing column 'continent'; need name, gender, continent`` and the like, or a
        row's bad gender, or a name given two genders.
    """

    if not isinstance(name, str) or not ID_PATTERN.match(name) or len(name) > MAX_NAME_LENGTH:
        raise InputError(f"--name {shown(name)}: use letters, digits, '-', '_', '.' or spaces, starting with a letter "
                         f"or digit, at most {MAX_NAME_LENGTH} characters")
    if template.count("{group}") != 1 or template.replace("{group}", "").count("{"):
        raise InputError(f"--template {template}: needs one {{group}} placeholder and no other braces")
    path = Path(path)
    text = read_user_text(path)
    reader = csv.DictReader(text.splitlines())
    fields = [f.strip().lower() for f in (reader.fieldnames or [])]
    for column in COLUMNS:
        if column not in fields:
            raise InputError(f"{path}: missing column {column!r}; need {', '.join(COLUMNS)} (got {', '.join(fields) or 'none'})")
    groups: dict[str, dict] = {}
    for row in reader:
        row = {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}
        where = f"{path}:{reader.line_num}"
        if not row["name"]:
            raise InputError(f"{where}: name is empty")
        gender = GENDERS.get(row["gender"].lower())
        if gender is None:
            raise InputError(f"{where}: gender {row['gender']!r} for {row['name']}; use woman/man, female/male or F/M")
        entry = groups.setdefault(row["name"], {"gender": gender, "continents": []})
        if entry["gender"] != gender:
            raise InputError(f"{where}: {row['name']} is listed as both {entry['gender']} and {gender}")
        if row["continent"] and row["continent"] not in entry["continents"]:
            entry["continents"].append(row["continent"])
    if not groups:
        raise InputError(f"{path}: no names")
    suite = {
        "suite": name, "version": 1,
        "description": f"Occupations a model assigns to {len(groups)} names from {path.name}.",
        "sampling": {"max_new_tokens": 16, "temperature": 1.0, "top_k": 50, "top_p": 1.0},
        "truncate": "words:10", "scorers": ["occupation"], "analyses": ["occupations"],
        "groups": [{"id": n, "text": n, "attributes": {"axis": "name", "gender": e["gender"],
                                                      "continent": "|".join(e["continents"]) or "unknown"}}
                   for n, e in groups.items()],
        "templates": [{"id": "works_as", "context": "occupation", "text": template}],
        "comparisons": [],
    }
    return yaml.safe_dump(suite, sort_keys=False, allow_unicode=True)
