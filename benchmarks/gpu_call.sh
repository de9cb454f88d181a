#!/usr/bin/env bash
# The device call of issues 24, 33, 44 and 56: the workflow on the GPU, the CIFAR-10 length study through the
# workflow (issue 56), then benchmarks/gpu_fidelity.py --plan all with what is left, sized to one 15-minute
# device session (the machine's start included; at most 600 s a command).
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
#     after the checkout: snakemake for steps 3 and 4, jsonschema so that records are validated. None carried: a
#     line says so, the smoke and the length study are skipped and records are written unvalidated (the GPU image
#     lacks both);
#  3. the workflow smoke (benchmarks/gpu_workflow.py; SMOKE=0 skips it): the test profile through Snakemake
#     with device=cuda, at most SMOKE_S seconds (default 90; 70-79 s on 2 CPU cores), one `workflow_smoke` line
#     with the records' devices; once per machine (a later call on the same machine reuses its line);
#  4. the CIFAR-10 length study (issue 56; benchmarks/gpu_length_study.py; LENGTH=0 skips it): `snakemake
#     studies` with workflow/config/cifar10.yaml on the GPU, the 14 runs of `length_cifar10` (128 epochs, seed 0,
#     airplane and automobile) 4 at a time on the one GPU (`--resources gpu=4`, 2 threads each), its tables and
#     figure; finished runs committed under benchmarks/measured/length_study/ are kept, not trained again. It
#     gets what is left of BUDGET_S less LENGTH_RESERVE_S (default 40: step 5's predictions), at most LENGTH_S
#     seconds when set, and is skipped with a line under 120 s. At its budget Snakemake is stopped
#     (SIGTERM: every run keeps its checkpoint, written every 30 s); the same call again on the same machine
#     resumes. Its lines go to the call's jsonl; every finished run's small files, the tables and the figure
#     come back packed in $OUT/length_study.tar.gz (unpack it into benchmarks/measured/length_study/ and commit).
#     Predicted (assumed rates, not measured: benchmarks/README.md) at 8-25 minutes of GPU time for the 14 runs,
#     more than one call: a first call gives it ~400 s, a second on the warm machine ~250 s;
#  5. gpu_fidelity.py --plan all with what is left of BUDGET_S (after step 4, usually only its predictions):
#     (a) content only (CON2 as printed is done: its record is committed), (b) SimCLR + kNN, (e) CIFAR-10 at
#     the paper's configuration, which runs TO THE BUDGET (2048 epochs fit no call: it starts when its first
#     curve point fits, even finish-only, and its `paused` line says the epoch it reached), then (c) the 64 px
#     pair and (d) packing (measured on an H100, reused). Before anything trains it prints `gpu_prediction`
#     lines for an H100 and an H200, each with a `call_outline`: what this budget starts, in order, with the
#     epoch part (e) is predicted to reach. LENGTH=0 gives it the whole budget, as before issue 56.
#
# The session (15 minutes of device time, start included; the first H100 start took ~30 s, 2-4 minutes is
# common): this call (<= 575 s), then, if more than ~2 minutes are left, a second call on the same warm machine
# (released after 30 s idle) with BUDGET_S = what is left less 60 s: it reuses the smoke's line, resumes the
# length study (its finished runs kept, its unfinished ones from their checkpoints), reads finished runs back
# and resumes a paused one (part (e) from its checkpoint, keeping its curve points).
# FINISH_ONLY=1 (default): no gpu_fidelity.py run other than part (e) starts unless it is predicted to finish (a
# paused run's checkpoint dies with the machine); FINISH_ONLY=0 lets the first unfinished run start to pause.
# A hard `timeout` stops gpu_fidelity.py 30 s past its budget (never under 120 s, never past 575 s of the call), and
# the length study 60 s past its own (it stops Snakemake itself 40 s before its budget ends);
# everything printed is already in $OUT and checkpoints are written atomically. Finished runs' records come back
# under $OUT/records_all/: commit them to benchmarks/measured/records_all/ and the lines to benchmarks/measured/.
# $OUT brings back 8 files at most, no more than 2 folders down: the length study's files travel as one archive.
#
# Environment:
#   OUT          where the lines go (set by the device tool); default results/gpu_call
#   BUDGET_S     seconds of work for this call, from its start (<= 540); a later call: what the session has left
#                less 60 s
#   FINISH_ONLY  1 (default) or 0 (see above)
#   SMOKE        1 (default): the workflow smoke first (once per machine); 0: not run
#   SMOKE_S      the smoke's time limit in seconds (default 90)
#   LENGTH       1 (default): the CIFAR-10 length study after the smoke; 0: not run
#   LENGTH_S     at most this many seconds for the length study (default: all that is left less LENGTH_RESERVE_S)
#   LENGTH_RESERVE_S  seconds of BUDGET_S kept for step 5 (default 40)
#   LENGTH_WORK  the length study's scratch copy of the workflow, kept between calls (default /tmp/con2_length_study)
#   LENGTH_ARGS  more arguments for gpu_length_study.py (the CPU rehearsal: --tiny --device cpu --cores 2
#                --slots 1 --threads 1 --data-dir DIR --block kornia medmnist kaggle pulp)
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
LENGTH="${LENGTH:-1}"
LENGTH_S="${LENGTH_S:-}"
LENGTH_RESERVE_S="${LENGTH_RESERVE_S:-40}"
LENGTH_WORK="${LENGTH_WORK:-/tmp/con2_length_study}"
read -r -a length_args <<<"${LENGTH_ARGS:-}"
SITE=/tmp/con2_site
PY="$(command -v python || command -v python3)"
mkdir -p "$OUT"
for pair in "BUDGET_S:$BUDGET_S" "SMOKE_S:$SMOKE_S" "LENGTH_RESERVE_S:$LENGTH_RESERVE_S" "LENGTH_S:${LENGTH_S:-0}"; do
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
  echo "budget_s: $BUDGET_S finish_only: $FINISH_ONLY smoke: $SMOKE length: $LENGTH${LENGTH_S:+ (at most $LENGTH_S s)} cpus: $(nproc)"
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

