#!/usr/bin/env bash
# Lists of millions (issue 26, part 1): time from start to the first request, and peak RSS, for a
# generated -i list of N lines with --shard 1/100000 (so only ~N/100000 files of 4 KiB are fetched)
# and without a shard (stopped after 3 s: only the time to the first request counts there).
# A small loopback server of its own logs each request's time. To be folded into bench.sh's
# `lists` section.
#   scripts/bench-lists.sh                         1 M and 10 M lines, the debug build
#   RANGEFETCH=path/to/rangefetch BENCH_LIST_LINES="1000000" scripts/bench-lists.sh
# Output: one line per run: lines, shard, seconds to the first request, total seconds, peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
lines_list=${BENCH_LIST_LINES:-"1000000 10000000"}
binary=${RANGEFETCH:-.build/debug/rangefetch}
[ -x "$binary" ] || swift build
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d /var/tmp/rf-lists.XXXXXX)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cat > "$work/server.py" <<'PY'
import sys, time, http.server, socketserver
log = open(sys.argv[1], "a", buffering=1)
BODY = b"x" * 4096
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_GET(self):
        log.write("%.6f %s\n" % (time.time(), self.path))
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
coproc SERVER { python3 "$work/server.py" "$work/requests.log" 2>/dev/null; }
server_pid=$SERVER_PID
read -r port <&"${SERVER[0]}"

run() { # lines shard(or -) timeout(or -)
    local list="$work/list-$1.txt" start end first rss
    rm -rf "$work/out"; : > "$work/requests.log"
    local shard=(); [ "$2" != - ] && shard=(--shard "$2")
    local limit=(); [ "$3" != - ] && limit=(timeout "$3")
    start=$(date +%s.%N)
    /usr/bin/time -f %M -o "$work/rss" "${limit[@]}" "$binary" -i "$list" "${shard[@]}" -d "$work/out" -q >/dev/null 2>&1 || true
    end=$(date +%s.%N)
    first=$(head -1 "$work/requests.log" | cut -d' ' -f1)
    # Killed by timeout, time(1) prints a line about the status first: the figure is the last line.
    rss=$(tail -1 "$work/rss" 2>/dev/null || echo 0)
    [[ $rss =~ ^[0-9]+$ ]] || rss=0
    printf '%10s lines  shard %-9s first request %6.2f s  total %7.2f s  peak RSS %4d MiB\n' "$1" "$2" \
        "$(echo "${first:-$end} - $start" | bc)" "$(echo "$end - $start" | bc)" $((rss / 1024))
}

for lines in $lines_list; do
    # The first request of a shard waits for the shard's first line to be read: say where it is.
    python3 -c "
import hashlib
width, first = len(str($lines)), None
with open('$work/list-$lines.txt', 'w') as f:
    for i in range($lines):
        url = 'http://127.0.0.1:$port/data/4096/f%0*d.bin' % (width, i)
        f.write(url + '\n')
        if first is None and int.from_bytes(hashlib.sha256(url.encode()).digest()[:8], 'big') % 100000 == 1: first = i + 1
print('%10s lines  the first line of shard 1/100000 is line %s' % ($lines, first))
"
    run "$lines" 1/100000 -
    run "$lines" - 3
done
