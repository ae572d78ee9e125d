#!/usr/bin/env bash
# Builds the RangeFetch library's documentation (DocC: Sources/RangeFetch/RangeFetch.docc and
# every public symbol's doc comment) as a static site, failing on any DocC warning (a broken
# symbol link, an unknown topic), and prints where it is.
#   scripts/docs.sh [OUTPUT_DIR]    default .build/docs (open OUTPUT_DIR/index.html via a web server)
# It installs what is missing (the Debian packages the build needs; swift-docc-plugin comes with the
# package's dependencies), and needs Swift 6's own `docc`, which swift.org's toolchains include.
# scripts/test.sh runs it after the build, so a broken symbol link fails the tests.
# A symbol link (``Name``) must name a public symbol; an internal type is written `Name`, and an
# overload is named with DocC's suffix, e.g. ``download(batch:options:events:)-([BatchEntry],_,_)``.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_base_packages
rf_require_swift
if ! command -v docc >/dev/null 2>&1 && [ -z "${DOCC_EXEC:-}" ]; then
    echo "docs: docc not found next to swift: install a Swift 6 toolchain from swift.org (it ships docc)," \
        "or set DOCC_EXEC to a docc binary" >&2
    exit 1
fi
output=${1:-.build/docs}
mkdir -p "$output"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift package --allow-writing-to-directory "$output" generate-documentation --target RangeFetch \
    --output-path "$output" --transform-for-static-hosting --hosting-base-path rangefetch \
    --warnings-as-errors 2>&1 | tee "$log" >&2
# DocC's own diagnostics start a line ("warning: 'X' doesn't exist at ..."); the compiler's carry
# a file name first and are not the documentation's concern.
if grep -qE "^(warning|error): " "$log"; then
    echo "docs: DocC warned (see above)" >&2
    exit 1
fi
echo "docs: $output (static site; index: $output/index.html, the library: $output/documentation/rangefetch)"