# 4. the CIFAR-10 length study (issue 56), with what is left less the plan's reserve
if [ "$LENGTH" = 1 ]; then
  LENGTH_T=$((BUDGET_S - SECONDS - LENGTH_RESERVE_S))
  if [ -n "$LENGTH_S" ] && [ "$LENGTH_S" -lt "$LENGTH_T" ]; then
    LENGTH_T=$LENGTH_S
  fi
  [ "$LENGTH_T" -lt 0 ] && LENGTH_T=0
  if [ "$LENGTH_T" -lt 120 ]; then
    line="{\"event\": \"length_skipped\", \"budget_s\": $LENGTH_T, \"reason\": \"under the 120 s the part needs to start\"}"
    echo "$line"
    echo "$line" >>"$JSONL"
    echo "length study: skipped, $LENGTH_T s left for it (under 120 s)" | tee -a "$OUT/environment.txt"
  else
    echo "length study: budget $LENGTH_T s (${SECONDS} s spent before it)" | tee -a "$OUT/environment.txt"
    # its own stop: Snakemake SIGTERMed 40 s before LENGTH_T; the hard stop 60 s past it (SIGTERM: it stops
    # Snakemake as at its budget), then SIGKILL 10 s later
    timeout -k 10 $((LENGTH_T + 60)) "$PY" benchmarks/gpu_length_study.py --data-dir shared/data \
      --budget-s "$LENGTH_T" --work "$LENGTH_WORK" --jsonl "$JSONL" --archive "$OUT/length_study.tar.gz" \
      "${length_args[@]}"
    echo "gpu_length_study.py exit code $? after ${SECONDS} s of the call (124/137: stopped by the hard timeout)" \
      | tee -a "$OUT/environment.txt"
  fi
else
  echo "length study: not run (LENGTH=$LENGTH)" | tee -a "$OUT/environment.txt"
fi

# 5. the plan, with what is left of the budget
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
# ... and never past 575 s of the call (the device's limit is 600 s): after the length study only the
# predictions are left to print, 15-30 s
if [ $((SECONDS + HARD_S)) -gt 575 ]; then
  HARD_S=$((575 - SECONDS))
  [ "$HARD_S" -lt 30 ] && HARD_S=30
fi
echo "plan: budget $PLAN_S s of $BUDGET_S (${SECONDS} s spent before it)" | tee -a "$OUT/environment.txt"
timeout -k 5 "$HARD_S" "$PY" benchmarks/gpu_fidelity.py "${args[@]}" "$@"
rc=$?
echo "gpu_fidelity.py exit code $rc (124/137: stopped by the hard timeout); the call took ${SECONDS} s" \
  | tee -a "$OUT/environment.txt"
exit "$rc"
