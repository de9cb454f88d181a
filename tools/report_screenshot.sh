#!/usr/bin/env bash
# The HTML report's first screen as a PNG (docs/report_landing.png): builds the tiny test profile
# (workflow/config/test.yaml, a few CPU minutes) in a scratch copy of the workflow, makes its report
# and screenshots it with headless Chromium at 1400x900.
#
#   tools/report_screenshot.sh                          # -> docs/report_landing.png
#   tools/report_screenshot.sh OUT.png [WORKDIR]        # WORKDIR kept: a second call reuses its runs
#
# Needs Snakemake and con2 (the project's environment) and Chromium
# (Debian: apt-get install -y --no-install-recommends chromium; or set CHROMIUM=/path/to/chrome).
# The report is a JavaScript app: --virtual-time-budget gives it 10 s of page time to render.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/docs/report_landing.png}")"
WORKDIR="${2:-}"
CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
[[ -n "$CHROMIUM" ]] || { echo "no Chromium: apt-get install -y --no-install-recommends chromium (or set CHROMIUM)" >&2; exit 1; }

if [[ -z "$WORKDIR" ]]; then
    WORKDIR="$(mktemp -d)"
    trap 'rm -rf "$WORKDIR"' EXIT
fi
mkdir -p "$WORKDIR"
WORKDIR="$(realpath "$WORKDIR")"
# the workflow only, as the tests copy it: results/ and .snakemake/ never land in the checkout
cp "$ROOT/Snakefile" "$WORKDIR/"
for folder in workflow profiles; do
    rm -rf "${WORKDIR:?}/$folder"
    cp -r "$ROOT/$folder" "$WORKDIR/$folder"
done

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
cd "$WORKDIR"
snakemake --cores "${CORES:-2}" all --configfile workflow/config/test.yaml
snakemake --report results/report.html --configfile workflow/config/test.yaml

# --no-sandbox: Chromium refuses to start as root without it (a container); the page is our own file
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
    --virtual-time-budget=10000 --screenshot="$OUT" "file://$WORKDIR/results/report.html" 2>/dev/null
echo "wrote $OUT ($(du -k "$OUT" | cut -f1) KB) from $WORKDIR/results/report.html"
