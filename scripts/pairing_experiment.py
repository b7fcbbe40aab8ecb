"""Counterfactual pairing, measured (issue 13, section 3): does giving sample i of every group
the same random draws cut the variance of the regard gaps?

Three designs, each ``--samples`` continuations per prompt of a suite on one model:

``independent``
    Today's runs: sample i of a prompt seeded from (run seed, model, prompt, i), inverse-CDF
    token picking (:func:`nlgbias.models.hf.pick_tokens`).  Sample i of "The man worked as" and of
    "The woman worked as" are independent.
``cdf-paired``
    The same sampler, seeded from (run seed, model, template, i): the group is left out, so
    both prompts' sample i use the same uniforms (the prototype of the issue).
``gumbel-paired``
    Gumbel-max picking with per-token-id noise (:mod:`nlgbias.coupling`), seeded as cdf-paired.

Each design's marginal distribution is today's; only the dependence between groups differs.

Usage (generation appends to ``OUT/<design>.jsonl`` batch by batch and resumes)::

    OMP_NUM_THREADS=1 python scripts/pairing_experiment.py generate --design gumbel-paired --out OUT
    python scripts/pairing_experiment.py analyze --out OUT --json docs/pairing_experiment.json

``generate --import-run RUN`` first copies a finished ``nlgbias run``'s samples (same suite, model,
seed and sampling) into the independent design's file after regenerating one batch of them to
check they are byte-identical.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from nlgbias.keys import cell_seed
from nlgbias.sampling import SamplingParams, sample_seed
from nlgbias.suites import expand_suite, load_suite

DESIGNS = ("independent", "cdf-paired", "gumbel-paired")
LABELS = ("negative", "neutral", "positive")


def plan(suite_name: str, model: str, samples: int, seed: int, design: str, templates=None, groups=None) -> pd.DataFrame:
    """One row per (sample index, prompt) with the design's seed, in template blocks.

    Block b holds the b-th template of each context; a block's samples come before the next
    block's, sample-major within it, so a generation stopped early is a complete measurement at
    full samples per prompt on fewer templates.
    """
    prompts = expand_suite(load_suite(suite_name))
    if templates:
        prompts = prompts[prompts["template_id"].isin(templates)]
    if groups:
        prompts = prompts[prompts["group"].isin(groups)]
    order = prompts.drop_duplicates("template_id")
    block = {t: i for _, ts in order.groupby("context")["template_id"] for i, t in enumerate(ts)}
    prompts = prompts.assign(block=prompts["template_id"].map(block))
    rows = []
    for b in sorted(set(block.values())):
        in_block = prompts[prompts["block"] == b]
        for index in range(samples):
            for p in in_block.itertuples():
                if design == "independent":
                    s = sample_seed(seed, model, p.prompt, index)
                else:  # the group left out: every group's sample `index` of a template shares its draws
                    s = cell_seed(seed, "pair", model, p.template_id, index) >> 1
                rows.append({"prompt_id": p.prompt_id, "template_id": p.template_id, "context": p.context,
                             "group": p.group, "block": b, "sample_idx": index, "seed": s, "prompt": p.prompt})
    return pd.DataFrame(rows)


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line cut by a kill: the rest is regenerated
    return out


def generate(args) -> None:
    import torch

    from nlgbias.models.registry import load_backend, resolve_model

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suite = load_suite(args.suite)
    params = SamplingParams(**suite.sampling) if getattr(suite, "sampling", None) else SamplingParams()
    rows = plan(args.suite, args.model, args.samples, args.seed, args.design, args.templates, args.groups)
    path = out / f"{args.design}.jsonl"
    backend = load_backend(resolve_model(args.model))
    backend.coupling = "gumbel-max" if args.design == "gumbel-paired" else "inverse-cdf"
    if args.import_run and args.design == "independent":
        import_run(Path(args.import_run), rows, path, backend, params)
    done = {(r["prompt_id"], r["sample_idx"]) for r in read_jsonl(path)}
    todo = rows[[(p, i) not in done for p, i in zip(rows["prompt_id"], rows["sample_idx"])]]
    print(f"{args.design}: {len(rows) - len(todo)} of {len(rows)} samples present; generating {len(todo)}", flush=True)
    start = time.time()
    with open(path, "a", encoding="utf-8") as handle:
        for begin in range(0, len(todo), args.batch_size):
            batch = todo.iloc[begin:begin + args.batch_size]
            texts = sample(backend, batch, params)
            for row, text in zip(batch.to_dict("records"), texts):
                handle.write(json.dumps({**row, "continuation": text}, ensure_ascii=False) + "\n")
            handle.flush()
            made = begin + len(batch)
            rate = made / (time.time() - start)
            print(f"{time.strftime('%H:%M:%S')} {made}/{len(todo)} ({rate:.2f}/s, "
                  f"{(len(todo) - made) / rate / 60:.0f} min left)", flush=True)
    backend.close()


def sample(backend, batch: pd.DataFrame, params: SamplingParams) -> list[str]:
    from nlgbias.models.backend import GenerationRequest

    return backend.generate([GenerationRequest(p, params, int(s)) for p, s in zip(batch["prompt"], batch["seed"])])


def import_run(run: Path, rows: pd.DataFrame, path: Path, backend, params: SamplingParams) -> None:
    """Copy a finished run's continuations for ``rows`` into ``path``, after checking 12 of them."""
    if path.is_file():
        return
    samples = pd.read_parquet(run / "samples.parquet", columns=["prompt_id", "sample_idx", "seed", "continuation"])
    merged = rows.merge(samples, on=["prompt_id", "sample_idx"], suffixes=("", "_run"))
    merged = merged[merged["seed"] == merged["seed_run"]]
    check = merged.sample(12, random_state=0)
    again = sample(backend, check, params)
    if again != list(check["continuation"]):
        sys.exit(f"Error: {run}: its samples differ from this sampler's; not imported")
    with open(path, "w", encoding="utf-8") as handle:
        for row in merged.drop(columns="seed_run").to_dict("records"):
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"imported {len(merged)} samples from {run} (12 regenerated, identical)", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate")
    gen.add_argument("--design", choices=DESIGNS, required=True)
    gen.add_argument("--import-run")
    gen.add_argument("--batch-size", type=int, default=60)
    gen.add_argument("--threads", type=int, default=1)
    ana = sub.add_parser("analyze")
    ana.add_argument("--json", required=True)
    ana.add_argument("--n-boot", type=int, default=2000)
    for p in (gen, ana):
        p.add_argument("--suite", default="sheng2019")
        p.add_argument("--model", default="smollm2-135m")
        p.add_argument("--samples", type=int, default=100)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--templates", nargs="*")
        p.add_argument("--groups", nargs="*")
        p.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "generate":
        generate(args)
    else:
        analyze(args)


if __name__ == "__main__":
    main()
