#!/usr/bin/env python3
"""Side-by-side download benchmark: rangefetch against curl, aria2c and axel in one run.

Called by scripts/bench.sh, which installs the tools, builds rangefetch (release) and the relay,
generates the file and starts nginx. Each command runs BENCH_RUNS times under /usr/bin/time;
the table shows medians of wall time, CPU time (user+sys) and peak RSS, and speed ratios.
Outputs are removed and `sync`ed between runs so one run's dirty pages never slow the next.

Environment: RANGEFETCH (binary), DIRECT_URL, CAPPED_URL, SOURCE (the served file), WORK
(scratch directory), BENCH_RUNS (3), BENCH_ONLY (all|unthrottled|capped|checksum|journal|hash),
BENCH_TOOLS (rangefetch curl aria2c axel), RF_FLAGS (extra rangefetch flags), RESULTS (file).
"""

import json
import os
import shlex
import statistics
import subprocess
import sys
import time

RF = os.environ["RANGEFETCH"]
DIRECT = os.environ["DIRECT_URL"]
CAPPED = os.environ.get("CAPPED_URL", "")
SOURCE = os.environ["SOURCE"]
WORK = os.environ["WORK"]
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
ONLY = os.environ.get("BENCH_ONLY", "all")
TOOLS = os.environ.get("BENCH_TOOLS", "rangefetch curl aria2c axel").split()
RF_FLAGS = shlex.split(os.environ.get("RF_FLAGS", ""))
RATE_MIB = os.environ.get("BENCH_RATE_MIB", "25")
SIZE = os.path.getsize(SOURCE)
OUT = os.path.join(WORK, "out")
TARGET = os.path.join(OUT, "file.bin")
lines = []


def say(text=""):
    print(text, flush=True)
    lines.append(text)


def clean():
    for name in os.listdir(OUT):
        os.remove(os.path.join(OUT, name))
    subprocess.run(["sync"], check=True)


def timed(argv):
    """Runs argv under /usr/bin/time; returns (wall, cpu, rss_mib, stdout)."""
    stats = os.path.join(WORK, "time.txt")
    result = subprocess.run(["/usr/bin/time", "-o", stats, "-f", "%e %U %S %M"] + argv,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {result.returncode}: {result.stderr.strip()[-300:]}")
    wall, user, system, rss = open(stats).read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss) / 1024, result.stdout


def identical():
    return subprocess.run(["cmp", "-s", SOURCE, TARGET]).returncode == 0


def commands(url, which):
    """The commands of a scenario: (label, argv)."""
    rf = [RF, "-q"] + RF_FLAGS
    table = {
        "rangefetch -n 16": rf + ["-n", "16", url, "-o", TARGET],
        "rangefetch -n 1": rf + ["-n", "1", url, "-o", TARGET],
        "curl -o": ["curl", "-s", "-o", TARGET, url],
        "aria2c -x16 -s16 -k1M": ["aria2c", "-q", "-x16", "-s16", "-k1M", "--file-allocation=none",
                                  "--allow-overwrite=true", "-d", OUT, "-o", "file.bin", url],
        "axel -n 16": ["axel", "-q", "-n", "16", "-o", TARGET, url],
    }
    keep = lambda label: label.split()[0] in TOOLS
    return [(label, table[label]) for label in which if keep(label)]


def measure(label, argv, runs, post=None):
    samples = []
    ok = True
    for index in range(runs):
        clean()
        try:
            wall, cpu, rss, stdout = timed(argv)
        except RuntimeError as error:
            say(f"  {label}: FAILED: {error}")
            return None
        if index == 0:
            ok = identical()
        samples.append((wall, cpu, rss, post(stdout) if post else None))
    clean()
    return {
        "label": label,
        "wall": statistics.median(s[0] for s in samples),
        "cpu": statistics.median(s[1] for s in samples),
        "rss": statistics.median(s[2] for s in samples),
        "extra": [s[3] for s in samples],
        "ok": ok,
        "runs": runs,
    }


def table(title, rows, baselines=("curl -o", "aria2c -x16 -s16 -k1M")):
    say()
    say(f"## {title}")
    heads = ["command", "runs", "median s", "MiB/s", "CPU s", "RSS MiB"] + \
        [f"x {b.split()[0]}" for b in baselines] + ["bytes"]
    say("| " + " | ".join(heads) + " |")
    say("|" + "---|" * len(heads))
    base = {r["label"]: r for r in rows if r}
    for r in rows:
        if not r:
            continue
        cells = [r["label"], str(r["runs"]), f"{r['wall']:.2f}", f"{SIZE / 2**20 / r['wall']:.0f}",
                 f"{r['cpu']:.2f}", f"{r['rss']:.0f}"]
        for b in baselines:
            cells.append(f"{base[b]['wall'] / r['wall']:.2f}" if b in base else "-")
        cells.append("OK" if r["ok"] else "FAIL")
        say("| " + " | ".join(cells) + " |")


