#!/usr/bin/env bash
# Regenerates docs/rangefetch.1 from the CLI's own help (swift-argument-parser's generate-manual
# tool, built offline from the resolved dependency), then turns blank lines into paragraph breaks
# and indented example lines into literal blocks so `man` keeps them one per line.
# Run after changing any help text; commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_require_swift
swift build --product rangefetch >/dev/null
swift build --product generate-manual >/dev/null
bin=$(swift build --show-bin-path)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
date=${RANGEFETCH_MAN_DATE:-$(git log -1 --format=%cs 2>/dev/null || date +%F)}
tool="$bin/generate-manual-tool"; [ -x "$tool" ] || tool="$bin/generate-manual"
"$tool" "$bin/rangefetch" --date "$date" --output-directory "$work" >/dev/null
python3 - "$work/rangefetch.1" docs/rangefetch.1 <<'PY'
import sys
source, target = sys.argv[1], sys.argv[2]
out, literal = [], False
for line in open(source, encoding="utf-8").read().split("\n"):
    example = line.startswith("  ") and not line.startswith(".")
    if example and not literal:
        out.append(".Bd -literal -offset indent")
        literal = True
    elif not example and literal:
        out.append(".Ed")
        literal = False
    if example:
        out.append(line.strip().replace("\\", "\\e"))
    elif line == "":
        out.append(".Pp")
    else:
        out.append(line)
if literal:
    out.append(".Ed")
while out and out[-1] in ("", ".Pp"):
    out.pop()
text = "\n".join(out)
while ".Pp\n.Pp" in text:
    text = text.replace(".Pp\n.Pp", ".Pp")
open(target, "w", encoding="utf-8").write(text + "\n")
PY
echo "wrote docs/rangefetch.1"
