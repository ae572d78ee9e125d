#!/usr/bin/env python3
"""Soak: SIGKILL one download at many random moments, resume each time, check the end.

Starts our fault server (Tests/Support/fault_server.py) serving a file whose connections are
rate-capped, some of them cut mid-body and every 5th one trickling at 10 kB/s; runs rangefetch
on it, kills it with SIGKILL after a random time, and runs the same command again, CYCLES times;
then lets it finish and checks the bytes against the server's content and the bytes the server
sent against the file size. Prints the figures; exits non-zero when a check fails.

Usage: soak.py RANGEFETCH [--cycles 50] [--size-mb 256] [--rate 2000000] [--seed N] [--max-ratio 1.10]
"""

import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fault_server import generate  # noqa: E402  the server's own content, not a copy of it


def expected_sha256(size):
    digest = hashlib.sha256()
    step = 8 << 20
    for start in range(0, size, step):
        digest.update(generate(0, start, min(size, start + step)))
    return digest.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rangefetch")
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--size-mb", type=int, default=256)
    parser.add_argument("--rate", type=int, default=2_000_000, help="bytes/s per response")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--max-ratio", type=float, default=1.10,
                        help="most bytes the server may send, as a multiple of the file")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    size = args.size_mb << 20

    server = subprocess.Popen([sys.executable, os.path.join(HERE, "fault_server.py"), "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        base = f"http://127.0.0.1:{port}"
        query = f"rate={args.rate}&cut={8 << 20}&cutcount=10&cutmode=rst&trickle=10000&trickleevery=5"
        url = f"{base}/data/{size}/soak.bin?{query}"
        with tempfile.TemporaryDirectory(prefix="rf-soak-", dir="/var/tmp") as out:
            target = os.path.join(out, "soak.bin")
            command = [args.rangefetch, "-q", url, "-o", target, "-n", "4", "--max-tries", "20"]
            # One run takes size / (4 x rate) seconds; spread the kills over it.
            whole = size / (4 * args.rate)
            started = time.monotonic()
            for cycle in range(args.cycles):
                run = subprocess.Popen(command, stderr=subprocess.DEVNULL)
                time.sleep(rng.uniform(0.05, 2 * whole / args.cycles))
                if run.poll() is not None:
                    break  # finished before its kill
                run.send_signal(signal.SIGKILL)
                run.wait()
            final = subprocess.run(command, capture_output=True, text=True)
            elapsed = time.monotonic() - started
            with urllib.request.urlopen(f"{base}/_stats") as answer:
                stats = json.load(answer)
            served = sum(entry["bytes"] for entry in stats["log"] if "/soak.bin" in entry["path"])
            with open(target, "rb") as file:
                actual = hashlib.file_digest(file, "sha256").hexdigest()
            exact = final.returncode == 0 and os.path.getsize(target) == size and actual == expected_sha256(size)
            ratio = served / size
            print(f"soak: {cycle + 1} SIGKILL cycles of a {args.size_mb} MiB download (seed {args.seed}), "
                  f"{elapsed:.1f} s; final exit {final.returncode}; bytes {'exact' if exact else 'WRONG'}; "
                  f"served {served} bytes = {ratio:.3f}x the file")
            if final.returncode != 0:
                print(final.stderr.strip())
            return 0 if exact and ratio <= args.max_ratio else 1
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
