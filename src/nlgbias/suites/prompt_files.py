"""Suites whose prompts come from a prompt file instead of templates x groups (e.g. BOLD).

A prompt folder holds one JSON file per context (``<context>_prompt.json`` or ``<context>.json``),
each a mapping ``group -> entity -> [prompt, ...]``: the layout of the BOLD prompts (Dhamala et al.
2021), where the context is a domain (gender, race, ...), the group a subgroup (American_actresses)
and the entity the Wikipedia page a prompt was cut from.  Each prompt's trailing whitespace is
stripped (a tokenizer would otherwise make the trailing space a token of its own).

A run draws a stratified sample: ``per_group`` prompts from every group, without replacement, from
a random generator seeded by ``(seed, context, group)`` alone, so a group's sample does not change
when other groups are added; ``per_group = "all"`` takes every prompt.  The sample size and seed
are part of the suite (its ``probe`` entry), hence of its content hash, the run id and the manifest.
"""

from __future__ import annotations

import hashlib
import json
import random
import stat
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from nlgbias.errors import InputError, SuiteError, option
from nlgbias.resources import data_path

if TYPE_CHECKING:
    from nlgbias.suites.loader import Suite

ALL = "all"
MAX_PROMPT_FILE_BYTES = 20_000_000  # one prompt file (BOLD's largest, profession, is 0.5 MB)
MAX_PROMPTS = 100_000  # a suite's prompts: templates x groups, or those a run samples from a prompt folder
FILE_COLUMNS = ["context", "group", "entity", "index", "prompt"]


def prompt_folder(source: str, relative_to: Path | None = None) -> Path | None:
    """The folder a suite's ``prompt_file.source`` names: next to the suite file, as given, or
    under the package's data (``bold/prompts``); None where none exists."""
    candidates = ([relative_to / source] if relative_to is not None else []) + [Path(source), data_path(source)]
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    return None


def _context(path: Path) -> str:
    return path.stem.removesuffix("_prompt")


def _raw(path: Path) -> bytes:
    """The bytes of one prompt file: a regular file (a FIFO, a device or a folder named ``*.json`` would
    block or fail) of at most :data:`MAX_PROMPT_FILE_BYTES`, checked before it is opened."""
    try:
        status = path.stat()
    except RuntimeError:
        raise SuiteError(f"{path}: a symbolic link that loops") from None
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(status.st_mode):
        raise SuiteError(f"{path}: not a regular file; a prompt folder holds JSON prompt files only")
    if status.st_size > MAX_PROMPT_FILE_BYTES:
        raise SuiteError(f"{path}: {status.st_size / 1e6:.1f} MB; a prompt file may hold at most "
                         f"{MAX_PROMPT_FILE_BYTES / 1e6:.0f} MB (BOLD's largest is 0.5 MB)")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read ({exc.strerror or exc})") from None


@lru_cache(maxsize=8)
def _read(folder: str) -> tuple[pd.DataFrame, str]:
    rows: list[tuple] = []
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.json")):
        raw = _raw(path)
        digest.update(path.name.encode() + b"\0" + raw)
        try:
            data = json.loads(raw.decode("utf-8"))
        except RecursionError:
            raise SuiteError(f"{path}: nested too deeply to be a prompt file (group -> entity -> list of "
                             f"prompts)") from None
        except UnicodeDecodeError:
            raise SuiteError(f"{path}: not a JSON prompt file (not UTF-8 text)") from None
        except ValueError as exc:
            raise SuiteError(f"{path}: not a JSON prompt file ({' '.join(str(exc).split())[:100]})") from None
        before = len(rows)
        if not isinstance(data, dict):
            raise SuiteError(f"{path}: a prompt file maps group -> entity -> list of prompts")
        for group, entities in data.items():
            if not isinstance(entities, dict):
                raise SuiteError(f"{path}: {group}: must map entity -> list of prompts")
            for entity, prompts in entities.items():
                if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
                    raise SuiteError(f"{path}: {group}: {entity}: must be a list of prompts")
                for index, prompt in enumerate(prompts):
                    if prompt.strip():
                        rows.append((_context(path), str(group), str(entity), index, prompt.rstrip()))
        if len(rows) == before:
            raise SuiteError(f"{path}: no prompts (a prompt file maps group -> entity -> list of prompts, and "
                             f"empty prompts are left out); fill it or remove it from the folder")
    return pd.DataFrame(rows, columns=FILE_COLUMNS), digest.hexdigest()


def read_prompt_folder(folder: Path) -> tuple[pd.DataFrame, str]:
    """Every prompt of ``folder``: ``context, group, entity, index, prompt`` (file order), and a
    sha256 over the files' names and bytes."""
    table, digest = _read(str(folder))
    return table.copy(), digest


def check_per_group(value) -> int | str:
    """``--prompts-per-group``: a whole number of at least 1, or ``all``."""
    if isinstance(value, str) and value.strip().lower() == ALL:
        return ALL
    try:
        number = int(str(value).strip()) if not isinstance(value, int) or isinstance(value, bool) else value
    except ValueError:
        number = 0
    if isinstance(number, bool) or number < 1:
        raise InputError(f"{option('--prompts-per-group', value)}: must be a whole number of at least 1, or all")
    return number


