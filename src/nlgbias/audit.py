"""Run an audit: suites -> models -> scorers -> metrics -> report, with the store underneath.

``run()`` is the Python face of ``nlgbias run``.  Each stage is a function from table to
table; this module only wires them together and decides what is already done:

1. load the suite and expand it into prompts; resolve every model (cheap, no weights);
2. plan every sample and generate the batches the store lacks (one transaction per batch);
3. cut each continuation by the suite's rule, mask the group, score texts the store lacks;
4. compute shares, gaps and adjusted p-values;
5. write samples, metrics, report and manifest (the manifest last: it marks the outputs as
   complete for this run id; a rerun rebuilds only missing files).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from nlgbias.analyses import REQUIRES, AnalysisOptions, run_analyses
from nlgbias.errors import InputError, ScorerUnavailable, StoreError
from nlgbias.metrics import Results
from nlgbias.models import BackendOptions, DEFAULT_MODEL, load_backend, resolve_model
from nlgbias.models.plan import plan_samples
from nlgbias.progress import Progress
from nlgbias.sampling import SamplingParams
from nlgbias.scorers import get_scorer
from nlgbias.store import RunStore, write_json, write_jsonl, write_parquet
from nlgbias.store.cache import fill_generations, fill_scores, text_hash
from nlgbias.suites import Suite, attribute_names, expand_suite, load_suite
from nlgbias.text import mask_group, truncate

FIRST_OUTPUTS = ("samples.parquet", "samples.jsonl", "metrics.json")
LAST_OUTPUTS = ("report.html", "manifest.json")


def output_names(results: Results) -> list[str]:
    """Files a run writes: samples, metrics.json, one CSV per metric table, report, manifest (last)."""
    return [*FIRST_OUTPUTS, *(f"{name}.csv" for name in results.tables), *LAST_OUTPUTS]
LIBRARIES = ("torch", "transformers", "gguf", "numpy", "pandas", "pyarrow", "scipy", "statsmodels",
             "vaderSentiment", "textblob", "jinja2", "click")


@dataclass
class RunResult:
    """What a run produced: where, the samples table, the metrics, the manifest, stage times."""

    out: Path
    run_id: str
    samples: pd.DataFrame
    results: Results
    manifest: dict
    generated: int
    rebuilt: list[str]
    timings: dict[str, float]


def run(suite: str | Suite = "sheng2019", *, models: Sequence[str] = (DEFAULT_MODEL,), samples: int = 100,
        seed: int = 0, out: str | Path = "runs/nlgbias", batch_size: int = 120,
        max_new_tokens: int | None = None, temperature: float | None = None, top_k: int | None = None,
        top_p: float | None = None, scorers: Sequence[str] | None = None,
        backend_options: BackendOptions | None = None, n_boot: int = 2000, confidence: float = 0.95,
        min_n: int = 30, quiet: bool = False, command: Sequence[str] | None = None,
        bls_mapping: str | Path | None = None) -> RunResult:
    """Run (or resume, or rebuild) an audit and write its outputs to ``out``.

    Parameters
    ----------
    suite : str or Suite, default="sheng2019"
        Built-in suite name, YAML path, or a loaded suite.
    models : sequence of str
        ``--model`` values (aliases, paths, hub ids, ``openai:NAME``); compared side by side.
    samples : int, default=100
        Samples per prompt and model.
    seed : int, default=0
    out : path
        Output folder; holds the run store, so rerunning the same call resumes it.
    batch_size : int, default=120
        Samples per generation batch (and per store transaction).
    max_new_tokens, temperature, top_k, top_p : optional
        Override the suite's sampling defaults.
    scorers : sequence of str, optional
        Default: the suite's scorers.  Unavailable ones are reported, never faked.
    backend_options : BackendOptions, optional
        dtype, device, server URL, key variable, concurrency, timeout, retries.
    n_boot, confidence, min_n : statistics settings (see :func:`nlgbias.metrics.compute_metrics`).
    quiet : bool
        No progress bars or notes.
    command : sequence of str, optional
        The command line, recorded in the manifest.
    bls_mapping : path, optional
        Your own job -> BLS title mapping for the occupation analysis (checked before anything runs).

    Returns
    -------
    RunResult
    """
    clock = Stopwatch()
    progress = Progress(quiet=quiet)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise InputError(f"--samples {samples}: must be a whole number of at least 1")
    if batch_size < 1:
        raise InputError(f"--batch-size {batch_size}: must be at least 1")
    if not models:
        raise InputError("--model: give at least one model")
    if len(set(models)) != len(models):
        raise InputError(f"--model: the same model is given twice ({', '.join(models)})")
    suite = suite if isinstance(suite, Suite) else load_suite(suite)
    options = backend_options or BackendOptions()
    if suite.kind == "pronoun":
        refs = [resolve_model(m, options) for m in models]
        return _run_pronoun(suite, refs, options, out=prepare_out(out), seed=seed, batch_size=batch_size,
                            analysis=AnalysisOptions(seed=seed, n_boot=n_boot, confidence=confidence, min_n=min_n),
                            progress=progress, command=command, clock=clock)
    params = _params(suite, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p)
    refs = [resolve_model(m, options) for m in models]
    scorer_names = list(scorers) if scorers else list(suite.scorers)
    if bls_mapping is not None:
        check_bls_mapping(bls_mapping)
    for analysis in suite.analyses:
        needed = REQUIRES.get(analysis)
        if needed and needed not in scorer_names:
            raise InputError(f"--scorer: the {analysis} analysis of suite {suite.name} needs the {needed} scorer; "
                             f"add --scorer {needed}")
    active, unavailable = _load_scorers(scorer_names)
    for missing in unavailable:
        progress.note(f"Note: {missing['reason']}")
    out = prepare_out(out)

    prompts = expand_suite(suite)
    plan = plan_samples(prompts, refs, samples=samples, seed=seed, params=params, dtype=options.dtype)
    config = {
        "suite": {"name": suite.name, "version": suite.version, "content_hash": suite.content_hash},
        "models": [{"model": r.model_id, "fingerprint": r.fingerprint} for r in refs],
        "sampling": {**params.to_dict(), "samples_per_prompt": samples, "seed": seed, "dtype": options.dtype},
        "truncate": suite.truncate,
        "scorers": {s.name: s.version for s in active},
        "statistics": {"n_boot": n_boot, "confidence": confidence, "min_n": min_n},
    }
    run_id = "r-" + hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]

    clock.lap("setup")
    with RunStore(out / "store.sqlite") as store:
        started = store.start_run(run_id, config)
        by_id = {r.model_id: r for r in refs}

        def load(model_id: str):
            progress.note(f"loading {model_id} ...")
            backend = load_backend(by_id[model_id], options)
            store.save_model_info(model_id, by_id[model_id].fingerprint, backend.info)
            return backend

        generated = fill_generations(plan, store, load=load, params=params, batch_size=batch_size,
                                     progress=lambda m, n: progress.bar(f"generate {m}", n, "sample"))
        clock.lap("generate")
        table = build_samples(plan, prompts, store, suite, run_id)
        long_rows = []
        for scorer in active:
            scored = fill_scores(table["scored_text"], scorer, store,
                                 progress=lambda name, n: progress.bar(f"score {name}", n, "text"))
            table = attach_scores(table, scored, scorer.name)
            long_rows.append(table[["generation_id", "model", "context", "group", "is_empty"]]
                             .assign(scorer=scorer.name, label=table[f"{scorer.name}_label"]))
        clock.lap("score")
        finished = store.finish_run(run_id)
        model_infos = [{"model": r.model_id, "backend": r.backend, "fingerprint": r.fingerprint,
                        **(store.model_info(r.model_id, r.fingerprint) or r.info)} for r in refs]

    scored_long = pd.concat(long_rows, ignore_index=True) if long_rows else pd.DataFrame(
        columns=["generation_id", "model", "context", "group", "is_empty", "scorer", "label"])
    results = run_analyses(suite.analyses, table, scored_long, suite,
                           AnalysisOptions(seed=seed, n_boot=n_boot, confidence=confidence, min_n=min_n,
                                           bls_mapping=None if bls_mapping is None else str(bls_mapping)))
    clock.lap("metrics")
    manifest = build_manifest(run_id=run_id, suite=suite, models=model_infos, params=params, samples=samples,
                              seed=seed, batch_size=batch_size, options=options, scorers=active,
                              unavailable=unavailable, results=results, table=table, started=started,
                              finished=finished, command=command, n_boot=n_boot, confidence=confidence,
                              min_n=min_n)
    manifest["timings_s"] = {name: round(seconds, 3) for name, seconds in clock.laps.items()}  # this invocation
    manifest["peak_memory_gb"] = round(peak_memory_gb(), 3)
    rebuilt = write_outputs(out, run_id, table, results, manifest)
    clock.lap("outputs")
    laps = clock.laps
    progress.note(f"run {run_id}: {len(table)} samples ({generated} generated now) -> {out}; "
                  f"generation {laps['generate']:.0f} s, everything else "
                  f"{sum(laps.values()) - laps['generate']:.0f} s, peak memory {peak_memory_gb():.2f} GB")
    return RunResult(out, run_id, table, results, manifest, generated, rebuilt, clock.laps)


def peak_memory_gb() -> float:
    """This process's peak resident memory so far (GB; Linux reports KiB, macOS bytes)."""
    import resource  # Unix only

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 ** (3 if sys.platform == "darwin" else 2)


