"""The measurement of generation suites: generate, cut, mask and score what the store lacks.

For every model the run plans its samples (:func:`~nlgbias.models.plan.plan_samples`), generates
the batches the store lacks (:mod:`nlgbias.pipeline.generate`, one transaction per batch), cuts
each continuation by the suite's rule, masks the group mention, and scores the texts the store has
no score for (:mod:`nlgbias.store.cache`).  With ``--until-mde`` it does so in rounds
(:mod:`nlgbias.pipeline.precision`); with ``--ray`` it generates and scores on a Ray pool.

:data:`GENERATE_AND_SCORE` is the ``generation`` entry of :mod:`nlgbias.pipeline.measurements`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from nlgbias.analyses import REGISTRY, RunTables
from nlgbias.errors import InputError, ScorerUnavailable, StoreError, option
from nlgbias.keys import text_hash
from nlgbias.metrics.labor import us_shares_and_mapping
from nlgbias.metrics.results import Results
from nlgbias.models.batching import choose_batch_size
from nlgbias.models.plan import plan_samples
from nlgbias.pipeline.distributed import RayPool
from nlgbias.pipeline.generate import fill_generations
from nlgbias.pipeline.precision import sample_until, summary
from nlgbias.progress import Progress, Stopwatch
from nlgbias.sampling import SamplingParams
from nlgbias.scorers import Scorer, get_scorer, scorer_base
from nlgbias.store import RunStore
from nlgbias.store.cache import fill_scores
from nlgbias.suites import Suite, attribute_names, expand_suite
from nlgbias.text import mask_group, truncate


class GenerateAndScore:
    """The ``generation`` measurement: sampled continuations, scored by the run's scorers."""

    kind = "generation"
    distributed = True

    def prompts(self, suite: Suite) -> pd.DataFrame:
        """:func:`~nlgbias.suites.expand_suite`: one prompt per (template, group)."""
        return expand_suite(suite)

    def configure(self, suite: Suite, *, scorers: Sequence[str] | None = None, max_new_tokens: int | None = None,
                  temperature: float | None = None, top_k: int | None = None, top_p: float | None = None,
                  bls_mapping: str | Path | None = None) -> dict[str, Any]:
        """The sampling params (the suite's, overridden), the scorers (loaded; unavailable ones
        recorded) and the checked BLS mapping; an analysis whose scorer is missing stops here."""
        params = _params(suite, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p)
        scorer_names = list(scorers) if scorers else list(suite.scorers)
        if bls_mapping is not None:
            check_bls_mapping(bls_mapping)
        for analysis in suite.analyses:
            for needed in REGISTRY[analysis].requires:
                if needed not in {scorer_base(name) for name in scorer_names}:
                    raise InputError(f"{option('--scorer', keyword='scorers')}: the {analysis} analysis of suite "
                                     f"{suite.name} needs the {needed} scorer; add "
                                     f"{option('--scorer', needed, keyword='scorers', many=True)}")
        active, unavailable = _load_scorers(scorer_names)
        return {"params": params, "scorers": tuple(active), "unavailable": tuple(unavailable),
                "bls_mapping": None if bls_mapping is None else str(bls_mapping)}

    def batch_size(self, suite: Suite, requested: int | str, *, refs, options, samples: int,
                   params: SamplingParams) -> tuple[int, dict | None]:
        """``--batch-size``: a number as given; ``auto`` 120 on a CPU, sized from free memory on a GPU."""
        prompts = list(expand_suite(suite)["prompt"])
        return choose_batch_size(requested, refs=refs, device=options.device, dtype=options.dtype, prompts=prompts,
                                 max_new_tokens=params.max_new_tokens, requests=samples * len(prompts),
                                 revision=options.revision)

    def measure(self, config, store: RunStore, *, load, progress: Progress, clock,
                pool: RayPool | None = None) -> tuple[RunTables, int, dict | None]:
        return _generation_stage(config, store, load=load, progress=progress, clock=clock, pool=pool)

    def identity(self, config) -> dict:
        sampling = {**config.params.to_dict(), "samples_per_prompt": config.samples, "seed": config.seed,
                    "dtype": config.options.dtype}
        if any(r.backend == "transformers" for r in config.refs):  # a local model's texts depend on its batches
            sampling["batch_size"] = config.batch_size
        if config.precision is not None:
            sampling["precision"] = config.precision.describe()
        return {"sampling": sampling, "truncate": config.suite.truncate,
                "scorers": {s.name: s.version for s in config.scorers},
                "statistics": {"n_boot": config.n_boot, "confidence": config.confidence, "min_n": config.min_n,
                               **({"unit": config.unit} if config.unit != "prompt" else {})}}

    def manifest(self, config) -> dict:
        return {**config.params.to_dict(), "samples_per_prompt": config.samples, "seed": config.seed,
                "seed_derivation": "sha256([seed, model, prompt, sample_idx])[:8] >> 1",
                "batch_size": config.batch_size, "dtype": config.options.dtype, "device": config.options.device,
                "truncate": config.suite.truncate}

    def summary(self, config, table: pd.DataFrame, *, generated: int, out: Path, laps: dict[str, float],
                peak_gb: float) -> str:
        return (f"run {config.run_id}: {len(table)} samples ({generated} generated now) -> {out}; "
                f"generation {laps['generate']:.0f} s, everything else "
                f"{sum(laps.values()) - laps['generate']:.0f} s, peak memory {peak_gb:.2f} GB")


