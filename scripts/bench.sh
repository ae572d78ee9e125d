#!/usr/bin/env bash
# Benchmark: rangefetch (-n 16 and -n auto) against curl, aria2c and axel, side by side in one run,
# in three scenarios: unthrottled loopback, a per-connection rate cap, and a lossy WAN (400 Mbit/s,
# 20 ms round trip, 0.1% loss, emulated in network namespaces of our own), each over plain HTTP,
# HTTPS with HTTP/1.1 only, and HTTPS with HTTP/2 offered (nginx, a self-signed certificate that
# every tool is given as its CA; axel has no CA option and runs with -k). Then the journal's and
# the checksum's cost and hashing throughput; lists of millions (time to the first request, peak
# RSS, 4 KiB files against aria2c) and -n auto against fixed counts at several per-connection caps.
# Needs root (namespaces, packages).
#   scripts/bench.sh                                   everything: 1 GiB (WAN 256 MiB), 3 runs
#   BENCH_SIZE_MB=64 BENCH_RUNS=1 BENCH_ONLY=wan RANGEFETCH=.build/release/rangefetch scripts/bench.sh
#
# Environment:
#   BENCH_SIZE_MB (1024)       file size of the unthrottled and capped scenarios, MiB
#   BENCH_WAN_SIZE_MB          file size of the WAN scenario, MiB (256, or BENCH_SIZE_MB if smaller)
#   BENCH_RUNS (3)             runs per command, alternating between commands
#   BENCH_RUNS_SLOW            runs of single-connection tools (curl) when capped or on the WAN,
#                              tens of seconds each (default BENCH_RUNS)
#   BENCH_ONLY (all)           comma list: unthrottled,capped,wan (plain HTTP), their HTTPS twins
#                              unthrottled-https,unthrottled-h2,capped-https,capped-h2,wan-https,wan-h2
#                              (or https for all six), many,batchcapped,mirrors,stream,journal,checksum,hash,
#                              fleet,lists,caps,daemon
#   BENCH_DAEMON_ACTIVE ("8 100"), BENCH_DAEMON_WAITING (200), BENCH_DAEMON_RUNS (3),
#   BENCH_DAEMON_WINDOW_S (15), BENCH_DAEMON_GAP_MS (10)   daemon section: RPC latency of
#                              `rangefetch daemon` against aria2c --enable-rpc under load
#                              (Benchmarks/daemon_rpc.py); 8 active get the BENCH_SIZE_MB file, more
#                              the WAN-sized one (256 MiB), so that preallocated files fit the disk
#   BENCH_RESULTS_DIR          where latest.md/json/png go (Benchmarks/results)
#   BENCH_MANY_FILES (20000), BENCH_MANY_KIB (4)   files and their size in the many-files section
#   BENCH_LIST_LINES           lists section: lengths of the generated lists timed to their first
#                              request ("1000000 10000000")
#   BENCH_LIST_FILES (100000)  lists section: files of 4 KiB in the batch against aria2c (0: none;
#                              aria2c takes ~100 small files a second: ~15 min a run for 100,000)
#   BENCH_CAPS_RATES ("12 6")  caps section: per-connection caps besides BENCH_RATE_MIB, MiB/s
#   BENCH_FLEET_CLIENTS (4)    rangefetch processes at once in the fleet section (each writes a
#                              copy of the BENCH_SIZE_MB file)
#   BENCH_TOOLS                subset of "curl aria2c axel rangefetch"
#   BENCH_RATE_MIB (25)        the capped scenario's limit per TCP connection, MiB/s
#   BENCH_WAN_RATE_MBIT (400), BENCH_WAN_DELAY_MS (20, round trip), BENCH_WAN_LOSS_PCT (0.1),
#   BENCH_WAN_QUEUE_MS (50), BENCH_WAN_CC (cubic), BENCH_WAN_SEED (1): see Benchmarks/wanem/wan.sh
#   BENCH_WORK_DIR             where the files and downloads go; must not be tmpfs
#                              (default /var/tmp, or /tmp if that is on disk and /var/tmp is not)
#   BENCH_TIMEOUT_S (900)      one download's time limit
#   RF_FLAGS                   extra rangefetch flags; RANGEFETCH: use this binary, skip the build
# Results: printed, and written to Benchmarks/results/latest.{md,json,png}; the daemon section's
# to Benchmarks/results/daemon.{md,json} (BENCH_ONLY=daemon alone leaves latest.* untouched).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
source scripts/lib/nginx.sh
source Benchmarks/wanem/wan.sh

