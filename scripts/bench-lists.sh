#!/usr/bin/env bash
# Lists of millions (issue 26) alone: bench.sh's `lists` section, the time from start to the first
# request and the peak RSS for generated -i lists, with --shard 1/100000 and without; the batch of
# 4 KiB files against aria2c only when BENCH_LIST_FILES is set. Results go to
# /var/tmp/rangefetch-bench-lists (BENCH_RESULTS_DIR), not to Benchmarks/results.
#   scripts/bench-lists.sh                             1 M and 10 M lines, one run each
#   RANGEFETCH=path/to/rangefetch BENCH_LIST_LINES="1000000" BENCH_RUNS=3 scripts/bench-lists.sh
set -euo pipefail
export BENCH_ONLY=lists BENCH_SIZE_MB=${BENCH_SIZE_MB:-1} BENCH_LIST_FILES=${BENCH_LIST_FILES:-0} \
    BENCH_RUNS=${BENCH_RUNS:-1} BENCH_RESULTS_DIR=${BENCH_RESULTS_DIR:-/var/tmp/rangefetch-bench-lists}
exec "$(dirname "$0")/bench.sh"
