"""Throughput of an audit over one vLLM server per GPU (run it on a machine with NVIDIA GPUs).

NOT RUN HERE: the development machine has no GPU and no vLLM, so this script is not part of the
tests and no number in docs/benchmarks.md comes from it.  Run it yourself:

    pip install vllm 'nlgbias'           # vLLM needs a CUDA machine; see vLLM's install guide
    python benchmarks/gpu/bench_vllm.py --model Qwen/Qwen2.5-0.5B --samples 1000 --compare-one

What it does:

1. finds the GPUs (``nvidia-smi -L``, or ``--gpus 0,1``) and starts one ``vllm serve MODEL
   --port 8000+i`` per GPU with ``CUDA_VISIBLE_DEVICES=i`` (logs in ``OUT/vllm-<gpu>.log``);
2. waits until every server answers ``GET /health`` (``--wait`` seconds at most: the first start
   downloads the weights);
3. runs ``nlgbias`` once over all the servers (``--api-base`` with every URL) on ``--suite``
   (default ``kirk2021-identity``: 28 prompts; Kirk et al.'s paper scale is about 396K
   continuations, i.e. ``--samples 14000``), and with ``--compare-one`` the same run on the first
   server alone;
4. prints samples per second of the generation stage (from the run's manifest), the ratio
   all-servers / one server, and how many requests each server answered, and writes them to
   ``OUT/results.json``; then stops the servers.

The servers are stopped on exit, also on Ctrl-C.  A server that dies mid-run is taken out of
rotation and its requests go to the others (see docs/models.md, "Many servers").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def gpu_ids(given: str | None) -> list[str]:
    if given:
        return [g.strip() for g in given.split(",") if g.strip()]
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        sys.exit("Error: no NVIDIA GPU found (nvidia-smi -L failed); this benchmark needs a GPU machine")
    ids = [line.split(":")[0].split()[-1] for line in listing.splitlines() if line.startswith("GPU ")]
    if not ids:
        sys.exit("Error: nvidia-smi lists no GPU")
    return ids


def start_servers(model: str, gpus: list[str], port: int, out: Path, extra: list[str]) -> list[subprocess.Popen]:
    processes = []
    for k, gpu in enumerate(gpus):
        log = open(out / f"vllm-{gpu}.log", "w")
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
        processes.append(subprocess.Popen(["vllm", "serve", model, "--port", str(port + k), "--seed", "0", *extra],
                                          stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
    return processes


def wait_healthy(urls: list[str], processes: list[subprocess.Popen], wait: float) -> None:
    deadline = time.monotonic() + wait
    waiting = set(urls)
    while waiting:
        for url, process in zip(urls, processes):
            if process.poll() is not None:
                sys.exit(f"Error: the vLLM server for {url} exited with code {process.returncode}; see its log")
        for url in sorted(waiting):
            try:
                with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=5) as reply:
                    if reply.status == 200:
                        waiting.discard(url)
            except OSError:
                pass
        if waiting and time.monotonic() > deadline:
            sys.exit(f"Error: not healthy after {wait:g} s: {', '.join(sorted(waiting))}")
        if waiting:
            time.sleep(5)


def timed_run(args, urls: list[str], out: Path) -> dict:
    import nlgbias
    from nlgbias.models import BackendOptions

    options = BackendOptions(api_base=tuple(urls), concurrency=args.concurrency)
    result = nlgbias.run(args.suite, models=[f"openai:{args.model}"], samples=args.samples, out=out,
                         backend_options=options, quiet=False)
    seconds = result.timings["generate"]
    return {"servers": len(urls), "samples": len(result.samples), "generated_now": result.generated,
            "generation_s": seconds, "samples_per_s": result.generated / seconds if seconds else None,
            "answered": {s["url"]: s["answered"] for s in result.manifest["models"][0]["servers"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B", help="model for vllm serve (hub id or path)")
    parser.add_argument("--suite", default="kirk2021-identity")
    parser.add_argument("--samples", type=int, default=1000, help="samples per prompt (paper scale: 14000)")
    parser.add_argument("--gpus", default=None, help="GPU ids, e.g. 0,1 [default: every GPU nvidia-smi lists]")
    parser.add_argument("--port", type=int, default=8000, help="first port; GPU k listens on port + k")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight per server")
    parser.add_argument("--wait", type=float, default=900, help="seconds to wait for the servers to be healthy")
    parser.add_argument("--compare-one", action="store_true", help="also run on the first server alone")
    parser.add_argument("--out", type=Path, default=Path("runs/gpu-bench"))
    parser.add_argument("vllm_args", nargs="*", help="after --: more arguments for vllm serve")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gpus = gpu_ids(args.gpus)
    urls = [f"http://127.0.0.1:{args.port + k}/v1" for k in range(len(gpus))]
    processes = start_servers(args.model, gpus, args.port, args.out, args.vllm_args)
    try:
        wait_healthy(urls, processes, args.wait)
        rows = [timed_run(args, urls, args.out / f"run-{len(urls)}-servers")]
        if args.compare_one and len(urls) > 1:
            rows.append(timed_run(args, urls[:1], args.out / "run-1-server"))
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
    report = {"model": args.model, "suite": args.suite, "samples_per_prompt": args.samples, "gpus": gpus,
              "concurrency_per_server": args.concurrency, "python": platform.python_version(), "runs": rows}
    if len(rows) == 2 and rows[1]["samples_per_s"]:
        report["ratio_all_vs_one"] = rows[0]["samples_per_s"] / rows[1]["samples_per_s"]
    (args.out / "results.json").write_text(json.dumps(report, indent=2))
    for row in rows:
        print(f"{row['servers']} server(s): {row['generated_now']} samples in {row['generation_s']:.1f} s = "
              f"{row['samples_per_s']:.1f} samples/s; answered per server: {row['answered']}")
    if "ratio_all_vs_one" in report:
        print(f"all {len(urls)} servers vs one: {report['ratio_all_vs_one']:.2f}x")
    print(f"-> {args.out / 'results.json'}")


if __name__ == "__main__":
    main()
