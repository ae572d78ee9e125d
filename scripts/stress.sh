#!/usr/bin/env bash
# Stress: many short downloads (success, error and Ctrl-C paths, single, stream and batch)
# against our fault server beside two busy loops, counting abnormal exits (a signal such as
# SIGABRT or SIGSEGV, or a status the CLI never uses). A crash at exit showed up as 1 run in
# ~1,000, so the default is 3,000 runs (about 4 minutes).
#   scripts/stress.sh                        3,000 runs of a release build made here
#   scripts/stress.sh --runs 500 --busy 0    any stress.py option
# Environment: RANGEFETCH (a built binary to use instead).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_base_packages
rf_release_binary
exec python3 Tests/Support/stress.py "$RANGEFETCH" "$@"
