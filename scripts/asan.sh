#!/usr/bin/env bash
# The whole test suite with AddressSanitizer: the library, the CLI the tests run and the tests
# themselves built with -sanitize=address, in a scratch folder of their own (.build-asan), so a
# use after free or a double free (such as a thread releasing libcurl or OpenSSL objects while the
# process exits) fails the run instead of corrupting the heap now and then.
#   scripts/asan.sh                         every suite
#   scripts/asan.sh --filter ResumeTests    any `swift test` arguments
# Leak detection is off: the Swift runtime keeps metadata caches for the process's life, and a
# report at exit would fail every CLI run. ASAN_OPTIONS overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_test_requirements

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:halt_on_error=1}"
sanitize=(-Xswiftc -sanitize=address --scratch-path .build-asan)
swift build --build-tests "${sanitize[@]}"
swift test --no-parallel --skip-build "${sanitize[@]}" "$@"
