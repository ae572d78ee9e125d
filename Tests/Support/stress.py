#!/usr/bin/env python3
"""Runs many short rangefetch processes against our fault server beside busy loops and counts the
abnormal exits: death by a signal (SIGABRT from a heap check, SIGSEGV), or an exit status the CLI
never uses. A crash at exit (a thread still inside libcurl or OpenSSL while exit() runs library
destructors) shows up here as 1 run in a thousand, so this is about numbers, not one case.

    python3 Tests/Support/stress.py BINARY [--runs 3000] [--busy 2] [--seed 1]

Kinds, cycled in turn:
  ok          a 3 MB download that succeeds (exit 0, exact bytes)
  badlength   Content-Length: -5 (an error exit, 3)
  manyheaders 10,000 header lines (an error exit)
  bigheader   one 1 MiB header line (an error exit)
  interrupt   a 64 MiB download at 4 MB/s per connection interrupted with SIGINT after 20-300 ms
              (exit 130; death by SIGINT counts as normal too: Ctrl-C before the handler is in place)
  batch       an -i list of four files, one of them failing (exit 3)
  stream      -o - of 3 MB into /dev/null
Prints one line per 500 runs and a summary; exits 1 when any run ended abnormally.
"""

import argparse
import collections
import hashlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Statuses the CLI exits with (see Sources/rangefetch/ExitCode.swift).
NORMAL = {0, 1, 2, 3, 4, 5, 130}


def start_server():
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "fault_server.py"), "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    if not line.startswith("PORT "):
        server.kill()
        sys.exit("stress: fault server did not start")
    return server, int(line.split()[1])


def content(size):
    """The fault server's bytes 0..size of version 0."""
    out = bytearray()
    block = 0
    while len(out) < size:
        out += hashlib.sha256(b"rangefetch" + block.to_bytes(8, "little")).digest()
        block += 1
    return bytes(out[:size])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--busy", type=int, default=2, help="busy loops beside the runs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default="ok,badlength,manyheaders,bigheader,interrupt,batch,stream",
                        help="comma-separated kinds to cycle through")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    # Children get SIGINT's default disposition even when this script was started in the
    # background (where the shell ignores SIGINT, and the ignoring is inherited).
    signal.signal(signal.SIGINT, signal.default_int_handler)

    server, port = start_server()
    base = f"http://127.0.0.1:{port}"
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(args.busy)]
    work = tempfile.mkdtemp(prefix="rangefetch-stress-", dir=os.environ.get("STRESS_DIR", "/var/tmp"))
    small = 3_000_000
    expected = hashlib.sha256(content(small)).hexdigest()
    listing = os.path.join(work, "list.txt")
    with open(listing, "w") as handle:
        for index in range(3):
            handle.write(f"{base}/data/{small + index}/b{index}.bin\n")
        handle.write(f"{base}/data/1000/bad.bin?status=404\n")

    kinds = args.kinds.split(",")
    tally = collections.Counter()
    abnormal = []
    wrong = []
    started = time.monotonic()
    try:
        for run in range(args.runs):
            kind = kinds[run % len(kinds)]
            out = os.path.join(work, f"r{run}")
            os.mkdir(out)
            common = [args.binary, "-q", "--no-config", "-d", out]
            if kind == "ok":
                command = common[:-2] + ["-o", os.path.join(out, "f.bin"), f"{base}/data/{small}/f.bin?run={run}"]
            elif kind == "badlength":
                command = common + [f"{base}/data/{small}/f.bin?contentlength=-5&run={run}"]
            elif kind == "manyheaders":
                command = common + [f"{base}/data/{small}/f.bin?manyheaders=10000&run={run}"]
            elif kind == "bigheader":
                command = common + [f"{base}/data/{small}/f.bin?bigheader=1048576&run={run}"]
            elif kind == "interrupt":
                command = common + [f"{base}/data/{64 << 20}/f.bin?rate=4000000&run={run}"]
            elif kind == "batch":
                command = common + ["-j", "2", "-i", listing]
            else:
                command = [args.binary, "-q", "--no-config", "-o", "-", f"{base}/data/{small}/f.bin?run={run}"]
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if kind == "interrupt":
                time.sleep(rng.uniform(0.02, 0.3))
                process.send_signal(signal.SIGINT)
            try:
                status = process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                status = process.wait()
                abnormal.append((run, kind, "hung for 120 s"))
                continue
            tally[(kind, status)] += 1
            # Ctrl-C before the handler is installed (the first few ms) ends a process the usual way.
            interrupted_early = kind == "interrupt" and status == -signal.SIGINT
            if not interrupted_early and (status < 0 or status not in NORMAL):
                name = signal.Signals(-status).name if status < 0 else f"exit {status}"
                abnormal.append((run, kind, name))
                print(f"stress: run {run} ({kind}) ended abnormally: {name}: {' '.join(command)}", flush=True)
            elif kind == "ok":
                path = os.path.join(out, "f.bin")
                if status != 0 or not os.path.exists(path) or hashlib.sha256(open(path, "rb").read()).hexdigest() != expected:
                    wrong.append((run, kind, status))
            subprocess.run(["rm", "-rf", out])
            if (run + 1) % 500 == 0:
                print(f"stress: {run + 1} runs, {len(abnormal)} abnormal, {time.monotonic() - started:.0f} s", flush=True)
    finally:
        for process in busy:
            process.kill()
        server.terminate()
        server.wait()
        subprocess.run(["rm", "-rf", work])

    print("stress: exit statuses by kind:")
    for (kind, status), count in sorted(tally.items()):
        print(f"  {kind:12} {status:4}  {count}")
    print(f"stress: {len(abnormal)} abnormal exits of {args.runs} beside {args.busy} busy loops"
          f" ({time.monotonic() - started:.0f} s); {len(wrong)} successful downloads with wrong bytes or status")
    sys.exit(1 if abnormal or wrong else 0)


if __name__ == "__main__":
    main()
