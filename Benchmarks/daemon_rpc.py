#!/usr/bin/env python3
"""RPC latency under load: `rangefetch daemon` against `aria2c --enable-rpc`, in one run.

For each count of active downloads (BENCH_DAEMON_ACTIVE, "8 100"), each tool is started on a free
loopback port with a secret, a fresh download directory on disk and max-concurrent-downloads =
ACTIVE; ACTIVE + BENCH_DAEMON_WAITING (200) downloads of one file from nginx are added (distinct
`out` names), so ACTIVE run and 200 wait. Once ACTIVE run and bytes flow (and a short settling
time), for BENCH_DAEMON_WINDOW_S (15) seconds one keep-alive HTTP connection alternates
  aria2.tellActive(keys gid,status,completedLength,totalLength,downloadSpeed)
  aria2.tellWaiting(0, 1000, same keys)
with BENCH_DAEMON_GAP_MS (10) ms between calls (a busy front-end, not a flood), timing each call
from the request's first byte to the response's last (JSON decoding after the clock stops).
Every 0.5 s a getGlobalStat (not timed) samples the aggregate download speed, so the table shows
the daemon served at full speed while it answered. Then the daemon is stopped by its pid and
every file it wrote is deleted.

Runs alternate between the tools (aria2c, rangefetch, aria2c, ...) BENCH_DAEMON_RUNS (3) times.
Per run: p50 and p99 of each method; per tool: the median of the runs' figures with (min-max) and
every run's value, and rangefetch/aria2c as the ratio of those medians (below 1: faster).

Disk: aria2c runs with --file-allocation=none; rangefetch preallocates each running file, so a run
needs about ACTIVE x file size plus what it writes in the window. The run is refused if that is
more than the free space of the work directory minus 10 GiB.

Usage (scripts/bench.sh calls it with BENCH_ONLY=daemon):
  daemon_rpc.py --rangefetch BIN --work DIR --url 8=http://127.0.0.1:P/file.bin --url 100=http://.../small.bin
                [--results DIR]   (writes daemon.md and daemon.json there)
A --url without "N=" serves every active count. stdlib only.
"""

import argparse
import http.client
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse

MIB = 1 << 20
GIB = 1 << 30
KEYS = ["gid", "status", "completedLength", "totalLength", "downloadSpeed"]
METHODS = ("aria2.tellActive", "aria2.tellWaiting")
TOOLS = tuple(os.environ.get("BENCH_DAEMON_TOOLS", "aria2c rangefetch").split())

ACTIVE_COUNTS = [int(n) for n in os.environ.get("BENCH_DAEMON_ACTIVE", "8 100").split()]
WAITING = int(os.environ.get("BENCH_DAEMON_WAITING", "200"))
RUNS = int(os.environ.get("BENCH_DAEMON_RUNS", "3"))
WINDOW_S = float(os.environ.get("BENCH_DAEMON_WINDOW_S", "15"))
GAP_S = float(os.environ.get("BENCH_DAEMON_GAP_MS", "10")) / 1000
SETTLE_S = float(os.environ.get("BENCH_DAEMON_SETTLE_S", "2"))
DISK_MARGIN = 10 * GIB

lines = []


def say(text=""):
    print(text, flush=True)
    lines.append(text)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def content_length(url):
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=10)
    connection.request("HEAD", parts.path)
    response = connection.getresponse()
    response.read()
    connection.close()
    return int(response.getheader("Content-Length"))


def percentile(values, fraction):
    """Nearest rank: the smallest value with at least `fraction` of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, -(-int(fraction * len(ordered) * 1000) // 1000))  # ceil without float drift
    return ordered[min(len(ordered), rank) - 1]


class Client:
    """aria2 JSON-RPC over one keep-alive HTTP/1.1 connection."""

    def __init__(self, port, secret):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.token = "token:" + secret
        self.next_id = 0

    def timed(self, method, *params):
        """(seconds, result): the time from sending the request to the response's last byte."""
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": str(self.next_id), "method": method,
                           "params": [self.token, *params]}).encode()
        started = time.perf_counter()
        self.connection.request("POST", "/jsonrpc", body, {"Content-Type": "application/json"})
        response = self.connection.getresponse()
        data = response.read()
        elapsed = time.perf_counter() - started
        answer = json.loads(data)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return elapsed, answer["result"]

    def call(self, method, *params):
        return self.timed(method, *params)[1]

    def close(self):
        self.connection.close()


def start(tool, binary, port, secret, directory, active):
    downloads = os.path.join(directory, "downloads")
    os.makedirs(downloads)
    log = open(os.path.join(directory, "daemon.log"), "wb")
    if tool == "aria2c":
        argv = [binary, "--enable-rpc", f"--rpc-listen-port={port}", f"--rpc-secret={secret}", f"--dir={downloads}",
                f"--max-concurrent-downloads={active}", "--file-allocation=none", "--allow-overwrite=true",
                "--auto-file-renaming=false", "--no-conf", "--quiet", "--max-download-result=1000"]
    else:
        state = os.path.join(directory, "state")
        argv = [binary, "daemon", "--rpc-listen-port", str(port), "--rpc-secret", secret, "--state-dir", state,
                "--dir", downloads, "--max-concurrent-downloads", str(active)]
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{tool} exited with {process.returncode} at start; see {log.name}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{tool} did not listen on port {port} within 20 s")


def stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def one_run(tool, binary, url, active, work):
    """One daemon, its downloads, the window of calls; returns the run's figures."""
    directory = os.path.join(work, f"daemon-{tool}-{active}")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    port, secret = free_port(), secrets.token_hex(16)
    process = start(tool, binary, port, secret, directory, active)
    client = Client(port, secret)
    try:
        total = active + WAITING
        add_started = time.monotonic()
        for index in range(total):
            client.call("aria2.addUri", [url], {"out": f"d{index:05d}.bin"})
        add_s = time.monotonic() - add_started
        # Running and flowing: ACTIVE active, bytes arriving.
        deadline = time.monotonic() + 60
        while True:
            stat = client.call("aria2.getGlobalStat")
            if int(stat["numActive"]) == active and int(stat["downloadSpeed"]) > 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{tool}: not {active} active and flowing after 60 s: {stat}")
            time.sleep(0.1)
        time.sleep(SETTLE_S)
        latencies = {method: [] for method in METHODS}
        counts = {method: [] for method in METHODS}
        speeds, active_seen, waiting_seen = [], [], []
        next_stat = 0.0
        window_end = time.monotonic() + WINDOW_S
        turn = 0
        while time.monotonic() < window_end:
            if time.monotonic() >= next_stat:
                stat = client.call("aria2.getGlobalStat")
                speeds.append(int(stat["downloadSpeed"]))
                active_seen.append(int(stat["numActive"]))
                waiting_seen.append(int(stat["numWaiting"]))
                next_stat = time.monotonic() + 0.5
            method = METHODS[turn % 2]
            turn += 1
            params = [KEYS] if method == "aria2.tellActive" else [0, 1000, KEYS]
            elapsed, result = client.timed(method, *params)
            latencies[method].append(elapsed * 1000)
            counts[method].append(len(result))
            time.sleep(GAP_S)
        figures = {"tool": tool, "active": active, "add_s": round(add_s, 2),
                   "mib_per_s_median": round(statistics.median(speeds) / MIB, 1),
                   "mib_per_s_min": round(min(speeds) / MIB, 1),
                   "num_active": [min(active_seen), max(active_seen)],
                   "num_waiting": [min(waiting_seen), max(waiting_seen)]}
        for method in METHODS:
            values = latencies[method]
            short = method.split(".")[1]
            figures[short] = {"calls": len(values), "p50_ms": round(percentile(values, 0.5), 2),
                              "p99_ms": round(percentile(values, 0.99), 2), "max_ms": round(max(values), 2),
                              "entries": [min(counts[method]), max(counts[method])]}
        return figures
    finally:
        client.close()
        stop(process)
        shutil.rmtree(directory, ignore_errors=True)
        subprocess.run(["sync"], check=False)


def spread(values):
    return {"median": round(statistics.median(values), 2), "min": min(values), "max": max(values), "runs": values}


