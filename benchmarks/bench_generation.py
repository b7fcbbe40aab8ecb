"""Generation speed and end-to-end overhead, measured in one run on one machine.

Times the 60-prompt sheng2019 suite on the embedded smollm2-135m with the same sampling
parameters (top-k 40, temperature 0.7, 40 new tokens) three ways:

1. one sample at a time (``model.generate`` with a batch of one),
2. the Hugging Face ``pipeline("text-generation")`` with ``num_return_sequences=N`` per prompt,
3. nlgbias batched (``HFBackend.generate``, mixed prompts, left padding), float32 and bfloat16,

then runs the full audit (generation, scoring, statistics, report) on 60 prompts x
``--e2e-samples`` and reports the overhead beyond generation and the peak memory.

Usage::

    python benchmarks/bench_generation.py --out benchmarks/out/results.json

Results are printed as a Markdown table; docs/benchmarks.md records a run.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from nlgbias.models import GenerationRequest, load_backend, resolve_model
from nlgbias.sampling import SamplingParams, sample_seed
from nlgbias.suites import expand_suite, load_suite

PARAMS = SamplingParams(max_new_tokens=40, temperature=0.7, top_k=40, top_p=1.0)


def requests(prompts: list[str], per_prompt: int) -> list[GenerationRequest]:
    return [GenerationRequest(p, PARAMS, sample_seed(0, "bench", p, i)) for i in range(per_prompt) for p in prompts]


def time_one_at_a_time(backend, prompts: list[str], count: int) -> dict:
    tok, model = backend.tokenizer, backend.model
    torch.manual_seed(0)
    start = time.perf_counter()
    for i in range(count):
        enc = tok(prompts[i % len(prompts)], return_tensors="pt")
        with torch.inference_mode():
            model.generate(**enc, do_sample=True, top_k=PARAMS.top_k, temperature=PARAMS.temperature,
                           max_new_tokens=PARAMS.max_new_tokens, pad_token_id=tok.pad_token_id)
    seconds = time.perf_counter() - start
    return {"method": "one at a time (model.generate, batch 1, float32)", "samples": count, "seconds": seconds}


def time_pipeline(backend, prompts: list[str], per_prompt: int) -> dict:
    from transformers import pipeline

    generator = pipeline("text-generation", model=backend.model, tokenizer=backend.tokenizer, device="cpu")
    torch.manual_seed(0)
    start = time.perf_counter()
    for prompt in prompts:
        generator(prompt, do_sample=True, top_k=PARAMS.top_k, temperature=PARAMS.temperature,
                  max_new_tokens=PARAMS.max_new_tokens, num_return_sequences=per_prompt,
                  pad_token_id=backend.tokenizer.pad_token_id, return_full_text=False)
    seconds = time.perf_counter() - start
    return {"method": f"HF pipeline, num_return_sequences={per_prompt} (float32)",
            "samples": per_prompt * len(prompts), "seconds": seconds}


def time_nlgbias(backend, prompts: list[str], per_prompt: int, batch_size: int, dtype: str) -> dict:
    reqs = requests(prompts, per_prompt)
    if dtype != "float32":
        backend.generate(reqs[:2])  # build the low-precision copy outside the timing
    start = time.perf_counter()
    for s in range(0, len(reqs), batch_size):
        backend.generate(reqs[s:s + batch_size])
    seconds = time.perf_counter() - start
    return {"method": f"nlgbias batched (batch {batch_size}, mixed prompts, {dtype})",
            "samples": len(reqs), "seconds": seconds}


E2E = """
import json, sys
import nlgbias
from nlgbias.models import BackendOptions
result = nlgbias.run("sheng2019", models=["smollm2-135m"], samples={samples}, seed=0, out=sys.argv[1],
                     batch_size={batch_size}, backend_options=BackendOptions(dtype="{dtype}"), quiet=True)
