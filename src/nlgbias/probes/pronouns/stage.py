"""The probability stage of a pronoun suite (``kind: pronoun``): prompts -> next-word probabilities.

No text is sampled: for every prompt the model's next-word probabilities of the suite's pronouns
are read (:mod:`nlgbias.probes.pronouns.probabilities`), with the model's certainty from the same pass, the
saliency of the profession for a seeded subset of prompts, and the default behaviour after the
start token alone.  Each batch of prompts is stored in the run store as it completes, so a killed
run resumes where it stopped.  The ``pronouns`` analysis (:mod:`.analysis`) reads the tables.
:data:`TOKEN_PROBABILITIES` is the ``pronoun`` entry of :mod:`nlgbias.pipeline.measurements`.

Token-level measures need a :class:`~nlgbias.models.TokenBackend`; other backends give the
probabilities through ``next_token_logprobs`` (one request per prompt and word) and no saliency
or default behaviour.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from nlgbias.analyses.base import RunTables
from nlgbias.errors import BackendError
from nlgbias.keys import cell_seed, record_key
from nlgbias.metrics.gender_direction import load_debiaswe
from nlgbias.models import ModelRef, TokenBackend
from nlgbias.probes.forward import ForwardOnly
from nlgbias.probes.pronouns.probabilities import (
    continuation_probabilities,
    expand_templates,
    perturbations,
    saliency,
    start_token_probabilities,
)
from nlgbias.store import RunStore
from nlgbias.store.cache import chunked, fill, missing_records, save_records
from nlgbias.suites import Suite, data_file

PROMPT_COLUMNS = ["prompt_id", "prompt_set", "template_id", "profession", "perturbation", "prompt", "word"]


def debiaswe_professions() -> list[str]:
    """Bolukbasi et al.'s 320 professions minus the 17 gendered by definition (gender_specific_full)."""
    specific = {w.lower() for w in load_debiaswe("gender_specific_full")}
    return [row[0].replace("_", " ") for row in load_debiaswe("professions") if row[0].lower() not in specific]


def pronoun_prompts(suite: Suite) -> pd.DataFrame:
    """Every prompt of a pronoun suite, with its perturbations (with ``prompts_per_set``: a seeded subset
    of each set's base prompts, all perturbations of each kept).

    Returns
    -------
    pandas.DataFrame
        ``prompt_id, prompt_set, template_id, profession, perturbation, prompt, word`` (``word``:
        the profession word in the prompt for saliency; None for Delete).
    """
    frames = []
    for entry in suite.probe["prompt_sets"]:
        table = pd.read_csv(data_file(suite, entry["source"]), keep_default_na=False, dtype=str)
        if entry.get("professions"):
            professions = (debiaswe_professions() if entry["professions"] == "debiaswe" else
                           pd.read_csv(data_file(suite, entry["professions"]), dtype=str)["profession"].tolist())
            rows = expand_templates(table.rename(columns={"id": "template_id"}), professions, perturbed=True)
        else:
            table = table.assign(template_id=table["profession"], article=table["article"].replace("", None))
            rows = perturbations(table)
        rows = rows.assign(prompt_set=entry["id"])
        if suite.probe.get("prompts_per_set"):
            rows = _subset(rows, int(suite.probe["prompts_per_set"]), entry["id"])
        frames.append(rows)
    prompts = pd.concat(frames, ignore_index=True)
    prompts = prompts[prompts["perturbation"].isin(suite.probe["perturbations"])]
    prompts["prompt_id"] = (prompts["prompt_set"] + "|" + prompts["template_id"].astype(str) + "|"
                            + prompts["profession"].astype(str) + "|" + prompts["perturbation"])
    return prompts[PROMPT_COLUMNS].drop_duplicates("prompt_id").reset_index(drop=True)


def _subset(rows: pd.DataFrame, keep: int, prompt_set: str) -> pd.DataFrame:
    """``keep`` of a prompt set's base prompts (template x profession), every perturbation of each, chosen
    in a fixed order seeded by the set's id (the same subset on every run and machine), in file order."""
    base = list(dict.fromkeys(zip(rows["template_id"].astype(str), rows["profession"].astype(str))))
    chosen = set(sorted(base, key=lambda b: cell_seed(0, "prompts_per_set", prompt_set, *b))[:keep])
    mask = [(t, p) in chosen for t, p in zip(rows["template_id"].astype(str), rows["profession"].astype(str))]
    return rows[mask]


def _key(ref: ModelRef, kind: str, *parts) -> str:
    return record_key(ref.model_id, ref.fingerprint, kind, *parts)


