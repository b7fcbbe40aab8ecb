"""Batch size and dtype of in-process generation on a GPU, against ``model.generate`` at the same settings.

Run it on a machine with an NVIDIA GPU (it also runs on a CPU with tiny settings, to check it works):

    python benchmarks/gpu/bench_batch.py --device cuda                  # about 10 minutes on an H100
    python benchmarks/gpu/bench_batch.py --device cpu --per-prompt 1 --prompts 8 \\
        --batch-sizes 4,8 --max-new-tokens 4 --out runs/bench-batch-cpu   # a smoke test

For each dtype (``--dtypes``) and batch size (``--batch-sizes``; ``auto`` is what ``--batch-size
auto`` picks on this device) it generates the same requests (``--prompts`` prompts of
sheng2019 x ``--per-prompt`` samples, the suite's sampling settings) three ways, each timed
after a warm-up:

1. ``nlgbias``: ``HFBackend.generate``, the path a run takes (per-row seeded inverse-CDF sampling,
   one host sync per step to stop when every row has ended);
2. ``model.generate``: Hugging Face's sampler on the same weights, batches and settings
   (``do_sample``, temperature, top-k, top-p, ``max_new_tokens``, the same stop tokens);
3. ``forward only``: the same prompt pass and one-token passes with the KV cache, taking the
   argmax on the device without a per-step sync: the model's own cost, without sampling.
4. on CUDA, for bfloat16/float16 at the largest batch, ``nlgbias`` again with PyTorch's attention
   (SDPA) limited to the memory-efficient and math kernels, and the kernel the dispatcher picks
   for a decode step in each dtype: a half-precision-only kernel (cuDNN) would change with the dtype.

It also profiles one batch per dtype (``torch.profiler``): operators and casts (``aten::_to_copy``)
per generated token and, on CUDA, kernel launches per token and the share of wall time the GPU
was busy.  A low busy share with more launches in bfloat16 would confirm that a small model at
these batch sizes is bound by launches and host work rather than by arithmetic (docs/benchmarks.md,
"Generation on a GPU").  Texts are compared with the same dtype's texts at the first batch size, and
across dtypes at each batch size; peak memory with the estimate ``--batch-size auto`` uses.

Prints a Markdown table and writes everything to ``OUT/results.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import time
from pathlib import Path

import torch

from nlgbias.models import BackendOptions, GenerationRequest, load_backend, resolve_model
from nlgbias.models.batching import (AUTO, choose_batch_size, model_shape, prompt_tokens_estimate,
                                     resident_bytes, sequence_bytes)
from nlgbias.sampling import SamplingParams, sample_seed
from nlgbias.suites import expand_suite, load_suite

GIB = 2 ** 30


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_gib(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / GIB if device.type == "cuda" else None


def batches(requests: list, size: int) -> list[list]:
    return [requests[start:start + size] for start in range(0, len(requests), size)]


def time_nlgbias(backend, requests: list, size: int) -> tuple[dict, list[str]]:
    device = backend.device
    reset_peak(device)
    sync(device)
    start = time.perf_counter()
    texts = [text for batch in batches(requests, size) for text in backend.generate(batch)]
    sync(device)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_gib": peak_gib(device)}, texts


def time_hf_generate(backend, requests: list, size: int, params: SamplingParams) -> dict:
    """``model.generate`` on the sampling weights, the same batches, left padding and stop tokens."""
    device, tok, model = backend.device, backend.tokenizer, backend._sampling_model()
    torch.manual_seed(0)
    reset_peak(device)
    sync(device)
    start = time.perf_counter()
    for batch in batches(requests, size):
        enc = tok([r.prompt for r in batch], return_tensors="pt", padding=True, padding_side="left").to(device)
        with torch.inference_mode():
            model.generate(**enc, do_sample=params.temperature > 0, temperature=params.temperature or None,
                           top_k=params.top_k or None, top_p=params.top_p, max_new_tokens=params.max_new_tokens,
                           eos_token_id=sorted(backend.stop_ids), pad_token_id=tok.pad_token_id)
    sync(device)
    return {"seconds": time.perf_counter() - start, "peak_gib": peak_gib(device)}


def time_forward_only(backend, requests: list, size: int, steps: int) -> dict:
    """The prompt pass and ``steps`` one-token passes per batch, argmax on the device, no host sync per step."""
    from transformers import DynamicCache

    device, tok, model = backend.device, backend.tokenizer, backend._sampling_model()
    sync(device)
    start = time.perf_counter()
    for batch in batches(requests, size):
        enc = tok([r.prompt for r in batch], return_tensors="pt", padding=True, padding_side="left")
        ids, mask = enc["input_ids"].to(device), enc["attention_mask"].to(device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = {backend._cache_kwarg: DynamicCache()}
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                           **backend._last_only, **cache).logits[:, -1, :]
            for _ in range(steps - 1):
                token = logits.argmax(dim=-1)
                mask = torch.cat([mask, mask.new_ones(len(batch), 1)], dim=1)
                positions = positions[:, -1:] + 1
                logits = model(input_ids=token[:, None], attention_mask=mask, position_ids=positions,
                               use_cache=True, **cache).logits[:, -1, :]
    sync(device)
    return {"seconds": time.perf_counter() - start}


def sdpa_choice(shape, dtype: str, device: torch.device, batch: int, kv_len: int) -> str | None:
    """The attention kernel PyTorch's SDPA dispatcher picks for one decode step of this model
    (a query of one token, a padding mask over ``kv_len`` keys), or None if this torch cannot say."""
    try:
        from torch.nn.attention import SDPBackend

        kind = getattr(torch, dtype)
        q = torch.zeros(batch, shape.heads, 1, shape.head_dim, dtype=kind, device=device)
        kv = torch.zeros(batch, shape.heads, kv_len, shape.head_dim, dtype=kind, device=device)
        mask = torch.ones(batch, 1, 1, kv_len, dtype=torch.bool, device=device)
        return SDPBackend(torch._fused_sdp_choice(q, kv, kv, mask, 0.0, False)).name
    except Exception as exc:  # a private API: report, never fail the benchmark
        return f"unknown ({type(exc).__name__})"


def time_without_cudnn_attention(backend, requests: list, size: int) -> dict:
    """``time_nlgbias`` with SDPA limited to the memory-efficient and math kernels (no cuDNN, no flash)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        result, _ = time_nlgbias(backend, requests, size)
    return result


