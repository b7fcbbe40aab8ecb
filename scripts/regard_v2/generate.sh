#!/usr/bin/env bash
# Generate the regard v2 annotation pool: 2 embedded models x 2 decodings x 2 prompt families.
# Usage: bash scripts/regard_v2/generate.sh [OUT]   (default runs/regard-v2); resumable.
set -euo pipefail
out=${1:-runs/regard-v2}
nb=${NLGBIAS:-.venv/bin/nlgbias}
src=scripts/regard_v2/sources.yaml
hot=(--temperature 1.0 --top-p 0.95 --top-k 0)
common=(--seed 2 --dtype bfloat16 --quiet --n-boot 200)
$nb run $src --model smollm2-135m --samples 4 "${common[@]}" --out $out/smollm2-default-sources
$nb run $src --model smollm2-135m --samples 4 "${hot[@]}" "${common[@]}" --out $out/smollm2-hot-sources
$nb run sheng2019-intersectional --model smollm2-135m --samples 6 "${hot[@]}" "${common[@]}" --scorer regard --scorer vader --out $out/smollm2-hot-sheng
$nb run $src --model gemma3-270m --samples 3 "${common[@]}" --out $out/gemma-default-sources
$nb run $src --model gemma3-270m --samples 3 "${hot[@]}" "${common[@]}" --out $out/gemma-hot-sources
$nb run sheng2019-intersectional --model gemma3-270m --samples 4 "${hot[@]}" "${common[@]}" --scorer regard --scorer vader --out $out/gemma-hot-sheng