def finish_event(stdout):
    for line in stdout.splitlines():
        if '"event":"finish"' in line:
            return json.loads(line)
    return {}


def main():
    os.makedirs(OUT, exist_ok=True)
    say(f"# rangefetch benchmark, {time.strftime('%Y-%m-%d %H:%M')}")
    say(f"file {SIZE / 2**20:.0f} MiB from nginx on 127.0.0.1; {RUNS} runs per command unless noted "
        f"(single streams through the cap run once); medians")
    versions = [subprocess.run([RF, "--version"], capture_output=True, text=True).stdout.strip(),
                subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
                subprocess.run(["aria2c", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
                subprocess.run(["axel", "--version"], capture_output=True, text=True).stdout.split("\n")[0]]
    say("tools: rangefetch " + " / ".join(versions))
    everything = ONLY == "all"

    if everything or ONLY == "unthrottled":
        rows = [measure(label, argv, RUNS) for label, argv in
                commands(DIRECT, ["rangefetch -n 16", "curl -o", "aria2c -x16 -s16 -k1M", "axel -n 16"])]
        table("Unthrottled loopback", rows)

    if CAPPED and (everything or ONLY == "capped"):
        rows = []
        for label, argv in commands(CAPPED, ["rangefetch -n 1", "rangefetch -n 16", "curl -o",
                                             "aria2c -x16 -s16 -k1M", "axel -n 16"]):
            single = label in ("rangefetch -n 1", "curl -o")
            rows.append(measure(label, argv, int(os.environ.get("BENCH_RUNS_SLOW", "1")) if single else RUNS))
        table(f"Per-connection cap {RATE_MIB} MiB/s (rf-relay in front of nginx)", rows)
        by = {r["label"]: r for r in rows if r}
        if "rangefetch -n 1" in by and "rangefetch -n 16" in by:
            say(f"rangefetch -n 16 vs -n 1: {by['rangefetch -n 1']['wall'] / by['rangefetch -n 16']['wall']:.1f}x faster")

    if "rangefetch" in TOOLS and (everything or ONLY == "journal"):
        rows = []
        for url, where in ((DIRECT, "unthrottled"), (CAPPED, "capped")):
            if not url:
                continue
            base = [RF, "-q", "-n", "16", url, "-o", TARGET]
            rows.append(measure(f"journal on, {where}", base, RUNS))
            rows.append(measure(f"--no-journal, {where}", base + ["--no-journal"], RUNS))
        table("Checkpoint overhead (journal every 1 s: fdatasync + atomic replace)", rows, baselines=())

    if "rangefetch" in TOOLS and (everything or ONLY == "checksum"):
        digest = subprocess.run(["openssl", "dgst", "-sha256", "-r", SOURCE], capture_output=True,
                                text=True, check=True).stdout.split()[0]
        rows, tails_text = [], []
        for url, where in ((DIRECT, "unthrottled"), (CAPPED, "capped")):
            if not url:
                continue
            base = [RF, "--json", "-n", "16", url, "-o", TARGET]
            rows.append(measure(f"no checksum, {where}", base, RUNS))
            row = measure(f"--checksum sha256, {where}", base + ["--checksum", f"sha256={digest}"], RUNS,
                          post=finish_event)
            rows.append(row)
            if row:
                tails = [float(e.get("verification_seconds") or "nan") * 1000 for e in row["extra"]]
                tails_text.append(f"last byte -> verified ({where}): median {statistics.median(tails):.0f} ms "
                    f"(runs: {', '.join(f'{t:.0f}' for t in tails)} ms; includes the final fdatasync)")
        table("Verification cost (incremental SHA-256 while downloading)", rows, baselines=())
        for text in tails_text:
            say(text)

    if everything or ONLY == "hash":
        subprocess.run(["cat", SOURCE], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        rows = []
        for label, argv in (("rangefetch verify --print-digest sha256", [RF, "verify", SOURCE, "--print-digest", "sha256"]),
                            ("sha256sum", ["sha256sum", SOURCE]),
                            ("openssl dgst -sha256", ["openssl", "dgst", "-sha256", SOURCE]),
                            ("rangefetch verify --print-digest md5", [RF, "verify", SOURCE, "--print-digest", "md5"]),
                            ("md5sum", ["md5sum", SOURCE])):
            walls = []
            for _ in range(RUNS):
                wall, cpu, rss, _ = timed(argv)
                walls.append(wall)
            rows.append((label, statistics.median(walls)))
        say()
        say("## Hashing throughput (file in page cache)")
        say("| command | median s | MiB/s |")
        say("|---|---|---|")
        for label, wall in rows:
            say(f"| {label} | {wall:.2f} | {SIZE / 2**20 / wall:.0f} |")

    results = os.environ.get("RESULTS")
    if results:
        with open(results, "w") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