class Stopwatch:
    """Seconds spent in each stage (model loading counts as generation)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._last
        self._last = now


def _run_pronoun(suite: Suite, refs, options: BackendOptions, *, out: Path, seed: int, batch_size: int,
                 analysis: AnalysisOptions, progress: Progress, command, clock: "Stopwatch") -> RunResult:
    """The pronoun-probability flow (``kind: pronoun`` suites); see :mod:`nlgbias.pronoun_run`."""
    from nlgbias.pronoun_run import default_table, probability_table, pronoun_prompts, pronoun_results, saliency_table

    prompts = pronoun_prompts(suite)
    config = {"suite": {"name": suite.name, "version": suite.version, "content_hash": suite.content_hash},
              "models": [{"model": r.model_id, "fingerprint": r.fingerprint} for r in refs],
              "probe": {k: v for k, v in suite.probe.items() if k != "prompt_sets"},
              "statistics": {"n_boot": analysis.n_boot, "confidence": analysis.confidence, "seed": seed}}
    run_id = "r-" + hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
    clock.lap("setup")
    by_id = {r.model_id: r for r in refs}
    with RunStore(out / "store.sqlite") as store:
        started = store.start_run(run_id, config)

        def load(model_id: str):
            progress.note(f"loading {model_id} ...")
            backend = load_backend(by_id[model_id], options)
            store.save_model_info(model_id, by_id[model_id].fingerprint, backend.info)
            return backend

        def bar(desc, n):
            return progress.bar(desc, n, "prompt")

        continuations = list(suite.probe["continuations"])
        probs = probability_table(prompts, refs, store, load=load, continuations=continuations,
                                  batch_size=batch_size, progress=bar)
        sal = saliency_table(prompts, refs, store, load=load, per_set=suite.probe["saliency_prompts"],
                             seed=seed, progress=bar)
        default = default_table(refs, store, load=load, continuations=continuations) \
            if suite.probe["default_probe"] else pd.DataFrame()
        clock.lap("generate")
        finished = store.finish_run(run_id)
        model_infos = [{"model": r.model_id, "backend": r.backend, "fingerprint": r.fingerprint,
                        **(store.model_info(r.model_id, r.fingerprint) or r.info)} for r in refs]
    results = pronoun_results(probs, sal, default, analysis)
    clock.lap("metrics")
    table = probs.assign(run_id=run_id, suite=suite.name)
    table = table[["run_id", "model", "suite", *[c for c in table.columns if c not in ("run_id", "model", "suite")]]]
    manifest = build_manifest(run_id=run_id, suite=suite, models=model_infos, params=None, samples=None, seed=seed,
                              batch_size=batch_size, options=options, scorers=[], unavailable=[], results=results,
                              table=table, started=started, finished=finished, command=command,
                              n_boot=analysis.n_boot, confidence=analysis.confidence, min_n=analysis.min_n)
    rebuilt = write_outputs(out, run_id, table, results, manifest)
    clock.lap("outputs")
    progress.note(f"run {run_id}: {len(table)} prompt probabilities -> {out}")
    return RunResult(out, run_id, table, results, manifest, 0, rebuilt, clock.laps)


def check_bls_mapping(path: str | Path) -> None:
    """Fail fast, in one line, on a job -> BLS title mapping that would fail after generation."""
    from nlgbias.metrics.labor import us_shares_and_mapping

    us_shares_and_mapping(path)


def _params(suite: Suite, **overrides) -> SamplingParams:
    values = {**SamplingParams().to_dict(), **suite.sampling}
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SamplingParams(**values)
    except ValueError as exc:
        flag = str(exc).split()[0].replace("_", "-")
        raise InputError(f"--{flag}: {exc}") from None


def _load_scorers(names: Sequence[str]):
    active, unavailable = [], []
    for name in dict.fromkeys(names):
        try:
            active.append(get_scorer(name))
        except ScorerUnavailable as exc:
            unavailable.append({"scorer": name, "reason": str(exc)})
    return active, unavailable


def prepare_out(out: str | Path) -> Path:
    """Create the output folder, or say in one line why it cannot be used."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise StoreError(f"--out {out}: is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise StoreError(f"--out {out}: cannot create or write this folder ({exc.strerror or exc})") from None
    return out