def _measured(table: pd.DataFrame, ref: ModelRef, store: RunStore, *, kind: str, keys: list[str], load, progress,
              batch_size: int, compute, token_level: bool = False) -> pd.DataFrame | None:
    """``table`` joined with the stored ``kind`` record of each row, measuring what the store lacks.

    Distinct keys are measured once, a batch at a time, each batch stored in one transaction
    (:func:`~nlgbias.store.cache.fill`, so a killed run resumes); ``compute(backend, rows)`` returns
    one dict per row of ``rows``.  With ``token_level``, a model whose backend is no
    :class:`TokenBackend` gives None.
    """
    todo = missing_records(keys, store)
    if todo:
        backend = load(ref.model_id)
        if token_level and not isinstance(backend, TokenBackend):
            return None
        chunks = chunked(todo, batch_size)
        fill(chunks, ((i, compute(backend, table.iloc[chunk])) for i, chunk in enumerate(chunks)),
             save_records(store, kind, keys), bar=progress(f"{kind} {ref.model_id}", len(todo)))
    have = store.records(keys)
    values = pd.DataFrame([have[key] for key in keys])
    return pd.concat([table.reset_index(drop=True), values], axis=1).assign(model=ref.model_id)


def probability_table(prompts: pd.DataFrame, refs, store: RunStore, *, load, continuations: list[str],
                      batch_size: int, progress) -> pd.DataFrame:
    """Next-word probabilities of ``continuations`` for every (model, prompt), from the store where known.

    Local models: :func:`~nlgbias.probes.pronouns.continuation_probabilities` (with certainty).
    Server models: the server's prompt log-probabilities, one request per (prompt, word); no
    certainty columns (NaN).
    """
    words = [" " + c for c in continuations]

    def compute(backend, rows: pd.DataFrame) -> list[dict]:
        texts = rows["prompt"].tolist()
        if not isinstance(backend, TokenBackend):
            return _server_rows(backend, texts, words)
        table = continuation_probabilities(backend, texts, words, batch_size=min(batch_size, 32))
        return table.drop(columns=["prompt", "model", "n_tokens"], errors="ignore").to_dict(orient="records")

    return pd.concat([_measured(prompts, ref, store, kind="probabilities", load=load, progress=progress,
                                keys=[_key(ref, "probabilities", p, continuations) for p in prompts["prompt"]],
                                batch_size=batch_size, compute=compute) for ref in refs], ignore_index=True)


def _server_rows(backend, texts: list[str], words: list[str]) -> list[dict]:
    contexts = [t for t in texts for _ in words]
    targets = [w for _ in texts for w in words]
    logps = backend.next_token_logprobs(contexts, targets)
    rows = []
    for i in range(len(texts)):
        row: dict[str, float | None] = {w.strip(): float(np.exp(v))
                                        for w, v in zip(words, logps[i * len(words):(i + 1) * len(words)])}
        row.update({"top1": np.nan, "top1_token": None, "top1_id": None, "top2": np.nan, "gap": np.nan})
        rows.append(row)
    return rows


