#!/usr/bin/env bash
# Builds the RangeFetch library's documentation (DocC: Sources/RangeFetch/RangeFetch.docc and
# every public symbol's doc comment) as a static site, failing on any DocC warning (a broken
# symbol link, an unknown topic), and prints where it is.
#   scripts/docs.sh [OUTPUT_DIR]    default .build/docs (open OUTPUT_DIR/index.html via a web server)
# It installs what is missing (the Debian packages the build needs), and needs Swift 6's own
# `swift-symbolgraph-extract` and `docc`, which swift.org's toolchains include.
# scripts/test.sh runs it after the build, so a broken symbol link fails the tests.
# A symbol link (``Name``) must name a public symbol; an internal type is written `Name`, and an
# overload is named with DocC's suffix, e.g. ``download(batch:options:events:)-([BatchEntry],_,_)``.
#
# Why not swift-docc-plugin: the library is three targets, and `RangeFetch` re-exports the two
# below it (`@_exported import`), so `DownloadError` or `ByteRange` are part of what an embedder
# imports. The plugin cannot ask the symbol graph extractor to include re-exported modules
# (swift-docc-plugin#113); this script runs the extractor itself, with
# `-experimental-allowed-reexported-modules`, then `docc convert`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_base_packages
rf_require_swift
docc=${DOCC_EXEC:-$(command -v docc || true)}
extract=$(command -v swift-symbolgraph-extract || true)
if [ -z "$docc" ] || [ -z "$extract" ]; then
    echo "docs: docc or swift-symbolgraph-extract not found next to swift: install a Swift 6 toolchain" \
        "from swift.org (it ships both), or set DOCC_EXEC to a docc binary" >&2
    exit 1
fi
output=${1:-.build/docs}
mkdir -p "$output"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log
swift build --target RangeFetch >&2
bin=$(swift build --show-bin-path)
# The C modules the library's targets import, as SwiftPM built them.
modules=()
for map in "$bin"/C*.build/module.modulemap; do
    name=$(basename "$(dirname "$map")" .build)
    modules+=(-Xcc "-fmodule-map-file=$map" -I "Sources/$name/include")
done
mkdir -p "$work/symbols"
"$extract" -module-name RangeFetch -target "$(uname -m)-unknown-linux-gnu" -I "$bin/Modules" "${modules[@]}" \
    -minimum-access-level public -experimental-allowed-reexported-modules=RangeFetchBase,RangeFetchNetwork \
    -output-dir "$work/symbols" 2>&1 | tee "$log" >&2
"$docc" convert Sources/RangeFetch/RangeFetch.docc --additional-symbol-graph-dir "$work/symbols" \
    --fallback-display-name RangeFetch --fallback-bundle-identifier RangeFetch \
    --output-path "$output" --transform-for-static-hosting --hosting-base-path rangefetch \
    --warnings-as-errors 2>&1 | tee -a "$log" >&2
# DocC's own diagnostics start a line ("warning: 'X' doesn't exist at ..."); so do the extractor's.
if grep -qE "^(warning|error): " "$log"; then
    echo "docs: DocC warned (see above)" >&2
    exit 1
fi
echo "docs: $output (static site; index: $output/index.html, the library: $output/documentation/rangefetch)"
