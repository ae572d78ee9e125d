#!/usr/bin/env bash
# Benchmark: rangefetch (-n 16 and -n auto) against curl, aria2c and axel, side by side in one run,
# in three scenarios: unthrottled loopback, a per-connection rate cap, and a lossy WAN (400 Mbit/s,
# 20 ms round trip, 0.1% loss, emulated in network namespaces of our own), each over plain HTTP,
# HTTPS with HTTP/1.1 only, and HTTPS with HTTP/2 offered (nginx, a self-signed certificate that
# every tool is given as its CA; axel has no CA option and runs with -k). Then the journal's and
# the checksum's cost and hashing throughput; lists of millions (time to the first request, peak
# RSS, 4 KiB files against aria2c) and -n auto against fixed counts at several per-connection caps;
# a Hugging Face repository through a fake Hub against huggingface_hub (hub).
# Needs root (namespaces, packages).
#   scripts/bench.sh                                   everything: 1 GiB (WAN 256 MiB), 3 runs
#   BENCH_SIZE_MB=64 BENCH_RUNS=1 BENCH_ONLY=wan RANGEFETCH=.build/release/rangefetch scripts/bench.sh
#   BENCH_ONLY=hub BENCH_HUB_LARGE_MB="128 64 64 64" BENCH_RUNS=1 RANGEFETCH=... scripts/bench.sh
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
#                              fleet,lists,caps,daemon,hub
#   BENCH_DAEMON_ACTIVE ("8 100"), BENCH_DAEMON_WAITING (200), BENCH_DAEMON_RUNS (3),
#   BENCH_DAEMON_WINDOW_S (15), BENCH_DAEMON_GAP_MS (10)   daemon section: RPC latency of
#                              `rangefetch daemon` against aria2c --enable-rpc under load
#                              (Benchmarks/daemon_rpc.py); 8 active get the BENCH_SIZE_MB file, more
#                              the WAN-sized one (256 MiB), so that preallocated files fit the disk
#   BENCH_HUB_LARGE_MB ("1024 256 256 256"), BENCH_HUB_SMALL_FILES (30), BENCH_HUB_CAP (8700000)
#                              hub section (Benchmarks/hub.py): a model of LFS files of these MiB and
#                              small git files (0.7 KiB-1.5 MiB) on Tests/Support/fake_hub.py, whose
#                              CDN paces each connection at BENCH_HUB_CAP bytes/s; `rangefetch hf://`
#                              against huggingface_hub 2.4.0's snapshot_download (one connection a
#                              file) and 0.36.x's with hf_transfer 0.1.9 (venvs Benchmarks/.venv-hf*;
#                              files under 50 MiB do not reach hf_transfer). About 10 min at the
#                              default sizes with 3 runs (2 min a run: hf 2.4.0's 1 GiB file)
#   BENCH_HUB_DATA_DIR         where the hub section's files are made once and kept for the next
#                              run (BENCH_WORK_DIR's disk: /var/tmp/rangefetch-bench-hub)
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
# to Benchmarks/results/daemon.{md,json}, the hub section's to hub.{md,json} (BENCH_ONLY=daemon or
# hub alone leaves latest.* untouched).
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

wants() { [[ ",${BENCH_ONLY:-all}," == *",all,"* || ",${BENCH_ONLY:-all}," == *",$1,"* ]]; }

# bench_venv DIR CHECK PACKAGE...: a venv of our own at DIR (ignored by git) with the packages
# from PyPI, unless its python runs CHECK already. Done before the measurements, so a failure
# costs seconds, not a finished benchmark.
bench_venv() {
    local dir=$1 check=$2
    shift 2
    "$dir/bin/python" -c "$check" 2>/dev/null && return 0
    echo "bench: installing $* into $dir" >&2
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q "$@"
}

# Sections other than daemon and hub go to bench.py (latest.* and the chart, which needs
# matplotlib); with none, it does not run.
venv=Benchmarks/.venv
others=$(echo ",${BENCH_ONLY:-all}," | sed -e 's/,daemon,/,/g' -e 's/,hub,/,/g' -e 's/^,*//' -e 's/,*$//')
if [ -n "$others" ]; then
    bench_venv "$venv" 'import matplotlib' matplotlib
