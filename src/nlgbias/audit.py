"""Run an audit: suites -> models -> scorers -> metrics -> report, with the store underneath.

``run()`` is the Python face of ``nlgbias run``.  Each stage is a function from table to
table; this module only wires them together and decides what is already done:

1. check the options and resolve the suite, every model (cheap, no weights) and the scorers
   into a :class:`RunConfig`, which also gives the run id;
2. the suite's stage: plan every sample, generate the batches the store lacks (one transaction
   per batch), cut each continuation by the suite's rule, mask the group and score the texts the
   store lacks (with ``until_mde``: in rounds, :mod:`nlgbias.precision`); or, for ``kind: pronoun`` suites, measure next-word probabilities
   (:mod:`nlgbias.probabilities`);
3. run the suite's analyses (:mod:`nlgbias.analyses`);
4. write samples, metrics, report and manifest (the manifest last: it marks the outputs as
   complete for this run id; a rerun rebuilds only missing files).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from nlgbias.distributed import RayOptions, RayPool
from nlgbias.analyses import REGISTRY, AnalysisOptions, RunTables, analyses_for, run_analyses
from nlgbias.errors import InputError, ScorerUnavailable, StoreError, command_line, option
from nlgbias.keys import config_id, text_hash
from nlgbias.metrics import Results
from nlgbias.models import DEFAULT_MODEL, BackendOptions, ModelRef, load_backend, resolve_model
from nlgbias.models.hf import first_load_note
from nlgbias.models.names import model_names, named_results, rename_models
from nlgbias.models.plan import plan_samples
from nlgbias.models.servers import with_earlier_answers
from nlgbias.precision import PrecisionTarget
from nlgbias.progress import Progress
from nlgbias.sampling import SamplingParams
from nlgbias.scorers import get_scorer
from nlgbias.store import RunStore, write_json, write_jsonl, write_parquet
from nlgbias.store.export import details_as_objects
from nlgbias.store.lock import hold_folder
from nlgbias.generate import fill_generations
from nlgbias.store.cache import fill_scores
from nlgbias.suites import Suite, attribute_names, expand_suite, load_suite
from nlgbias.text import mask_group, truncate
from nlgbias.validate import check_out_folder, check_run_options

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


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run, checked and resolved once (no weights loaded).

    It builds the run id (:meth:`identity`), the statistics settings of every analysis
    (:attr:`analysis`) and the manifest (:meth:`manifest`).  ``params`` is None for suites
    that measure probabilities instead of sampling text (``kind: pronoun``).
    """

    suite: Suite
    refs: tuple[ModelRef, ...]
    options: BackendOptions
    samples: int
    seed: int
    batch_size: int
    params: SamplingParams | None
    scorers: tuple = ()
    unavailable: tuple[dict, ...] = ()
    n_boot: int = 2000
    confidence: float = 0.95
    min_n: int = 30
    bls_mapping: str | None = None
    precision: PrecisionTarget | None = None  # --until-mde: sample in rounds (nlgbias.precision)

    @classmethod
    def create(cls, suite: str | Suite = "sheng2019", *, models: Sequence[str] = (DEFAULT_MODEL,), samples: int = 100,
               seed: int = 0, batch_size: int = 120, max_new_tokens: int | None = None,
               temperature: float | None = None, top_k: int | None = None, top_p: float | None = None,
               scorers: Sequence[str] | None = None, backend_options: BackendOptions | None = None,
               n_boot: int = 2000, confidence: float = 0.95, min_n: int = 30,
               bls_mapping: str | Path | None = None, until_mde: float | None = None,
               max_samples: int | None = None) -> RunConfig:
        """Check the options of :func:`run` (one-line :class:`InputError` on the first bad one) and resolve them."""
        options = backend_options or BackendOptions()
        check_run_options(samples=samples, batch_size=batch_size, n_boot=n_boot, confidence=confidence, min_n=min_n,
                          device=options.device, concurrency=options.concurrency, timeout=options.timeout,
                          max_retries=options.max_retries, api_base=options.api_base, models=models,
                          cooldown=options.cooldown)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise InputError(f"{option('--samples', samples)}: must be a whole number of at least 1")
        if batch_size < 1:
            raise InputError(f"{option('--batch-size', batch_size)}: must be at least 1")
        if not models:
            raise InputError(f"{option('--model', keyword='models')}: give at least one model")
        if len(set(models)) != len(models):
            raise InputError(f"{option('--model', keyword='models')}: the same model is given twice ({', '.join(models)})")
        suite = suite if isinstance(suite, Suite) else load_suite(suite)
        precision = _precision_target(suite, models, samples=samples, until_mde=until_mde, max_samples=max_samples)
        stats: dict[str, Any] = dict(n_boot=n_boot, confidence=confidence, min_n=min_n)
        if suite.kind == "pronoun":
            refs = tuple(resolve_model(m, options) for m in models)
            return cls(suite, refs, options, samples, seed, batch_size, None, **stats)
        params = _params(suite, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p)
        refs = tuple(resolve_model(m, options) for m in models)
        scorer_names = list(scorers) if scorers else list(suite.scorers)
        if bls_mapping is not None:
            check_bls_mapping(bls_mapping)
        for analysis in suite.analyses:
            for needed in REGISTRY[analysis].requires:
                if needed not in scorer_names:
                    raise InputError(f"{option('--scorer', keyword='scorers')}: the {analysis} analysis of suite "
                                     f"{suite.name} needs the {needed} scorer; add "
                                     f"{option('--scorer', needed, keyword='scorers', many=True)}")
        active, unavailable = _load_scorers(scorer_names)
        return cls(suite, refs, options, samples, seed, batch_size, params, tuple(active), tuple(unavailable), **stats,
                   bls_mapping=None if bls_mapping is None else str(bls_mapping), precision=precision)

    @property
    def analyses(self) -> tuple[str, ...]:
        """The analyses the run performs: the suite's, plus the automatic ones its scorers call for."""
        return analyses_for(self.suite, [s.name for s in self.scorers], len(self.refs))

    @property
    def analysis(self) -> AnalysisOptions:
        """The statistics settings every analysis of the run gets."""
        return AnalysisOptions(seed=self.seed, n_boot=self.n_boot, confidence=self.confidence, min_n=self.min_n,
                               bls_mapping=self.bls_mapping)

    def identity(self) -> dict:
        """What the run id hashes: everything that changes a stored result or a metric."""
        suite = {"name": self.suite.name, "version": self.suite.version, "content_hash": self.suite.content_hash}
        models = [{"model": r.model_id, "fingerprint": r.fingerprint} for r in self.refs]
        if self.params is None:
            return {"suite": suite, "models": models,
                    "probe": {k: v for k, v in self.suite.probe.items() if k != "prompt_sets"},
                    "statistics": {"n_boot": self.n_boot, "confidence": self.confidence, "seed": self.seed}}
        sampling = {**self.params.to_dict(), "samples_per_prompt": self.samples, "seed": self.seed,
                    "dtype": self.options.dtype}
        if self.precision is not None:
            sampling["precision"] = self.precision.describe()
        return {"suite": suite, "models": models, "sampling": sampling,
                "truncate": self.suite.truncate,
                "scorers": {s.name: s.version for s in self.scorers},
                "statistics": {"n_boot": self.n_boot, "confidence": self.confidence, "min_n": self.min_n}}

    @property
    def run_id(self) -> str:
        return config_id(self.identity())

    def manifest(self, *, models: list[dict], results: Results, table: pd.DataFrame, started: str, finished: str,
                 command: Sequence[str] | None) -> dict:
        """Everything needed to reproduce and cite the run.  Never holds a secret."""
        from nlgbias import __version__

        suite, options, params = self.suite, self.options, self.params
        return {
            "nlgbias_version": __version__,
            "run_id": self.run_id,
            "command": list(command) if command else None,
            "started_at": started,
            "finished_at": finished,
            "suite": {"name": suite.name, "version": suite.version, "path": suite.path,
                      "content_hash": suite.content_hash, "citation": suite.citation, "resolved": suite.to_dict()},
            "models": models,
            "sampling": ({**params.to_dict(), "samples_per_prompt": self.samples, "seed": self.seed,
                          "seed_derivation": "sha256([seed, model, prompt, sample_idx])[:8] >> 1",
                          "batch_size": self.batch_size, "dtype": options.dtype, "device": options.device,
                          "truncate": suite.truncate} if params is not None else
                         {"sampled": False, "batch_size": self.batch_size, "seed": self.seed, "device": options.device,
                          "logprob_dtype": "float32", "truncate": None}),
            "scorers": [{"name": s.name, "version": s.version, "citation": s.citation,
                         "threshold": getattr(s, "threshold", None)} for s in self.scorers],
            "scorers_unavailable": list(self.unavailable),
            "statistics": {"analyses": list(self.analyses), "n_boot": self.n_boot, "confidence": self.confidence,
                           "min_n": self.min_n, "seed": self.seed,
                           **({"bls_mapping": self.bls_mapping} if self.bls_mapping else {}),
                           **{k: results.meta[k] for k in ("ci", "test", "correction") if k in results.meta}},
            "counts": {"samples": int(len(table)),
                       "empty_continuations": int(table["is_empty"].sum()) if "is_empty" in table else 0,
                       "prompts": int(table["prompt_id"].nunique()), "models": len(models)},
            "libraries": library_versions(),
            "platform": {"system": platform.system(), "machine": platform.machine()},
            "outputs": output_names(results),
        }


