"""Counterfactual pairing, measured: does giving sample i of every group
the same random draws cut the variance of the regard gaps?

Three designs, each ``--samples`` continuations per prompt of a suite on one model:

``independent``
    Today's runs: sample i of a prompt seeded from (run seed, model, prompt, i), inverse-CDF
    token picking (:func:`nlgbias.models.hf.pick_tokens`).  Sample i of "The man worked as" and of
    "The woman worked as" are independent.
``cdf-paired``
    The same sampler, seeded from (run seed, model, template, i): the group is left out, so
    both prompts' sample i use the same uniforms (the first prototype of pairing).
``gumbel-paired``
    Gumbel-max picking with per-token-id noise (``scripts/coupling.py``), seeded as cdf-paired.

Each design's marginal distribution is today's; only the dependence between groups differs.

Usage (generation appends to ``OUT/<design>.jsonl`` batch by batch and resumes; one template of
each context per block, so a generation stopped early is complete on whole blocks).  The numbers
of ``docs/statistics.md`` came from::

    nlgbias run sheng2019 --model smollm2-135m --samples 100 --seed 0 --out runs/demo   # README
    OMP_NUM_THREADS=1 python scripts/pairing_experiment.py generate --design independent --import-run runs/demo --out OUT
    OMP_NUM_THREADS=1 python scripts/pairing_experiment.py generate --design gumbel-paired --out OUT   # stopped after block 0
    OMP_NUM_THREADS=1 python scripts/pairing_experiment.py generate --design cdf-paired --templates worked_as --groups Black White --out OUT
    python scripts/pairing_experiment.py analyze --designs independent gumbel-paired --out OUT --n-boot 1000 --json docs/pairing_experiment.json
    python scripts/pairing_experiment.py analyze --designs independent gumbel-paired cdf-paired --templates worked_as \
        --groups Black White --out OUT --n-boot 1000 --json docs/pairing_experiment_3way.json

``generate --import-run RUN`` copies a finished ``nlgbias run``'s samples (same suite, model, seed
and sampling) into the independent design's file, after regenerating 12 of them to check they are
byte-identical.  ``analyze`` uses the template blocks complete in every design it is given.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from coupling import gumbel_pick, support  # scripts/coupling.py: a script's folder is first on sys.path
from nlgbias.keys import cell_seed
from nlgbias.metrics.resampling import percentile_interval
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
    backend.token_picker = gumbel_pick if args.design == "gumbel-paired" else None
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


def load_design(args, design: str) -> pd.DataFrame:
    """The design's plan joined with its generated continuations (rows generated so far)."""
    rows = plan(args.suite, args.model, args.samples, args.seed, design, args.templates, args.groups)
    texts = pd.DataFrame(read_jsonl(Path(args.out) / f"{design}.jsonl"))
    if texts.empty:
        return rows.assign(continuation=None).iloc[:0]
    texts = texts.drop_duplicates(["prompt_id", "sample_idx"], keep="last")
    merged = rows.merge(texts[["prompt_id", "sample_idx", "seed", "continuation"]], on=["prompt_id", "sample_idx"],
                        suffixes=("", "_text"))
    if not (merged["seed"] == merged["seed_text"]).all():
        sys.exit(f"Error: {args.out}/{design}.jsonl: seeds differ from the plan's (other --seed or --model?)")
    return merged.drop(columns="seed_text")


def complete_blocks(table: pd.DataFrame, args) -> list[int]:
    """Blocks whose every prompt has all ``--samples`` samples."""
    full = plan(args.suite, args.model, args.samples, args.seed, "independent", args.templates, args.groups)
    need, have = full.groupby("block").size(), table.groupby("block").size()
    return [int(b) for b in need.index if have.get(b, 0) == need[b]]


def label_texts(tables: dict[str, pd.DataFrame], suite) -> None:
    """Add ``scored_text`` (first sentence, group masked as XYZ, as runs score it) and ``label`` (regard)."""
    from nlgbias.scorers import get_scorer
    from nlgbias.text import mask_group, truncate

    mention = {g.id: g.text for g in suite.groups}
    for table in tables.values():
        table["scored_text"] = [mask_group(truncate(p, c, suite.truncate), mention[g])
                                for p, c, g in zip(table["prompt"], table["continuation"], table["group"])]
    unique = sorted({t for table in tables.values() for t in table["scored_text"]})
    labels = dict(zip(unique, get_scorer("regard").score(unique)["label"]))
    for table in tables.values():
        table["label"] = [labels[t] if labels[t] is not None else "none" for t in table["scored_text"]]


