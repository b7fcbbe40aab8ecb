"""Run the regard test suite on one scorer: build the cases, label every sentence, judge, summarise, write.

``check_scorer("regard")`` returns a :class:`CheckResult`; with ``out`` it also writes
``cases.csv``, ``results.csv``, ``summary.json`` and ``summary.md`` there.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from nlgbias.checklist.cases import Half, build_cases
from nlgbias.checklist.lexicons import lexicon_sizes
from nlgbias.checklist.results import failures, judge, pass_rates, summary_markdown, targets
from nlgbias.errors import InputError, ScorerError, option
from nlgbias.scorers import REGISTRY, get_scorer, regard_classifier
from nlgbias.scorers.regard import link_trouble, read_classifier_config
from nlgbias.validate import refuse_special_entries

REGARD_LABELS = {"negative", "neutral", "positive", "other"}
UNKNOWN_SCORER = "scorer {name}: unknown; {hint}available: {names}, or a classifier folder written by `nlgbias train-regard`"
NOT_REGARD = "scorer {name}: does not label regard or sentiment (its labels: {labels}); use one of {names}"
NO_CLASSIFIER = "scorer {name}: a folder without a classifier (no adapter.safetensors); give the --out folder of `nlgbias train-regard`"


@dataclass
class CheckResult:
    """What :func:`check_scorer` found.

    ``cases``: every sentence (:func:`~nlgbias.checklist.cases.build_cases`, plus ``label`` and
    ``confidence``); ``results``: one row per test case (:func:`~nlgbias.checklist.results.judge`);
    ``rates``: pass rates per half and case type with Wilson CIs; ``failed``: a few failures per
    case type; ``targets``: the suite's targets read on the test half.
    """

    scorer: str
    version: str
    cases: pd.DataFrame
    results: pd.DataFrame
    rates: pd.DataFrame
    failed: pd.DataFrame
    targets: list[dict] = field(default_factory=list)

    def table(self) -> str:
        """The pass rates as plain text, a block per half."""
        blocks = []
        for half in self.rates["half"].unique():
            title = ("test half" if half == "test" else "train half (entries that may be in training data)")
            part = self.rates[self.rates["half"] == half]
            rows = [f"{r.case_type:<30} {r.test:<4} {r.expected:<18} {r.n:>5}  {_rate(r)}" for r in part.itertuples()]
            blocks.append("\n".join([f"{self.scorer}: {title}",
                                     f"{'case type':<30} {'test':<4} {'expected':<18} {'n':>5}  pass rate [95% CI]",
                                     *rows]))
        return "\n\n".join(blocks)


def _rate(r) -> str:
    if math.isnan(r.pass_rate):
        return "—"
    return f"{100 * r.pass_rate:5.1f}% [{100 * r.ci_low:.1f}, {100 * r.ci_high:.1f}]"


def resolve_scorer(name: str):
    """The scorer ``name``: a registered scorer that labels regard or sentiment, or a classifier
    folder written by ``nlgbias train-regard`` (3- or 4-class, read from its ``config.json``).

    Raises
    ------
    ScorerError
        Unknown name (with a suggestion), a folder without a classifier, or a scorer whose labels
        are not regard or sentiment labels (``occupation``).
    """

    path = Path(name)
    trouble = link_trouble(path) if name not in REGISTRY else None
    if trouble:
        raise ScorerError(f"scorer {name}: {trouble}; give the classifier folder itself")
    if name not in REGISTRY and path.is_dir():
        if not (path / "adapter.safetensors").is_file():
            trouble = link_trouble(path / "adapter.safetensors")
            raise ScorerError(f"scorer {name}: a folder without a classifier (its adapter.safetensors is {trouble})"
                              if trouble else NO_CLASSIFIER.format(name=name))
        try:
            labels = read_classifier_config(path)["labels"]
        except ScorerError as exc:
            raise ScorerError(f"scorer {name}: {exc}; give the --out folder of `nlgbias train-regard`") from None
        return regard_classifier(path, scorer="regard4" if "other" in labels else "regard", flag=f"scorer {name}")
    usable = sorted(n for n in REGISTRY if n != "occupation")
    if name not in REGISTRY:
        close = difflib.get_close_matches(name, usable, n=1)
        raise ScorerError(UNKNOWN_SCORER.format(name=name, hint=f"did you mean {close[0]}? " if close else "",
                                                names=", ".join(usable)))
    scorer = get_scorer(name)
    labels = set(getattr(scorer, "labels", ()))
    if not labels or not labels <= REGARD_LABELS:
        raise ScorerError(NOT_REGARD.format(name=name, labels=", ".join(sorted(labels)) or "(none)",
                                            names=", ".join(usable)))
    return scorer


def label_texts(scorer, texts) -> pd.DataFrame:
    """Each distinct text labelled once: ``text, label, confidence`` (the probability of the label
    where the scorer's ``details`` hold class probabilities, else NaN)."""
    distinct = list(dict.fromkeys(texts))
    scored = scorer.score(distinct)
    confidence = [float(d[lab]) if isinstance(d, dict) and isinstance(d.get(lab), float) else math.nan
                  for lab, d in zip(scored["label"], scored["details"])]
    return pd.DataFrame({"text": distinct, "label": list(scored["label"]), "confidence": confidence})


def _subset(cases: pd.DataFrame, per_type: int) -> pd.DataFrame:
    """At most ``per_type`` test cases per half and case type (pairs kept whole), in a fixed order."""
    key = cases["pair_id"].where(cases["pair_id"] != "", cases["case_id"])
    order = key.map(lambda k: hashlib.sha256(k.encode()).hexdigest())
    chosen = (pd.DataFrame({"key": key, "order": order, "half": cases["half"], "case_type": cases["case_type"]})
              .drop_duplicates("key").sort_values("order").groupby(["half", "case_type"]).head(per_type)["key"])
    return cases[key.isin(set(chosen))].reset_index(drop=True)


def check_scorer(scorer: str, *, half: Half = "all", out: str | Path | None = None,
                 max_per_type: int | None = None, failures_per_type: int = 3) -> CheckResult:
    """Run the regard test suite on ``scorer`` and summarise how often it behaves as expected.

    Parameters
    ----------
    scorer : str
        A registered scorer (``regard``, ``regard4``, ``regard-v1``, ``vader``, ``textblob`` ...) or a
        classifier folder written by ``nlgbias train-regard``.
    half : {"all", "test", "train"}, default="all"
        Which half of the lexicons the cases come from; report the test half.
    out : path, optional
        Folder to write ``cases.csv``, ``results.csv``, ``summary.json`` and ``summary.md`` to.
    max_per_type : int, optional
        At most this many test cases per half and case type (a quick check); all by default.
    failures_per_type : int, default=3
        Example failures kept per half and case type.

    Returns
    -------
    CheckResult
    """
    if half not in ("all", "test", "train"):
        raise InputError(f"{option('--half', half)}: expected all, test or train")
    if max_per_type is not None and (not isinstance(max_per_type, int) or max_per_type < 1):
        raise InputError(f"{option('--max-per-type', max_per_type)}: must be a whole number of at least 1")
    out_dir = Path(out) if out is not None else None
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{option('--out', str(out_dir))}: is a file; give a folder")
    if out_dir is not None and out_dir.is_dir():
        refuse_special_entries(out_dir)  # a FIFO or device there: refused before the scorer runs
    chosen = resolve_scorer(scorer)
    cases = build_cases(half=half)
    if max_per_type is not None:
        cases = _subset(cases, max_per_type)
    labels = label_texts(chosen, cases["text"])
    results = judge(cases, labels)
    rates = pass_rates(results)
    name = scorer if scorer in _registry() else f"{chosen.name} ({Path(scorer).name})"
    result = CheckResult(scorer=name, version=str(getattr(chosen, "version", "")),
                         cases=cases.join(labels.set_index("text"), on="text"), results=results, rates=rates,
                         failed=failures(results, per_type=failures_per_type), targets=targets(rates))
    if out_dir is not None:
        try:
            write_check(result, out_dir, half=half, max_per_type=max_per_type)
        except OSError as exc:
            raise InputError(f"{option('--out', str(out_dir))}: cannot write ({exc.strerror or exc})") from None
    return result


def _registry() -> set[str]:

    return set(REGISTRY)


def write_check(result: CheckResult, out: Path, *, half: str, max_per_type: int | None) -> list[Path]:
    """Write ``cases.csv``, ``results.csv``, ``summary.json`` and ``summary.md`` to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "cases.csv", out / "results.csv", out / "summary.json", out / "summary.md"]
    result.cases.to_csv(paths[0], index=False)
    result.results.to_csv(paths[1], index=False)
    summary = {"scorer": result.scorer, "version": result.version, "half": half, "max_per_type": max_per_type,
               "lexicon_sizes": lexicon_sizes(), "targets": result.targets,
               "pass_rates": json.loads(result.rates.to_json(orient="records")),
               "failures": json.loads(result.failed.to_json(orient="records"))}
    paths[2].write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    paths[3].write_text(summary_markdown(result.rates, result.failed, scorer=result.scorer) + "\n", encoding="utf-8")
    return paths


__all__ = ["CheckResult", "check_scorer", "label_texts", "resolve_scorer", "write_check"]
