#!/usr/bin/env bash
# examples/quickstart-gpu.yaml as it is and with num_iterations 2 (half the learning rate, twice
# the steps: the same generated tokens), seeds 0 and 1: four runs side by side on one GPU, then
# `grpo eval --limit 64` on each (on its last checkpoint when the run stopped). One line per run.
#
#   bash bench/quickstart_gpu.sh                  # on the GPU machine, after .gpu/remote-setup.sh (docs/gpu.md)
#   MODEL=smollm2-135m GRPO=grpo bash bench/quickstart_gpu.sh    # where grpo is installed
#
# env: MODEL (default /root/m/smollm2.gguf), PY (python3), GRPO (default $PY -m grpo_core), DIR (outputs/qg),
# EXTRA (more overrides for every run, e.g. a short dry run on a CPU), LIMIT (eval prompts, 64),
# ARMS ("bare iter2"; "bare" runs the config as it is only, seeds 0 and 1: two runs; "bf16" samples
# from a bf16 copy with the adapters merged, with TRL's correction: sampling.precision bf16;
# "loop" samples through grpo's decoding loop: model.decode_loop grpo).
#   ARMS="bare bf16" bash bench/quickstart_gpu.sh    # low-precision sampling against the config as it is
#   ARMS=bare EXTRA="--model.cudnn_attention true" bash bench/quickstart_gpu.sh   # do the stops come back?
# On an H200 (2026-11-26) the four runs took over 6 minutes together: plan for 7.
set -u
MODEL=${MODEL:-/root/m/smollm2.gguf}; PY=${PY:-python3}; GRPO=${GRPO:-$PY -m grpo_core}; DIR=${DIR:-outputs/qg}
LIMIT=${LIMIT:-64}; EXTRA=${EXTRA:-}; ARMS=${ARMS:-bare iter2}
export GRPO_MATH_WORKERS=${GRPO_MATH_WORKERS:-2}
mkdir -p "$DIR"
sed "s#^  id: smollm2-135m#  id: $(printf '%s' "$MODEL" | sed 's/[#&\\]/\\&/g')#" examples/quickstart-gpu.yaml \
  > "$DIR/config.yaml"
# convert a .gguf once, before four processes would each do it
$PY -c "from grpo_core.config.models import resolve; resolve('$MODEL')" 2>/dev/null || true

weights() {  # the finished run's folder, else its last checkpoint
  if [ -d "$1/adapter" ] || [ -d "$1/model" ]; then echo "$1"; return; fi
  ls -d "$1"/checkpoint-*/trainer_state.json 2>/dev/null | sed 's#/trainer_state.json$##' \
    | awk -F'checkpoint-' '{print $NF, $0}' | sort -n | tail -1 | cut -d' ' -f2-
}

one() {
  local tag=$1 seed=$2; shift 2
  local start=$SECONDS erc=- began
  began=$(date +%s.%N)
  rm -rf "${DIR:?}/$tag" "$DIR/$tag".*  # a reused DIR: nothing of an earlier run is evaluated or shown
  # shellcheck disable=SC2086
  $GRPO train "$DIR/config.yaml" --seed "$seed" --output_dir "$DIR/$tag" "$@" $EXTRA > "$DIR/$tag.train.log" 2>&1
  local rc=$? took=$((SECONDS - start)) base=--no-base w
  [ "$tag" = bare-0 ] && base=
  w=$(weights "$DIR/$tag")
  if [ -n "$w" ]; then
    $GRPO eval "$DIR/config.yaml" --checkpoint "$w" --limit "$LIMIT" $base --output "$DIR/$tag.eval.json" \
      > "$DIR/$tag.eval.log" 2>&1
    erc=$?
  fi
  echo "$tag rc=$rc train_s=$took weights=${w:-none} eval_rc=$erc began=$began" >> "$DIR/runs.txt"
}

rm -f "$DIR/runs.txt"
for arm in $ARMS; do
  case $arm in
    bare) one bare-0 0 & one bare-1 1 & ;;
    iter2) one iter2-0 0 --num_iterations 2 --max_steps 120 --learning_rate 1.5e-4 &
           one iter2-1 1 --num_iterations 2 --max_steps 120 --learning_rate 1.5e-4 & ;;
    bf16) one bf16-0 0 --sampling.precision bf16 & one bf16-1 1 --sampling.precision bf16 & ;;
    loop) one loop-0 0 --model.decode_loop grpo & one loop-1 1 --model.decode_loop grpo & ;;
    *) echo "ARMS: unknown arm '$arm' (bare, iter2, bf16, loop)" >&2; exit 2 ;;
  esac
done
wait
sort "$DIR/runs.txt"
for f in "$DIR"/*.eval.json; do
  [ -f "$f" ] || continue
  $PY - "$f" <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
b, t = d["base"], d["trained"]
print(f"{sys.argv[1].rsplit('/', 1)[-1][:-10]:9} held-out accuracy {t['accuracy']:.3f} (n {t['n']}, "
      f"{t['mean_tokens']:.1f} tokens, truncated {t['truncated']:.2f})"
      + (f"; base model {b['accuracy']:.3f}" if b and b.get("accuracy") is not None else "") + f"  [{d['checkpoint']}]")
EOPY
done
# the seconds from the start of `grpo train` (loading included) until held-out accuracy first reached
# TARGET (0.75) in the run's own evaluations (metrics.jsonl: eval/accuracy with the time it was logged)
$PY - "$DIR" "${TARGET:-0.75}" <<'EOPY'
import json, sys
from pathlib import Path
folder, target = Path(sys.argv[1]), float(sys.argv[2])
for line in sorted((folder / "runs.txt").read_text().splitlines()):
    tag = line.split()[0]
    began = float(line.rsplit("began=", 1)[1])
    evals = []
    for raw in (folder / tag / "metrics.jsonl").read_text().splitlines() if (folder / tag / "metrics.jsonl").exists() else []:
        row = json.loads(raw)
        if "eval/accuracy" in row and "time" in row:
            evals.append((row["time"] - began, row.get("step"), row["eval/accuracy"]))
    hit = next((e for e in evals if e[2] >= target), None)
    curve = " ".join(f"{s}:{a:.2f}@{t:.0f}s" for t, s, a in evals)
    print(f"{tag:9} seconds to {target}: {f'{hit[0]:.0f} (step {hit[1]})' if hit else 'not reached'};  held-out {curve}")
EOPY
grep -h "gradient norm is\|Training stopped" "$DIR"/*.train.log | cut -c1-300 || true