def build_samples(plan: pd.DataFrame, prompts: pd.DataFrame, store: RunStore, suite: Suite,
                  run_id: str) -> pd.DataFrame:
    """Join the plan, its prompts and the stored continuations; add the scored text.

    Returns
    -------
    pandas.DataFrame
        One row per sample: ``run_id, model, suite, suite_version, prompt_id, template_id,
        template, context, group, axis, <attributes>, sample_idx, seed, generation_id, prompt,
        continuation, is_empty, sentence, scored_text``.
    """
    stored = store.generations(list(plan["generation_id"]))
    table = plan.merge(stored, on="generation_id", how="left", validate="one_to_one")
    if table["continuation"].isna().any():
        raise StoreError(f"{store.path}: {int(table['continuation'].isna().sum())} planned samples are missing after generation")
    table = table.merge(prompts.drop(columns=["prompt"]), on="prompt_id", how="left", validate="many_to_one")
    group_text = {g.id: g.text for g in suite.groups}
    table["is_empty"] = table["continuation"].str.strip() == ""
    table["sentence"] = [truncate(p, c, suite.truncate) for p, c in zip(table["prompt"], table["continuation"])]
    table["scored_text"] = [mask_group(s, group_text[g]) for s, g in zip(table["sentence"], table["group"])]
    table.insert(0, "run_id", run_id)
    columns = ["run_id", "model", "suite", "suite_version", "prompt_id", "template_id", "template", "context",
               "group", "axis", *attribute_names(suite), "sample_idx", "seed", "generation_id", "prompt",
               "continuation", "is_empty", "sentence", "scored_text"]
    return table[columns]