def run(suite: str | Suite = "sheng2019", *, models: Sequence[str] = (DEFAULT_MODEL,), samples: int = 100,
        seed: int = 0, out: str | Path = "runs/nlgbias", batch_size: int = 120,
        max_new_tokens: int | None = None, temperature: float | None = None, top_k: int | None = None,
        top_p: float | None = None, scorers: Sequence[str] | None = None,
        backend_options: BackendOptions | None = None, n_boot: int = 2000, confidence: float = 0.95,
        min_n: int = 30, quiet: bool = False, command: Sequence[str] | None = None,
        bls_mapping: str | Path | None = None, force: bool = False, until_mde: float | None = None,
        max_samples: int | None = None, ray: RayOptions | None = None) -> RunResult:
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
        dtype, device, server URLs, key variable, concurrency per server, timeout, retries, cool-down.
    n_boot, confidence, min_n : statistics settings (see :func:`nlgbias.metrics.compute_metrics`).
    quiet : bool
        No progress bars or notes.
    command : sequence of str, optional
        The command line, recorded in the manifest.
    bls_mapping : path, optional
        Your own job -> BLS title mapping for the occupation analysis (checked before anything runs).
    force : bool
        Start over when ``out`` holds a run store truncated to 0 bytes (refused otherwise).
    until_mde : float, optional
        Precision-targeted sampling: sample in rounds (the first of ``samples`` per prompt) until
        every comparison's minimum detectable effect is at most this many percentage points, or a
        prompt group reaches ``max_samples``; prompt groups whose comparisons are precise stop early
        (:mod:`nlgbias.precision`; the rounds are in ``manifest["precision"]``).
    max_samples : int, optional
        The budget of ``until_mde``: samples per prompt at most (default 1000).
    ray : RayOptions, optional
        Generate the missing batches, and score, on a pool of Ray actors
        (:mod:`nlgbias.distributed`); the samples are the same as without Ray.

    Returns
    -------
    RunResult
    """
    clock = Stopwatch()
    config = RunConfig.create(suite, models=models, samples=samples, seed=seed, batch_size=batch_size,
                              max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                              scorers=scorers, backend_options=backend_options, n_boot=n_boot, confidence=confidence,
                              min_n=min_n, bls_mapping=bls_mapping, until_mde=until_mde, max_samples=max_samples)
    return run_config(config, out=out, quiet=quiet, command=command, clock=clock, force=force, ray=ray)


def run_config(config: RunConfig, *, out: str | Path, quiet: bool = False, command: Sequence[str] | None = None,
               clock: Stopwatch | None = None, force: bool = False, ray: RayOptions | None = None) -> RunResult:
    """Run a checked :class:`RunConfig`: the suite's stage (generate and score, or measure
    probabilities), then its analyses, then the outputs.  With ``ray``, on a Ray pool."""
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(RayPool(ray)) if ray is not None else None  # connects before --out is touched
        stack.enter_context(hold_folder(make_out(out), command=command))  # one run per folder, before it is read
        return _run_config(config, out=out, quiet=quiet, command=command, clock=clock, force=force, pool=pool)


def _run_config(config: RunConfig, *, out: str | Path, quiet: bool, command: Sequence[str] | None,
                clock: Stopwatch | None, force: bool, pool: RayPool | None) -> RunResult:
    clock = clock or Stopwatch()
    progress = Progress(quiet=quiet)
    for missing in config.unavailable:
        progress.note(f"Note: {missing['reason']}")
    out = prepare_out(out, force=force)
    run_id = config.run_id
    clock.lap("setup")
    with RunStore(out / "store.sqlite") as store:
        started = store.start_run(run_id, config.identity())
        by_id = {r.model_id: r for r in config.refs}
        loaded: dict[str, tuple] = {}  # model id -> (backend, its info stored by an earlier invocation)

        def load(model_id: str):
            ref = by_id[model_id]
            progress.note(first_load_note(ref.source, ref.fingerprint, model_id) or f"loading {model_id} ...")
            backend = load_backend(ref, config.options)
            loaded[model_id] = (backend, store.model_info(model_id, ref.fingerprint))
            store.save_model_info(model_id, ref.fingerprint, backend.info)
            return backend

        if config.params is None and pool is not None:
            progress.note(f"Note: suite {config.suite.name} measures probabilities; that runs in this process, "
                          f"not on Ray")
        try:
            if config.params is None:
                tables, generated, precision = _probability_stage(config, store, load=load, progress=progress,
                                                                  clock=clock)
            else:
                tables, generated, precision = _generation_stage(config, store, load=load, progress=progress,
                                                                 clock=clock, pool=pool)
        finally:  # what each server answered, also when the run stops on an error
            for model_id, (backend, earlier) in loaded.items():
                store.save_model_info(model_id, by_id[model_id].fingerprint, with_earlier_answers(earlier, backend.info))
        finished = store.finish_run(run_id)
        names = model_names([r.model_id for r in config.refs])
        model_infos = [{"name": names[r.model_id], "model": r.model_id, "backend": r.backend,
                        "fingerprint": r.fingerprint, **_backend_info(store.model_info(r.model_id, r.fingerprint)
                                                                      or r.info)} for r in config.refs]
    # The statistics are seeded by the full --model values; the outputs name each model by its display name.
    results = named_results(run_analyses(config.analyses, tables, config.analysis), names, model_infos)
    clock.lap("metrics")
    table = rename_models(tables.samples, names)
    manifest = config.manifest(models=model_infos, results=results, table=table, started=started, finished=finished,
                               command=command)
    if precision is not None:
        manifest["precision"] = precision
    manifest["timings_s"] = {name: round(seconds, 3) for name, seconds in clock.laps.items()}  # this invocation
    if pool is not None:
        manifest["execution"] = {"ray": pool.stats}  # this invocation
    manifest["peak_memory_gb"] = round(peak_memory_gb(), 3)
    rebuilt = write_outputs(out, run_id, table, results, manifest)
    clock.lap("outputs")
    laps = clock.laps
    if config.params is None:
        progress.note(f"run {run_id}: {len(table)} prompt probabilities -> {out}")
    else:
        progress.note(f"run {run_id}: {len(table)} samples ({generated} generated now) -> {out}; "
                      f"generation {laps['generate']:.0f} s, everything else "
                      f"{sum(laps.values()) - laps['generate']:.0f} s, peak memory {peak_memory_gb():.2f} GB")
    return RunResult(out, run_id, table, results, manifest, generated, rebuilt, clock.laps)


def _backend_info(info: dict) -> dict:
    """A backend's facts for the manifest; a server's own name for the model is ``served_model``
    (``model`` is the full ``--model`` value, ``name`` the display name)."""
    return {("served_model" if key in ("model", "name") else key): value for key, value in info.items()}


def _generation_stage(config: RunConfig, store: RunStore, *, load, progress: Progress,
                      clock: Stopwatch, pool: RayPool | None = None) -> tuple[RunTables, int, dict | None]:
    """Plan, generate what the store lacks, cut and mask, score what the store lacks (on ``pool`` if
    given; with ``--until-mde``: in rounds, see :mod:`nlgbias.precision`; the third value is the
    manifest's record)."""
    suite, params = config.suite, config.params
    assert params is not None  # generation suites sample
    prompts = expand_suite(suite)
    by_id = {r.model_id: r for r in config.refs}

    def remote(model_id: str, batches: list):
        """The Ray pool's answers for a local model; None (this process asks) for a server model."""
        ref = by_id[model_id]
        if pool is None:
            return None
        if ref.backend == "openai":
            progress.note(f"Note: {model_id} is a server model: requests go from this process, not through Ray")
            return None
        progress.note(f"loading {model_id} on {pool.workers} Ray workers ...")
        return pool.generate(ref, config.options, batches,
                             loaded=lambda info: store.save_model_info(model_id, ref.fingerprint, info))

    def generate(plan: pd.DataFrame) -> int:
        return fill_generations(plan, store, load=load, params=params, batch_size=config.batch_size,
                                progress=lambda m, n: progress.bar(f"generate {m}", n, "sample"), remote=remote)

    if config.precision is None:
        plan = plan_samples(prompts, config.refs, samples=config.samples, seed=config.seed, params=params,
                            dtype=config.options.dtype)
        generated, record = generate(plan), None
        clock.lap("generate")
        tables = _scored_tables(config, store, plan, prompts, progress, pool)
    else:
        tables, generated, record = _precision_rounds(config, store, prompts, generate, progress, pool)
        clock.lap("generate")  # the rounds interleave generation and scoring
    clock.lap("score")
    return tables, generated, record


def _scored_tables(config: RunConfig, store: RunStore, plan: pd.DataFrame, prompts: pd.DataFrame,
                   progress: Progress, pool: RayPool | None = None) -> RunTables:
    """The samples of ``plan`` (all generated) cut, masked and scored by every scorer (cached in the
    store; on ``pool`` if given)."""
    table = build_samples(plan, prompts, store, config.suite, config.run_id)
    for scorer in config.scorers:
        scored = fill_scores(table["scored_text"], scorer, store,
                             progress=lambda name, n: progress.bar(f"score {name}", n, "text"),
                             remote=pool.score if pool is not None else None)
        table = attach_scores(table, scored, scorer.name)
    return RunTables(table, scored_long(table, [s.name for s in config.scorers]), config.suite)


def scored_long(samples: pd.DataFrame, scorers: Sequence[str]) -> pd.DataFrame:
    """One row per (sample, scorer) from a samples table's ``<scorer>_label`` columns:
    ``generation_id, model, context, group, is_empty, scorer, label`` (scorer by scorer)."""
    rows = [samples[["generation_id", "model", "context", "group", "is_empty"]]
            .assign(scorer=name, label=samples[f"{name}_label"]) for name in scorers]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["generation_id", "model", "context", "group", "is_empty", "scorer", "label"])


