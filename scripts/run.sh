#!/usr/bin/env bash
# Installs what is missing, builds rangefetch (release) and runs it.
#   scripts/run.sh URL [options]   download URL (any rangefetch option works)
#   scripts/run.sh                 demo: a local nginx serves a generated 512 MiB file, and
#                                  rangefetch fetches it with 16 connections, the live progress
#                                  bar and a SHA-256 check
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
source scripts/lib/nginx.sh
rf_base_packages
rf_require_swift

swift build -c release --product rangefetch >&2
bin=$(swift build -c release --show-bin-path)/rangefetch

if [ $# -gt 0 ]; then
    exec "$bin" "$@"
fi

demo=$(mktemp -d /tmp/rangefetch-demo.XXXXXX)
chmod 755 "$demo"
trap 'rf_nginx_stop "$demo/nginx"; rm -rf "$demo"' EXIT
mkdir -p "$demo/www" "$demo/nginx" "$demo/out"
size_mb=${DEMO_SIZE_MB:-512}
echo "demo: generating a ${size_mb} MiB file and serving it from a local nginx" >&2
head -c "$((size_mb << 20))" /dev/urandom >"$demo/www/demo.bin"
chmod 644 "$demo/www/demo.bin"
sum=$(sha256sum "$demo/www/demo.bin" | cut -d' ' -f1)
port=$(rf_free_port)
rf_nginx_start "$demo/nginx" "$port" "$demo/www"
echo "demo: rangefetch -n 16 --checksum sha256=${sum:0:16}… http://127.0.0.1:$port/demo.bin" >&2
# On a terminal rangefetch draws its bar; elsewhere show JSON progress so something is visible.
flags=()
[ -t 2 ] || flags=(--json)
"$bin" "${flags[@]}" -n 16 --checksum "sha256=$sum" -d "$demo/out" "http://127.0.0.1:$port/demo.bin"
cmp -s "$demo/www/demo.bin" "$demo/out/demo.bin" && echo "demo: the download is byte-identical to the source" >&2
