#!/usr/bin/env bash
# Generate unannotated text for distillation (the teacher labels it, the student learns from it):
# the regard v3 steering prefixes and templates at a new seed (11), 4 samples per prompt, two
# model-decodings (SmolLM2 at its default decoding is already most of the pool: the README's main job). Usage: bash scripts/regard_v3/generate_distill.sh [OUT]  (default
# build/regard-v3/distill-runs); resumable; CPU time of each run appended to OUT/cpu.log.
# ROUND=3 runs only the third round (the pool past 30,000 sentences: every regard suite, both
# decodings, the BOLD and HolisticBias families, seed 12).
set -euo pipefail
out=${1:-build/regard-v3/distill-runs}
nb=${NLGBIAS:-.venv/bin/nlgbias}
here=scripts/regard_v3
hot=(--temperature 1.0 --top-p 0.95 --top-k 0)
common=(--seed 11 --dtype bfloat16 --quiet --n-boot 100 --samples 4)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$out"
round3() {  # the third round: new suites and decodings at seed 12, 2-100 samples per prompt (run 2 at a time here;
            # Gemma at temperature 1.0 took 3 CPU-s a sample here, too slow for this round)
  common=(--seed 12 --dtype bfloat16 --quiet --n-boot 100)
  run smollm2-hot-sheng        sheng2019 --model smollm2-135m "${hot[@]}" --samples 100
  run smollm2-default-holistic holisticbias-regard --model smollm2-135m --samples 2
  run smollm2-default-bold     bold --model smollm2-135m --prompts-per-group 40 --samples 2
  run smollm2-hot-holistic     holisticbias-regard --model smollm2-135m "${hot[@]}" --samples 1
}
run() {  # run NAME ARGS...: one nlgbias run into OUT/NAME, niced, its CPU time logged
  local name=$1; shift
  /usr/bin/time -a -o "$out/cpu.log" -f "$name %U %S %e" nice -n 10 $nb run "$@" "${common[@]}" --out "$out/$name"
}
if [[ ${ROUND:-} == 3 ]]; then round3; exit 0; fi
run gemma-default-sources   $here/sources.yaml --model gemma3-270m
run smollm2-hot-sources     $here/sources.yaml --model smollm2-135m "${hot[@]}"
# a second round (after the first student): Gemma on the Sheng templates at the suite's decoding
common=(--seed 11 --dtype bfloat16 --quiet --n-boot 100 --samples 50)
run gemma-default-sheng     sheng2019 --model gemma3-270m
