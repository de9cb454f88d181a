#!/usr/bin/env bash
# The device call of issues 24, 33 and 44: the workflow on the GPU, then benchmarks/gpu_fidelity.py --plan all,
# sized to one 15-minute device session (the machine's start included; at most 600 s a command).
#
# Before the session, here (a machine that reaches PyPI), in the checkout the session sends:
#     python benchmarks/gpu_carry.py
# (BreastMNIST's files and CIFAR-10 packed as shared/data/cifar10.tar.xz, which travel in shared/; the wheels of
# snakemake and jsonschema in build/gpu_wheels/, carried by name; it prints the size against the 64 MiB limit).
# The device tool's call, from anywhere in the checkout:
#     run(command="bash benchmarks/gpu_call.sh", carry=["build/gpu_wheels"], timeout_s=600)
#
# In order, within BUDGET_S seconds of work from this script's start (default 540, at most 540):
#  1. the environment: date, nvidia-smi's line, commit, Python ($OUT/environment.txt);
#  2. the carried wheels installed into /tmp/con2_site (pip, no index; a few seconds), put on PYTHONPATH
#     after the checkout: snakemake for step 3, jsonschema so that records are validated. None carried: a line
#     says so, the smoke is skipped and records are written unvalidated (the GPU image lacks both);
#  3. the workflow smoke (benchmarks/gpu_workflow.py; SMOKE=0 skips it): the test profile through Snakemake
#     with device=cuda, at most SMOKE_S seconds (default 90; 70-79 s on 2 CPU cores), one `workflow_smoke` line
#     with the records' devices; once per machine (a later call on the same machine reuses its line);
#  4. gpu_fidelity.py --plan all with what is left of BUDGET_S: (a) content only (CON2 as printed is done: its
#     record is committed), (b) SimCLR + kNN, (e) CIFAR-10 at the paper's configuration, which runs TO THE
#     BUDGET (2048 epochs fit no call: it starts when its first curve point fits, even finish-only, and its
#     `paused` line says the epoch it reached), then (c) the 64 px pair and (d) packing (measured on an H100,
#     reused). Before anything trains it prints `gpu_prediction` lines for an H100 and an H200, each with a
#     `call_outline`: what this budget starts, in order, with the epoch part (e) is predicted to reach.
#
# The session (15 minutes of device time, start included; the first H100 start took ~30 s, 2-4 minutes is
# common): this call (<= 570 s), then, if more than ~2 minutes are left, a second call on the same warm machine
# (released after 30 s idle) with BUDGET_S = what is left less 60 s: it reuses the smoke's line, reads finished
# runs back and resumes a paused one (part (e) from its checkpoint, keeping its curve points).
# FINISH_ONLY=1 (default): no run other than part (e) starts unless it is predicted to finish (a paused run's
# checkpoint dies with the machine); FINISH_ONLY=0 lets the first unfinished run start to pause.
# A hard `timeout` stops gpu_fidelity.py 30 s past its budget (never under 120 s, never past 570 s in all);
# everything printed is already in $OUT and checkpoints are written atomically. Finished runs' records come back
# under $OUT/records_all/: commit them to benchmarks/measured/records_all/ and the lines to benchmarks/measured/.
#
# Environment:
#   OUT          where the lines go (set by the device tool); default results/gpu_call
#   BUDGET_S     seconds of work for this call, from its start (<= 540); a later call: what the session has left
#                less 60 s
#   FINISH_ONLY  1 (default) or 0 (see above)
#   SMOKE        1 (default): the workflow smoke first (once per machine); 0: not run
#   SMOKE_S      the smoke's time limit in seconds (default 90)
#   WHEELS       the carried wheels (default build/gpu_wheels)
#   SMOKE_STATE  the smoke's line, kept for a later call on the machine (default results/gpu_call/workflow_smoke.json)
#   SMOKE_WORK   the scratch copy of the workflow (default /tmp/con2_workflow_smoke)
#   SMOKE_ARGS   more arguments for gpu_workflow.py (the CPU rehearsal: --block kornia medmnist kaggle pulp)
# Further arguments go to gpu_fidelity.py (e.g. --tiny --data-dir ../shared/data for a CPU rehearsal;
# --gpu H100 to assume an H100's rates; --only "CIFAR-10 airplane, as printed" for a session given to part e).
set -u
SECONDS=0
cd "$(dirname "$0")/.."
ROOT_DIR="$(pwd)"
export OUT="${OUT:-results/gpu_call}"
BUDGET_S="${BUDGET_S:-540}"
FINISH_ONLY="${FINISH_ONLY:-1}"
SMOKE="${SMOKE:-1}"
SMOKE_S="${SMOKE_S:-90}"
WHEELS="${WHEELS:-build/gpu_wheels}"
SMOKE_STATE="${SMOKE_STATE:-results/gpu_call/workflow_smoke.json}"
SMOKE_WORK="${SMOKE_WORK:-/tmp/con2_workflow_smoke}"
read -r -a smoke_args <<<"${SMOKE_ARGS:-}"
SITE=/tmp/con2_site
PY="$(command -v python || command -v python3)"
mkdir -p "$OUT"
for pair in "BUDGET_S:$BUDGET_S" "SMOKE_S:$SMOKE_S"; do
  if ! [[ "${pair#*:}" =~ ^[0-9]+$ ]]; then
    echo "${pair%%:*} must be a whole number of seconds (got ${pair#*:})" >&2
    exit 2
  fi
