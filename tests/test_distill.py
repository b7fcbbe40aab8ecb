"""Knowledge distillation for the regard student: the soft-label loss, soft-label files, training on them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from nlgbias.errors import InputError
from nlgbias.training.dataset import load_soft
from nlgbias.training.train import _SoftCrossEntropy

NAMES = ["negative", "neutral", "positive"]


def test_soft_cross_entropy_on_one_hot_targets_is_torch_cross_entropy():
    logits = torch.randn(9, 3, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1, 2, 2, 1, 0, 0, 0, 1])
    one_hot = nn.functional.one_hot(y, 3).float()
    weight = torch.tensor([2.0, 0.5, 1.0])
    torch.testing.assert_close(_SoftCrossEntropy()(logits, one_hot), nn.CrossEntropyLoss()(logits, y), atol=1e-6, rtol=0)
    torch.testing.assert_close(_SoftCrossEntropy(weight)(logits, one_hot), nn.CrossEntropyLoss(weight=weight)(logits, y),
                               atol=1e-6, rtol=0)


def test_soft_cross_entropy_by_hand():
    """-sum(t * log softmax(z)) averaged: (log 2 + (-(0.25 log 0.5 + 0.75 log 0.5))) / 2 = log 2 for equal logits."""
    logits = torch.zeros(2, 2)
    target = torch.tensor([[1.0, 0.0], [0.25, 0.75]])
    assert _SoftCrossEntropy()(logits, target).item() == pytest.approx(np.log(2), abs=1e-6)


def test_student_moves_toward_the_teacher():
    """Unannotated texts whose teacher says negative pull the student's P(negative) up on them."""
    from nlgbias.training.train import predict_proba, train_classifier

    texts = ["XYZ was a kind doctor.", "XYZ worked as a clerk.", "XYZ was admired by everyone.",
             "XYZ had a job as a cashier."] * 2
    labels = ["positive", "neutral", "positive", "neutral"] * 2
    unlabelled = ["XYZ worked as a pimp.", "XYZ worked as a hitman.", "XYZ worked as a loan shark."] * 2
    teacher = np.tile([0.9, 0.08, 0.02], (len(unlabelled), 1))
    settings = dict(label_names=NAMES, seed=0, epochs=3, batch_size=7, rank=0, top_layers=2, lr=1e-4, balance=False)
    tok, plain = train_classifier(texts, labels, **settings)
    _, student = train_classifier(texts, labels, soft=(unlabelled, teacher), **settings)
    before = predict_proba(plain, tok, unlabelled[:3])[:, 0]
    after = predict_proba(student, tok, unlabelled[:3])[:, 0]
    assert (after > before + 0.1).all(), (before, after)
    with pytest.raises(ValueError, match="soft labels"):
        train_classifier(texts, labels, soft=(unlabelled, teacher[:, :2]), **settings)


def test_soft_label_files_are_checked(tmp_path):
    good = tmp_path / "soft.csv"
    pd.DataFrame({"text": ["XYZ was a pimp.", "XYZ smiled."], "p_negative": [0.9, 0.1], "p_neutral": [0.05, 0.6],
                  "p_positive": [0.05, 0.3], "source": ["a", "b"]}).to_csv(good, index=False)
    table = load_soft(good)
    assert table["text"].tolist() == ["XYZ was a pimp.", "XYZ smiled."]
    assert table["p_negative"].tolist() == pytest.approx([0.9, 0.1])
    missing = tmp_path / "missing.csv"
    pd.DataFrame({"text": ["a"], "p_negative": [1.0]}).to_csv(missing, index=False)
    with pytest.raises(InputError, match="missing column 'p_neutral', 'p_positive'"):
        load_soft(missing)
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"text": ["a", "b"], "p_negative": [0.2, 0.5], "p_neutral": [0.3, "x"],
                  "p_positive": [0.5, 0.1]}).to_csv(bad, index=False)
    with pytest.raises(InputError, match="row 3: the probabilities must be numbers from 0 to 1 that sum to 1"):
        load_soft(bad)
    assert load_soft(None, default=False) is None


def test_train_regard_refuses_soft_labels_for_four_classes(capsys, tmp_path):
    from test_cli import assert_one_line_error, call

    soft = tmp_path / "soft.csv"
    pd.DataFrame({"text": ["a"], "p_negative": [1.0], "p_neutral": [0.0], "p_positive": [0.0]}).to_csv(soft, index=False)
    code, _, err = call(capsys, "train-regard", "--soft", str(soft), "--classes", "4", "--out", str(tmp_path / "out"))
    assert_one_line_error(code, err, "--soft: teacher labels are 3-class; use --classes 3")
    code, _, err = call(capsys, "train-regard", "--soft", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "out"))
    assert code == 2 and "nope.csv" in err and "Traceback" not in err
