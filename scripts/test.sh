#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, simulated links, fuzzing, nginx
# integration, fault server), plus the library's documentation (scripts/docs.sh: a broken DocC
# symbol link fails the run), a short soak (5 SIGKILLs of a 32 MiB download; the full one is
# scripts/soak.sh), aria2p's own test suite against the daemon (scripts/aria2p-suite.sh) and our
# fake Hugging Face Hub against huggingface_hub (Tests/Support/fake_hub_check.py). The
# documentation, the soak and aria2p's suite run only when no arguments are given.
# Usage: scripts/test.sh [extra `swift test` arguments, e.g. --filter ResumeTests]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_test_requirements

swift build
if [ $# -eq 0 ]; then
    # ~20 s: the symbol graph is read from the modules just built; set -e makes a DocC warning
    # fail the run here.
    bash scripts/docs.sh
    # A kill every ~6 MiB of a small file costs relatively more than the full soak's every ~5 MiB
    # of 256 MiB with most of its bytes between kills; 1.25x still catches a journal that lags.
    python3 Tests/Support/soak.py "$(swift build --show-bin-path)/rangefetch" --cycles 5 --size-mb 32 --seed 1 --max-ratio 1.25
fi
# Tests drive the built CLI too; run them one suite at a time on small machines. The log is kept
# so that a failure is printed again at the end, where a reader of only the last lines sees it.
test_log=$(mktemp /tmp/rangefetch-test.XXXXXX)
trap 'rm -f "$test_log"' EXIT
if ! swift test --no-parallel "$@" 2>&1 | tee "$test_log"; then
    echo "== the failed tests and their issues (the whole output is above) =="
    grep -a -A 6 -E '✘|Fatal error|^error: |: error: ' "$test_log" | head -n 200 || true
    exit 1
fi
if [ $# -eq 0 ]; then
    # A client we did not write: aria2p's own suite against `rangefetch aria2c` (~20 s).
    bash scripts/aria2p-suite.sh
    # Our fake Hugging Face Hub checked against huggingface_hub itself before the Hub tests'
    # results are trusted: its snapshot_download, errors, offline loading, signatures (~10 s).
    python3 Tests/Support/fake_hub_check.py
fi