# Every system package the benchmark uses (rf_need_packages runs one apt-get at a time):
# the tools compared, /usr/bin/time, a C compiler and headers for the relay and the WAN line,
# iproute2 for the namespaces, python3-venv for the chart's matplotlib.
rf_base_packages
rf_need_packages aria2 axel time gcc libc6-dev iproute2 python3-venv util-linux diffutils

if [ -z "${RANGEFETCH:-}" ]; then
    rf_require_swift
    swift build -c release --product rangefetch >&2
    RANGEFETCH="$(swift build -c release --show-bin-path)/rangefetch"
fi
RANGEFETCH=$(realpath "$RANGEFETCH")
export RANGEFETCH

# The chart needs matplotlib, from PyPI into a venv of our own (ignored by git). Done before the
# measurements, so a failure costs seconds, not a finished benchmark.
venv=Benchmarks/.venv
# Sections other than daemon go to bench.py (latest.* and the chart); with none, it does not run.
others=$(echo ",${BENCH_ONLY:-all}," | sed -e 's/,daemon,/,/g' -e 's/^,*//' -e 's/,*$//')
if [ -n "$others" ] && ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    echo "bench: installing matplotlib into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q matplotlib
fi

# rf_disk_dir: the first candidate directory that is on a disk, not in memory. Downloads must hit
# a real file system: on tmpfs a tool that writes through the page cache looks free, and
# rangefetch's fdatasync costs nothing, which is not what a user's disk does.
rf_disk_dir() {
    local candidate fstype
    for candidate in ${BENCH_WORK_DIR:-} /var/tmp /tmp; do
        [ -d "$candidate" ] || continue
        fstype=$(findmnt -n -o FSTYPE -T "$candidate")
        case "$fstype" in
            tmpfs | ramfs | "") echo "bench: $candidate is on ${fstype:-nothing}, not a disk" >&2 ;;
            *) echo "$candidate"; return 0 ;;
        esac
    done
    echo "bench: no on-disk directory for the downloads; set BENCH_WORK_DIR" >&2
    return 1
}

wants() { [[ ",${BENCH_ONLY:-all}," == *",all,"* || ",${BENCH_ONLY:-all}," == *",$1,"* ]]; }

