"""Train and apply the regard classifier (fine-tuned MiniLM encoder + linear head).

Training is deterministic for a given seed on a given machine: seeded initialisation,
seeded batch order and dropout, deterministic algorithms, a fixed thread count.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from nlgbias.scorers.regard_model import MAX_TOKENS, RegardModel, load_encoder

TRAIN_THREADS = 2


def set_determinism(seed: int, device: str = "cpu") -> None:
    """Seed torch and numpy, ask for deterministic kernels (on a GPU: where they exist) and fix the threads."""
    torch.manual_seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.use_deterministic_algorithms(True, warn_only=device != "cpu")
    torch.set_num_threads(TRAIN_THREADS)


def encode(tokenizer, texts: Sequence[str], max_tokens: int = MAX_TOKENS):
    """Token ids and attention mask (padded to the longest, cut at ``max_tokens``)."""
    return tokenizer(list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")


def train_classifier(texts: Sequence[str], labels: Sequence[str], *, label_names: Sequence[str], seed: int = 0,
                     epochs: int = 6, batch_size: int = 16, lr: float = 1e-3, rank: int = 8, alpha: float = 16.0,
                     weight_decay: float = 0.01, balance: bool = True, train_all: bool = False,
                     top_layers: int = 0, head_lr: float | None = None,
                     encoder=None, tokenizer=None, progress=None, device: str = "cpu", soft=None):
    """Fine-tune adapters and head on (text, label) pairs, and optionally on soft labels.

    Parameters
    ----------
    texts, labels : sequences of str
        Masked sentences and their labels (each in ``label_names``).
    label_names : sequence of str
        Output order of the classifier.
    seed, epochs, batch_size, lr, rank, alpha, weight_decay
        Training settings; AdamW with a linear warm-up (10%) and linear decay.
    balance : bool, default=True
        Weight the loss by inverse class frequency (helps the rare negative class).
    top_layers : int, default=0
        Train every weight of the top ``top_layers`` transformer layers (LoRA below them).
    head_lr : float, optional
        Learning rate of the head (default ``lr``).
    train_all : bool, default=False
        Also train every encoder weight (full fine-tuning; for comparison only: the result
        cannot be shipped as a small adapter).
    encoder, tokenizer : optional
        A loaded encoder (a fresh copy is loaded when omitted; it is modified in place).
    soft : (texts, probabilities), optional
        Knowledge distillation: more texts, each with a teacher's class probabilities (an array of
        shape ``(n, len(label_names))``, columns in ``label_names`` order).  They are shuffled in
        with the labelled texts, and every item's loss becomes the cross-entropy against its
        target distribution (one-hot for a labelled text); ``balance`` then weights each item by
        its target class (argmax).  Without ``soft`` the loss is the plain cross-entropy, as before.
    device : str, default="cpu"
        Where to train ("cuda" for a GPU; results then differ from CPU training in the last bits,
        so the shipped classifier is always trained on the CPU). The model is returned on the CPU.

    Returns
    -------
    (tokenizer, RegardModel)
        The model in eval mode, adapters not merged.
    """
    set_determinism(seed, device)
    if encoder is None or tokenizer is None:
        tokenizer, encoder = load_encoder()
    index = {name: i for i, name in enumerate(label_names)}
    y = torch.tensor([index[label] for label in labels])
    texts = list(texts)
    targets = None
    if soft is not None:  # one-hot rows for the labelled texts, the teacher's rows for the others
        soft_texts, soft_probs = list(soft[0]), torch.as_tensor(np.asarray(soft[1]), dtype=torch.float32)
        if soft_probs.shape != (len(soft_texts), len(label_names)):
            raise ValueError(f"soft labels: need {len(soft_texts)} rows of {len(label_names)} probabilities")
        targets = torch.cat([nn.functional.one_hot(y, len(label_names)).float(), soft_probs])
        texts, y = texts + soft_texts, torch.cat([y, soft_probs.argmax(1)])
    model = RegardModel(encoder, list(label_names), rank=rank, alpha=alpha, adapt=not train_all, top_layers=top_layers)
    model.to(device)
    if train_all:
        for parameter in model.parameters():
            parameter.requires_grad = True
    head = [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("head.")]
    body = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("head.")]
    groups = [{"params": body, "lr": lr}, {"params": head, "lr": head_lr or lr}]
    optimizer = torch.optim.AdamW([g for g in groups if g["params"]], weight_decay=weight_decay)
    steps = epochs * ((len(texts) + batch_size - 1) // batch_size)
    warmup = max(1, steps // 10)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))))
    counts = torch.bincount(y, minlength=len(label_names)).float()
    weights = (counts.sum() / (len(label_names) * counts.clamp(min=1)))  # balance the classes
    loss_fn = nn.CrossEntropyLoss(weight=weights.to(device) if balance else None)
    if targets is not None:
        loss_fn = _SoftCrossEntropy(weights.to(device) if balance else None)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(texts), generator=generator).tolist()
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            enc = encode(tokenizer, [texts[i] for i in batch]).to(device)
            target = (y if targets is None else targets)[batch].to(device)
            loss = loss_fn(model(enc["input_ids"], enc["attention_mask"]), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            if progress:
                progress.update(len(batch))
    model.eval()
    return tokenizer, model.to("cpu")


class _SoftCrossEntropy(nn.Module):
    """Mean over items of ``-sum(target * log_softmax(logits))``, each item weighted by its target
    class's weight (argmax) when ``weight`` is given (normalised like ``nn.CrossEntropyLoss``)."""

    def __init__(self, weight: torch.Tensor | None = None) -> None:
        super().__init__()
        self.weight = weight

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        per_item = -(target * torch.log_softmax(logits, -1)).sum(-1)
        if self.weight is None:
            return per_item.mean()
        w = self.weight[target.argmax(-1)]
        return (per_item * w).sum() / w.sum()


def predict_proba(model: RegardModel, tokenizer, texts: Sequence[str], *, batch_size: int = 128) -> np.ndarray:
    """Class probabilities, one row per text, columns in ``model.labels`` order (on the model's device)."""
    out = []
    texts = list(texts)
    device = next(model.parameters()).device
    order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths together: less padding
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            chunk = order[start:start + batch_size]
            enc = encode(tokenizer, [texts[i] for i in chunk]).to(device)
            out.append((chunk, torch.softmax(model(enc["input_ids"], enc["attention_mask"]).float(), -1).cpu().numpy()))
    probs = np.zeros((len(texts), len(model.labels)))
    for chunk, values in out:
        probs[chunk] = values
    return probs