GENERATE_AND_SCORE = GenerateAndScore()


def _generation_stage(config, store: RunStore, *, load, progress: Progress,
                      clock: Stopwatch, pool: RayPool | None = None) -> tuple[RunTables, int, dict | None]:
    """Plan, generate what the store lacks, cut and mask, score what the store lacks (on ``pool`` if
    given; with ``--until-mde``: in rounds, see :mod:`nlgbias.pipeline.precision`; the third value is the
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


def _scored_tables(config, store: RunStore, plan: pd.DataFrame, prompts: pd.DataFrame,
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


SCORED_KEY = ["generation_id", "model", "context", "group", "template_id", "is_empty"]


def scored_long(samples: pd.DataFrame, scorers: Sequence[str]) -> pd.DataFrame:
    """One row per (sample, scorer) from a samples table's ``<scorer>_label`` columns:
    ``generation_id, model, context, group, template_id, is_empty, scorer, label`` (scorer by
    scorer; ``template_id`` is what samples are nested in, for prompt-level statistics)."""
    key = [c for c in SCORED_KEY if c in samples.columns]
    rows = [samples[key].assign(scorer=name, label=samples[f"{name}_label"]) for name in scorers]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=[*SCORED_KEY, "scorer", "label"])


def _precision_rounds(config, store: RunStore, prompts: pd.DataFrame, generate,
                      progress: Progress, pool: RayPool | None = None) -> tuple[RunTables, int, dict]:
    """``--until-mde``: generate and score round by round (:func:`nlgbias.pipeline.precision.sample_until`).

    A round's plan is the sample indices each prompt group gains, in the sample-major order of
    :func:`~nlgbias.models.plan.plan_samples`, generated in fixed batches of its own.
    """
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
    (``cell_a``, ``cell_b``: model, context, group) on each side, for :mod:`nlgbias.pipeline.precision`."""
    keep = ["n_a", "k_a", "n_b", "k_b", *[c for c in ("deff", "df") if c in results.gaps]]
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
    # many_to_one: a prompt text that two groups share (BOLD) is one sample of the store in both
    table = plan.merge(stored, on="generation_id", how="left", validate="many_to_one")
    if table["continuation"].isna().any():
        raise StoreError(f"{store.path}: {int(table['continuation'].isna().sum())} planned samples are missing after generation")
    table = table.merge(prompts.drop(columns=["prompt"]), on="prompt_id", how="left", validate="many_to_one")
    group_text = {g.id: g.text for g in suite.groups}
    # the group's mention in each prompt: its one text, or the prompt's variant (a `mention` column)
    mentions = table["mention"] if "mention" in table.columns else table["group"].map(group_text)
    table["is_empty"] = table["continuation"].str.strip() == ""
    table["sentence"] = [truncate(p, c, suite.truncate) for p, c in zip(table["prompt"], table["continuation"])]
    table["scored_text"] = [mask_group(s, m) for s, m in zip(table["sentence"], mentions)]
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


def check_bls_mapping(path: str | Path) -> None:
    """Fail fast, in one line, on a job -> BLS title mapping that would fail after generation."""
    us_shares_and_mapping(path)


def _params(suite: Suite, **overrides) -> SamplingParams:
    values = {**SamplingParams().to_dict(), **suite.sampling}
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SamplingParams(**values)
    except ValueError as exc:
        flag = str(exc).split()[0].replace("_", "-")
        raise InputError(f"{option('--' + flag)}: {exc}") from None


def _load_scorers(names: Sequence[str]) -> tuple[list[Scorer], list[dict]]:
    """The scorers of ``names`` (``regard:DIR`` too), loaded, and the unavailable ones with why; two
    that would write the same columns (``regard`` and ``regard:DIR``) are an error."""
    active: list[Scorer] = []
    given: list[str] = []
    unavailable: list[dict] = []
    for name in dict.fromkeys(names):
        try:
            scorer = get_scorer(name)
        except ScorerUnavailable as exc:
            unavailable.append({"scorer": name, "reason": str(exc)})
            continue
        twin = next((g for g, s in zip(given, active) if s.name == scorer.name), None)
        if twin is not None:
            raise InputError(f"{option('--scorer', name, keyword='scorers', many=True)}: scores as {scorer.name}, "
                             f"like {option('--scorer', twin, keyword='scorers', many=True)}; give one of the two")
        active.append(scorer)
        given.append(name)
    return active, unavailable


__all__ = ["GENERATE_AND_SCORE", "GenerateAndScore", "attach_scores", "build_samples", "check_bls_mapping",
           "comparison_cells", "scored_long"]
