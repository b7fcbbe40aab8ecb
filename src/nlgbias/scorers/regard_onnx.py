"""The regard classifier on ONNX Runtime: the merged PyTorch model exported to ONNX once, its weights
quantised to int8 (dynamic quantisation), cached on disk under the classifier's adapter hash.

In: a loaded :class:`~nlgbias.scorers.regard_model.RegardModel` and its config.  Out: a callable
``(input_ids, attention_mask) -> logits`` (numpy) that runs on ONNX Runtime's CPU provider.
The files are derived from the shipped weights (nothing is downloaded); the first use on a
machine writes them (about 20 s), later uses read them.  ``docs/benchmarks.md`` has the speed
and the agreement with the float32 PyTorch model, which is what ``docs/regard.md`` evaluates.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import warnings
from pathlib import Path

import numpy as np

VARIANTS = ("fp32", "int8")
INPUTS = ("input_ids", "attention_mask")


def available() -> bool:
    """Whether ONNX Runtime (and onnx, for quantising) are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


def cache_dir() -> Path:
    """Where exported models live: ``$NLGBIAS_CACHE/regard-onnx`` or ``~/.cache/nlgbias/regard-onnx``."""
    root = os.environ.get("NLGBIAS_CACHE") or Path.home() / ".cache" / "nlgbias"
    return Path(root) / "regard-onnx"


def export(model, path: Path) -> Path:
    """Write ``model`` (a merged RegardModel in eval mode) as ONNX: inputs ``input_ids``,
    ``attention_mask`` (batch x tokens, both dynamic), output ``logits`` (batch x classes)."""

    import torch

    example = (torch.tensor([[101, 1060, 2001, 102], [101, 1060, 102, 0]]), torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, str(partial), input_names=list(INPUTS), output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                                        "logits": {0: "batch"}}, opset_version=17, dynamo=False)
    partial.replace(path)  # atomic: a concurrent reader never sees half a file
    return path


def quantize(source: Path, path: Path) -> Path:
    """Int8 weights with one scale per output channel for every MatMul (dynamic quantisation: the
    activations are quantised per batch at run time).  Tensors whose type shape inference cannot
    tell (outputs of fused operators, ``benchmarks/bench_regard.py``) are taken as float32; for the
    plain export this changes no byte of the result."""

    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))  # its pre-processing hint
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"], extra_options={"DefaultTensorType": TensorProto.FLOAT})
    partial.replace(path)
    return path


def model_file(model, adapter: Path, variant: str = "int8", *, folder: Path | None = None) -> Path:
    """The ONNX file of ``variant`` for the classifier ``model`` loaded from ``adapter`` (its
    ``adapter.safetensors``), exported (and quantised) on first use; named by the adapter's SHA-256
    and the versions of torch (export) and onnxruntime (quantisation)."""

    import onnxruntime
    import torch

    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    folder = folder or cache_dir()
    digest = hashlib.sha256(Path(adapter).read_bytes()).hexdigest()[:16]
    key = f"{digest}-torch{torch.__version__.split('+')[0]}-ort{onnxruntime.__version__}"
    fp32 = folder / f"regard-{key}-fp32.onnx"
    if not fp32.is_file():
        export(model, fp32)
    if variant == "fp32":
        return fp32
    int8 = folder / f"regard-{key}-int8.onnx"
    if not int8.is_file():
        quantize(fp32, int8)
    return int8


def checked(fast, exact, margin: float):
    """``fast``'s logits, with the rows whose top two probabilities are closer than ``margin``
    recomputed by ``exact``: the close calls, where int8 rounding can flip a label, get the float32
    answer (``docs/benchmarks.md``: the margin was chosen on the regard-v1 data, measured on v2)."""
    def run(input_ids, attention_mask) -> np.ndarray:
        logits = np.array(fast(input_ids, attention_mask), dtype=np.float32)
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        top = np.sort(exp / exp.sum(axis=1, keepdims=True), axis=1)
        close = np.flatnonzero(top[:, -1] - top[:, -2] < margin)
        if close.size:
            width = int(np.asarray(attention_mask)[close].sum(axis=1).max())  # drop columns only padding uses
            logits[close] = exact(np.asarray(input_ids)[close, :width], np.asarray(attention_mask)[close, :width])
        return logits
    return run


class OnnxClassifier:
    """``(input_ids, attention_mask) -> logits`` on ONNX Runtime, ``threads`` intra-op threads
    (default: torch's thread count, i.e. the cores this process may use)."""

    def __init__(self, path: Path, *, threads: int | None = None) -> None:
        import onnxruntime as ort
        import torch

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # idle threads sleep instead of spinning: on a shared machine spinning costs others (and us) dearly
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def __call__(self, input_ids, attention_mask) -> np.ndarray:
        feed = {"input_ids": np.asarray(input_ids, dtype=np.int64), "attention_mask": np.asarray(attention_mask, dtype=np.int64)}
        return self.session.run(None, feed)[0]
