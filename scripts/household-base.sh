#!/usr/bin/env bash
# Makes the household base shipped in models/household, step by step, as its MANIFEST.md lists
# the steps: the policy fitted on the searching expert's demonstrations with one DAgger round,
# then DAgger rounds two at a time (each continuing the one before, the later ones with half of
# each batch labels), the judge learnt from the first policy's own episodes and kept.
#
#   scripts/household-base.sh [OUT]     # default runs/household-base; the base in OUT/final
#
# About 4 hours on 2 cores (eleven DAgger rounds in all). Each step resumes after a kill (run the script again); a finished
# step is kept. RLANYTHING names the program (default: rlanything on the PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/household-base}
bin=${RLANYTHING:-rlanything}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# step NAME FROM SEED SHARE: two DAgger rounds from FROM's policy (the judge kept)
step() {
  local name=$1 from=$2 seed=$3 share=$4
  [ -f "$out/$name/MANIFEST.md" ] && return
  "$bin" pretrain --config configs/household-base.toml --out "$out/$name" \
    --set policy.path="$out/$from/policy" --set reward.path="$out/1-base/reward" \
    --set pretrain.dagger_rounds=2 --set pretrain.dagger_label_share="$share" --seed "$seed"
}

[ -f "$out/1-base/MANIFEST.md" ] ||
  "$bin" pretrain --config configs/household-base.toml --out "$out/1-base"
step 2-dagger 1-base 1 0.3
step 3-dagger 2-dagger 2 0.5
step 4-dagger 3-dagger 3 0.5
step 5-dagger 4-dagger 4 0.5
step 6-dagger 5-dagger 5 0.5
rm -rf "$out/final"
cp -r "$out/6-dagger" "$out/final"
echo "the household base: $out/final (its MANIFEST.md lists the steps)"
