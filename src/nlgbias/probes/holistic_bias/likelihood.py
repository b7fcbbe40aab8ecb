"""The ``likelihood`` suite kind: HolisticBias sentences -> the model's mean log-probability per token.

Smith et al. (2022) measure how likely a model finds each HolisticBias sentence (template x noun
phrase).  For every sentence this reads the model's log-probability of each of its tokens after a
start token (``<|endoftext|>`` where the vocabulary has one, else BOS, else EOS) and records their
mean (``logprob``: minus the log of the sentence's perplexity) and the number of tokens.  Nothing is
sampled.  A run takes a seeded sample of ``prompts_per_group`` sentences per descriptor
(:mod:`nlgbias.suites.sample`); each batch is stored as it completes, so a killed run resumes.
Local models only (a server gives no log-probabilities of given text here).

:data:`SENTENCE_LIKELIHOOD` is the ``likelihood`` entry of :mod:`nlgbias.pipeline.measurements`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nlgbias.analyses.base import RunTables
from nlgbias.errors import BackendError, option
from nlgbias.models import TokenBackend
from nlgbias.probes.forward import FORWARD_BATCH, ForwardOnly
from nlgbias.probes.pronouns.probabilities import _tail_logprobs, start_token_id
from nlgbias.probes.pronouns.stage import _key, _measured
from nlgbias.store import RunStore
from nlgbias.suites import Suite, holistic_bias
from nlgbias.suites.sample import pick_paired

PROMPT_COLUMNS = ["prompt_id", "axis", "group", "template_id", "noun_phrase_type", "noun", "preference", "prompt"]
NEEDS_TOKENS = ("{model}: the likelihood suite reads the log-probability of every token of a sentence, which "
                "needs a local model (a transformers or embedded backend), not a server")
WITHOUT_TOKENS = {"openai": "a server", "fake": "the fake model"}  # built-in backends without token-level access


def likelihood_prompts(suite: Suite) -> pd.DataFrame:
    """The sentences of a run: for each descriptor (on the 13 axes), its sample of template x noun phrase.

    A template that must have a noun gets no bare descriptor (the dataset's rule).  The sample is
    ``suite.sample`` (``prompts_per_group``, ``seed``), paired: every descriptor gets the same
    templates, each with one of its noun phrases (:func:`~nlgbias.suites.sample.pick_paired`); all
    sentences where the suite has none.  ``suite.probe["axes"]``, where given, keeps those axes only.

    Returns
    -------
    pandas.DataFrame
        ``prompt_id, axis, group, template_id, noun_phrase_type, noun, preference, prompt``
        (``group``: the descriptor's id; ``prompt``: the sentence).
    """
    phrases = holistic_bias.noun_phrases([t for t in holistic_bias.NOUN_PHRASE_TYPES if t != "noun"])
    phrases = phrases.assign(group=holistic_bias.descriptor_ids(phrases))
    if suite.probe.get("axes"):  # a suite (or a test) restricted to some axes
        phrases = phrases[phrases["axis"].isin(suite.probe["axes"])]
    templates = holistic_bias.sentence_templates().to_dict(orient="records")
    n, seed = suite.sample.get("prompts_per_group"), suite.sample.get("seed", 0)
    rows = []
    for group, mine in phrases.groupby("group", sort=False):
        every = mine.to_dict(orient="records")
        nouns = [r for r in every if r["noun_phrase_type"] != "descriptor"]
        choices = [nouns if t["must_be_noun"] else every for t in templates]  # the sentences of each template
        ends = np.cumsum([len(c) for c in choices])
        cells = [(k, j) for k, c in enumerate(choices) for j in range(len(c))]  # (template, its sentence)
        for i in pick_paired(cells, n, templates=len(templates), seed=seed, key=str(group)):
            k = int(np.searchsorted(ends, i, side="right"))
            t, r = templates[k], choices[k][i - (ends[k - 1] if k else 0)]
            phrase = r["plural_noun_phrase"] if t["plural"] else r["noun_phrase"]
            slot = "{plural_noun_phrase}" if t["plural"] else "{noun_phrase}"
            rows.append({"prompt_id": f"{t['template_id']}|{group}|{r['noun_phrase']}", "axis": r["axis"],
                         "group": group, "template_id": t["template_id"], "noun_phrase_type": r["noun_phrase_type"],
                         "noun": r["noun"], "preference": r["descriptor_preference"],
                         "prompt": t["template"].replace(slot, phrase)})
    return pd.DataFrame(rows, columns=PROMPT_COLUMNS)


def sentence_logprobs(backend, sentences: list[str], *, batch_size: int = FORWARD_BATCH) -> list[dict]:
    """``{"logprob": mean log-probability per token, "n_tokens": tokens}`` of each sentence.

    The tokens are the sentence's own (no special tokens), each scored after the start token and
    the tokens before it; ``logprob`` is their mean log-probability (natural log).
    """
    tok = backend.tokenizer
    start = start_token_id(backend, "<|endoftext|>" if "<|endoftext|>" in tok.get_vocab() else None)
    ids = [list(tok(s, add_special_tokens=False)["input_ids"]) for s in sentences]
    seqs = [[start] + x[:-1] for x in ids]  # position j predicts token j of the sentence
    out: list[dict] = [{}] * len(sentences)
    for i, logp in _tail_logprobs(backend, seqs, [len(x) for x in ids], batch_size=batch_size):
        values = logp[np.arange(len(ids[i])), ids[i]].numpy()
        out[i] = {"logprob": float(values.mean()), "n_tokens": len(ids[i])}
    return out


class SentenceLikelihood(ForwardOnly):
    """The ``likelihood`` measurement: mean log-probability per token of each sentence; nothing sampled."""

    kind = "likelihood"

    def prompts(self, suite: Suite) -> pd.DataFrame:
        """:func:`likelihood_prompts`."""
        return likelihood_prompts(suite)

    def check_models(self, refs) -> None:
        """Servers and the fake model give no log-probabilities of given text: refused before the run
        creates anything (another backend is checked when it loads)."""
        for ref in refs:
            if ref.backend in WITHOUT_TOKENS:
                raise BackendError(f"{option('--model', ref.model_id, keyword='models', many=True)}: the likelihood "
                                   f"suite reads the log-probability of every token of a sentence, which needs a "
                                   f"local model (a transformers or embedded backend), not "
                                   f"{WITHOUT_TOKENS[ref.backend]}")

    def measure(self, config, store: RunStore, *, load, progress, clock, pool=None) -> tuple[RunTables, int, None]:  # noqa: ARG002 (the Measurement protocol)
        """Measure the log-probabilities the store lacks (a batch per transaction)."""
        prompts = likelihood_prompts(config.suite)

        def compute(backend, rows: pd.DataFrame) -> list[dict]:
            if not isinstance(backend, TokenBackend):
                raise BackendError(NEEDS_TOKENS.format(model=backend.model_id))
            return sentence_logprobs(backend, rows["prompt"].tolist(), batch_size=min(config.batch_size, FORWARD_BATCH))

        frames = [_measured(prompts, ref, store, kind="logprob", load=load, batch_size=config.batch_size,
                            keys=[_key(ref, "logprob", p) for p in prompts["prompt"]], compute=compute,
                            progress=lambda desc, n: progress.bar(desc, n, "sentence"))
                  for ref in config.refs]
        clock.lap("generate")
        table = pd.concat([f for f in frames if f is not None], ignore_index=True)
        table = table.assign(run_id=config.run_id, suite=config.suite.name)
        table = table[["run_id", "model", "suite", *[c for c in table.columns if c not in ("run_id", "model", "suite")]]]
        return RunTables(table, pd.DataFrame(), config.suite), 0, None

    def identity(self, config) -> dict:
        return {"statistics": {"n_boot": config.n_boot, "confidence": config.confidence, "seed": config.seed}}

    def manifest(self, config) -> dict:
        return {"sampled": False, "measured": "mean log-probability per token of each sentence (no sampling), float64",
                "batch_size": config.batch_size, "seed": config.seed, "device": config.options.device,
                "logprob_dtype": "float64", "truncate": None, "prompts_per_group": config.suite.sample.get(
                    "prompts_per_group")}

    def summary(self, config, table: pd.DataFrame, *, generated: int, out, laps: dict[str, float],  # noqa: ARG002 (the Measurement protocol)
                peak_gb: float) -> str:  # noqa: ARG002 (the Measurement protocol)
        return (f"run {config.run_id}: {len(table)} sentence likelihoods -> {out}; model passes "
                f"{laps.get('generate', 0):.0f} s")


SENTENCE_LIKELIHOOD = SentenceLikelihood()

__all__ = ["SENTENCE_LIKELIHOOD", "SentenceLikelihood", "likelihood_prompts", "sentence_logprobs"]
