"""Run an audit: suites -> models -> scorers -> metrics -> report, with the store underneath.

``run()`` is the Python face of ``nlgbias run``.  Each stage is a function from table to
table; this module only wires them together and decides what is already done:

1. check the options and resolve the suite, every model (cheap, no weights) and the scorers
   into a :class:`RunConfig`, which also gives the run id;
2. the measurement of the suite's kind (:mod:`nlgbias.pipeline.measurements`) fills what the
   store lacks: generation suites generate, cut, mask and score (:mod:`nlgbias.pipeline.generation`;
   with ``until_mde``: in rounds, :mod:`nlgbias.pipeline.precision`); pronoun suites measure
   next-word probabilities (:mod:`nlgbias.probes.pronouns.stage`);
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
import resource
import sys
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from nlgbias.analyses import AnalysisOptions, analyses_for, check_analyses, report_sections, run_analyses
from nlgbias.defaults import CONFIDENCE, INFERENCE_UNIT, MIN_N, N_BOOT
from nlgbias.errors import InputError, StoreError, command_line, option
from nlgbias.keys import config_id
from nlgbias.metrics.results import Results, named_results, rename_models
from nlgbias.models import BackendOptions, ModelRef, load_backend, resolve_model
from nlgbias.models.batching import stored_batch_size
from nlgbias.models.hf import first_load_note
from nlgbias.models.names import model_names
from nlgbias.models.servers import with_earlier_answers
from nlgbias.pipeline.distributed import RayOptions, RayPool
from nlgbias.pipeline.generation import attach_scores, build_samples, scored_long
from nlgbias.pipeline.measurements import Measurement, batch_size_of, measurement_for
from nlgbias.pipeline.options import (DEFAULT_MAX_SAMPLES, DEFAULT_SAMPLES, RUN_DEFAULTS, STATISTICS, check_choices,
                                      option_values)
from nlgbias.pipeline.precision import PrecisionTarget
from nlgbias.progress import Progress, Stopwatch
from nlgbias.report import Section, write_report
from nlgbias.report.findings import precision_line
from nlgbias.resources import package_version
from nlgbias.sampling import SamplingParams
from nlgbias.store import RunStore, write_json, write_jsonl, write_parquet
from nlgbias.store.export import details_as_objects, refuse_special
from nlgbias.store.lock import hold_folder
from nlgbias.suites import Suite, load_suite
from nlgbias.suites.sample import with_sample
from nlgbias.validate import LIMITS, at_least, at_most, check_out_folder, check_run_options, within

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
    (:attr:`analysis`) and the manifest (:meth:`manifest`).  What depends on the suite's kind
    (its prompts, sampling params and scorers, the run id's and the manifest's sampling part,
    the measuring itself) comes from the kind's :attr:`measurement`
    (:mod:`nlgbias.pipeline.measurements`); ``params`` and ``scorers`` are set by the
    ``generation`` measurement only.
    """

    suite: Suite
    refs: tuple[ModelRef, ...]
    options: BackendOptions
    samples: int
    seed: int
    batch_size: int
    params: SamplingParams | None = None
    scorers: tuple = ()
    unavailable: tuple[dict, ...] = ()
    n_boot: int = N_BOOT
    confidence: float = CONFIDENCE
    min_n: int = MIN_N
    unit: str = INFERENCE_UNIT  # the unit of inference (nlgbias.metrics.shares.LEVELS)
    bls_mapping: str | None = None
    precision: PrecisionTarget | None = None  # --until-mde: sample in rounds (nlgbias.pipeline.precision)
    batch_auto: dict | None = None  # how --batch-size auto chose batch_size (nlgbias.models.batching)

    @classmethod
    def create(cls, suite: str | Suite = RUN_DEFAULTS.suite, *, models: Sequence[str] = RUN_DEFAULTS.models,
               samples: int | None = RUN_DEFAULTS.samples, seed: int = RUN_DEFAULTS.seed,
               batch_size: int | str = RUN_DEFAULTS.batch_size, max_new_tokens: int | None = RUN_DEFAULTS.max_new_tokens,
               temperature: float | None = RUN_DEFAULTS.temperature, top_k: int | None = RUN_DEFAULTS.top_k,
               top_p: float | None = RUN_DEFAULTS.top_p, scorers: Sequence[str] | None = RUN_DEFAULTS.scorers,
               backend_options: BackendOptions | None = RUN_DEFAULTS.backend_options, n_boot: int = RUN_DEFAULTS.n_boot,
               confidence: float = RUN_DEFAULTS.confidence, min_n: int = RUN_DEFAULTS.min_n,
               unit: str = RUN_DEFAULTS.unit, bls_mapping: str | Path | None = RUN_DEFAULTS.bls_mapping,
               until_mde: float | None = RUN_DEFAULTS.until_mde, max_samples: int | None = RUN_DEFAULTS.max_samples,
               prompts_per_group: int | str | None = RUN_DEFAULTS.prompts_per_group) -> RunConfig:
        """Check the options of :func:`run` (one-line :class:`InputError` on the first bad one) and resolve them.

        The keywords and their defaults are the fields of :class:`~nlgbias.pipeline.options.RunOptions`.
        """
        options = backend_options or BackendOptions()
        check_run_options(samples=samples, batch_size=batch_size, n_boot=n_boot, confidence=confidence, min_n=min_n,
                          device=options.device, concurrency=options.concurrency, timeout=options.timeout,
                          max_retries=options.max_retries, api_base=options.api_base, models=models,
                          cooldown=options.cooldown)
        check_choices(unit=unit)
        if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
            raise InputError(f"{option('--samples', samples)}: must be a whole number of at least 1")
        if not models:
            raise InputError(f"{option('--model', keyword='models')}: give at least one model")
        if len(set(models)) != len(models):
            raise InputError(f"{option('--model', keyword='models')}: the same model is given twice ({', '.join(models)})")
        suite = suite if isinstance(suite, Suite) else load_suite(suite)
        suite = with_sample(suite, prompts_per_group, seed)  # --prompts-per-group (or the suite's own sample)
        if samples is None:  # the suite's own (holisticbias-regard: 1, as ROBBIE), else 100
            samples = suite.samples if suite.samples is not None else DEFAULT_SAMPLES
        measurement = measurement_for(suite)
        check_analyses(suite)
        precision = _precision_target(suite, models, samples=samples, until_mde=until_mde, max_samples=max_samples)
        refs = tuple(resolve_model(m, options) for m in models)
        check_models = getattr(measurement, "check_models", None)
        if check_models is not None:  # a model the kind cannot measure: refused before --out is touched
            check_models(refs)
        fields = measurement.configure(suite, scorers=scorers, max_new_tokens=max_new_tokens, temperature=temperature,
                                       top_k=top_k, top_p=top_p, bls_mapping=bls_mapping)
        size, auto = batch_size_of(measurement, suite, batch_size, refs=refs, options=options, samples=samples,
                                   params=fields.get("params"))
        return cls(suite, refs, options, samples, seed, size, n_boot=n_boot, confidence=confidence, min_n=min_n, unit=unit,
                   precision=precision, batch_auto=auto, **fields)

    @property
    def statistics(self) -> dict:
        """The statistics settings of the run (:data:`~nlgbias.pipeline.options.STATISTICS`): name -> value."""
        return {name: getattr(self, name) for name in STATISTICS}

    @property
    def measurement(self) -> Measurement:
        """How the suite's kind is measured (:mod:`nlgbias.pipeline.measurements`)."""
        return measurement_for(self.suite)

    @property
    def analyses(self) -> tuple[str, ...]:
        """The analyses the run performs: the suite's, plus the automatic ones its scorers call for."""
        return analyses_for(self.suite, [s.name for s in self.scorers], len(self.refs))

    @property
    def analysis(self) -> AnalysisOptions:
        """The statistics settings every analysis of the run gets."""
        return AnalysisOptions(seed=self.seed, bls_mapping=self.bls_mapping, **self.statistics)

    def identity(self) -> dict:
        """What the run id hashes: everything that changes a stored result or a metric."""
        suite = {"name": self.suite.name, "version": self.suite.version, "content_hash": self.suite.content_hash}
        models = [{"model": r.model_id, "fingerprint": r.fingerprint} for r in self.refs]
        return {"suite": suite, "models": models, **self.measurement.identity(self)}

    @property
    def run_id(self) -> str:
        return config_id(self.identity())

    def keep_stored_batch_size(self, store: RunStore) -> RunConfig:
        """This config, with an automatic GPU batch size replaced by the one the same settings last
        ran with in ``store`` (free memory varies, so a rerun would otherwise cut other batches)."""
        if self.batch_auto is None or "free_gib" not in self.batch_auto:
            return self
        earlier = stored_batch_size(self.identity(), store.runs())
        if earlier is None or earlier == self.batch_size:
            return self
        return replace(self, batch_size=earlier, batch_auto={**self.batch_auto, "fitted_now": self.batch_size,
                                                             "kept_from_store": earlier})

    def manifest(self, *, models: list[dict], results: Results, table: pd.DataFrame, started: str, finished: str,
                 command: Sequence[str] | None) -> dict:
        """Everything needed to reproduce and cite the run.  Never holds a secret."""
        suite = self.suite
        return {
            "nlgbias_version": package_version(),
            "run_id": self.run_id,
            "command": list(command) if command else None,
            "started_at": started,
            "finished_at": finished,
            "suite": {"name": suite.name, "version": suite.version, "path": suite.path,
                      "content_hash": suite.content_hash, "citation": suite.citation, "resolved": suite.to_dict()},
            "models": models,
            "sampling": self.measurement.manifest(self)
                        | ({"batch_size_auto": self.batch_auto} if self.batch_auto else {}),
            "scorers": [{"name": s.name, "version": s.version, "citation": s.citation,
                         "threshold": getattr(s, "threshold", None), **getattr(s, "provenance", {})}
                        for s in self.scorers],
            "scorers_unavailable": list(self.unavailable),
            "statistics": {"analyses": list(self.analyses), **self.statistics, "seed": self.seed,
                           **({"bls_mapping": self.bls_mapping} if self.bls_mapping else {}),
                           **{k: results.meta[k] for k in ("ci", "test", "correction") if k in results.meta}},
            "counts": {"samples": int(len(table)),
                       "empty_continuations": int(table["is_empty"].sum()) if "is_empty" in table else 0,
                       "prompts": int(table["prompt_id"].nunique()), "models": len(models)},
            "libraries": library_versions(),
            "platform": {"system": platform.system(), "machine": platform.machine()},
            "outputs": output_names(results),
        }


