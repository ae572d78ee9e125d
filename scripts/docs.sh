#!/usr/bin/env bash
# Builds the RangeFetch library's documentation (DocC: Sources/RangeFetch/RangeFetch.docc and
# every public symbol's doc comment) as a static site, failing on any DocC warning (a broken
# symbol link, an unknown topic), and prints where it is.
#   scripts/docs.sh [OUTPUT_DIR]    default .build/docs (open OUTPUT_DIR/index.html via a web server)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_base_packages
rf_require_swift
output=${1:-.build/docs}
mkdir -p "$output"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift package --allow-writing-to-directory "$output" generate-documentation --target RangeFetch \
    --output-path "$output" --transform-for-static-hosting --hosting-base-path rangefetch \
    --warnings-as-errors 2>&1 | tee "$log" >&2
if grep -q "warning:" "$log"; then
    echo "docs: DocC warned (see above)" >&2
    exit 1
fi
echo "docs: $output (static site; index: $output/index.html, the library: $output/documentation/rangefetch)"
