"""One report over several finished runs: ``nlgbias report RUN [RUN ...] --out DIR``.

Runs are read back from their folders (samples, manifest; nothing is generated or scored
again) and their analyses are computed again, so ``min_n`` and ``confidence`` can change.
The rule for putting runs together:

- Runs whose *settings* agree (suite name, version and content; decoding, seed, dtype and the
  cut of each continuation; scorer names and versions; bootstrap replicates; and
  ``confidence``/``min_n`` unless given here) form one *part*.  A part is analysed as one run
  with all its models: its tables are those a single run with the same models and settings
  writes, row for row (shares and gaps are seeded per cell, so a cell's numbers do not depend on
  which run it came from), and model gaps and gap differences compare models across the runs.
- Samples per prompt may differ within a part (a server model at 10 beside a local one at 100):
  every share, CI, test and MDE uses its own cells' n, which the exact tests and the bootstrap
  allow.  The part's manifest lists each model's samples per prompt under ``unequal_samples``
  and the report says so.
- Runs whose settings differ are never pooled: each part gets its own tables and report
  section, and a settings table shows every run side by side, with the settings that differ
  between runs marked.

Inputs in, tables out: :func:`combine_runs` returns the parts (tables and manifest of each)
and the settings table; :func:`report_runs` writes them (``report.html``, ``runs.csv``,
``manifest.json``, and ``metrics.json`` plus one CSV per table: in ``DIR`` for one part, in
``DIR/part-N`` for several).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from nlgbias.analyses import AnalysisOptions, RunTables, analyses_for, check_analyses, report_sections, run_analyses
from nlgbias.defaults import INFERENCE_UNIT
from nlgbias.errors import InputError, option
from nlgbias.metrics.results import Results, named_results, rename_models
from nlgbias.models.names import model_names
from nlgbias.pipeline.generation import scored_long
from nlgbias.report.folder import read_run_folder
from nlgbias.store.lock import refuse_if_held
from nlgbias.report.html import write_runs_report
from nlgbias.store import write_csv, write_json
from nlgbias.store.manifest import DECODING, SETTINGS
from nlgbias.suites import Suite
from nlgbias.validate import at_least, check_out_folder, within

UNPOOLED = tuple(name for name in SETTINGS if name != "samples_per_prompt")  # settings that must agree to pool


@dataclass(frozen=True)
class Part:
    """Runs with the same settings, analysed together as one run.

    ``folders``: the run folders, in the order given; ``results``: the tables; ``samples``: the
    runs' samples, one after the other; ``manifest``: the first run's, with the models, counts,
    run ids and statistics of the part.
    """

    folders: tuple[Path, ...]
    results: Results
    samples: pd.DataFrame
    manifest: dict


@dataclass(frozen=True)
class Combined:
    """What :func:`combine_runs` returns: the parts and the settings of each run (``runs``: one row
    per run with ``folder, run_id, part, models`` and the :data:`~nlgbias.store.manifest.SETTINGS` columns)."""

    parts: tuple[Part, ...]
    runs: pd.DataFrame
    title: str | None = None


def combine_runs(runs: Sequence[str | Path], *, min_n: int | None = None, confidence: float | None = None,
                 title: str | None = None) -> Combined:
    """Read finished runs and analyse them together, part by part (see the module docstring).

    Parameters
    ----------
    runs : sequence of path
        Run folders (the ``--out`` of ``nlgbias run``), each at most once.
    min_n : int, optional
        Cells with fewer samples are flagged; default: each run's own.
    confidence : float, optional
        Level of every confidence interval; default: each run's own.
    title : str, optional
        The report's heading.

    Returns
    -------
    Combined

    Raises
    ------
    InputError
        A folder that is not a finished run, a run given twice, a probability (pronoun) run, the
        same model twice in runs with the same settings, a bad ``min_n`` or ``confidence``.
    """
    runs = [runs] if isinstance(runs, (str, Path)) else list(runs)
    if not runs:
        raise InputError("runs: give at least one run folder")
    if min_n is not None:
        at_least(min_n, 1, "min_n")
    if confidence is not None:
        within(confidence, 0, 1, "confidence", example="0.95")
    if title is not None and not str(title).strip():
        raise InputError(f"{option('--title', repr(title))}: is empty; give a heading or leave the option out")
    loaded = _load(runs)
    rows = [_settings(folder, manifest, min_n=min_n, confidence=confidence) for folder, _, _, manifest in loaded]
    keys: list[str] = []
    for row in rows:
        key = json.dumps({name: row[name] for name in UNPOOLED}, sort_keys=True, default=str)
        if key not in keys:
            keys.append(key)
        row["part"] = keys.index(key) + 1
    parts = []
    for number in range(1, len(keys) + 1):
        members = [(entry, row) for entry, row in zip(loaded, rows) if row["part"] == number]
        parts.append(_analyse(members))
    table = pd.DataFrame(rows)[["folder", "run_id", "part", "models", *SETTINGS]]
    return Combined(tuple(parts), table, None if title is None else str(title))


def _load(runs: Sequence[str | Path]) -> list[tuple[Path, Results, pd.DataFrame, dict]]:
    seen: dict[Path, Path] = {}
    ids: dict[str, Path] = {}
    loaded = []
    for given in runs:
        folder = Path(given)
        if not folder.is_dir():
            raise InputError(f"{folder}: no such run folder" if not folder.exists() else f"{folder}: not a folder; "
                             f"give the --out folder of `nlgbias run`")
        real = folder.resolve()
        if real in seen:
            raise InputError(f"{folder}: given twice (as {seen[real]} too); give each run once")
        seen[real] = folder
        refuse_if_held(folder)  # a run still writing it: its files may be half this run's, half the last's
        results, samples, manifest = read_run_folder(folder)
        if manifest["run_id"] in ids:
            raise InputError(f"{folder}: the same run as {ids[manifest['run_id']]} (run id {manifest['run_id']}); "
                             f"give each run once")
        ids[manifest["run_id"]] = folder
        if manifest.get("sampling", {}).get("sampled") is False:
            raise InputError(f"{folder}: a next-word probability run (suite {manifest['suite'].get('name')}); "
                             f"reports over several runs take text-generation runs (re-render it alone: "
                             f"nlgbias report {folder})")
        loaded.append((folder, results, samples, manifest))
    return loaded


def _settings(folder: Path, manifest: dict, *, min_n: int | None, confidence: float | None) -> dict:
    suite, sampling, statistics = manifest["suite"], manifest.get("sampling", {}), manifest["statistics"]
    return {
        "folder": str(folder), "run_id": manifest["run_id"],
        "models": ", ".join(m["model"] for m in manifest["models"]),
        "suite": f"{suite.get('name')} v{suite.get('version')} ({str(suite.get('content_hash', ''))[:12]})",
        **{name: sampling.get(name) for name in DECODING},
        "scorers": ", ".join(f"{s['name']} {s['version']}" for s in manifest.get("scorers", [])),
        "n_boot": statistics.get("n_boot"),
        "confidence": confidence if confidence is not None else statistics.get("confidence"),
        "min_n": min_n if min_n is not None else statistics.get("min_n"),
        "unit": statistics.get("unit", INFERENCE_UNIT),
    }


def _full_names(samples: pd.DataFrame, manifest: dict) -> pd.DataFrame:
    """``samples`` of one run with its display names (``model``) mapped back to the full ``--model``
    values that seed the statistics (runs written before display names carry the full value)."""
    full = {m.get("name", m["model"]): m["model"] for m in manifest["models"]}
    return samples.assign(model=samples["model"].map(lambda name: full.get(name, name)))


def _analyse(members) -> Part:
    """One part: ``members`` are ``(loaded run, its settings row)`` pairs, the settings already holding the
    ``min_n`` and ``confidence`` given here (or each run's own)."""
    (_, _, _, manifest), settings = members[0]
    folders = [entry[0] for entry, _ in members]
    owner: dict[str, Path] = {}
    for (folder, _, _, run_manifest), _ in members:
        for model in (m["model"] for m in run_manifest["models"]):
            if model in owner:
                raise InputError(f"{folder}: model {model} is also in {owner[model]}, with the same settings; "
                                 f"give one of the two runs")
            owner[model] = folder
    samples = pd.concat([_full_names(entry[2], entry[3]) for entry, _ in members], ignore_index=True)
    try:
        suite = Suite.from_dict(manifest["suite"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{folders[0] / 'manifest.json'}: lacks the resolved suite; rerun the run to rebuild "
                         f"it") from None
    check_analyses(suite)
    scorers = [s["name"] for s in manifest.get("scorers", [])]
    models = list(owner)
    statistics = manifest["statistics"]
    options = AnalysisOptions(seed=int(manifest["sampling"]["seed"]), n_boot=int(statistics["n_boot"]),
                              confidence=float(settings["confidence"]), min_n=int(settings["min_n"]),
                              unit=str(settings["unit"]), bls_mapping=statistics.get("bls_mapping"))
    tables = RunTables(samples, scored_long(samples, scorers), suite)
    names = model_names(models)  # unique over all the part's runs, as one run of them all would name them
    infos = [{**m, "name": names[m["model"]]} for entry, _ in members for m in entry[3]["models"]]
    results = named_results(run_analyses(analyses_for(suite, scorers, len(models)), tables, options), names, infos)
    samples = rename_models(samples, names)
    part_manifest = {
        **manifest,
        "run_id": " + ".join(entry[3]["run_id"] for entry, _ in members),
        "started_at": min(entry[3]["started_at"] for entry, _ in members),
        "finished_at": max(entry[3]["finished_at"] for entry, _ in members),
        "models": infos,
        "scorers_unavailable": [u for entry, _ in members for u in entry[3].get("scorers_unavailable", [])],
        "statistics": {**statistics, "analyses": list(results.meta.get("analyses", [])),
                       "confidence": options.confidence, "min_n": options.min_n, "unit": options.unit,
                       **{k: results.meta[k] for k in ("ci", "test", "correction") if k in results.meta}},
        "counts": {"samples": int(len(samples)), "empty_continuations": int(samples["is_empty"].sum()),
                   "prompts": int(samples["prompt_id"].nunique()), "models": len(models)},
        "runs": [{"folder": str(entry[0]), "run_id": entry[3]["run_id"]} for entry, _ in members],
    }
    for key in ("command", "timings_s", "generated_now", "peak_memory_gb", "outputs", "output_sha256", "unequal_samples"):
        part_manifest.pop(key, None)
    per_model = [{"model": names[m["model"]], "run_id": entry[3]["run_id"],
                  "samples_per_prompt": entry[3]["sampling"].get("samples_per_prompt")}
                 for entry, _ in members for m in entry[3]["models"]]
    if len({row["samples_per_prompt"] for row in per_model}) > 1:
        part_manifest["unequal_samples"] = per_model
    return Part(tuple(folders), results, samples, part_manifest)


def report_runs(runs: Sequence[str | Path], *, out: str | Path, min_n: int | None = None,
                confidence: float | None = None, title: str | None = None, check=None) -> Combined:
    """Write one report over several runs to ``out`` (see the module docstring); return what it shows.

    ``check(combined)``, if given, runs before anything is written (e.g. an export's row filter,
    :meth:`nlgbias.report.paper_tables.RowFilter.check` on each part), so a bad option writes nothing.

    ``out`` may not be, or lie inside, one of the run folders: a run's files are its own.
    """
    out = check_out_folder(out)  # given, writable: checked before any run is read
    runs = [runs] if isinstance(runs, (str, Path)) else list(runs)
    for given in runs:
        folder = Path(given)
        if folder.is_dir() and (out.resolve() == folder.resolve() or folder.resolve() in out.resolve().parents):
            raise InputError(f"{option('--out', str(out))}: inside the run folder {folder}; a run's files are its "
                             f"own: give a folder outside it")
    combined = combine_runs(runs, min_n=min_n, confidence=confidence, title=title)
    if check is not None:
        check(combined)
    out.mkdir(parents=True, exist_ok=True)
    for number, part in enumerate(combined.parts, start=1):
        folder = out if len(combined.parts) == 1 else out / f"part-{number}"
        folder.mkdir(exist_ok=True)
        part.results.write(folder)
    write_csv(out / "runs.csv", combined.runs)
    write_json(out / "manifest.json", {"title": combined.title, "runs": combined.runs.to_dict(orient="records"),
                                       "parts": [p.manifest for p in combined.parts]})
    write_runs_report(out / "report.html", combined, sections=report_sections())
    return combined


__all__ = ["Combined", "Part", "combine_runs", "report_runs"]
