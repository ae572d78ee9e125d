#!/usr/bin/env bash
# Benchmark: rangefetch against curl, aria2c and axel on a local nginx, unthrottled and behind a
# per-connection rate cap, plus the journal's and the checksum's cost and hashing throughput.
#   scripts/bench.sh                       everything, 1 GiB file, 3 runs
#   BENCH_SIZE_MB=256 BENCH_RUNS=5 BENCH_ONLY=unthrottled scripts/bench.sh
# Environment: BENCH_SIZE_MB (1024), BENCH_RUNS (3), BENCH_RUNS_SLOW (1, single streams through
# the cap), BENCH_RATE_MIB (25, per connection), BENCH_ONLY (all|unthrottled|capped|journal|
# checksum|hash), BENCH_TOOLS, RF_FLAGS (extra rangefetch flags), RANGEFETCH (skip the build).
# Results: printed, and written to Benchmarks/results/latest.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
source scripts/lib/nginx.sh
rf_base_packages
rf_need_packages aria2 axel time gcc openssl
rf_require_swift

if [ -z "${RANGEFETCH:-}" ]; then
    swift build -c release --product rangefetch >&2
    RANGEFETCH="$(swift build -c release --show-bin-path)/rangefetch"
fi
export RANGEFETCH

work=$(mktemp -d /tmp/rangefetch-bench.XXXXXX)
chmod 755 "$work"
relay_pid=""
cleanup() {
    [ -n "$relay_pid" ] && kill "$relay_pid" 2>/dev/null || true
    rf_nginx_stop "$work/nginx"
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www" "$work/nginx" "$work/out"

gcc -O2 -pthread -o "$work/rf-relay" Benchmarks/relay/rf-relay.c
size_mb=${BENCH_SIZE_MB:-1024}
echo "bench: generating ${size_mb} MiB of random data" >&2
head -c "$((size_mb << 20))" /dev/urandom >"$work/www/file.bin"
chmod 644 "$work/www/file.bin"

port=$(rf_free_port)
rf_nginx_start "$work/nginx" "$port" "$work/www"
relay_port=$(rf_free_port)
rate_mib=${BENCH_RATE_MIB:-25}
"$work/rf-relay" "$relay_port" "$port" "$((rate_mib << 20))" &
relay_pid=$!
sleep 0.2

mkdir -p Benchmarks/results
DIRECT_URL="http://127.0.0.1:$port/file.bin" \
CAPPED_URL="http://127.0.0.1:$relay_port/file.bin" \
SOURCE="$work/www/file.bin" WORK="$work" BENCH_RATE_MIB="$rate_mib" \
RESULTS="Benchmarks/results/latest.md" \
    python3 Benchmarks/bench.py