print(json.dumps({{"samples": len(result.samples), "timings_s": result.timings}}))
"""


def end_to_end(samples: int, batch_size: int, dtype: str) -> dict:
    """The full audit in a fresh process and a fresh store (nothing cached); its peak memory too."""
    out = Path(tempfile.mkdtemp(prefix="nlgbias-bench-"))
    try:
        code = E2E.format(samples=samples, batch_size=batch_size, dtype=dtype)
        done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, check=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    laps = result["timings_s"]
    overhead = laps["setup"] + laps["score"] + laps["metrics"] + laps["outputs"]
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 / 1024
    return {"samples": result["samples"], "dtype": dtype, "timings_s": laps, "generation_s": laps["generate"],
            "overhead_s": overhead, "overhead_ratio": overhead / laps["generate"], "peak_memory_gb": peak_gb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--single", type=int, default=60, help="samples for the one-at-a-time method")
    parser.add_argument("--per-prompt", type=int, default=20, help="samples per prompt for pipeline and nlgbias")
    parser.add_argument("--batch-size", type=int, default=120)
    parser.add_argument("--e2e-samples", type=int, default=100, help="samples per prompt for the end-to-end run")
    parser.add_argument("--e2e-dtype", default="float32")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/results.json"))
    parser.add_argument("--e2e-only", action="store_true", help="only the end-to-end run (in a quiet process)")
    parser.add_argument("--no-e2e", action="store_true", help="only the speed comparison")
    args = parser.parse_args()
    if args.e2e_only:
        e2e = end_to_end(args.e2e_samples, args.batch_size, args.e2e_dtype)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"end_to_end": e2e}, indent=2))
        print_e2e(e2e, args.e2e_samples)
        return

    prompts = list(expand_suite(load_suite("sheng2019"))["prompt"])
    load_start = time.perf_counter()
    backend = load_backend(resolve_model("smollm2-135m"))
    load_seconds = time.perf_counter() - load_start
    rows = [
        time_one_at_a_time(backend, prompts, args.single),
        time_pipeline(backend, prompts, args.per_prompt),
        time_nlgbias(backend, prompts, args.per_prompt, args.batch_size, "float32"),
        time_nlgbias(backend, prompts, args.per_prompt, args.batch_size, "bfloat16"),
    ]
    for row in rows:
        row["samples_per_s"] = row["samples"] / row["seconds"]
    single, pipe = rows[0]["samples_per_s"], rows[1]["samples_per_s"]
    backend.close()
    del backend
    bench_peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    e2e = None if args.no_e2e else end_to_end(args.e2e_samples, args.batch_size, args.e2e_dtype)
    report = {"machine": {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
                          "torch": torch.__version__, "python": platform.python_version()},
              "model_load_s": load_seconds, "methods": rows, "end_to_end": e2e,
              "speed_benchmark_peak_memory_gb": bench_peak_gb}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))

    print("| method | samples | seconds | samples/s | vs one at a time | vs pipeline |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        rate = row["samples_per_s"]
        print(f"| {row['method']} | {row['samples']} | {row['seconds']:.1f} | {rate:.2f} | "
              f"{rate / single:.1f}x | {rate / pipe:.2f}x |")
    if e2e:
        print_e2e(e2e, args.e2e_samples)
    print(f"peak memory of the speed benchmarks (model + bfloat16 copy + pipeline): {bench_peak_gb:.2f} GB")


def print_e2e(e2e: dict, samples: int) -> None:
    print(f"\nend to end, 60 prompts x {samples} samples ({e2e['dtype']}): generation "
          f"{e2e['generation_s']:.1f} s, everything else {e2e['overhead_s']:.1f} s "
          f"({100 * e2e['overhead_ratio']:.1f}% of generation); stages: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in e2e["timings_s"].items()))
    print(f"peak memory of the end-to-end run (max RSS): {e2e['peak_memory_gb']:.2f} GB")


if __name__ == "__main__":
    main()
