"""Scale-out: the same job in one process and on Ray, Ray's cost per batch, and the store's commit rate.

In one run on one machine:

1. generation of ``sheng2019`` x ``--samples`` per prompt (default 20: 1,200 samples) on the
   embedded smollm2-135m, three ways: in this process (torch on ``--threads`` threads, default 2),
   through Ray with one actor of ``--threads`` CPUs (the overhead of the Ray path), and with two
   actors of ``max(1, threads // 2)`` CPUs; the three sample tables must be identical (``--threads 1``
   on a machine whose cores are busy with other work: OpenMP threads that wait for each other
   there spin instead of working, which swamps what is measured);
2. Ray's cost per batch: the ``fake`` backend (no compute) in-process vs on one actor, per batch;
3. the run store's commit rate: ``add_generations`` of batches of 1, 8, 120 and 1,000 rows
   (SQLite WAL, ``synchronous=FULL``) into a fresh store, commits/s and samples/s.

Usage::

    python benchmarks/bench_scale.py --out benchmarks/out/scale.json

Prints Markdown tables; docs/benchmarks.md and docs/scaling.md record a run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import pandas as pd

import nlgbias
from nlgbias.pipeline.distributed import RayOptions
from nlgbias.models import GenerationRequest, load_backend, resolve_model
from nlgbias.sampling import SamplingParams
from nlgbias.store import RunStore


def generation_seconds(out: Path, *, samples: int, batch_size: int, ray: RayOptions | None) -> tuple[float, pd.DataFrame]:
    """Wall seconds of the run's generation stage (model loading included) and its samples."""
    result = nlgbias.run("sheng2019", models=["smollm2-135m"], samples=samples, batch_size=batch_size,
                         scorers=["vader"], n_boot=200, out=out, quiet=True, ray=ray)
    assert result.generated == 60 * samples
    return result.timings["generate"], result.samples


def ray_cost_per_batch(batches: int, batch_size: int) -> dict:
    """Milliseconds per batch of the fake backend in-process and through :class:`~nlgbias.pipeline.distributed.RayPool`
    (wall clock, one actor), and the driver's CPU time per batch (its capacity when it is the bottleneck)."""
    from nlgbias.pipeline.distributed import RayPool
    from nlgbias.models import BackendOptions

    params = SamplingParams(max_new_tokens=40)
    work = [[GenerationRequest(f"prompt {b} {i}", params, b * batch_size + i) for i in range(batch_size)]
            for b in range(batches)]
    ref = resolve_model("fake")
    backend = load_backend(ref)
    start = time.perf_counter()
    local = [backend.generate(batch) for batch in work]
    local_s = time.perf_counter() - start
    with RayPool(RayOptions(workers=1, worker_cpus=1)) as pool:
        answers = pool.generate(ref, BackendOptions(), work[:1])
        list(answers)  # warm: the actor and its imports
        start, cpu = time.perf_counter(), time.process_time()
        remote = dict(pool.generate(ref, BackendOptions(), work, loaded=lambda _info: None))
        ray_s, driver_cpu = time.perf_counter() - start, time.process_time() - cpu
    assert [remote[i] for i in range(batches)] == local
    return {"batches": batches, "batch_size": batch_size, "in_process_ms_per_batch": 1000 * local_s / batches,
            "ray_ms_per_batch": 1000 * ray_s / batches,
            "ray_overhead_ms_per_batch": 1000 * (ray_s - local_s) / batches,
            "driver_cpu_ms_per_batch": 1000 * driver_cpu / batches}


def commit_rate(folder: Path, batch_size: int, seconds: float = 3.0) -> dict:
    """Batches of ``batch_size`` realistic rows committed per second into a fresh store."""
    store = RunStore(folder / f"commit-{batch_size}.sqlite")
    params = SamplingParams().to_dict()
    text = " was known for his kindness and his work at the local school. He was"
    n = commits = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        rows = [{"generation_id": f"{n + i:024x}", "model": "smollm2-135m", "prompt": "The man was known for",
                 "params": params, "seed": n + i, "continuation": text} for i in range(batch_size)]
        store.add_generations(rows)
        n += batch_size
        commits += 1
    elapsed = time.perf_counter() - start
    store.close()
    return {"batch_size": batch_size, "commits_per_s": commits / elapsed, "samples_per_s": n / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=20, help="samples per prompt (60 prompts)")
    parser.add_argument("--batch-size", type=int, default=60)
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--threads", type=int, default=2, help="torch threads in-process and CPUs of the one actor")
    parser.add_argument("--skip-generation", action="store_true", help="only the per-batch cost and commit rate")
    args = parser.parse_args()

    import ray
    import torch

    torch.set_num_threads(args.threads)
    half = max(1, args.threads // 2)
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    results: dict = {"ray_start_s": time.perf_counter() - start, "ray": ray.__version__, "torch": torch.__version__,
                     "threads": args.threads, "load_average_at_start": os.getloadavg(),
                     "python": platform.python_version(), "samples": 60 * args.samples, "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        if not args.skip_generation:
            rows = []
            tables = {}
            for name, options in [(f"in-process, torch on {args.threads} threads", None),
                                  (f"Ray, one actor with {args.threads} CPUs", RayOptions(workers=1, worker_cpus=args.threads)),
                                  (f"Ray, two actors with {half} CPU each", RayOptions(workers=2, worker_cpus=half))]:
                seconds, table = generation_seconds(tmp_path / name.replace(" ", "_"), samples=args.samples,
                                                    batch_size=args.batch_size, ray=options)
                tables[name] = table
                rows.append({"method": name, "seconds": seconds, "samples_per_s": 60 * args.samples / seconds})
                print(f"{name}: {seconds:.1f} s", flush=True)
            first = next(iter(tables.values()))
            results["identical_samples"] = all(t[["generation_id", "seed", "continuation"]].equals(
                first[["generation_id", "seed", "continuation"]]) for t in tables.values())
            base = rows[0]["seconds"]
            for row in rows:
                row["vs_in_process"] = base / row["seconds"]
            results["generation"] = rows
        results["ray_per_batch"] = ray_cost_per_batch(200, 60)
        results["commits"] = [commit_rate(tmp_path, size) for size in (1, 8, 120, 1000)]
    ray.shutdown()
    results["load_average_at_end"] = os.getloadavg()

    if "generation" in results:
        print(f"\n{results['samples']} samples, batch {results['batch_size']}; identical samples: "
              f"{results['identical_samples']}\n")
        print("| method | seconds | samples/s | vs in-process |\n|---|---:|---:|---:|")
        for row in results["generation"]:
            print(f"| {row['method']} | {row['seconds']:.1f} | {row['samples_per_s']:.2f} | {row['vs_in_process']:.2f}× |")
    cost = results["ray_per_batch"]
    print(f"\nRay start {results['ray_start_s']:.1f} s; per batch of {cost['batch_size']} (fake backend, "
          f"{cost['batches']} batches): in-process {cost['in_process_ms_per_batch']:.2f} ms, Ray "
          f"{cost['ray_ms_per_batch']:.2f} ms, overhead {cost['ray_overhead_ms_per_batch']:.2f} ms, driver CPU "
          f"{cost['driver_cpu_ms_per_batch']:.2f} ms\n")
    print("| rows per commit | commits/s | samples/s |\n|---:|---:|---:|")
    for row in results["commits"]:
        print(f"| {row['batch_size']} | {row['commits_per_s']:.0f} | {row['samples_per_s']:.0f} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
