#!/usr/bin/env bash
# The device call of issues 24 and 33: benchmarks/gpu_fidelity.py --plan all on one GPU, sized to
# one 15-minute device session on the default machine (an H100; an H200 only on request).
#
# Run from anywhere (it changes to the repository root); the device tool's command is
#     bash benchmarks/gpu_call.sh
# with timeout_s 600. It prints the environment (date, nvidia-smi's line, commit), then runs the plan
# within BUDGET_S seconds of work (default 540, at most 540). Before anything runs it prints its
# prediction for an H100 and for an H200 (`gpu_prediction` lines: each part's seconds, part (a)
# packed and one after the other, the rates and the packing factor assumed: the H200's rates are
# measured, the H100's ASSUMED as 4.8 / 3.35 = 1.43x the H200's GPU seconds, the packing factor
# ASSUMED 1.0 until part (d) is measured; see benchmarks/gpu_predictions.py), detects the GPU and
# takes its rates for the start decisions.
#
# The session: the machine's start takes ~2-4 of its 15 minutes; then this call (540 s), finish-only
# by default (FINISH_ONLY=1: no run starts that would pause, since a paused run's checkpoint dies
# with the machine). Part (a), CON2 as printed and content only at 2048 epochs / 224 px, trains both
# AT ONCE as two processes on the GPU when the packed pair is predicted to fit. The first call, on an
# H100 (2026-11-27), ran CON2 as printed alone (predicted 373 s, took 364 s) and part d's packing
# measurement; their record and lines are committed in benchmarks/measured/ and reused, so the next
# call starts with content only (~373 s on an H100; on an H200 ~277 s, then SimCLR + kNN). Parts b, c, d
# run in priority order, each run started only when its predicted time fits what is left. If the
# session has time left after this call (15 min less the start, 540 s and the transfers: often
# 1-3 minutes), a second call on the same warm machine (released after 30 s idle) with BUDGET_S =
# what is left less 60 s reads finished runs back and starts only what will finish. FINISH_ONLY=0
# lets the first unfinished run start to pause (when it can make progress) for a later call on the
# same machine to resume.
# Inside the budget, an alarm 2 s before its end stops a run that outran the pause rule. A hard
# `timeout` of BUDGET_S + 30 s (at least 120 s) stops the script in any case before the 600 s command limit (the
# environment lines before it take at most 10 s; everything printed is already in $OUT and
# checkpoints are written atomically). Finished runs' records come back under $OUT/records_all/:
# commit them to benchmarks/measured/records_all/ and the lines to benchmarks/measured/.
#
# Environment:
#   OUT          where the lines go (set by the device tool); default results/gpu_call
#   BUDGET_S     seconds of work for this call (<= 540); give a later call what the session has left,
#                less 60 s (the start and the transfers)
#   FINISH_ONLY  1 (default): start only runs predicted to finish in this call (the session's last
#                call: a paused run's checkpoint does not outlive the machine); 0: the first unfinished
#                run may start to pause, for a later call on the same machine to resume
# Further arguments go to gpu_fidelity.py (e.g. --tiny --data-dir ../shared/data for a CPU rehearsal;
# --gpu H100 to assume an H100's rates; --packing-factor F; --no-pack).
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
export OUT="${OUT:-results/gpu_call}"
BUDGET_S="${BUDGET_S:-540}"
FINISH_ONLY="${FINISH_ONLY:-1}"
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