def run(suite: str | Suite = RUN_DEFAULTS.suite, *, models: Sequence[str] = RUN_DEFAULTS.models,
        samples: int | None = RUN_DEFAULTS.samples, seed: int = RUN_DEFAULTS.seed, out: str | Path = "runs/nlgbias",
        batch_size: int | str = RUN_DEFAULTS.batch_size, max_new_tokens: int | None = RUN_DEFAULTS.max_new_tokens,
        temperature: float | None = RUN_DEFAULTS.temperature, top_k: int | None = RUN_DEFAULTS.top_k,
        top_p: float | None = RUN_DEFAULTS.top_p, scorers: Sequence[str] | None = RUN_DEFAULTS.scorers,
        backend_options: BackendOptions | None = RUN_DEFAULTS.backend_options, n_boot: int = RUN_DEFAULTS.n_boot,
        confidence: float = RUN_DEFAULTS.confidence, min_n: int = RUN_DEFAULTS.min_n, unit: str = RUN_DEFAULTS.unit,
        quiet: bool = False, command: Sequence[str] | None = None,
        bls_mapping: str | Path | None = RUN_DEFAULTS.bls_mapping, force: bool = False,
        until_mde: float | None = RUN_DEFAULTS.until_mde, max_samples: int | None = RUN_DEFAULTS.max_samples,
        ray: RayOptions | None = None, prompts_per_group: int | str | None = RUN_DEFAULTS.prompts_per_group) -> RunResult:
    """Run (or resume, or rebuild) an audit and write its outputs to ``out``.

    Every keyword but ``out``, ``quiet``, ``command``, ``force`` and ``ray`` is an option of the run,
    declared once with its default and its ``nlgbias run`` flag in
    :class:`~nlgbias.pipeline.options.RunOptions`, and passed on to :meth:`RunConfig.create`.

    Parameters
    ----------
    suite : str or Suite, default="sheng2019"
        Built-in suite name, YAML path, or a loaded suite.
    models : sequence of str
        ``--model`` values (aliases, paths, hub ids, ``openai:NAME``); compared side by side.
    samples : int, optional
        Samples per prompt and model; default: the suite's ``samples`` (``holisticbias-regard``: 1), else 100.
    seed : int, default=0
    out : path
        Output folder; holds the run store, so rerunning the same call resumes it.
    batch_size : int or "auto", default="auto"
        Samples per generation batch (and per store transaction).  ``"auto"``: 120 on a CPU; on a
        CUDA device sized from its free memory (:mod:`nlgbias.models.batching`), and on a rerun in
        the same ``out`` the size the same settings ran with before.
    max_new_tokens, temperature, top_k, top_p : optional
        Override the suite's sampling defaults.
    scorers : sequence of str, optional
        Default: the suite's scorers.  Unavailable ones are reported, never faked.
    backend_options : BackendOptions, optional
        dtype, device, server URLs, key variable, concurrency per server, timeout, retries, cool-down.
    n_boot, confidence, min_n : statistics settings (see :func:`nlgbias.metrics.compute_metrics`).
    unit : {"prompt", "sample"}, default="prompt"
        The unit of inference: ``prompt`` counts templates (samples are nested in prompts);
        ``sample`` treats every sample as independent, as Sheng et al. 2019 did (to reproduce papers).
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
        (:mod:`nlgbias.pipeline.precision`; the rounds are in ``manifest["precision"]``).
    max_samples : int, optional
        The budget of ``until_mde``: samples per prompt at most (default 1000).
    ray : RayOptions, optional
        Generate the missing batches, and score, on a pool of Ray actors
        (:mod:`nlgbias.pipeline.distributed`); the samples are the same as without Ray.
    prompts_per_group : int or "all", optional
        A seeded sample of this many prompts per group, drawn by ``seed`` (:mod:`nlgbias.suites.sample`),
        or ``"all"``; default: the suite's own ``prompts_per_group``, else every prompt.

    Returns
    -------
    RunResult
    """
    clock = Stopwatch()
    config = RunConfig.create(**option_values(locals()))  # every RunOptions keyword, as given
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
    with RunStore(out / "store.sqlite") as store:
        config = config.keep_stored_batch_size(store)
        run_id = config.run_id
        clock.lap("setup")
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

        measurement = config.measurement
        if pool is not None and not measurement.distributed:
            progress.note(f"Note: suite {config.suite.name} (kind {config.suite.kind}) is measured in this process, "
                          f"not on Ray")
        try:
            tables, generated, precision = measurement.measure(config, store, load=load, progress=progress,
                                                               clock=clock, pool=pool if measurement.distributed else None)
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
    manifest["generated_now"] = int(generated)  # this invocation: the samples timings_s["generate"] generated
    if pool is not None:
        manifest["execution"] = {"ray": pool.stats}  # this invocation
    manifest["peak_memory_gb"] = round(peak_memory_gb(), 3)
    rebuilt = write_outputs(out, run_id, table, results, manifest, sections=report_sections())
    clock.lap("outputs")
    if precision is not None:  # --until-mde: whether the target was met
        progress.note(precision_line(manifest) or "")
    progress.note(measurement.summary(config, table, generated=generated, out=out, laps=clock.laps,
                                      peak_gb=peak_memory_gb()))
    return RunResult(out, run_id, table, results, manifest, generated, rebuilt, clock.laps)


