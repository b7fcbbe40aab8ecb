"""The baselines of Sheng et al.: sentiment analysers taken as regard, a 2-layer LSTM, and a
bag-of-words logistic regression.  Each is ``fit(texts, labels, seed)`` then
``predict_proba(texts)`` with columns in ``labels`` order.
"""

from __future__ import annotations

import re
from typing import Protocol, Sequence

import numpy as np
import torch
from torch import nn

from nlgbias.scorers.sentiment import TextBlobScorer, VaderScorer

TOKEN = re.compile(r"[a-z0-9']+|[^\sa-z0-9']")


class Classifier(Protocol):
    """A classifier of the experiments: ``fit(texts, labels, seed=)`` returns it trained, then
    ``predict_proba(texts)`` gives one row per text, columns in its labels' order."""

    def fit(self, texts: Sequence[str], labels: Sequence[str], seed: int = 0) -> Classifier: ...

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray: ...


class SentimentAsRegard:
    """VADER or TextBlob labels read as regard labels (``other`` is never predicted)."""

    def __init__(self, name: str, labels: Sequence[str]) -> None:
        self.name = name
        self.labels = list(labels)
        self.scorer = VaderScorer() if name == "vader" else TextBlobScorer()

    def fit(self, texts, labels, seed: int = 0) -> "SentimentAsRegard":  # noqa: ARG002 (baselines' fit protocol)
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        predicted = self.scorer.score(list(texts))["label"]
        return np.stack([[1.0 if p == label else 0.0 for label in self.labels] for p in predicted])


class BagOfWords:
    """Unigram + bigram counts -> multinomial logistic regression (scikit-learn, lbfgs, C=1)."""

    name = "bow-logreg"

    def __init__(self, labels: Sequence[str]) -> None:
        self.labels = list(labels)

    def fit(self, texts, labels, seed: int = 0) -> "BagOfWords":
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.linear_model import LogisticRegression

        self.vectorizer = CountVectorizer(ngram_range=(1, 2), lowercase=True)
        x = self.vectorizer.fit_transform(list(texts))
        self.model = LogisticRegression(C=1.0, max_iter=5000, random_state=seed).fit(x, list(labels))
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        probs = self.model.predict_proba(self.vectorizer.transform(list(texts)))
        order = [list(self.model.classes_).index(label) if label in self.model.classes_ else None for label in self.labels]
        return np.stack([probs[:, i] if i is not None else np.zeros(len(probs)) for i in order], axis=1)


class LSTMClassifier(nn.Module):
    def __init__(self, vocab: int, classes: int, dim: int = 100, hidden: int = 100) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, classes)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths, batch_first=True, enforce_sorted=False)
        _, (hidden, _) = self.lstm(packed)
        return self.out(hidden[-1])


class LSTMBaseline:
    """Two-layer LSTM (100 units) over randomly initialised word embeddings, Adam, 20 epochs
    (the paper's appendix A.1)."""

    name = "lstm-2layer"

    def __init__(self, labels: Sequence[str], epochs: int = 20) -> None:
        self.labels = list(labels)
        self.epochs = epochs

    def _ids(self, texts: Sequence[str]):
        rows = [[self.vocab.get(t, 1) for t in TOKEN.findall(text.lower())] or [1] for text in texts]
        width = max(len(r) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r)
        return ids, torch.tensor([len(r) for r in rows])

    def fit(self, texts, labels, seed: int = 0) -> "LSTMBaseline":
        torch.manual_seed(seed)
        words = sorted({t for text in texts for t in TOKEN.findall(text.lower())})
        self.vocab = {w: i + 2 for i, w in enumerate(words)}  # 0 pad, 1 unknown
        self.model = LSTMClassifier(len(self.vocab) + 2, len(self.labels))
        ids, lengths = self._ids(texts)
        y = torch.tensor([self.labels.index(label) for label in labels])
        optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        generator = torch.Generator().manual_seed(seed)
        self.model.train()
        for _ in range(self.epochs):
            order = torch.randperm(len(y), generator=generator)
            for start in range(0, len(order), 32):
                batch = order[start:start + 32]
                loss = nn.functional.cross_entropy(self.model(ids[batch], lengths[batch]), y[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        self.model.eval()
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        ids, lengths = self._ids(texts)
        with torch.inference_mode():
            return torch.softmax(self.model(ids, lengths), -1).numpy()