def pairs(table: pd.DataFrame, context: str, a: str, b: str) -> pd.DataFrame:
    """Sample i of group a's prompt and of group b's prompt of the same template, one row per pair."""
    side = table[table["context"] == context]
    left = side[side["group"] == a].set_index(["template_id", "sample_idx"])
    right = side[side["group"] == b].set_index(["template_id", "sample_idx"])
    columns = ["continuation", "scored_text", "label"]
    joined = left[columns].merge(right[columns], left_index=True, right_index=True, suffixes=("_a", "_b"))
    return joined.reset_index()


def variances(x: np.ndarray, y: np.ndarray, strata: np.ndarray) -> tuple[float, float]:
    """(paired, independent) variance of mean(x) - mean(y), stratified by template.

    Paired: sum over templates of n_t var_t(x - y) / n^2.  Independent: the same with
    var_t(x) + var_t(y), the variance the gap would have if the two sides were drawn independently
    with the same distributions (sample variances, ddof 1).
    """
    n = len(x)
    paired = independent = 0.0
    for t in np.unique(strata):
        at = strata == t
        nt = int(at.sum())
        paired += nt * np.var(x[at] - y[at], ddof=1)
        independent += nt * (np.var(x[at], ddof=1) + np.var(y[at], ddof=1))
    return paired / n**2, independent / n**2


def bootstrap_ratio(x, y, strata, n_boot: int, seed: int) -> tuple[float, float, float]:
    """Pair bootstrap within templates: the variance of the gap resampling pairs over resampling each
    side on its own (ratio), and a 95% percentile interval of the analytic ratio over pair replicates.

    In: the two sides' values ``x, y`` (pair i is ``x[i], y[i]``), each pair's template ``strata``.
    Out: ``(ratio, low, high)``.  Not :func:`nlgbias.metrics.resampling.bootstrap`: each replicate
    draws two resamples within templates (pairs kept, and side b again on its own) and the result
    is a ratio of replicate variances, so only the interval is the library's (``percentile_interval``).
    """
    rng = np.random.default_rng(seed)
    gaps_paired, gaps_indep, ratios = np.zeros(n_boot), np.zeros(n_boot), []
    idx = [np.flatnonzero(strata == t) for t in np.unique(strata)]
    for r in range(n_boot):
        take = np.concatenate([rng.choice(i, len(i)) for i in idx])
        take_b = np.concatenate([rng.choice(i, len(i)) for i in idx])
        gaps_paired[r] = x[take].mean() - y[take].mean()
        gaps_indep[r] = x[take].mean() - y[take_b].mean()
        vp, vi = variances(x[take], y[take], strata[take]) if r < 400 else (np.nan, np.nan)
        if vi > 0:
            ratios.append(vp / vi)
    boot = float(np.var(gaps_paired) / np.var(gaps_indep)) if np.var(gaps_indep) > 0 else float("nan")
    low, high = percentile_interval(ratios, 0.95) if ratios else (np.nan, np.nan)
    return boot, float(low), float(high)


def shared_words(a: str, b: str) -> int:
    """Words the two continuations share at their start."""
    n = 0
    for u, v in zip(a.split(), b.split()):
        if u != v:
            break
        n += 1
    return n


