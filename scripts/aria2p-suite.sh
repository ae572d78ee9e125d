#!/usr/bin/env bash
# Runs aria2p's own test suite (a client we did not write: PyPI sdist 0.12.3 ships tests/)
# against `rangefetch aria2c`: its fixture starts whatever `aria2c` is first on PATH, here a
# symlink to the built rangefetch. The selection is the issue's: no torrents or magnets, no
# API-docs checks (test_api.py), no TUI (test_interface.py). The few tests rangefetch does not
# pass yet are named below with why (docs/daemon.md lists them too); any other failure fails.
#
# The run happens in a network namespace of its own with only loopback up: the suite adds
# downloads of Internet URLs (mirrors, a metalink), which must never be a traffic target here.
# Usage: scripts/aria2p-suite.sh [path to rangefetch]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_need_packages python3-venv iproute2 util-linux

binary="${1:-$(swift build --show-bin-path)/rangefetch}"
version=0.12.3
work=Tests/.aria2p
venv="$work/venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import aria2p, pytest, xdist, fastapi, uvicorn, responses, psutil' 2>/dev/null; then
    echo "installing aria2p $version and its test requirements into $venv" >&2
    rm -rf "$work"
    mkdir -p "$work"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "aria2p[tui]==$version" pytest pytest-xdist psutil fastapi uvicorn requests responses
    "$venv/bin/pip" download -q --no-deps --no-binary :all: -d "$work" "aria2p==$version"
    tar -xzf "$work/aria2p-$version.tar.gz" -C "$work"
fi
source_dir="$work/aria2p-$version"
mkdir -p "$work/bin"
ln -sf "$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")" "$work/bin/aria2c"

# Not passed yet, and why:
#   a magnet URI in addUri: BitTorrent is not supported.
deselect=(
    tests/test_client.py::TestClientClass::test_add_uri_method
)
args=(-q -p no:cacheprovider -n 2 -k "not torrent and not magnet" --ignore=tests/test_api.py --ignore=tests/test_interface.py)
for test in "${deselect[@]}"; do args+=(--deselect "$test"); done

cd "$source_dir"
rm -rf tests/logs .ports.json .lockdir
# The venv's python by its own path (resolving its link would leave the venv).
bin_dir="$(cd ../bin && pwd)"
python="$(cd ../venv/bin && pwd)/python"
unshare --net bash -c 'ip link set lo up && PATH="$0:$PATH" exec "$1" -m pytest "${@:2}" tests/' \
    "$bin_dir" "$python" "${args[@]}"
