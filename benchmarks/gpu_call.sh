#!/usr/bin/env bash
# The one device call of issue 24 (point 4): benchmarks/gpu_fidelity.py --plan all on one GPU.
#
# Run from anywhere (it changes to the repository root); the device tool's command is
#     bash benchmarks/gpu_call.sh
# with timeout_s 600. It prints the environment (date, nvidia-smi's line, commit), then runs the plan
# within BUDGET_S seconds of work (default 540, at most 540): parts a, b, c, d in priority order, each
# run started only when its predicted time fits what is left (or, for the first unfinished run, when it
# can make progress and pause), paused at a checkpoint before the budget ends. A second identical
# call on the same (warm) machine resumes: finished runs are read back, the paused one continues.
# Inside the budget, an alarm 2 s before its end stops a run that outran the pause rule. A hard
# `timeout` of BUDGET_S + 30 s (at least 120 s) stops the script in any case before the 600 s command limit (the
# environment lines before it take at most 10 s; everything printed is already in $OUT and
# checkpoints are written atomically).
#
# Environment:
#   OUT          where the lines go (set by the device tool); default results/gpu_call
#   BUDGET_S     seconds of work for this call (<= 540); give a later call what the session has left,
#                less 60 s (the start and the transfers)
#   FINISH_ONLY  1: start only runs predicted to finish in this call (the session's last call: a
#                paused run's checkpoint does not outlive the machine)
# Further arguments go to gpu_fidelity.py (e.g. --tiny --data-dir ../shared/data for a CPU rehearsal).
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
export OUT="${OUT:-results/gpu_call}"
BUDGET_S="${BUDGET_S:-540}"
FINISH_ONLY="${FINISH_ONLY:-0}"
PY="$(command -v python || command -v python3)"
mkdir -p "$OUT"
if ! [[ "$BUDGET_S" =~ ^[0-9]+$ ]] || [ "$BUDGET_S" -gt 540 ]; then
  echo "BUDGET_S must be a whole number of seconds <= 540 (got $BUDGET_S)" >&2
  exit 2
fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nvidia-smi: $(timeout 10 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "python: $PY $("$PY" --version 2>&1)"
  echo "budget_s: $BUDGET_S finish_only: $FINISH_ONLY cpus: $(nproc)"
} | tee "$OUT/environment.txt"
args=(--data-dir shared/data --plan all --budget-s "$BUDGET_S")
if [ "$FINISH_ONLY" = 1 ]; then
  args+=(--finish-only)
fi
# the hard stop: 30 s past the budget, but never under 120 s (start-up alone, importing torch on a
# loaded machine, can take half a minute) and never past 570 s (BUDGET_S <= 540)
HARD_S=$((BUDGET_S + 30))
if [ "$HARD_S" -lt 120 ]; then
  HARD_S=120
fi
timeout -k 5 "$HARD_S" "$PY" benchmarks/gpu_fidelity.py "${args[@]}" "$@"
rc=$?
echo "gpu_fidelity.py exit code $rc (124/137: stopped by the hard timeout)" | tee -a "$OUT/environment.txt"
exit "$rc"
