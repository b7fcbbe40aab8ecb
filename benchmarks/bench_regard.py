"""Regard classifier: load time and scoring speed of each way to run it, side by side, on this CPU.

    python benchmarks/bench_regard.py [--repeat 2] [--json out.json]

Texts: the masked sentences of the shipped release's dataset (``load_dataset()``: release 2's
``regard-v2.csv``, 5,494, mean about 26 tokens; releases 3 and 4's ``regard-v3.csv``, 9,137, mean 24).
Every variant scores the same texts in the same process, one after the other (so a shared
machine's load hits them alike; the load average is printed); each is timed ``--repeat`` times and
the best time is kept.  For each: sentences/s, the share of labels equal to the float32 PyTorch
model's (the model ``docs/regard.md`` evaluates), and the largest change of a class probability.
The last rows time ``RegardScorer.score`` itself (each text alone, as it scores since scores were made
batch-invariant; tokenising twice, truncation flags, details included) on its default path with 2
and 1 worker threads and on the PyTorch fallback, and the load time in a fresh process.
``--scorer-only`` times just the reference, the batched default path and those rows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

LOAD = ("import time; t = time.perf_counter(); from nlgbias.scorers.regard import {cls}; "
        "{cls}().score(['XYZ was kind.']); print(time.perf_counter() - t)")


def batches(tokenizer, texts, batch_size: int, sort: bool):
    order = np.argsort([len(t) for t in texts], kind="stable") if sort else np.arange(len(texts))
    for start in range(0, len(texts), batch_size):
        chunk = order[start:start + batch_size]
        enc = tokenizer([texts[i] for i in chunk], padding=True, truncation=True, max_length=64, return_tensors="np")
        yield chunk, enc["input_ids"], enc["attention_mask"]


def probabilities(logits_of, tokenizer, texts, *, batch_size: int = 128, sort: bool = True) -> np.ndarray:
    out = np.zeros((len(texts), 3))
    for chunk, ids, mask in batches(tokenizer, texts, batch_size, sort):
        logits = np.asarray(logits_of(ids, mask), dtype=np.float64)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        out[chunk] = e / e.sum(axis=1, keepdims=True)
    return out


def torch_logits(model):
    import torch

    def run(ids, mask):
        with torch.inference_mode():
            return model(torch.from_numpy(ids), torch.from_numpy(mask)).float().numpy()
    return run


def fused_int8(fp32: Path, folder: Path) -> Path:
    """The float32 export with onnxruntime.transformers' BERT fusions, then int8 like the shipped path."""
    from onnxruntime.transformers.optimizer import optimize_model

    from nlgbias.scorers import regard_onnx

    optimize_model(str(fp32), model_type="bert", num_heads=12, hidden_size=384, opt_level=1).save_model_to_file(
        str(folder / "fused-fp32.onnx"))
    return regard_onnx.quantize(folder / "fused-fp32.onnx", folder / "fused-int8.onnx")