done
if [ "$BUDGET_S" -gt 540 ]; then
  echo "BUDGET_S must be a whole number of seconds <= 540 (got $BUDGET_S)" >&2
  exit 2
fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nvidia-smi: $(timeout 10 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "python: $PY $("$PY" --version 2>&1)"
  echo "budget_s: $BUDGET_S finish_only: $FINISH_ONLY smoke: $SMOKE cpus: $(nproc)"
} | tee "$OUT/environment.txt"

# 2. the carried wheels (once per machine)
export PYTHONPATH="$ROOT_DIR${PYTHONPATH:+:$PYTHONPATH}"
shopt -s nullglob
wheels=("$WHEELS"/*.whl)
shopt -u nullglob
if [ "${#wheels[@]}" -gt 0 ]; then
  if [ ! -f "$SITE/.installed" ]; then
    t0=$SECONDS
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      "${wheels[@]}" >"$OUT/pip.log" 2>&1; then
      touch "$SITE/.installed"
      echo "wheels: ${#wheels[@]} from $WHEELS installed into $SITE in $((SECONDS - t0)) s" | tee -a "$OUT/environment.txt"
    else
      tail -n 5 "$OUT/pip.log"
      echo "wheels: pip could not install $WHEELS (its end above); going on without them" | tee -a "$OUT/environment.txt"
    fi
  else
    echo "wheels: installed in $SITE by an earlier call on this machine" | tee -a "$OUT/environment.txt"
  fi
  [ -f "$SITE/.installed" ] && export PYTHONPATH="$PYTHONPATH:$SITE"
  rm -f "$OUT/pip.log" 2>/dev/null  # $OUT brings back 8 files at most
else
  echo "wheels: none in $WHEELS (python benchmarks/gpu_carry.py, then carry it): the smoke runs only where snakemake" \
    "is installed (not on the GPU image), records are validated only where jsonschema is" | tee -a "$OUT/environment.txt"
fi

# 3. the workflow smoke (once per machine)
JSONL="$OUT/gpu_fidelity_all.jsonl"
if [ "$SMOKE" = 1 ]; then
  timeout -k 5 $((SMOKE_S + 60)) "$PY" benchmarks/gpu_workflow.py --device auto --timeout "$SMOKE_S" \
    --jsonl "$JSONL" --state "$SMOKE_STATE" --work "$SMOKE_WORK" "${smoke_args[@]}"
  echo "gpu_workflow.py exit code $? after ${SECONDS} s of the call (124/137: stopped by the hard timeout)" \
    | tee -a "$OUT/environment.txt"
else
  echo "workflow smoke: not run (SMOKE=$SMOKE)" | tee -a "$OUT/environment.txt"
fi

# 4. the plan, with what is left of the budget
PLAN_S=$((BUDGET_S - SECONDS))
[ "$PLAN_S" -lt 0 ] && PLAN_S=0
args=(--data-dir shared/data --plan all --budget-s "$PLAN_S")
if [ "$FINISH_ONLY" = 1 ]; then
  args+=(--finish-only)
fi
# the hard stop: 30 s past the plan's budget, but never under 120 s (start-up alone, importing torch on a
# loaded machine, can take half a minute); the call ends by BUDGET_S + 30 s (the smoke ends by 90 + 60 s)
HARD_S=$((PLAN_S + 30))
if [ "$HARD_S" -lt 120 ]; then
  HARD_S=120
fi
echo "plan: budget $PLAN_S s of $BUDGET_S (${SECONDS} s spent before it)" | tee -a "$OUT/environment.txt"
timeout -k 5 "$HARD_S" "$PY" benchmarks/gpu_fidelity.py "${args[@]}" "$@"
rc=$?
echo "gpu_fidelity.py exit code $rc (124/137: stopped by the hard timeout); the call took ${SECONDS} s" \
  | tee -a "$OUT/environment.txt"
exit "$rc"