def measure(table: pd.DataFrame, suite, args, design: str) -> list[dict]:
    """One row per (context, comparison, label): pair facts and the variances of the label-share gap."""
    out = []
    for context in dict.fromkeys(table["context"]):
        for a, b in suite.comparisons:
            joined = pairs(table, context, a, b)
            if joined.empty:
                continue
            strata = joined["template_id"].to_numpy()
            facts = {
                "design": design, "context": context, "comparison": f"{a} vs {b}", "n_pairs": len(joined),
                "templates": int(len(np.unique(strata))),
                "identical_continuation": float((joined["continuation_a"] == joined["continuation_b"]).mean()),
                "identical_masked_text": float((joined["scored_text_a"] == joined["scored_text_b"]).mean()),
                "shared_start_words": float(np.mean([shared_words(u, v) for u, v in
                                                     zip(joined["continuation_a"], joined["continuation_b"])])),
                "label_agreement": float((joined["label_a"] == joined["label_b"]).mean()),
            }
            for label in ("negative", "positive"):
                x = (joined["label_a"] == label).to_numpy(float)
                y = (joined["label_b"] == label).to_numpy(float)
                paired, independent = variances(x, y, strata)
                boot, low, high = bootstrap_ratio(x, y, strata, args.n_boot,
                                                  cell_seed(args.seed, design, context, a, b, label))
                out.append({**facts, "label": label, "share_a": float(x.mean()), "share_b": float(y.mean()),
                            "gap": float(x.mean() - y.mean()), "var_paired": paired, "var_independent": independent,
                            "ratio": paired / independent if independent > 0 else None,
                            "ratio_ci95": [low, high], "ratio_bootstrap": boot,
                            "within_pair_correlation": (float(np.corrcoef(x, y)[0, 1])
                                                        if x.std() > 0 and y.std() > 0 else None)})
    return out


def first_token_coupling(args, suite) -> list[dict]:
    """How often the two prompts of a pair pick the same first token, per template and comparison.

    From each prompt's exact first-token distribution (the sampler's top-k / temperature support):
    the total variation distance TV; ``1 - TV``, the most any coupling can reach (the maximal
    coupling); the inverse CDF's agreement under a shared uniform (exact, from the two CDFs); and
    Gumbel-max's agreement over ``--n-boot`` shared seeds (Monte Carlo, the coupler of
    ``scripts/coupling.py``).
    """
    import torch

    from nlgbias.models.registry import load_backend, resolve_model

    params = SamplingParams(**suite.sampling)
    prompts = expand_suite(suite)
    if args.templates:
        prompts = prompts[prompts["template_id"].isin(args.templates)]
    backend = load_backend(resolve_model(args.model))
    tok, model = backend.tokenizer, backend.model
    logits = {}
    with torch.inference_mode():
        for prompt in prompts["prompt"]:
            logits[prompt] = model(**tok(prompt, return_tensors="pt")).logits[0, -1].float()
    backend.close()

    def distribution(row):
        values, indices, keep = support(row[None], params)
        probs = torch.softmax(values[0].double(), 0) * keep[0]
        return indices[0], probs / probs.sum()

    def cdf_agreement(pa, pb):
        (ia, qa), (ib, qb) = pa, pb
        ends_a, ends_b = qa.cumsum(0), qb.cumsum(0)
        same = 0.0
        for j, token in enumerate(ia.tolist()):
            hit = (ib == token).nonzero()
            if len(hit):
                k = int(hit[0, 0])
                low = max(float(ends_a[j] - qa[j]), float(ends_b[k] - qb[k]))
                same += max(0.0, min(float(ends_a[j]), float(ends_b[k])) - low)
        return same

    out = []
    seeds = list(range(args.n_boot))
    text = {g.id: g.text for g in suite.groups}
    for template, rows in prompts.groupby("template_id", sort=False):
        for a, b in suite.comparisons:
            prompt = {g: rows.loc[rows["group"] == g, "prompt"].iloc[0] for g in (a, b)}
            pa, pb = distribution(logits[prompt[a]]), distribution(logits[prompt[b]])
            dense = torch.zeros(2, len(logits[prompt[a]]), dtype=torch.float64)
            dense[0, pa[0]], dense[1, pb[0]] = pa[1], pb[1]
            tv = float((dense[0] - dense[1]).abs().sum() / 2)
            rows_ab = torch.stack([logits[prompt[a]], logits[prompt[b]]])
            picks_a = gumbel_pick(rows_ab[[0] * len(seeds)], seeds, 0, params)
            picks_b = gumbel_pick(rows_ab[[1] * len(seeds)], seeds, 0, params)
            out.append({"template_id": template, "context": rows["context"].iloc[0], "comparison": f"{a} vs {b}",
                        "mentions": [text[a], text[b]], "tv": tv, "maximal_coupling": 1 - tv,
                        "cdf_agreement": cdf_agreement(pa, pb),
                        "gumbel_agreement": float((picks_a == picks_b).double().mean())})
    return out


