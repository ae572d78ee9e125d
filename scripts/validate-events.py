#!/usr/bin/env python3
"""Validates rangefetch --json output (one object per line, on stdin or in FILE) against
docs/events.schema.json. Prints one line per invalid object and exits 1 if any; exits 0 and
prints "N events valid" otherwise. Needs python3-jsonschema (scripts/lib/packages.sh installs it).

    rangefetch --json -q https://host/f | scripts/validate-events.py
    scripts/validate-events.py events.jsonl
"""
import json
import os
import sys

import jsonschema

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "events.schema.json")


def main() -> int:
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    validator = jsonschema.Draft202012Validator(schema)
    source = open(sys.argv[1], encoding="utf-8") if len(sys.argv) > 1 else sys.stdin
    count, bad = 0, 0
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        count += 1
        try:
            event = json.loads(line)
        except json.JSONDecodeError as error:
            print(f"line {number}: not JSON ({error}): {line.strip()}")
            bad += 1
            continue
        if not isinstance(event, dict) or next(iter(event), None) != "version":
            print(f"line {number}: \"version\" is not the first field: {line.strip()}")
            bad += 1
        for error in validator.iter_errors(event):
            print(f"line {number}: {error.message} (at {'/'.join(map(str, error.absolute_path)) or 'top'}): {line.strip()}")
            bad += 1
    if count == 0:
        print("no events")
        return 1
    if bad:
        return 1
    print(f"{count} events valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
