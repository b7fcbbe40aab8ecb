"""How many samples a local model generates per batch: ``--batch-size N`` or ``--batch-size auto``.

``auto`` is 120 on a CPU (and for runs without a local model).  On a CUDA device it is sized
from the device's free memory, read once when the run starts, before any weights load:

    room = free memory x SAFETY - weights of every local model (float32, plus the sampling copy
           in bfloat16/float16) - RESERVE
    batch = room // one sequence's footprint, rounded down to two significant digits,
            at most AUTO_CAP and at most the requests of one model, at least 1

A sequence's footprint (:func:`sequence_bytes`) follows the sampling loop of
:mod:`nlgbias.models.hf`: its key/value cache for prompt + new tokens (counted twice: the cache
grows by concatenation, so an old and a new copy of a layer's tensors coexist and the allocator
keeps freed blocks), the last position's logits with their float32 copies, and the widest
transient tensors of the prompt's forward pass.  The model's shape (layers, heads, head size,
vocabulary) comes from its ``config.json`` or its GGUF header; no weights are read.

:func:`fit_batch_size` is the pure arithmetic (it takes the memory as an argument, so it is
tested on any machine with simulated budgets); :func:`choose_batch_size` measures the device and
calls it.  The texts of a local model depend, rarely, on the batch they are generated in, so the
resolved size is part of the run id and the manifest records how ``auto`` chose it.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Sequence

from nlgbias.errors import BackendError, option
from nlgbias.validate import AUTO, LIMITS

CPU_BATCH = 120  # the measured default on CPUs (docs/benchmarks.md)
AUTO_CAP = 1000  # largest automatic batch: measured on an H100, 1,000 took about as long per batch as 120
MAX_BATCH_SIZE = LIMITS["batch_size"]  # a larger --batch-size fits no device's memory for even a tiny model
SAFETY = 0.8  # fraction of the free memory a batch may plan to use
RESERVE = 512 * 2 ** 20  # bytes kept for the CUDA libraries' workspaces and allocator slack
KV_GROWTH = 2  # the cache grows by concatenation: old and new copies coexist
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


# -- the model's shape ------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """What a model's memory footprint depends on, read from its config (no weights).

    ``params`` is the number of weights (exact for GGUF files, estimated from the config otherwise).
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    params: int

    @classmethod
    def from_config(cls, config: dict) -> ModelShape:
        """From a transformers ``config.json`` (its ``text_config`` for multimodal models).

        >>> ModelShape.from_config({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        ...                         "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000})
        ModelShape(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=128, vocab=1000, params=137728)
        """
        if "num_hidden_layers" not in config and isinstance(config.get("text_config"), dict):
            config = config["text_config"]

        def first(*names: str, default: Any = None) -> Any:
            for name in names:
                if config.get(name) is not None:
                    return config[name]
            if default is None:
                raise KeyError(names[0])
            return default

        layers = int(first("num_hidden_layers", "n_layer", "num_layers"))
        hidden = int(first("hidden_size", "n_embd", "d_model"))
        heads = int(first("num_attention_heads", "n_head"))
        kv_heads = int(first("num_key_value_heads", default=1 if config.get("multi_query") else heads))
        head_dim = int(first("head_dim", default=hidden // heads))
        intermediate = int(first("intermediate_size", "n_inner", "ffn_dim", default=4 * hidden))
        vocab = int(first("vocab_size"))
        tied = bool(config.get("tie_word_embeddings", True))
        per_layer = (2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim  # q, o; k, v
                     + 3 * hidden * intermediate)  # gated MLP (an upper bound for a plain one)
        params = layers * per_layer + vocab * hidden * (1 if tied else 2)
        return cls(layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, params)

    @classmethod
    def from_gguf(cls, path: str | Path) -> ModelShape:
        """From a GGUF file's header (its metadata and tensor list; the weights are not read)."""
        meta, params = gguf_header(path)
        arch = meta.get("general.architecture")

        def get(key: str, default: Any = None) -> Any:
            value = meta.get(f"{arch}.{key}", default)
            if isinstance(value, list):
                value = max(value) if value else default
            if value is None:
                raise KeyError(f"{arch}.{key}")
            return int(value)

        hidden, heads = get("embedding_length"), get("attention.head_count")
        tokens = meta.get("tokenizer.ggml.tokens")
        vocab = get("vocab_size", tokens.count if isinstance(tokens, GGUFArray) else None)
        return cls(layers=get("block_count"), hidden=hidden, heads=heads,
                   kv_heads=get("attention.head_count_kv", heads), head_dim=get("attention.key_length", hidden // heads),
                   intermediate=get("feed_forward_length", 4 * hidden), vocab=vocab, params=params)


def model_shape(ref, *, revision: str | None = None) -> ModelShape:
    """The shape of a resolved transformers model (:class:`~nlgbias.models.registry.ModelRef`): from its
    GGUF header, its folder's ``config.json``, or a hub id's ``config.json`` (cached, else downloaded)."""
    source = Path(ref.source).expanduser()
    try:
        if source.suffix == ".gguf":
            return ModelShape.from_gguf(source)
        if source.is_dir():
            return ModelShape.from_config(json.loads((source / "config.json").read_text(encoding="utf-8")))
        return ModelShape.from_config(json.loads(Path(_hub_config(ref.source, revision)).read_text(encoding="utf-8")))
    except (KeyError, ValueError, OSError, struct.error) as exc:
        raise BackendError(f"model {ref.model_id}: cannot size {option('--batch-size', AUTO)} from its config "
                           f"({type(exc).__name__}: {exc}); give {option('--batch-size', CPU_BATCH)} or another "
                           f"number") from None


def _hub_config(hub_id: str, revision: str | None) -> str:
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(hub_id, "config.json", revision=revision, local_files_only=True)
    except Exception:  # not cached (huggingface_hub raises several kinds): ask the hub, as loading would
        return hf_hub_download(hub_id, "config.json", revision=revision)


# -- a GGUF header, read without the gguf package's full parse --------------------------------


@dataclass(frozen=True)
class GGUFArray:
    """An array value of a GGUF header: its length, and its values when numeric and short."""

    count: int
    values: tuple | None = None


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def gguf_header(path: str | Path) -> tuple[dict[str, Any], int]:
    """A GGUF file's metadata (key -> value; arrays as :class:`GGUFArray`) and its number of weights.

    Reads only the header (for the default model: about 1 MB of a 100 MB file).  Raises
    ``ValueError`` on a file that is not GGUF version 2 or 3.
    """
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        version, tensors, keys = struct.unpack("<IQQ", _exactly(handle, 20))
        if version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {version}, expected 2 or 3")
        meta: dict[str, Any] = {}
        for _ in range(keys):
            key = _string(handle)
            meta[key] = _value(handle, struct.unpack("<I", _exactly(handle, 4))[0])
        params = 0
        for _ in range(tensors):
            _string(handle)
            (dims,) = struct.unpack("<I", _exactly(handle, 4))
            shape = struct.unpack(f"<{dims}Q", _exactly(handle, 8 * dims))
            _exactly(handle, 12)  # type, offset
            params += math.prod(shape)
    return meta, params


def _exactly(handle: BinaryIO, n: int) -> bytes:
    data = handle.read(n)
    if len(data) != n:
        raise ValueError("truncated GGUF header")
    return data


def _string(handle: BinaryIO) -> str:
    (n,) = struct.unpack("<Q", _exactly(handle, 8))
    return _exactly(handle, n).decode("utf-8", errors="replace")


def _value(handle: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _exactly(handle, struct.calcsize(fmt)))[0]
    if kind == _STRING:
        return _string(handle)
    if kind == _ARRAY:
        item, count = struct.unpack("<IQ", _exactly(handle, 12))
        if item in _SCALARS:
            fmt = _SCALARS[item]
            data = _exactly(handle, struct.calcsize(fmt) * count)
            return GGUFArray(count, struct.unpack(f"<{count}{fmt[1]}", data) if count <= 4096 else None)
        for _ in range(count):
            _value(handle, item)
        return GGUFArray(count)
    raise ValueError(f"unknown GGUF value type {kind}")


# -- the arithmetic ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Footprint:
    """Device bytes one sequence of a batch needs while it is generated (see the module docstring)."""

    kv_cache: int
    logits: int
    activations: int

    @property
    def total(self) -> int:
        return self.kv_cache + self.logits + self.activations


def sequence_bytes(shape: ModelShape, *, dtype: str, prompt_tokens: int, new_tokens: int) -> Footprint:
    """The footprint of one sequence of ``prompt_tokens`` + ``new_tokens`` sampled in ``dtype``.

    - key/value cache: 2 x layers x kv heads x head size x tokens x dtype bytes, times KV_GROWTH;
    - logits: the last position's logits in ``dtype``, their float32 copy and the temperature-scaled
      float32 copy that top-k ranks;
    - activations: the prompt's widest per-layer tensors (gate, up and activated MLP; four of the
      hidden size) in ``dtype`` and the attention scores in float32 (heads x prompt x all tokens).
    """
    size = DTYPE_BYTES[dtype]
    tokens = prompt_tokens + new_tokens
    kv = 2 * shape.layers * shape.kv_heads * shape.head_dim * tokens * size * KV_GROWTH
    logits = shape.vocab * (size + 4 + 4)
    activations = (prompt_tokens * (3 * shape.intermediate + 4 * shape.hidden) * size
                   + shape.heads * prompt_tokens * tokens * 4)
    return Footprint(kv, logits, activations)


def resident_bytes(shape: ModelShape, *, dtype: str) -> int:
    """Weights on the device: the float32 model (log-probabilities use it) plus, for another
    sampling dtype, the copy that samples."""
    return shape.params * 4 + (shape.params * DTYPE_BYTES[dtype] if dtype != "float32" else 0)


def tidy(n: int) -> int:
    """``n`` rounded down to two significant digits (1,234 -> 1,200; 987 -> 980; 64 -> 64).

    >>> [tidy(n) for n in (0, 7, 64, 987, 1234)]
    [0, 7, 64, 980, 1200]
    """
    if n < 100:
        return max(n, 0)
    step = 10 ** (len(str(n)) - 2)
    return n - n % step


def fit_batch_size(free_bytes: int, per_sequence: int, *, resident: int = 0, safety: float = SAFETY,
                   reserve: int = RESERVE, cap: int = AUTO_CAP) -> int:
    """The largest tidy batch of ``per_sequence``-byte sequences that fits the memory budget.

    Parameters
    ----------
    free_bytes : int
        Free device memory before the weights load (``torch.cuda.mem_get_info``; any number in tests).
    per_sequence : int
        Bytes one sequence needs (:func:`sequence_bytes`), more than 0.
    resident : int
        Bytes of the weights that will be loaded (:func:`resident_bytes`).
    safety : float
        Fraction of ``free_bytes`` the batch may plan to use (the estimate is approximate).
    reserve : int
        Bytes kept aside for library workspaces.
    cap : int
        Largest batch returned (AUTO_CAP, or fewer requests).

    Returns
    -------
    int
        From 1 to ``cap``; non-decreasing in ``free_bytes``; 1 when not even one sequence fits
        (loading the model then reports the shortage).
    """
    if per_sequence <= 0:
        raise ValueError(f"per_sequence must be more than 0 bytes, got {per_sequence}")
    room = free_bytes * safety - resident - reserve
    fits = int(room // per_sequence) if room > 0 else 0
    return max(1, min(cap, tidy(fits)))


# -- resolving --batch-size -----------------------------------------------------------------------


def prompt_tokens_estimate(prompts: Iterable[str]) -> int:
    """An estimate of the longest prompt's tokens without a tokenizer: its UTF-8 bytes / 2, plus 4
    (start token and slack).  English averages 4-5 bytes per token, so this overestimates."""
    longest = max((len(p.encode("utf-8")) for p in prompts), default=0)
    return longest // 2 + 4


def device_of(device: str) -> str:
    """``auto`` -> ``cuda`` when CUDA is available, else ``cpu``; other values unchanged."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def free_device_memory(device: str) -> int:
    """Free bytes on a CUDA device (``cuda`` or ``cuda:N``), as the driver reports them."""
    import torch

    index = int(device.partition(":")[2] or torch.cuda.current_device())
    free, _total = torch.cuda.mem_get_info(index)
    return int(free)


def choose_batch_size(requested: int | str, *, refs: Sequence, device: str, dtype: str, prompts: Sequence[str],
                      max_new_tokens: int, requests: int, free_bytes: int | None = None,
                      revision: str | None = None) -> tuple[int, dict | None]:
    """Resolve ``--batch-size``: a number stays as given; ``auto`` is sized for the run's device.

    Parameters
    ----------
    requested : int or "auto"
    refs : sequence of ModelRef
        The run's models; only transformers models (local weights) are sized.
    device : str
        ``--device`` (``auto``, ``cpu``, ``cuda:1`` ...).
    dtype : str
        Sampling dtype.
    prompts : sequence of str
        The prompts (their longest sets the padded width).
    max_new_tokens : int
    requests : int
        Samples per model in the run (a larger batch is never needed).
    free_bytes : int, optional
        Free device memory; measured with ``torch.cuda.mem_get_info`` when None (give it to
        simulate a device).

    Returns
    -------
    (int, dict or None)
        The batch size, and for ``auto`` how it was chosen (the manifest's ``batch_size_auto``).
    """
    if requested != AUTO:
        return int(requested), None
    local = [r for r in refs if r.backend == "transformers"]
    if not local:
        return CPU_BATCH, {"requested": AUTO, "rule": f"{CPU_BATCH}: no local model"}
    device = device_of(device)
    if not device.startswith("cuda"):
        return CPU_BATCH, {"requested": AUTO, "device": device, "rule": f"{CPU_BATCH} on {device}"}
    shapes = [model_shape(r, revision=revision) for r in local]
    prompt = prompt_tokens_estimate(prompts)
    per_sequence = max(sequence_bytes(s, dtype=dtype, prompt_tokens=prompt, new_tokens=max_new_tokens).total
                       for s in shapes)
    resident = sum(resident_bytes(s, dtype=dtype) for s in shapes)  # every model stays loaded during a run
    free = free_device_memory(device) if free_bytes is None else int(free_bytes)
    cap = max(1, min(AUTO_CAP, requests))
    size = fit_batch_size(free, per_sequence, resident=resident, cap=cap)
    gib, mib = 2 ** 30, 2 ** 20
    return size, {"requested": AUTO, "device": device, "free_gib": round(free / gib, 2),
                  "weights_gib": round(resident / gib, 3), "per_sequence_mib": round(per_sequence / mib, 3),
                  "prompt_tokens_estimate": prompt, "safety": SAFETY, "cap": cap,
                  "rule": "free memory x safety - weights - reserve, per sequence footprint, two significant digits"}


def stored_batch_size(identity: dict, runs: Iterable[tuple[str, dict]]) -> int | None:
    """The batch size of the latest of ``runs`` (``(run_id, identity)``, oldest first) whose
    identity equals ``identity`` except for the batch size; None if there is none.

    An automatic batch size on a GPU depends on the memory free at the start, so a resumed or
    repeated run keeps the size its settings last ran with in the same store.
    """
    def without_batch(config: dict) -> dict:
        sampling = {k: v for k, v in config.get("sampling", {}).items() if k != "batch_size"}
        return {**config, "sampling": sampling}

    wanted = without_batch(identity)
    found = None
    for _, config in runs:
        size = config.get("sampling", {}).get("batch_size")
        if isinstance(size, int) and without_batch(config) == wanted:
            found = size
    return found


__all__ = ["AUTO", "AUTO_CAP", "CPU_BATCH", "MAX_BATCH_SIZE", "Footprint", "ModelShape", "choose_batch_size",
           "fit_batch_size", "gguf_header", "model_shape", "resident_bytes", "sequence_bytes", "stored_batch_size",
           "tidy"]
