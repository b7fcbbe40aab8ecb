"""Several model servers on one machine: the same run on 1 and on 3 fake servers, in one run.

Each fake server (tests/fakeserver.py, in a separate process so that its threads do not share
the client's interpreter lock) answers after ``--latency`` seconds and works on at most
``--capacity`` requests at once, the rest waiting: a stand-in for a GPU server whose batch is
full.  The benchmark runs the real ``nlgbias.run`` path (requests, retries, the server pool, the
store committing answers as they arrive) on the 60-prompt ``sheng2019`` suite with
``--samples`` per prompt, ``--concurrency`` = capacity per server, and times the generation
stage three ways:

1. one server,
2. three servers,
3. three servers of which one refuses connections (it is down from the start).

The ideal ratio of (2) to (1) is 3; what is lost goes to the client (one Python process sending
and storing every request).  Usage::

    python benchmarks/bench_servers.py                      # 1,200 requests, 50 ms, capacity 8

Results are printed as a Markdown table; docs/benchmarks.md records a run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def serve(count: int, latency: float, capacity: int) -> None:
    """Run ``count`` fake servers in this process; print their URLs as one JSON line; serve until killed."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakeserver import FakeServer

    servers = [FakeServer(delay=latency, capacity=capacity).__enter__() for _ in range(count)]
    print(json.dumps([s.url for s in servers]), flush=True)
    while True:
        time.sleep(3600)


def start_servers(count: int, latency: float, capacity: int) -> tuple[subprocess.Popen, list[str]]:
    process = subprocess.Popen([sys.executable, __file__, "--serve", str(count), "--latency", str(latency),
                                "--capacity", str(capacity)], stdout=subprocess.PIPE, text=True)
    urls = json.loads(process.stdout.readline())
    return process, urls


def timed_run(urls: list[str], *, samples: int, concurrency: int, out: Path) -> dict:
    import nlgbias
    from nlgbias.models import BackendOptions

    options = BackendOptions(api_base=tuple(urls), concurrency=concurrency, max_retries=1, cooldown=600)
    cpu = time.process_time()
    result = nlgbias.run("sheng2019", models=["openai:served"], samples=samples, scorers=["vader"], n_boot=100,
                         out=out, quiet=True, backend_options=options)
    cpu = time.process_time() - cpu
    seconds = result.timings["generate"]
    servers = result.manifest["models"][0]["servers"]
    return {"samples": len(result.samples), "seconds": seconds, "per_s": len(result.samples) / seconds,
            "client_cpu_s": cpu, "answered": [s["answered"] for s in servers]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20, help="samples per prompt (60 prompts)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request on a fake server")
    parser.add_argument("--capacity", type=int, default=8, help="requests a fake server works on at once")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.latency, args.capacity)
        return
    process, urls = start_servers(3, args.latency, args.capacity)
    refused = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
    setups = [("1 server", urls[:1]), ("3 servers", urls), ("3 servers, one down from the start", [urls[0], refused, urls[1]])]
    rows = []
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for k, (name, base) in enumerate(setups):
                row = timed_run(base, samples=args.samples, concurrency=args.capacity, out=Path(scratch) / str(k))
                rows.append({"setup": name, **row})
    finally:
        process.kill()
    ideal = args.capacity / args.latency
    print(f"{rows[0]['samples']} requests; each fake server: {args.latency * 1000:g} ms per request, "
          f"{args.capacity} at once (at most {ideal:.0f} requests/s), --concurrency {args.capacity}; "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}\n")
    print("| setup | generation s | samples/s | vs 1 server | client CPU s (whole run) | answered per server |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['setup']} | {row['seconds']:.2f} | {row['per_s']:.0f} | {row['per_s'] / rows[0]['per_s']:.2f}× | "
              f"{row['client_cpu_s']:.1f} | {' / '.join(str(n) for n in row['answered'])} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"latency_s": args.latency, "capacity": args.capacity, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
