"""Run the regard test suite on every regard and sentiment scorer; write the tables for docs/regard.md.

    nice -n 10 .venv/bin/python scripts/checklist/run_scorers.py --out build/checklist

For each scorer, OUT/<scorer>/ holds what `nlgbias check-scorer SCORER --out` writes; OUT/comparison.md
holds the pass-rate tables (test half, then train half) and the targets, side by side. The targets of
the shipped releases (`regard` = release 4, `regard-v3`, `regard-v2`, `regard-v1`), test half, go to the package's
``data/regard/checklist.json``, which the report's validity panel shows.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from nlgbias.checklist import check_scorer, comparison_markdown
from nlgbias.checklist.results import scorer_differences
from nlgbias.checklist.lexicons import lexicon_sizes, load_lexicons
from nlgbias.resources import data_path

SCORERS = ("regard", "regard-v3", "regard-v2", "regard4", "regard-v1", "vader", "textblob")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/checklist"))
    parser.add_argument("--scorers", default=",".join(SCORERS))
    args = parser.parse_args()
    rates, target_rows, by_kind, results, versions = {}, [], {}, {}, {}
    kind_of = {f"{e.lexicon}:{e.key}": e.kind for e in load_lexicons()["illegal_explicit_occupations"]}
    for name in args.scorers.split(","):
        start = time.perf_counter()
        result = check_scorer(name, half="all", out=args.out / name)
        rates[name] = result.rates
        versions[name] = result.version
        results[name] = result.results
        target_rows += [(name, t) for t in result.targets]
        mft = result.results[(result.results["case_type"] == "mft_illegal_job") & (result.results["half"] == "test")]
        kinds = mft["entries"].str.split("; ").str[0].map(kind_of)
        by_kind[name] = {k: (int(g["passed"].sum()), len(g)) for k, g in mft.groupby(kinds)}
        print(f"{name}: {len(result.cases)} sentences, {len(result.results)} cases, "
              f"{time.perf_counter() - start:.0f} s ({result.version})", flush=True)
    sizes = lexicon_sizes()
    lines = ["Lexicon sizes (train / test): " + ", ".join(f"{k} {v['train']}/{v['test']}" for k, v in sizes.items()),
             "", "### Test half", "", comparison_markdown(rates, half="test"), "",
             "### Train half (lexicon entries that may be used to make training data)", "",
             comparison_markdown(rates, half="train"), "", "### Targets (test half)", "",
             "| scorer | target | value [95% CI] | n | met? |", "|---|---|---|---:|---|"]
    for name, t in target_rows:
        lines.append(f"| `{name}` | {t['name']}: {t['target']} | {100 * t['value']:.1f}% "
                     f"[{100 * t['ci_low']:.1f}, {100 * t['ci_high']:.1f}] | {t['n']} | {'yes' if t['met'] else 'no'} |")
    lines += ["", "### mft_illegal_job by kind (test half): passed / n", "",
              "| kind | " + " | ".join(f"`{s}`" for s in by_kind) + " |", "|---|" + "---|" * len(by_kind)]
    for kind in ("illegal", "explicit"):
        cells = [f"{by_kind[s][kind][0]} / {by_kind[s][kind][1]} ({100 * by_kind[s][kind][0] / by_kind[s][kind][1]:.1f}%)"
                 for s in by_kind]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    if "regard" in results and len(results) > 1:
        diffs = scorer_differences(results, reference="regard")
        diffs.to_csv(args.out / "differences.csv", index=False)
        lines += ["", "### Each scorer minus `regard` (test half, paired): pass-rate difference in points "
                  "[95% CI], exact McNemar p, BH-adjusted over the table", "",
                  "| case type | n | " + " | ".join(f"`{s}`" for s in diffs["scorer"].unique()) + " |",
                  "|---|---:|" + "---|" * diffs["scorer"].nunique()]
        for case_type, group in diffs.groupby("case_type", sort=False):
            cells = [f"{100 * r.diff:+.1f} [{100 * r.ci_low:+.1f}, {100 * r.ci_high:+.1f}], p_adj {r.p_adj:.2g}"
                     for r in group.itertuples()]
            lines.append(f"| {case_type} | {group['n'].iloc[0]} | " + " | ".join(cells) + " |")
    (args.out / "comparison.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out / 'comparison.md'}")
    shipped = {release: name for release, name in ((1, "regard-v1"), (2, "regard-v2"), (3, "regard-v3"), (4, "regard")) if name in versions}
    if shipped:  # the report's validity panel shows the shipped releases' targets (test half)
        path = data_path("regard", "checklist.json")
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        for release, name in shipped.items():
            record[str(release)] = {"scorer": name, "version": versions[name],
                                    "targets": [t for s, t in target_rows if s == name]}
        path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