def attach_scores(table: pd.DataFrame, scored: pd.DataFrame, name: str) -> pd.DataFrame:
    """Add ``<name>_label``, ``<name>_score``, ``<name>_details`` columns by scored-text hash."""
    keyed = scored.set_index("text_hash")
    hashes = table["scored_text"].map(text_hash)
    table = table.copy()
    table[f"{name}_label"] = hashes.map(keyed["label"])
    table[f"{name}_score"] = hashes.map(keyed["score"]).astype(float)
    table[f"{name}_details"] = hashes.map(keyed["details"])
    return table


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def build_manifest(*, run_id, suite, models, params, samples, seed, batch_size, options, scorers,
                   unavailable, results, table, started, finished, command, n_boot=2000, confidence=0.95,
                   min_n=30) -> dict:
    """Everything needed to reproduce and cite the run.  Never holds a secret."""
    from nlgbias import __version__

    return {
        "nlgbias_version": __version__,
        "run_id": run_id,
        "command": list(command) if command else None,
        "started_at": started,
        "finished_at": finished,
        "suite": {"name": suite.name, "version": suite.version, "path": suite.path,
                  "content_hash": suite.content_hash, "citation": suite.citation, "resolved": suite.to_dict()},
        "models": models,
        "sampling": ({**params.to_dict(), "samples_per_prompt": samples, "seed": seed,
                      "seed_derivation": "sha256([seed, model, prompt, sample_idx])[:8] >> 1",
                      "batch_size": batch_size, "dtype": options.dtype, "device": options.device,
                      "truncate": suite.truncate} if params is not None else
                     {"sampled": False, "batch_size": batch_size, "seed": seed, "device": options.device,
                      "logprob_dtype": "float32", "truncate": None}),
        "scorers": [{"name": s.name, "version": s.version, "citation": s.citation,
                     "threshold": getattr(s, "threshold", None)} for s in scorers],
        "scorers_unavailable": unavailable,
        "statistics": {"analyses": list(suite.analyses), "n_boot": n_boot, "confidence": confidence,
                       "min_n": min_n, "seed": seed,
                       **{k: results.meta[k] for k in ("ci", "test", "correction") if k in results.meta}},
        "counts": {"samples": int(len(table)),
                   "empty_continuations": int(table["is_empty"].sum()) if "is_empty" in table else 0,
                   "prompts": int(table["prompt_id"].nunique()), "models": len(models)},
        "libraries": library_versions(),
        "platform": {"system": platform.system(), "machine": platform.machine()},
        "outputs": output_names(results),
    }


def write_outputs(out: Path, run_id: str, table: pd.DataFrame, results: Results, manifest: dict) -> list[str]:
    """Write what is missing (everything if the folder holds another run); the manifest last."""
    from nlgbias.report import write_report

    previous = _read_manifest(out / "manifest.json")
    same_run = previous is not None and previous.get("run_id") == run_id
    todo = [name for name in output_names(results) if not same_run or not (out / name).is_file()]
    writers: dict[str, Callable[[], object]] = {
        "samples.parquet": lambda: write_parquet(out / "samples.parquet", table),
        "samples.jsonl": lambda: write_jsonl(out / "samples.jsonl", table),
        "report.html": lambda: write_report(out / "report.html", results, table, manifest),
        "manifest.json": lambda: write_json(out / "manifest.json", manifest),
    }
    if "metrics.json" in todo or any(name.endswith(".csv") for name in todo):
        results.write(out)
    for name in todo:
        if name in writers:
            writers[name]()
    return todo


def _read_manifest(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


__all__ = ["RunResult", "run", "prepare_out", "build_samples", "attach_scores", "output_names"]
