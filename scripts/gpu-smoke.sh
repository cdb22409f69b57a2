#!/usr/bin/env bash
# The executors on a CUDA machine, in one go (aim: under 8 minutes on one GPU).
#
# Needs the project installed with its train extra (from wheels or `pip install -e .[train]`)
# and vLLM in an environment of its own (RECURSOR_VLLM_PYTHON, or scripts/vllm-env.sh with
# RECURSOR_VLLM_PACKAGE set to a CUDA vllm), plus `trl` for `trl vllm-serve`. It runs:
#   1. a tiny SFT job (bf16 on the GPU);
#   2. a short GRPO job whose generations come from TRL's vLLM server mode;
#   3. a vLLM serve job for the SFT checkpoint and an eval job against it;
# and prints each job's record line. Exit status: non-zero at the first job that fails.
set -euo pipefail
PY="${PY:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/recursor-gpu-smoke-XXXX")"
here="$(cd "$(dirname "$0")/.." && pwd)"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"   # for tests.helpers.rewards
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print('GPU:', torch.cuda.get_device_name(0))"

for c in red green blue black white; do
  for s in circle square star line; do echo "{\"text\": \"the $c $s is $c .\"}"; done
done > "$work/sft.jsonl"
for c in red green blue black white; do echo "{\"prompt\": \"say a colour like $c\"}"; done \
  > "$work/prompts.jsonl"

cat > "$work/sft.yaml" <<YAML
kind: sft
model: tiny-gpt2
data: $work/sft.jsonl
config: {max_steps: 200, per_device_train_batch_size: 32}
YAML
echo "== SFT"
"$PY" -m recursor.cli job run "$work/sft.yaml" --dir "$work/jobs" --json > "$work/sft.json"
checkpoint="$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['artifacts']['checkpoint'])" "$work/sft.json")"
"$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['status'], r['metrics'])" "$work/sft.json"

echo "== GRPO with vLLM generation (TRL server mode)"
port=8123
trl vllm-serve --model "$checkpoint" --port "$port" > "$work/trl-vllm.log" 2>&1 &
trl_pid=$!
trap 'kill $trl_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$port/health/" >/dev/null 2>&1 && break; sleep 2
done
cat > "$work/grpo.yaml" <<YAML
kind: grpo
model: $checkpoint
data: $work/prompts.jsonl
reward: tests.helpers.rewards:say_blue
config: {max_steps: 30, use_vllm: true, vllm_mode: server, vllm_server_base_url: "http://127.0.0.1:$port"}
YAML
"$PY" -m recursor.cli job run "$work/grpo.yaml" --dir "$work/jobs"
kill $trl_pid 2>/dev/null || true

echo "== vLLM serve + eval"
"$PY" - "$checkpoint" "$work" <<'PYEOF'
import sys
from pathlib import Path
from recursor.executors.local import LocalExecutor
from recursor.executors.serving import server_info
from recursor.executors.spec import JobSpec

checkpoint, work = sys.argv[1], Path(sys.argv[2])
executor = LocalExecutor(work / "jobs")
serve = executor.submit(JobSpec(kind="serve", model=checkpoint, wall_time_s=600,
                                config={"backend": "vllm"}))
try:
    info = server_info(serve.directory)
    print("serving at", info["url"], f"(started in {info['startup_s']:.1f} s)")
    record = executor.wait(executor.submit(JobSpec(
        kind="eval", model=checkpoint, data=str(work / "prompts.jsonl"),
        reward="tests.helpers.rewards:say_blue",
        config={"server": info["url"], "num_samples": 8, "temperature": 1.0})))
    print(record.status.value, record.metrics)
    sys.exit(0 if record.status.value == "done" else 1)
finally:
    executor.cancel(serve)
PYEOF
echo "all GPU smoke jobs passed ($work)"