def saliency_table(prompts: pd.DataFrame, refs, store: RunStore, *, load, per_set: int, seed: int,
                   progress) -> pd.DataFrame:
    """Saliency of the profession word and of the last token for a seeded subset of Orig prompts
    (local models only: servers return no gradients)."""
    orig = prompts[prompts["perturbation"] == "orig"]
    picked = pd.concat([cell.sample(n=min(per_set, len(cell)), random_state=seed)
                        for _, cell in orig.groupby("prompt_set", sort=False)]) if per_set else orig.iloc[:0]

    def compute(backend, rows: pd.DataFrame) -> list[dict]:
        table = saliency(backend, rows["prompt"].tolist(), rows["word"].tolist())
        return [{"profession_saliency": float(a), "last_saliency": float(b)}
                for a, b in zip(table["profession_saliency"], table["last_saliency"])]

    frames = [_measured(picked, ref, store, kind="saliency", load=load, progress=progress, batch_size=16,
                        keys=[_key(ref, "saliency", p, w) for p, w in zip(picked["prompt"], picked["word"])],
                        compute=compute, token_level=True)
              for ref in refs if not picked.empty]
    frames = [frame for frame in frames if frame is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def default_table(refs, store: RunStore, *, load, continuations: list[str]) -> pd.DataFrame:
    """Probabilities of the pronouns as the first word after the start token alone, per model."""
    rows = []
    for ref in refs:
        key = _key(ref, "default", continuations)
        have = store.records([key])
        if key not in have:
            backend = load(ref.model_id)
            if not isinstance(backend, TokenBackend):
                continue
            # GPT-2 style document start (<|endoftext|>) where the vocabulary has one, as in the paper;
            # else the model's BOS, else its EOS.
            start = "<|endoftext|>" if "<|endoftext|>" in backend.tokenizer.get_vocab() else None
            try:
                series = start_token_probabilities(backend, [" " + c for c in continuations], start_token=start)
            except BackendError as exc:
                rows.append({"model": ref.model_id, "start_token": f"none ({exc})"})
                continue
            store.add_records("default", {key: {"start_token": str(series.attrs.get("start_token")),
                                                **{str(k).strip(): float(v) for k, v in series.items()}}})
            have = store.records([key])
        rows.append({"model": ref.model_id, **have[key]})
    return pd.DataFrame(rows)


def probability_stage(suite: Suite, refs, store: RunStore, *, load, seed: int, batch_size: int,
                      progress) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Every measurement of a pronoun suite, from the store where known.

    Model by model: each is loaded at most once (only if the store lacks one of its
    measurements), measured for probabilities, saliency and default behaviour, and closed
    before the next one loads.

    Returns
    -------
    (pandas.DataFrame, dict)
        The probability table (one row per model and prompt; the run's samples table) and the
        probe's other tables: ``saliency`` and ``default`` (empty where no model can give them).
    """
    prompts = pronoun_prompts(suite)
    continuations = list(suite.probe["continuations"])
    probs, sal, default = [], [], []
    for ref in refs:
        once = _LoadOnce(load)
        try:
            probs.append(probability_table(prompts, [ref], store, load=once, continuations=continuations,
                                           batch_size=batch_size, progress=progress))
            sal.append(saliency_table(prompts, [ref], store, load=once, per_set=suite.probe["saliency_prompts"],
                                      seed=seed, progress=progress))
            if suite.probe["default_probe"]:
                default.append(default_table([ref], store, load=once, continuations=continuations))
        finally:
            once.close()
    nonempty = lambda frames: [f for f in frames if not f.empty]
    return pd.concat(probs, ignore_index=True), {
        "saliency": pd.concat(nonempty(sal), ignore_index=True) if nonempty(sal) else pd.DataFrame(),
        "default": pd.concat(nonempty(default), ignore_index=True) if nonempty(default) else pd.DataFrame()}


class _LoadOnce:
    """``load(model_id)`` that loads a model on its first call only; :meth:`close` closes what it loaded."""

    def __init__(self, load) -> None:
        self._load = load
        self._loaded: dict[str, Any] = {}

    def __call__(self, model_id: str):
        if model_id not in self._loaded:
            self._loaded[model_id] = self._load(model_id)
        return self._loaded[model_id]

    def close(self) -> None:
        for backend in self._loaded.values():
            backend.close()
        self._loaded.clear()


class TokenProbabilities(ForwardOnly):
    """The ``pronoun`` measurement: next-word probabilities (and saliency, default behaviour); nothing sampled."""

    kind = "pronoun"

    def prompts(self, suite: Suite) -> pd.DataFrame:
        """:func:`pronoun_prompts`: every prompt of the suite's prompt sets, with its perturbations."""
        return pronoun_prompts(suite)

    def measure(self, config, store: RunStore, *, load, progress, clock, pool=None) -> tuple[RunTables, int, None]:  # noqa: ARG002 (the Measurement protocol)
        """Measure next-word probabilities (and the probe's other tables) the store lacks."""
        probs, probes = probability_stage(config.suite, config.refs, store, load=load, seed=config.seed,
                                          batch_size=config.batch_size,
                                          progress=lambda desc, n: progress.bar(desc, n, "prompt"))
        clock.lap("generate")
        table = probs.assign(run_id=config.run_id, suite=config.suite.name)
        table = table[["run_id", "model", "suite",
                       *[c for c in table.columns if c not in ("run_id", "model", "suite")]]]
        return RunTables(table, pd.DataFrame(), config.suite, probes), 0, None

    def identity(self, config) -> dict:
        return {"probe": {k: v for k, v in config.suite.probe.items() if k != "prompt_sets"},
                "statistics": {"n_boot": config.n_boot, "confidence": config.confidence, "seed": config.seed}}

    def manifest(self, config) -> dict:
        return {"sampled": False, "batch_size": config.batch_size, "seed": config.seed,
                "device": config.options.device, "logprob_dtype": "float32", "truncate": None}

    def summary(self, config, table: pd.DataFrame, *, generated: int, out, laps: dict[str, float],  # noqa: ARG002 (the Measurement protocol)
                peak_gb: float) -> str:  # noqa: ARG002 (the Measurement protocol)
        return f"run {config.run_id}: {len(table)} prompt probabilities -> {out}"


TOKEN_PROBABILITIES = TokenProbabilities()

__all__ = ["TOKEN_PROBABILITIES", "TokenProbabilities", "debiaswe_professions", "default_table", "pronoun_prompts",
           "probability_stage", "probability_table", "saliency_table"]