def analyze(args) -> None:
    suite = load_suite(args.suite)
    tables = {d: load_design(args, d) for d in args.designs}
    blocks = {d: complete_blocks(t, args) for d, t in tables.items()}
    common = sorted(set.intersection(*(set(b) for b in blocks.values())))
    if not common:
        sys.exit(f"Error: no template block is complete in every design ({blocks})")
    tables = {d: t[t["block"].isin(common)].copy() for d, t in tables.items()}
    label_texts(tables, suite)
    cells = [row for d, t in tables.items() for row in measure(t, suite, args, d)]
    summary = {}
    for d in args.designs:
        rows = [c for c in cells if c["design"] == d and c["ratio"] is not None]
        summary[d] = {
            "mean_ratio": float(np.mean([c["ratio"] for c in rows])),
            "pooled_ratio": float(sum(c["var_paired"] for c in rows) / sum(c["var_independent"] for c in rows)),
            "mean_ratio_bootstrap": float(np.mean([c["ratio_bootstrap"] for c in rows])),
            "identical_masked_text": float(np.mean([c["identical_masked_text"] for c in rows])),
            "identical_continuation": float(np.mean([c["identical_continuation"] for c in rows])),
            "shared_start_words": float(np.mean([c["shared_start_words"] for c in rows])),
            "label_agreement": float(np.mean([c["label_agreement"] for c in rows])),
            "cells": len(rows),
        }
    best = min((d for d in args.designs if d != "independent"), key=lambda d: summary[d]["mean_ratio"], default=None)
    reduction = 1 - summary[best]["mean_ratio"] if best else None
    templates = sorted(set(tables[args.designs[0]]["template_id"]))
    first = first_token_coupling(args, suite)
    result = {
        "experiment": "counterfactual pairing",
        "command": "python scripts/pairing_experiment.py " + " ".join(sys.argv[1:]),
        "suite": args.suite, "model": args.model, "seed": args.seed, "samples_per_prompt": args.samples,
        "sampling": SamplingParams(**suite.sampling).to_dict(), "truncate": suite.truncate, "scorer": "regard",
        "blocks": common, "templates": templates, "blocks_complete": blocks,
        "decision_rule": "ship --paired only if the variance of the regard gaps drops by >= 30% on average",
        "best_paired_design": best, "variance_reduction": reduction,
        "ship": bool(reduction is not None and reduction >= 0.30),
        "summary": summary, "cells": cells, "first_token": first,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(markdown(result))


def markdown(result: dict) -> str:
    """The per-cell table and the summary, as in docs/statistics.md."""
    lines = ["| design | context | comparison | label | pairs | identical masked text | label agreement | "
             "gap | var ratio (paired / independent) | 95% CI | bootstrap ratio |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for c in result["cells"]:
        ratio = "–" if c["ratio"] is None else f"{c['ratio']:.3f}"
        lines.append(f"| {c['design']} | {c['context']} | {c['comparison']} | {c['label']} | {c['n_pairs']} | "
                     f"{c['identical_masked_text']:.3f} | {c['label_agreement']:.3f} | {100 * c['gap']:+.1f} | "
                     f"{ratio} | {c['ratio_ci95'][0]:.2f}–{c['ratio_ci95'][1]:.2f} | {c['ratio_bootstrap']:.3f} |")
    lines += ["", "| design | mean var ratio | pooled var ratio | identical continuation | identical masked text | "
              "shared start words | label agreement |", "|---|---:|---:|---:|---:|---:|---:|"]
    for d, s in result["summary"].items():
        lines.append(f"| {d} | {s['mean_ratio']:.3f} | {s['pooled_ratio']:.3f} | {s['identical_continuation']:.3f} | "
                     f"{s['identical_masked_text']:.3f} | {s['shared_start_words']:.2f} | {s['label_agreement']:.3f} |")
    first = pd.DataFrame(result["first_token"])
    if not first.empty:
        lines += ["", "| context | comparison | TV of the first-token distributions | any coupling at most (1 - TV) | "
                  "inverse CDF, shared uniform | Gumbel-max, shared noise |", "|---|---|---:|---:|---:|---:|"]
        for (context, comparison), g in first.groupby(["context", "comparison"], sort=False):
            lines.append(f"| {context} | {comparison} | {g['tv'].mean():.3f} | {g['maximal_coupling'].mean():.3f} | "
                         f"{g['cdf_agreement'].mean():.3f} | {g['gumbel_agreement'].mean():.3f} |")
    return "\n".join(lines)


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
    ana.add_argument("--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS))
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