def sampled_count(table: pd.DataFrame, per_group: int | str) -> int:
    """How many prompts :func:`sample_prompts` takes from ``table`` with ``per_group``."""
    if per_group == ALL:
        return int(len(table))
    return int(table.groupby(["context", "group"], sort=False).size().clip(upper=int(per_group)).sum())


def sample_prompts(table: pd.DataFrame, per_group: int | str, seed: int) -> pd.DataFrame:
    """``per_group`` prompts of each (context, group) of ``table``, seeded by ``(seed, context, group)``;
    rows stay in file order.  ``all``: the table as it is.

    >>> table = pd.DataFrame({"context": ["d"] * 4 + ["e"], "group": ["a", "a", "a", "b", "c"],
    ...                       "entity": list("vwxyz"), "index": [0] * 5, "prompt": list("pqrst")})
    >>> sample_prompts(table, 2, seed=0).groupby("group").size().to_dict()
    {'a': 2, 'b': 1, 'c': 1}
    """
    if per_group == ALL:
        return table.reset_index(drop=True)
    keep: list[int] = []
    for (context, group), rows in table.groupby(["context", "group"], sort=False):
        chosen = random.Random(f"{seed}|{context}|{group}").sample(list(rows.index), min(int(per_group), len(rows)))
        keep.extend(chosen)
    return table.loc[sorted(keep)].reset_index(drop=True)


def with_prompt_sample(suite: Suite, per_group: int | str | None, seed: int) -> Suite:
    """``suite`` (one with a ``prompt_file``) with its sample size and seed set; its content hash
    is recomputed, so the run id and manifest record the sample."""
    source = suite.probe.get("prompt_file")
    if source is None:
        if per_group is not None:
            raise InputError(f"{option('--prompts-per-group', per_group)}: suite {suite.name} has templates, not a "
                             f"prompt file; this option is for suites such as bold")
        return suite
    chosen = check_per_group(per_group if per_group is not None else source["per_group"])
    if per_group is not None:  # the suite's own per_group was checked when it was loaded
        folder = prompt_folder(source["source"], Path(suite.path).parent if suite.path else None)
        count = sampled_count(read_prompt_folder(folder)[0], chosen) if folder is not None else 0
        if count > MAX_PROMPTS:
            raise InputError(f"{option('--prompts-per-group', per_group)}: suite {suite.name} would have {count:,} "
                             f"prompts; the limit is {MAX_PROMPTS:,} (give a number of prompts per group)")
    probe = {**suite.probe, "prompt_file": {**source, "per_group": chosen, "seed": int(seed)}}
    sampled = replace(suite, probe=probe)
    digest = hashlib.sha256(json.dumps(sampled.to_dict(), sort_keys=True).encode()).hexdigest()
    return replace(sampled, content_hash=digest)


def file_prompts(suite: Suite) -> pd.DataFrame:
    """The sampled prompts of a prompt-file suite as a prompts table (see :func:`~nlgbias.suites.expand_suite`).

    ``template_id`` is the entity, ``template`` the prompt itself, ``prompt_id``
    ``<context>|<group>|<entity>|<index>``.
    """
    source = suite.probe["prompt_file"]
    folder = prompt_folder(source["source"], Path(suite.path).parent if suite.path else None)
    if folder is None:
        raise SuiteError(f"{suite.path}: prompt_file.source: folder {source['source']!r} not found")
    table, _ = read_prompt_folder(folder)
    table = sample_prompts(table, source["per_group"], int(source.get("seed", 0)))
    axis = {g.id: g.axis for g in suite.groups}
    return pd.DataFrame({
        "prompt_id": [f"{c}|{g}|{e}|{i}" for c, g, e, i in zip(table["context"], table["group"], table["entity"],
                                                                 table["index"])],
        "suite": suite.name, "suite_version": suite.version, "template_id": table["entity"],
        "template": table["prompt"], "context": table["context"], "group": table["group"],
        "axis": table["group"].map(axis), "prompt": table["prompt"]})


def prompt_counts(suite: Suite) -> pd.DataFrame:
    """Prompts per (context, group) in the whole prompt file: ``context, group, prompts``."""
    source = suite.probe["prompt_file"]
    folder = prompt_folder(source["source"], Path(suite.path).parent if suite.path else None)
    if folder is None:
        raise SuiteError(f"{suite.path}: prompt_file.source: folder {source['source']!r} not found")
    table, _ = read_prompt_folder(folder)
    return table.groupby(["context", "group"], sort=False).size().rename("prompts").reset_index()


__all__ = ["ALL", "MAX_PROMPTS", "MAX_PROMPT_FILE_BYTES", "check_per_group", "file_prompts", "prompt_counts",
           "prompt_folder", "read_prompt_folder",
           "sample_prompts", "sampled_count", "with_prompt_sample"]
