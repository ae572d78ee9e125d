#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, nginx integration, fault server).
# Usage: scripts/test.sh [extra `swift test` arguments, e.g. --filter ResumeTests]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_base_packages
rf_require_swift

swift build
# Tests drive the built CLI too; run them one suite at a time on small machines.
swift test --no-parallel "$@"
