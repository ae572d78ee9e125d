#!/usr/bin/env bash
# Soak: SIGKILL one download at many random moments against our fault server (rate-capped
# connections, some cut with a reset, every 5th trickling), resuming each time; checks that the
# final bytes are exact and the server sent at most 1.10x the file. Not part of scripts/test.sh's
# fast run (which does a short version: SOAK_CYCLES=5 SOAK_SIZE_MB=32).
#   scripts/soak.sh                               50 kills of a 256 MiB download (about a minute)
#   scripts/soak.sh --cycles 100 --seed 7         any soak.py option
# Environment: RANGEFETCH (a built binary; default: a release build made here).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_base_packages
rf_release_binary
exec python3 Tests/Support/soak.py "$RANGEFETCH" "$@"