def _precision_rounds(config: RunConfig, store: RunStore, prompts: pd.DataFrame, generate,
                      progress: Progress, pool: RayPool | None = None) -> tuple[RunTables, int, dict]:
    """``--until-mde``: generate and score round by round (:func:`nlgbias.precision.sample_until`).

    A round's plan is the sample indices each prompt group gains, in the sample-major order of
    :func:`~nlgbias.models.plan.plan_samples`, generated in fixed batches of its own.
    """
    from nlgbias.precision import sample_until, summary

    target, params = config.precision, config.params
    assert target is not None and params is not None
    cell_of = {pid: (ctx, grp) for pid, ctx, grp in zip(prompts["prompt_id"], prompts["context"], prompts["group"])}
    counts = prompts.groupby(["context", "group"], sort=False).size()
    cells = {(r.model_id, ctx, grp): int(k) for r in config.refs for (ctx, grp), k in counts.items()}
    state: dict[str, Any] = {"have": {}, "generated": 0, "tables": None, "plan": None}

    def planned(samples: dict, have: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
        full = plan_samples(prompts, config.refs, samples=max(samples.values()), seed=config.seed,
                            params=params, dtype=config.options.dtype)
        keys = [(m, *cell_of[p]) for m, p in zip(full["model"], full["prompt_id"])]
        upto = pd.Series([samples[k] for k in keys], index=full.index)
        before = pd.Series([have.get(k, 0) for k in keys], index=full.index)
        index = full["sample_idx"]
        return full[index < upto].reset_index(drop=True), full[(index >= before) & (index < upto)]

    def measure(samples: dict) -> pd.DataFrame:
        plan, new = planned(samples, state["have"])
        state["generated"] += generate(new.reset_index(drop=True)) if len(new) else 0
        state["have"], state["plan"] = dict(samples), plan
        tables = _scored_tables(config, store, plan, prompts, progress, pool)
        state["tables"] = tables
        results = REGISTRY["shares"].compute(tables, config.analysis)
        return comparison_cells(results)

    rounds = sample_until(target, cells, measure, note=progress.note)
    return state["tables"], state["generated"], summary(rounds, cells)


def comparison_cells(results: Results) -> pd.DataFrame:
    """The gaps and model gaps of ``results`` as one table of comparisons with the prompt groups
    (``cell_a``, ``cell_b``: model, context, group) on each side, for :mod:`nlgbias.precision`."""
    keep = ["n_a", "k_a", "n_b", "k_b"]
    parts = []
    gaps, model_gaps = results.gaps, results.model_gaps
    if not gaps.empty:
        parts.append(pd.DataFrame({
            "model": gaps["model"], "context": gaps["context"], "scorer": gaps["scorer"], "label": gaps["label"],
            "compared": gaps["group_a"] + " - " + gaps["group_b"],
            "cell_a": list(zip(gaps["model"], gaps["context"], gaps["group_a"])),
            "cell_b": list(zip(gaps["model"], gaps["context"], gaps["group_b"])), **{c: gaps[c] for c in keep}}))
    if not model_gaps.empty:
        parts.append(pd.DataFrame({
            "model": model_gaps["model_a"] + " - " + model_gaps["model_b"], "context": model_gaps["context"],
            "scorer": model_gaps["scorer"], "label": model_gaps["label"], "compared": model_gaps["group"],
            "cell_a": list(zip(model_gaps["model_a"], model_gaps["context"], model_gaps["group"])),
            "cell_b": list(zip(model_gaps["model_b"], model_gaps["context"], model_gaps["group"])),
            **{c: model_gaps[c] for c in keep}}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["model", "context", "scorer", "label", "compared", "cell_a", "cell_b", *keep])


def _probability_stage(config: RunConfig, store: RunStore, *, load, progress: Progress,
                       clock: Stopwatch) -> tuple[RunTables, int, None]:
    """Measure next-word probabilities (and the probe's other tables) the store lacks."""
    from nlgbias.probabilities import probability_stage

    probs, probes = probability_stage(config.suite, config.refs, store, load=load, seed=config.seed,
                                      batch_size=config.batch_size,
                                      progress=lambda desc, n: progress.bar(desc, n, "prompt"))
    clock.lap("generate")
    table = probs.assign(run_id=config.run_id, suite=config.suite.name)
    table = table[["run_id", "model", "suite", *[c for c in table.columns if c not in ("run_id", "model", "suite")]]]
    return RunTables(table, pd.DataFrame(), config.suite, probes), 0, None


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


def check_bls_mapping(path: str | Path) -> None:
    """Fail fast, in one line, on a job -> BLS title mapping that would fail after generation."""
    from nlgbias.metrics.labor import us_shares_and_mapping

    us_shares_and_mapping(path)


DEFAULT_MAX_SAMPLES = 1000  # --max-samples when --until-mde comes without one


def _precision_target(suite: Suite, models: Sequence[str], *, samples: int, until_mde, max_samples):
    """The :class:`~nlgbias.precision.PrecisionTarget` of ``--until-mde`` (``None`` without it), checked."""
    from nlgbias.precision import PrecisionTarget
    from nlgbias.validate import LIMITS, at_least, at_most, within

    if until_mde is None:
        if max_samples is not None:
            raise InputError(f"{option('--max-samples', max_samples)}: the budget of precision-targeted sampling; "
                             f"give it with {option('--until-mde')} (or use {option('--samples')} alone)")
        return None
    within(until_mde, 0, 100, "until_mde", example="5 (percentage points)")
    if max_samples is None:
        max_samples = DEFAULT_MAX_SAMPLES
    at_least(max_samples, samples, "max_samples",
             why=f" (the first round is {option('--samples', samples)} samples per prompt)")
    at_most(max_samples, LIMITS["max_samples"], "max_samples", why=" samples per prompt")
    models_n = len(models)
    if suite.kind != "generation" or "shares" not in suite.analyses or not (suite.comparisons or models_n > 1):
        raise InputError(f"{option('--until-mde', until_mde)}: suite {suite.name} has no label-share comparisons "
                         f"(kind {suite.kind}, analyses {', '.join(suite.analyses) or 'none'}, "
                         f"{len(suite.comparisons)} group pairs, {models_n} model{'s' if models_n != 1 else ''}) "
                         f"whose precision could be targeted")
    return PrecisionTarget(mde=until_mde / 100, max_samples=int(max_samples), first=int(samples))


def _params(suite: Suite, **overrides) -> SamplingParams:
    values = {**SamplingParams().to_dict(), **suite.sampling}
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SamplingParams(**values)
    except ValueError as exc:
        flag = str(exc).split()[0].replace("_", "-")
        raise InputError(f"{option('--' + flag)}: {exc}") from None


def _load_scorers(names: Sequence[str]):
    active, unavailable = [], []
    for name in dict.fromkeys(names):
        try:
            active.append(get_scorer(name))
        except ScorerUnavailable as exc:
            unavailable.append({"scorer": name, "reason": str(exc)})
    return active, unavailable


def make_out(out: str | Path) -> Path:
    """Create the output folder (nothing inside it), or say in one line why it cannot be used."""
    out = check_out_folder(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{option('--out', str(out))}: cannot create or write this folder ({exc.strerror or exc})") from None
    return out


def prepare_out(out: str | Path, *, force: bool = False) -> Path:
    """Create the output folder, or say in one line why it cannot be used.

    A run store truncated to 0 bytes (a full disk, a bad copy) is refused unless ``force``:
    it may have held the only copy of expensive samples, so starting over is the user's call.
    (A store being created is never seen at 0 bytes: :class:`RunStore` creates it under another
    name and moves it into place whole, and only the run holding the folder's lock opens it.)
    """
    out = check_out_folder(out)
    store = out / "store.sqlite"
    if store.is_file() and store.stat().st_size == 0:
        if not force:
            raise StoreError(f"{store}: the run store is empty (0 bytes), so whatever it held is gone; "
                             f"rerun with {'--force' if command_line() else 'force=True'} to start over in this folder, or give a new "
                             f"{option('--out')}")
        for name in ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "manifest.json"):
            (out / name).unlink(missing_ok=True)
    if out.exists() and not out.is_dir():
        raise StoreError(f"{option('--out', str(out))}: is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise StoreError(f"{option('--out', str(out))}: cannot create or write this folder ({exc.strerror or exc})") from None
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


def write_outputs(out: Path, run_id: str, table: pd.DataFrame, results: Results, manifest: dict) -> list[str]:
    """Write what is missing or not this run's; the manifest last, with every output's SHA-256.

    The manifest vouches for the set: it is removed before any other output is replaced and
    written again only when all are in place, and it records each output's hash.  An output
    is rebuilt when the manifest is missing, names another run id, or holds another hash, so
    a run killed while replacing another run's files never leaves the two mixed.
    """
    from nlgbias.report import write_report

    previous = _read_manifest(out / "manifest.json")
    same_run = previous is not None and previous.get("run_id") == run_id
    recorded = previous.get("output_sha256") if previous is not None and same_run else None
    hashes = recorded if isinstance(recorded, dict) else {}
    names = output_names(results)
    todo = [name for name in names if name == "manifest.json" and not same_run
            or name != "manifest.json" and (not hashes or file_sha256(out / name) != hashes.get(name))]
    if not todo:
        return []
    if "manifest.json" not in todo:
        todo.append("manifest.json")
    (out / "manifest.json").unlink(missing_ok=True)
    writers: dict[str, Callable[[], object]] = {
        "samples.parquet": lambda: write_parquet(out / "samples.parquet", table),
        "samples.jsonl": lambda: write_jsonl(out / "samples.jsonl", details_as_objects(table)),
        "report.html": lambda: write_report(out / "report.html", results, table, manifest),
        "manifest.json": lambda: write_json(out / "manifest.json", {
            **manifest, "output_sha256": {name: file_sha256(out / name) for name in names if name != "manifest.json"}}),
    }
    if "metrics.json" in todo or any(name.endswith(".csv") for name in todo):
        results.write(out)
    for name in todo:
        if name in writers:
            writers[name]()
    return todo


def _read_manifest(path: Path) -> dict | None:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a file's bytes, or None if it is not a readable file."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


__all__ = ["RunConfig", "RunResult", "run", "run_config", "prepare_out", "build_samples", "attach_scores",
           "output_names", "scored_long"]