def timed(fn, repeat: int):
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--scorer", default="regard", choices=["regard", "regard-v1"])
    parser.add_argument("--scorer-only", action="store_true",
                        help="time only the reference, the batched default path and RegardScorer.score")
    args = parser.parse_args()

    import copy

    import torch

    from nlgbias.scorers import regard_onnx
    from nlgbias.scorers.regard import CHECK_MARGIN
    from nlgbias.scorers.regard import RegardScorer, RegardV1Scorer, classifier_dir
    from nlgbias.training.dataset import load_dataset

    if args.scorer == "regard-v1":
        RegardScorer = RegardV1Scorer

    torch.set_num_threads(2)
    texts = load_dataset()["text"].tolist()
    reference_scorer = RegardScorer(backend="torch")
    tokenizer, model = reference_scorer.tokenizer, reference_scorer.model
    tokens = float(np.mean([len(ids) for ids in tokenizer(texts)["input_ids"]]))
    adapter = (classifier_dir(3, 1) if args.scorer == "regard-v1" else classifier_dir(3)) / "adapter.safetensors"
    fp32 = regard_onnx.OnnxClassifier(regard_onnx.model_file(model, adapter, "fp32"))
    int8 = regard_onnx.OnnxClassifier(regard_onnx.model_file(model, adapter, "int8"))
    int8_one = regard_onnx.OnnxClassifier(int8.path, threads=1)
    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    fused = regard_onnx.OnnxClassifier(fused_int8(fp32.path, Path(tempfile.mkdtemp())))
    variants = {
        "PyTorch float32, batch 128, length-sorted (reference)": lambda: probabilities(torch_logits(model), tokenizer, texts),
        "PyTorch float32, batch 128, unsorted": lambda: probabilities(torch_logits(model), tokenizer, texts, sort=False),
        "PyTorch bfloat16 weights, batch 128, sorted": lambda: probabilities(torch_logits(bf16), tokenizer, texts),
        "ONNX Runtime float32, batch 128, sorted": lambda: probabilities(fp32, tokenizer, texts),
        "ONNX Runtime int8 (dynamic, per channel), batch 128, sorted": lambda: probabilities(int8, tokenizer, texts),
        "ONNX Runtime int8 + float32 for close calls (margin 0.3), batch 128, sorted":
            lambda: probabilities(regard_onnx.checked(int8, fp32, CHECK_MARGIN), tokenizer, texts),
        "ONNX Runtime int8, 1 thread, batch 128, sorted": lambda: probabilities(int8_one, tokenizer, texts),
        "ONNX Runtime int8 of the fused graph (onnxruntime.transformers optimizer: SkipLayerNorm, BiasGelu), sorted":
            lambda: probabilities(fused, tokenizer, texts),
    }
    for margin in (0.05, 0.1, 0.15, 0.2):  # smaller margins: fewer float32 recomputations, more int8 labels kept
        variants[f"ONNX Runtime int8 + float32 for close calls (margin {margin}), batch 128, sorted"] = (
            lambda margin=margin: probabilities(regard_onnx.checked(int8, fp32, margin), tokenizer, texts))
    if args.scorer_only:
        keep = ("(reference)", "close calls (margin 0.3)")
        variants = {name: fn for name, fn in variants.items() if name.endswith(keep[0]) or keep[1] in name}
    load = os.getloadavg()
    rows, reference = [], None
    for name, fn in variants.items():
        if "1 thread" in name:
            torch.set_num_threads(1)
        seconds, probs = timed(fn, args.repeat)
        torch.set_num_threads(2)
        reference = probs if reference is None else reference
        rows.append({"variant": name, "sentences_per_s": len(texts) / seconds,
                     "label_agreement": float((probs.argmax(1) == reference.argmax(1)).mean()),
                     "max_probability_change": float(np.abs(probs - reference).max())})
        print(f"{rows[-1]['variant']}: {rows[-1]['sentences_per_s']:.0f}/s, labels {100 * rows[-1]['label_agreement']:.2f}%, "
              f"max change {rows[-1]['max_probability_change']:.4f}", flush=True)
    for name, backend, workers in (("RegardScorer.score, default path, each text alone, 2 workers", None, 2),
                                   ("RegardScorer.score, default path, each text alone, 1 worker", None, 1),
                                   ("RegardScorer.score, PyTorch fallback, each text alone", "torch", None)):
        scorer = RegardScorer(backend=backend, workers=workers)
        scorer.score(texts[:256])
        seconds, scored = timed(partial(scorer.score, texts), args.repeat)
        labels = np.array(scorer.labels)[reference.argmax(1)]
        rows.append({"variant": f"{name} ({scorer.backend})", "sentences_per_s": len(texts) / seconds,
                     "label_agreement": float((scored["label"].to_numpy() == labels).mean()),
                     "max_probability_change": float(np.abs(np.array([[d[k] for k in scorer.labels] for d in scored["details"]])
                                                            - reference).max())})
        print(f"{rows[-1]['variant']}: {rows[-1]['sentences_per_s']:.0f}/s, labels {100 * rows[-1]['label_agreement']:.2f}%", flush=True)
    load_code = LOAD.format(cls="RegardV1Scorer" if args.scorer == "regard-v1" else "RegardScorer")
    loads = [float(subprocess.run([sys.executable, "-c", load_code], capture_output=True, text=True, check=True)
                   .stdout.strip().splitlines()[-1]) for _ in range(3)]
    result = {"texts": len(texts), "mean_tokens": tokens, "load_average_before": load, "load_average_after": os.getloadavg(),
              "load_seconds_fresh_process": loads, "rows": rows}
    print(f"{len(texts)} texts, mean {tokens:.1f} tokens; load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"load + first score in a fresh process: {min(loads):.2f}-{max(loads):.2f} s")
    print("| variant | sentences/s | labels equal to float32 | max probability change |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['variant']} | {r['sentences_per_s']:.0f} | {100 * r['label_agreement']:.2f}% | {r['max_probability_change']:.4f} |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