base=$(rf_disk_dir)
work=$(mktemp -d "$base/rangefetch-bench.XXXXXX")
chmod 755 "$work"
relay_pids=()
bench_pid=""
cleanup() {
    if [ -n "$bench_pid" ]; then # stop the measurement (and the tool it runs) first
        kill -TERM "$bench_pid" 2>/dev/null || true
        wait "$bench_pid" 2>/dev/null || true
    fi
    [ "${#relay_pids[@]}" -gt 0 ] && kill "${relay_pids[@]}" 2>/dev/null || true
    rf_nginx_stop "$work/nginx-wan"
    rf_wan_down "$work/wan"
    rf_nginx_stop "$work/nginx-cache"
    rf_nginx_stop "$work/nginx"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM # so that cleanup runs on Ctrl-C and kill too
mkdir -p "$work/www" "$work/nginx" "$work/out"

gcc -O2 -Wall -pthread -o "$work/rf-relay" Benchmarks/relay/rf-relay.c
gcc -O2 -Wall -o "$work/rf-wanem" Benchmarks/wanem/rf-wanem.c

results=${BENCH_RESULTS_DIR:-Benchmarks/results}
size_mb=${BENCH_SIZE_MB:-1024}
wan_mb=${BENCH_WAN_SIZE_MB:-$((size_mb < 256 ? size_mb : 256))}
echo "bench: generating ${size_mb} MiB of random data (WAN: the first ${wan_mb} MiB)" >&2
head -c "$((size_mb << 20))" /dev/urandom >"$work/www/file.bin"
head -c "$((wan_mb << 20))" "$work/www/file.bin" >"$work/www/wan.bin"
chmod 644 "$work/www/file.bin" "$work/www/wan.bin"
many_files=${BENCH_MANY_FILES:-20000}
many_kib=${BENCH_MANY_KIB:-4}
batch_files=8
batch_mb=$((size_mb < 128 ? size_mb : 128))
if wants many; then
    echo "bench: generating ${many_files} files of ${many_kib} KiB" >&2
    mkdir -p "$work/www/many"
    python3 -c 'import os,sys; [open(f"{sys.argv[1]}/f{i:05d}.bin","wb").write(os.urandom(int(sys.argv[3]) << 10)) for i in range(int(sys.argv[2]))]' \
        "$work/www/many" "$many_files" "$many_kib"
    chmod 644 "$work/www/many"/*
fi
list_files=${BENCH_LIST_FILES:-100000}
if wants lists && [ "$list_files" -gt 0 ]; then
    echo "bench: generating ${list_files} files of 4 KiB" >&2
    mkdir -p "$work/www/lists"
    python3 -c 'import os,sys; [open(f"{sys.argv[1]}/f{i:06d}.bin","wb").write(os.urandom(4096)) for i in range(int(sys.argv[2]))]' \
        "$work/www/lists" "$list_files"
    chmod -R a+rX "$work/www/lists"
fi
if wants batchcapped; then
    # One file under 8 names (hard links): 8 downloads of distinct URLs, one page-cache copy.
    head -c "$((batch_mb << 20))" "$work/www/file.bin" >"$work/www/part.bin"
    chmod 644 "$work/www/part.bin"
    for i in $(seq 1 "$batch_files"); do ln "$work/www/part.bin" "$work/www/part$i.bin"; done
fi

# HTTPS: one self-signed certificate (also valid for the WAN server's address); every server
# offers HTTP/1.1-only TLS on one port and HTTP/2 by ALPN on another.
rf_tls_certificate "$work/tls" "$RF_WAN_SERVER_IP"
port=$(rf_free_port) tls1_port=$(rf_free_port) tls2_port=$(rf_free_port)
RF_NGINX_TLS="$work/tls $tls1_port $tls2_port" rf_nginx_start "$work/nginx" "$port" "$work/www"
rate_mib=${BENCH_RATE_MIB:-25}
# rf_relay_start PORT [RATE]: a relay capping each TCP connection at RATE (rate_mib) MiB/s in
# front of PORT (below TLS: it relays the encrypted bytes); sets started_port to the relay's port.
rf_relay_start() {
    started_port=$(rf_free_port)
    "$work/rf-relay" "$started_port" "$1" "$((${2:-$rate_mib} << 20))" &
    relay_pids+=("$!")
}
rf_relay_start "$port"; relay_port=$started_port
rf_relay_start "$tls1_port"; relay_tls1_port=$started_port
rf_relay_start "$tls2_port"; relay_tls2_port=$started_port
mirror_urls=""
if wants mirrors; then
    # A second capped mirror of the same nginx, one at 1 MiB/s per connection, and a dead port.
    rf_relay_start "$port"; mirror_port=$started_port
    slow_port=$(rf_free_port)
    "$work/rf-relay" "$slow_port" "$port" "$((1 << 20))" &
    relay_pids+=("$!")
    mirror_urls="http://127.0.0.1:$mirror_port/file.bin http://127.0.0.1:$slow_port/file.bin http://127.0.0.1:$(rf_free_port)/file.bin"
fi
caps_urls=""
if wants caps; then
    # The caps section: the capped relay, and one more relay per rate of BENCH_CAPS_RATES.
    caps_urls="$rate_mib=http://127.0.0.1:$relay_port/file.bin"
    for caps_rate in ${BENCH_CAPS_RATES:-12 6}; do
        rf_relay_start "$port" "$caps_rate"
        caps_urls+=" $caps_rate=http://127.0.0.1:$started_port/file.bin"
    done
fi
cache_url=""
if wants fleet; then
    # The fleet's cache (docs/fleet.md): nginx's slice cache in front of the same nginx.
    cache_port=$(rf_free_port)
    rf_nginx_cache_start "$work/nginx-cache" "$cache_port" "http://127.0.0.1:$port" 8m
    cache_url="http://127.0.0.1:$cache_port"
fi
sleep 0.2

wan_url="" wan_tls1_url="" wan_tls2_url=""
if wants wan || wants wan-https || wants wan-h2 || wants https; then
    rf_wan_reap_stale
    rf_wan_up "$work/wan" "$work/rf-wanem"
    # Port 8080 of our own server namespace: nothing else listens there.
    RF_NGINX_TLS="$work/tls 8443 8444" \
        rf_nginx_start "$work/nginx-wan" 8080 "$work/www" "$RF_WAN_SERVER_IP" "$RF_WAN_SERVER_NS"
    wan_url="http://$RF_WAN_SERVER_IP:8080/wan.bin"
    wan_tls1_url="https://$RF_WAN_SERVER_IP:8443/wan.bin"
    wan_tls2_url="https://$RF_WAN_SERVER_IP:8444/wan.bin"
    rtt=$(ip netns exec "$RF_WAN_CLIENT_NS" curl -s -o /dev/null -w '%{time_connect}' "$wan_url" -r 0-0)
    echo "bench: WAN up: $(rf_wan_describe); TCP connect took ${rtt} s" >&2
fi

if [ -n "$others" ]; then
OUT="$work/out" WORK="$work" SOURCE="$work/www/file.bin" \
DIRECT_URL="http://127.0.0.1:$port/file.bin" CAPPED_URL="http://127.0.0.1:$relay_port/file.bin" \
DIRECT_HTTPS_URL="https://127.0.0.1:$tls1_port/file.bin" DIRECT_H2_URL="https://127.0.0.1:$tls2_port/file.bin" \
CAPPED_HTTPS_URL="https://127.0.0.1:$relay_tls1_port/file.bin" CAPPED_H2_URL="https://127.0.0.1:$relay_tls2_port/file.bin" \
WAN_HTTPS_URL="$wan_tls1_url" WAN_H2_URL="$wan_tls2_url" TLS_CA="$work/tls/cert.pem" \
ACCESS_LOG="$work/nginx/access.log" WAN_ACCESS_LOG="$work/nginx-wan/access.log" \
WAN_URL="$wan_url" WAN_SOURCE="$work/www/wan.bin" WAN_NETNS="$RF_WAN_CLIENT_NS" \
WAN_DESCRIPTION="$(rf_wan_describe)" BENCH_RATE_MIB="$rate_mib" RESULTS_DIR="$results" \
MANY_DIR="$(wants many && echo "$work/www/many")" MANY_URL="http://127.0.0.1:$port/many" \
MANY_H2_URL="https://127.0.0.1:$tls2_port/many" \
BATCH_SOURCE="$work/www/part.bin" MIRROR_URLS="$mirror_urls" FLEET_CACHE_URL="$cache_url" \
LISTS_DIR="$(wants lists && [ "$list_files" -gt 0 ] && echo "$work/www/lists")" LISTS_URL="http://127.0.0.1:$port/lists" CAPS_URLS="$caps_urls" \
BATCH_URLS="$(wants batchcapped && for i in $(seq 1 "$batch_files"); do echo "http://127.0.0.1:$relay_port/part$i.bin"; done)" \
    python3 Benchmarks/bench.py &
# In the background and waited for, so that a SIGTERM reaches our trap at once (bash runs traps
# only between foreground commands), and the trap stops bench.py before tearing down.
bench_pid=$!
wait "$bench_pid"
bench_pid=""

"$venv/bin/python" Benchmarks/chart.py "$results/latest.json" "$results/latest.png"
echo "bench: wrote $results/latest.md, latest.json and latest.png" >&2
fi

if wants daemon; then
    mkdir -p "$work/daemon"
    python3 Benchmarks/daemon_rpc.py --rangefetch "$RANGEFETCH" --work "$work/daemon" --results "$results" \
        --url "8=http://127.0.0.1:$port/file.bin" --url "http://127.0.0.1:$port/wan.bin" &
    bench_pid=$!
    wait "$bench_pid"
    bench_pid=""
    echo "bench: wrote $results/daemon.md and daemon.json" >&2
fi