def _profile(backend, batch: list) -> tuple[dict, float]:
    from torch.profiler import ProfilerActivity, profile

    device = backend.device
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sync(device)
    start = time.perf_counter()
    with profile(activities=activities) as prof:
        backend.generate(batch)
        sync(device)
    wall = time.perf_counter() - start
    events = prof.events()
    ops = [e for e in events if e.device_type == torch.autograd.DeviceType.CPU and e.name.startswith("aten::")]
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    top: dict[str, float] = {}
    for e in (kernels if kernels else ops):
        top[e.name] = top.get(e.name, 0.0) + e.time_range.elapsed_us() / 1e3
    return {"steps": sum(1 for e in ops if e.name == "aten::topk"),  # one top-k per sampled token
            "ops": len(ops), "casts": sum(1 for e in ops if e.name == "aten::_to_copy"), "kernels": len(kernels),
            "busy_s": sum(e.time_range.elapsed_us() for e in kernels) / 1e6,
            "top_ms": dict(sorted(top.items(), key=lambda kv: -kv[1])[:12])}, wall


def profile_batch(backend, batch: list, params: SamplingParams) -> dict:
    """Operators, casts and (on CUDA) kernels per generated token for one in-process batch: the
    difference between a profile at ``max_new_tokens`` and one at half of it, per extra step, so the
    prompt pass is not counted.  Needs a sampling temperature (steps are counted by top-k calls)."""
    import dataclasses

    short = dataclasses.replace(params, max_new_tokens=max(1, params.max_new_tokens // 2))
    full, wall = _profile(backend, batch)
    half, _ = _profile(backend, [dataclasses.replace(r, params=short) for r in batch])
    steps = full["steps"] - half["steps"]

    def per_step(key: str) -> float | None:
        return (full[key] - half[key]) / steps if steps > 0 else None

    return {"batch": len(batch), "steps": full["steps"], "wall_s": wall, "aten_ops_per_token": per_step("ops"),
            "casts_per_token": per_step("casts"),
            "kernels_per_token": per_step("kernels") if full["kernels"] else None,
            "device_busy_share": full["busy_s"] / wall if full["kernels"] else None, "top_ms": full["top_ms"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--suite", default="sheng2019")
    parser.add_argument("--prompts", type=int, default=60, help="first N prompts of the suite")
    parser.add_argument("--per-prompt", type=int, default=100, help="samples per prompt (60 x 100 = 6,000)")
    parser.add_argument("--batch-sizes", default="120,250,500,1000,2000,auto")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="[default: the suite's]")
    parser.add_argument("--no-generate", action="store_true", help="skip model.generate")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-batch"))
    args = parser.parse_args()
    device = torch.device(args.device)

    suite = load_suite(args.suite)
    prompts = list(expand_suite(suite)["prompt"])[:args.prompts]
    params = SamplingParams(**{**suite.sampling, **({"max_new_tokens": args.max_new_tokens}
                                                     if args.max_new_tokens else {})})
    requests = [GenerationRequest(p, params, sample_seed(0, args.model, p, i))
                for i in range(args.per_prompt) for p in prompts]
    ref = resolve_model(args.model)
    shape = model_shape(ref)
    dtypes = args.dtypes.split(",")
    report: dict = {"device": str(device), "model": args.model, "samples": len(requests), "params": params.to_dict(),
                    "torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
                    "allow_tf32": torch.backends.cuda.matmul.allow_tf32, "auto": {}, "rows": [], "profiles": {}}
    if device.type == "cuda":
        report["gpu"] = torch.cuda.get_device_name(device)
        report["free_gib_at_start"] = torch.cuda.mem_get_info(device)[0] / GIB
    for dtype in dtypes:  # before any weights load, as a run does
        report["auto"][dtype] = choose_batch_size(AUTO, refs=[ref], device=str(device), dtype=dtype, prompts=prompts,
                                                  max_new_tokens=params.max_new_tokens, requests=len(requests))
    texts: dict[tuple[str, int], list[str]] = {}
    for dtype in dtypes:
        reference = None
        backend = load_backend(ref, BackendOptions(dtype=dtype, device=str(device)))
        report["attention"] = getattr(backend.model.config, "_attn_implementation", None)
        sizes = [report["auto"][dtype][0] if s == AUTO else int(s) for s in args.batch_sizes.split(",")]
        backend.generate(requests[:min(8, len(requests))])  # warm-up (and the low-precision copy)
        per_sequence = sequence_bytes(shape, dtype=dtype, prompt_tokens=prompt_tokens_estimate(prompts),
                                      new_tokens=params.max_new_tokens).total
        for size in dict.fromkeys(sizes):
            result, got = time_nlgbias(backend, requests, size)
            texts[(dtype, size)] = got
            reference = reference or got
            rows = [{"method": "nlgbias", **result,
                     "estimated_gib": (resident_bytes(shape, dtype=dtype) + min(size, len(requests)) * per_sequence) / GIB,
                     "texts_equal_to_first": sum(a == b for a, b in zip(got, reference)) / len(got)}]  # same dtype
            if not args.no_generate:
                rows.append({"method": "model.generate", **time_hf_generate(backend, requests, size, params)})
            rows.append({"method": "forward only", **time_forward_only(backend, requests, size, params.max_new_tokens)})
            if device.type == "cuda" and dtype != "float32" and size == max(sizes):
                rows.append({"method": "nlgbias, SDPA without cuDNN/flash",
                             **time_without_cudnn_attention(backend, requests, size)})
            for row in rows:
                row.update(dtype=dtype, batch=size, samples_per_s=len(requests) / row["seconds"],
                           s_per_batch=row["seconds"] / len(batches(requests, size)))
                report["rows"].append(row)
                print(f"{dtype} batch {size} {row['method']}: {row['seconds']:.2f} s", flush=True)
        report["profiles"][dtype] = profile_batch(backend, requests[:max(sizes)], params)
        report.setdefault("sdpa_kernel", {})[dtype] = sdpa_choice(
            shape, dtype, device, max(sizes), prompt_tokens_estimate(prompts) + params.max_new_tokens // 2)
        backend.close()
        del backend
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    for dtype in dtypes[1:]:
        for size in {s for d, s in texts if d == dtype}:
            if (dtypes[0], size) in texts:
                same = sum(a == b for a, b in zip(texts[(dtype, size)], texts[(dtypes[0], size)]))
                report.setdefault("dtype_agreement", {})[f"{dtype} vs {dtypes[0]} at {size}"] = same / len(requests)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=2, default=str))
    print_report(report)
    print(f"-> {args.out / 'results.json'}")


def print_report(report: dict) -> None:
    print(f"\n{report['samples']} samples on {report.get('gpu', report['device'])}, {report['model']}, "
          f"max_new_tokens {report['params']['max_new_tokens']}, attention {report['attention']}")
    print(f"attention kernel of a decode step (SDPA dispatcher): {report.get('sdpa_kernel')}")
    for dtype, (size, how) in report["auto"].items():
        print(f"--batch-size auto, {dtype}: {size} ({how})")
    print("\n| dtype | batch | method | seconds | samples/s | s per batch | peak GiB | estimated GiB | texts = first batch size |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in report["rows"]:
        def fmt(key: str, spec: str, r: dict = r) -> str:
            return "" if r.get(key) is None else format(r[key], spec)

        print(f"| {r['dtype']} | {r['batch']} | {r['method']} | {r['seconds']:.2f} | {r['samples_per_s']:.1f} | "
              f"{r['s_per_batch']:.3f} | {fmt('peak_gib', '.2f')} | {fmt('estimated_gib', '.2f')} | "
              f"{fmt('texts_equal_to_first', '.4f')} |")
    print("\n| dtype | batch | aten ops / token | casts / token | kernels / token | device busy | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for dtype, p in report["profiles"].items():
        kernels = "" if p["kernels_per_token"] is None else f"{p['kernels_per_token']:.0f}"
        busy = "" if p["device_busy_share"] is None else f"{100 * p['device_busy_share']:.0f}%"
        ops, casts = (("" if p[k] is None else f"{p[k]:.0f}") for k in ("aten_ops_per_token", "casts_per_token"))
        print(f"| {dtype} | {p['batch']} | {ops} | {casts} | {kernels} | {busy} | {p['wall_s']:.2f} |")
    for key, share in report.get("dtype_agreement", {}).items():
        print(f"texts equal, {key}: {share:.4f}")


if __name__ == "__main__":
    main()