def _backend_info(info: dict) -> dict:
    """A backend's facts for the manifest; a server's own name for the model is ``served_model``
    (``model`` is the full ``--model`` value, ``name`` the display name)."""
    return {("served_model" if key in ("model", "name") else key): value for key, value in info.items()}


def peak_memory_gb() -> float:
    """This process's peak resident memory so far (GB; Linux reports KiB, macOS bytes)."""

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 ** (3 if sys.platform == "darwin" else 2)


def _precision_target(suite: Suite, models: Sequence[str], *, samples: int, until_mde, max_samples):
    """The :class:`~nlgbias.pipeline.precision.PrecisionTarget` of ``--until-mde`` (``None`` without it), checked."""
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
    out = check_out_folder(out)  # a FIFO or device inside: refused
    if out.is_dir():  # an output's name taken by a folder: refused before the manifest is removed
        for path in [out / name for name in (*FIRST_OUTPUTS, *LAST_OUTPUTS, "store.sqlite")] + sorted(out.glob("*.csv")):
            refuse_special(path)
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


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def write_outputs(out: Path, run_id: str, table: pd.DataFrame, results: Results, manifest: dict, *,
                  sections: Sequence[Section]) -> list[str]:
    """Write what is missing or not this run's; the manifest last, with every output's SHA-256.

    The manifest vouches for the set: it is removed before any other output is replaced and
    written again only when all are in place, and it records each output's hash.  An output
    is rebuilt when the manifest is missing, names another run id, or holds another hash, so
    a run killed while replacing another run's files never leaves the two mixed.
    """
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
        "report.html": lambda: write_report(out / "report.html", results, table, manifest, sections=sections),
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