fi
# The hub section's clients: huggingface_hub 2.4.0, and 0.36.x with hf_transfer 0.1.9
# (HF_HUB_ENABLE_HF_TRANSFER), which 2.4.0 no longer uses.
hub_hf2=Benchmarks/.venv-hf2 hub_hf036=Benchmarks/.venv-hf036
if wants hub; then
    bench_venv "$hub_hf2" 'import importlib.metadata as m; assert m.version("huggingface_hub") == "2.4.0"' \
        'huggingface_hub==2.4.0'
    bench_venv "$hub_hf036" 'import importlib.metadata as m; assert m.version("huggingface_hub").startswith("0.36.")
assert m.version("hf_transfer") == "0.1.9"' 'huggingface_hub==0.36.*' 'hf-transfer==0.1.9'
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

base=$(rf_disk_dir)
work=$(mktemp -d "$base/rangefetch-bench.XXXXXX")
chmod 755 "$work"
relay_pids=()
bench_pid=""
hub_pid="" # the fake Hub of the hub section
cleanup() {
    if [ -n "$bench_pid" ]; then # stop the measurement (and the tool it runs) first
        kill -TERM "$bench_pid" 2>/dev/null || true
        wait "$bench_pid" 2>/dev/null || true
    fi
    [ "${#relay_pids[@]}" -gt 0 ] && kill "${relay_pids[@]}" 2>/dev/null || true
    if [ -n "$hub_pid" ]; then
        kill "$hub_pid" 2>/dev/null || true
        wait "$hub_pid" 2>/dev/null || true
    fi
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
if [ -n "$others" ] || wants daemon; then # the hub section serves files of its own
    echo "bench: generating ${size_mb} MiB of random data (WAN: the first ${wan_mb} MiB)" >&2
    head -c "$((size_mb << 20))" /dev/urandom >"$work/www/file.bin"
    head -c "$((wan_mb << 20))" "$work/www/file.bin" >"$work/www/wan.bin"
    chmod 644 "$work/www/file.bin" "$work/www/wan.bin"
fi
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

if wants hub; then
    # The repository's files are made once under hub_data and kept for the next run; the fake Hub
    # hashes them as it starts (sha256, sha1, md5: about 4 s a GiB), then serves them from there.
    # Started here and stopped by its pid (by cleanup on a failure).
    hub_data=${BENCH_HUB_DATA_DIR:-$base/rangefetch-bench-hub}
    hub_cap=${BENCH_HUB_CAP:-8700000}
    WORK="$work" OUT="$work/out" python3 Benchmarks/hub.py prepare "$hub_data" "$work/hub-repos.json"
    python3 Tests/Support/fake_hub.py --repos "$work/hub-repos.json" --root "$hub_data" \
        --ready-file "$work/hub-ready" --log "$work/hub-log.jsonl" --page-size 1000 \
        --cdn-cap-bytes-per-sec "$hub_cap" 2>"$work/hub-stderr" &
    hub_pid=$!
    until [ -s "$work/hub-ready" ]; do
        if ! kill -0 "$hub_pid" 2>/dev/null; then
            cat "$work/hub-stderr" >&2
            echo "bench: the fake Hub did not start" >&2
            exit 1
        fi
        sleep 0.2
    done
    OUT="$work/out" WORK="$work" RESULTS_DIR="$results" BENCH_HUB_CAP="$hub_cap" HUB_ROOT="$hub_data" \
    HUB_READY="$work/hub-ready" HUB_REPOS="$work/hub-repos.json" HUB_LOG="$work/hub-log.jsonl" \
    HUB_HF2_PYTHON="$PWD/$hub_hf2/bin/python" HUB_HF036_PYTHON="$PWD/$hub_hf036/bin/python" \
        python3 Benchmarks/hub.py run &
    bench_pid=$!
    wait "$bench_pid"
    bench_pid=""
    kill "$hub_pid"
    wait "$hub_pid" || true
    hub_pid=""
    if [ -s "$work/hub-stderr" ]; then
        echo "bench: the fake Hub said (last lines):" >&2
        tail -n 20 "$work/hub-stderr" >&2
    fi
    echo "bench: wrote $results/hub.md and hub.json" >&2
fi
