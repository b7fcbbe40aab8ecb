"""Pronoun probe: batched probabilities vs one forward pass per prompt (same numbers), and saliency speed.

    python benchmarks/bench_pronouns.py [--prompts 200]

Uses SmolLM2-135M on the first natural-sentence and template prompts of the ``pronouns`` suite.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    from nlgbias.models import load_backend, resolve_model
    from nlgbias.probes.pronouns.probabilities import PRONOUNS, continuation_probabilities, saliency
    from nlgbias.probes.pronouns.stage import pronoun_prompts
    from nlgbias.suites import load_suite

    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--saliency-prompts", type=int, default=60)
    args = parser.parse_args()
    prompts = pronoun_prompts(load_suite("pronouns"))
    prompts = prompts[prompts["perturbation"] == "orig"].groupby("prompt_set").head(args.prompts // 2)
    texts, words = prompts["prompt"].tolist(), prompts["word"].tolist()
    backend = load_backend(resolve_model("smollm2-135m"))
    continuation_probabilities(backend, texts[:8], PRONOUNS)  # warm-up

    t_batches = {}
    for size in (32, 128):
        start = time.perf_counter()
        batched = continuation_probabilities(backend, texts, PRONOUNS, batch_size=size)
        t_batches[size] = time.perf_counter() - start
    start = time.perf_counter()
    single = [continuation_probabilities(backend, [t], PRONOUNS, batch_size=1) for t in texts]
    t_single = time.perf_counter() - start
    columns = [p.strip() for p in PRONOUNS]
    diff = np.abs(batched[columns].to_numpy() - np.vstack([s[columns].to_numpy() for s in single])).max()
    start = time.perf_counter()
    saliency(backend, texts[:args.saliency_prompts], words[:args.saliency_prompts])
    t_saliency = time.perf_counter() - start
    print("| measure | value |\n|---|---|")
    print(f"| prompts | {len(texts)} |")
    print(f"| one forward pass per prompt | {t_single:.1f} s, {len(texts) / t_single:.1f} prompts/s |")
    for size, seconds in t_batches.items():
        print(f"| batched (batch {size}) | {seconds:.1f} s, {len(texts) / seconds:.1f} prompts/s, "
              f"{t_single / seconds:.2f}x one per prompt |")
    print(f"| max abs difference of the {len(columns)} probabilities, batch 128 vs one per prompt | {diff:.2e} |")
    print(f"| saliency | {args.saliency_prompts / t_saliency:.1f} prompts/s |")


if __name__ == "__main__":
    main()
