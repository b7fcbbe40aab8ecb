#!/usr/bin/env bash
# Generate the regard v3 annotation pool and the BOLD validity set (seed 3, bfloat16).
# Usage: bash scripts/regard_v3/generate.sh [OUT]   (default runs/regard-v3); resumable.
# Each run's CPU time (user + system seconds) is appended to OUT/cpu.log.
set -euo pipefail
out=${1:-runs/regard-v3}
nb=${NLGBIAS:-.venv/bin/nlgbias}
here=scripts/regard_v3
hot=(--temperature 1.0 --top-p 0.95 --top-k 0)
common=(--seed 3 --dtype bfloat16 --quiet --n-boot 100)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$out"
run() {  # run NAME ARGS...: one nlgbias run into OUT/NAME, niced, its CPU time logged
  local name=$1; shift
  /usr/bin/time -a -o "$out/cpu.log" -f "$name %U %S %e" nice -n 10 $nb run "$@" "${common[@]}" --out "$out/$name"
}
# steering prefixes + Sheng templates over the 16 groups: both models, both decodings
run smollm2-default-sources $here/sources.yaml --model smollm2-135m --samples 1
run smollm2-hot-sources     $here/sources.yaml --model smollm2-135m --samples 2 "${hot[@]}"
run gemma-default-sources   $here/sources.yaml --model gemma3-270m --samples 1
run gemma-hot-sources       $here/sources.yaml --model gemma3-270m --samples 1 "${hot[@]}"
# HolisticBias noun phrases in Sheng's templates: SmolLM2 hot, Gemma default (Gemma's hot decoding,
# top-p without top-k over a 262k vocabulary, cost about five times its default per sample here)
run smollm2-hot-holistic    $here/holistic.yaml --model smollm2-135m --samples 1 "${hot[@]}"
run gemma-default-holistic  $here/holistic.yaml --model gemma3-270m --samples 1
# BOLD prompts that begin with a person's name
run smollm2-hot-bold        $here/bold-pool.yaml --model smollm2-135m --samples 1 "${hot[@]}"
# (not run this time: CPU budget, after Gemma's hot run took 9 CPU minutes)
# run gemma-default-bold      $here/bold-pool.yaml --model gemma3-270m --samples 1
# the BOLD validity set: SmolLM2 at the suite (default) decoding
run smollm2-default-validity $here/bold-validity.yaml --model smollm2-135m --samples 1