def cell(s, digits=1):
    if s["min"] == s["max"]:
        return f"{s['median']:.{digits}f}"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rangefetch", required=True)
    parser.add_argument("--aria2c", default=shutil.which("aria2c") or "aria2c")
    parser.add_argument("--work", required=True, help="a directory on disk (not tmpfs) for the downloads")
    parser.add_argument("--url", action="append", required=True, help="[ACTIVE=]URL of the file downloaded")
    parser.add_argument("--results", help="writes daemon.md and daemon.json there")
    arguments = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    urls = {}
    for given in arguments.url:
        count, equals, url = given.partition("=")
        if equals and count.isdigit():
            urls[int(count)] = url
        else:
            urls[None] = given
    binaries = {"aria2c": arguments.aria2c, "rangefetch": os.path.realpath(arguments.rangefetch)}
    versions = {tool: subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
                for tool, binary in binaries.items()}
    filesystem = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", arguments.work], capture_output=True,
                                text=True).stdout.strip()
    started = time.strftime("%Y-%m-%d %H:%M")
    say(f"# Daemon: RPC latency under load, {started}")
    say(f"{RUNS} runs per tool and active count, alternating aria2c and rangefetch; medians with (min–max) over "
        f"the runs, then every run. Each run: ACTIVE + {WAITING} downloads added, max-concurrent-downloads = ACTIVE, "
        f"then {WINDOW_S:.0f} s of calls alternating tellActive and tellWaiting(0,1000) (keys {','.join(KEYS)}) on one "
        f"keep-alive connection, {GAP_S * 1000:.0f} ms apart. Downloads on {filesystem} ({arguments.work}); "
        f"{os.cpu_count()} CPUs, Linux {platform.release()}.")
    say("tools: " + " / ".join(versions.values()))
    report = {"date": started, "runs": RUNS, "waiting": WAITING, "window_s": WINDOW_S, "gap_ms": GAP_S * 1000,
              "keys": KEYS, "tools": versions, "host": {"cpus": os.cpu_count(), "kernel": platform.release(),
                                                          "work_dir": arguments.work, "filesystem": filesystem},
              "sections": []}
    for active in ACTIVE_COUNTS:
        url = urls.get(active) or urls.get(None)
        size = content_length(url)
        free = shutil.disk_usage(arguments.work).free
        needed = active * size + 600 * MIB * (WINDOW_S + 30)
        if needed > free - DISK_MARGIN:
            say(f"\n{active} active: skipped, it may need {needed / GIB:.0f} GiB and {free / GIB:.0f} GiB are free")
            continue
        say()
        say(f"running {active} active + {WAITING} waiting, {size / MIB:.0f} MiB each ({url})")
        runs = {tool: [] for tool in TOOLS}
        errors = {}
        for index in range(RUNS):
            for tool in TOOLS:
                if tool in errors:
                    continue
                try:
                    figures = one_run(tool, binaries[tool], url, active, arguments.work)
                except Exception as error:  # noqa: BLE001 - a failed tool is reported, the others go on
                    errors[tool] = f"run {index + 1}: {error}"
                    say(f"  {tool}: failed, {errors[tool]}")
                    continue
                runs[tool].append(figures)
                print(f"  run {index + 1}/{RUNS} {tool}: tellActive p50 {figures['tellActive']['p50_ms']} p99 "
                      f"{figures['tellActive']['p99_ms']} ms, tellWaiting p50 {figures['tellWaiting']['p50_ms']} p99 "
                      f"{figures['tellWaiting']['p99_ms']} ms, {figures['mib_per_s_median']} MiB/s", flush=True)
        section = {"active": active, "file_bytes": size, "url": url, "errors": errors, "tools": {}}
        say()
        say(f"## {active} active, {WAITING} waiting ({size / MIB:.0f} MiB files from nginx on loopback)")
        say("| tool | runs | method | calls/run | entries | p50 ms | p99 ms | p50 every run | p99 every run | "
            "download MiB/s (median of 0.5 s samples) |")
        say("|---|---|---|---|---|---|---|---|---|---|")
        medians = {}
        for tool in TOOLS:
            if not runs[tool]:
                say(f"| {tool} | 0 | failed: {errors.get(tool, '')} | | | | | | | |")
                continue
            speed = spread([r["mib_per_s_median"] for r in runs[tool]])
            record = {"runs": runs[tool], "mib_per_s": speed}
            for method in METHODS:
                short = method.split(".")[1]
                p50 = spread([r[short]["p50_ms"] for r in runs[tool]])
                p99 = spread([r[short]["p99_ms"] for r in runs[tool]])
                record[short] = {"p50_ms": p50, "p99_ms": p99}
                medians[(tool, short)] = (p50["median"], p99["median"])
                calls = statistics.median(r[short]["calls"] for r in runs[tool])
                entries = sorted({n for r in runs[tool] for n in r[short]["entries"]})
                label = "tellWaiting(0,1000)" if short == "tellWaiting" else short
                say(f"| {tool} | {len(runs[tool])} | {label} | {calls:.0f} | {min(entries)}–{max(entries)} | "
                    f"{cell(p50, 2)} | {cell(p99, 2)} | {' '.join(f'{v:.2f}' for v in p50['runs'])} | "
                    f"{' '.join(f'{v:.2f}' for v in p99['runs'])} | {cell(speed, 0)} |")
            section["tools"][tool] = record
        ratios = {}
        for method in METHODS:
            short = method.split(".")[1]
            if ("aria2c", short) in medians and ("rangefetch", short) in medians:
                a, r = medians[("aria2c", short)], medians[("rangefetch", short)]
                ratios[short] = {"p50": round(r[0] / a[0], 2) if a[0] else None,
                                 "p99": round(r[1] / a[1], 2) if a[1] else None}
        if ratios:
            section["rangefetch_over_aria2c"] = ratios
            say("rangefetch / aria2c (medians; below 1: rangefetch answers faster): " + "; ".join(
                f"{short} p50 {ratio['p50']:.2f}, p99 {ratio['p99']:.2f}" for short, ratio in ratios.items()))
        report["sections"].append(section)
    if arguments.results:
        os.makedirs(arguments.results, exist_ok=True)
        with open(os.path.join(arguments.results, "daemon.md"), "w") as handle:
            handle.write("\n".join(lines) + "\n")
        with open(os.path.join(arguments.results, "daemon.json"), "w") as handle:
            json.dump(report, handle, indent=1)
            handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
