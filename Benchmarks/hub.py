#!/usr/bin/env python3
"""The hub section: one Hugging Face repository through our fake Hub, `rangefetch hf://` against
huggingface_hub's own clients, in one run.

Called by scripts/bench.sh (BENCH_ONLY=hub), in two steps:
  hub.py prepare DATA_DIR REPOS_JSON
      makes the repository's files under DATA_DIR once (dd from /dev/urandom; a file already there
      with the right size is kept, so later runs reuse them) and writes the fake Hub's --repos
      file: BENCH_HUB_LARGE_MB ("1024 256 256 256") LFS files of that many MiB, served by the
      CDN origin, and BENCH_HUB_SMALL_FILES (30) small ones kept in git (0.7 KiB to 1.5 MiB),
      served by the Hub origin, all in the model HUB_REPO_ID at one commit on main.
  hub.py run
      with the fake Hub (Tests/Support/fake_hub.py) started by bench.sh on those files, its CDN
      capping every connection's body at BENCH_HUB_CAP bytes/s; runs, alternating,
        rangefetch hf://REPO                                  (-q, RF_FLAGS)
        huggingface_hub 2.4.0   snapshot_download(REPO)       (one connection per file, 8 files at once)
        huggingface_hub 0.36.x  snapshot_download(REPO) with hf_transfer 0.1.9
                                (HF_HUB_ENABLE_HF_TRANSFER=1: one file at a time, each over 50 MiB
                                in 10 MiB chunks on up to 100 connections)
      each into a fresh HF_HUB_CACHE (and HF_HOME, so no token) under OUT, on disk; every file of
      the snapshot is compared with its source after every run, then OUT is deleted and synced.
      Wall time, CPU seconds and peak RSS come from /usr/bin/time (bench.py's timed()); the CDN's
      TCP connections of each run from the fake's log. Writes RESULTS_DIR/hub.md and hub.json.

Environment: bench.py's (RANGEFETCH, WORK, OUT, RESULTS_DIR, BENCH_RUNS, BENCH_TIMEOUT_S,
RF_FLAGS), and HUB_READY (the fake's ready file: its Hub and CDN URLs), HUB_REPOS (the repos
file prepare wrote), HUB_ROOT (DATA_DIR), HUB_LOG (the fake's request log), BENCH_HUB_CAP
(8700000), HUB_HF2_PYTHON and HUB_HF036_PYTHON (the venvs' pythons). stdlib only.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys

import bench
from bench import MIB, RUNS, Row, say

REPO_ID = os.environ.get("HUB_REPO_ID", "rangefetch-bench/hub-model")
SMALL_SIZES = (700, 2300, 16384, 120000, 1500000)  # config, tokenizer-like files: cycled
TARGET_VS_ONE_PER_FILE = 0.5  # rangefetch's wall time at most this of huggingface_hub 2.4.0's
TARGET_VS_HF_TRANSFER = 1.0   # and no slower than hf_transfer's
TARGET_RSS_MIB = 64
BIMODAL_PERCENT = 40          # a spread (max - min) over this much of the median is called out
SNAPSHOT = "import sys; from huggingface_hub import snapshot_download; snapshot_download(sys.argv[1])"


# -- prepare ---------------------------------------------------------------------------------------

def made(path, size, block):
    """path with size random bytes (dd from /dev/urandom in blocks of `block`), unless it has them."""
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    partial = path + ".partial"
    subprocess.run(["dd", "if=/dev/urandom", f"of={partial}", f"bs={block}", f"count={size // block}",
                    "iflag=fullblock", "status=none"], check=True)
    os.chmod(partial, 0o644)
    os.replace(partial, path)


def prepare(data_dir, repos_path):
    large = [int(mb) for mb in os.environ.get("BENCH_HUB_LARGE_MB", "1024 256 256 256").split()]
    small = int(os.environ.get("BENCH_HUB_SMALL_FILES", "30"))
    os.makedirs(data_dir, exist_ok=True)
    files = []
    for index, mb in enumerate(large, 1):
        source = f"lfs-{mb}MiB-{index}.bin"  # distinct bytes per file: the Hub shares equal blobs
        made(os.path.join(data_dir, source), mb * MIB, MIB)
        files.append({"path": f"model-{index:05d}-of-{len(large):05d}.safetensors", "lfs": True, "file": source})
    for index in range(small):
        size = SMALL_SIZES[index % len(SMALL_SIZES)]
        source = f"small-{index:03d}-{size}.bin"
        made(os.path.join(data_dir, source), size, size)
        files.append({"path": f"extra/file-{index:03d}.bin", "lfs": False, "file": source})
    commit = hashlib.sha1(json.dumps(files, sort_keys=True).encode()).hexdigest()
    with open(repos_path, "w") as handle:
        json.dump({"repos": [{"type": "model", "id": REPO_ID, "branches": {"main": commit},
                              "commits": {commit: files}}]}, handle, indent=1)
    print(f"bench: hub repository {REPO_ID}: {len(large)} LFS files ({' + '.join(f'{mb} MiB' for mb in large)}) "
          f"and {small} small ones, under {data_dir}", file=sys.stderr)


# -- run -------------------------------------------------------------------------------------------

def cpu_seconds(pid):
    """User + system CPU seconds of a running process, from /proc."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class FakeLog:
    """bench.measure_alternating's log_reader for the fake's JSON-lines log: the distinct TCP
    connections of the CDN's GETs logged after offset. It also notes the fake's CPU seconds since
    its last call (the fake is idle between runs: the run's), in the order of the runs."""

    def __init__(self, pid):
        self.pid = pid
        self.cpu = cpu_seconds(pid)
        self.run_cpu = []

    def __call__(self, log, offset):
        cpu = cpu_seconds(self.pid)
        self.run_cpu.append(cpu - self.cpu)
        self.cpu = cpu
        with open(log, "rb") as handle:
            handle.seek(offset)
            records = [json.loads(line) for line in handle.read().splitlines() if line.strip()]
        return len({r["conn"] for r in records if r["origin"] == "cdn" and r["method"] == "GET"}), "HTTP/1.1"


def version_of(python, package):
    return bench.first_line([python, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"])


def runs_table(rows, fake_cpu):
    """Every run's figures, round by round (the order the runs were made in, and fake_cpu's: a
    failed entry is not run again); their JSON."""
    say()
    say("Every run (in the order run: round by round, the tools alternating):")
    say("| round | command | wall s | CPU s (user+sys) | peak RSS MiB | CDN TCP conns | fake Hub CPU s | bytes |")
    say("|---|---|---|---|---|---|---|---|")
    fake_cpu, records = list(fake_cpu), []
    for index in range(RUNS):
        for row in rows:
            if index < len(row.samples):
                s, cpu = row.samples[index], fake_cpu.pop(0)
                records.append({"round": index + 1, "label": row.label, "fake_hub_cpu_s": round(cpu, 2)})
                say(f"| {index + 1} | {row.label} | {s.wall_s:.2f} | {s.cpu_s:.2f} | {s.rss_mib:.0f} | "
                    f"{s.tcp_connections} | {cpu:.2f} | {'OK' if s.bytes_ok else 'DIFFER'} |")
    return records


def verdicts(rf, one_per_file, transfer):
    """Ratios of medians (and of each round's pair) against the targets: (lines, JSON)."""
    found, record = [], {}
    for other, key, target in ((one_per_file, "vs_one_connection_per_file", TARGET_VS_ONE_PER_FILE),
                               (transfer, "vs_hf_transfer", TARGET_VS_HF_TRANSFER)):
        if not (rf.samples and other.samples):
            found.append(f"rangefetch / {other.label}: no figure ({rf.error or other.error})")
            record[key] = None
            continue
        ratio = rf.spread("wall_s")["median"] / other.spread("wall_s")["median"]
        rounds = [a.wall_s / b.wall_s for a, b in zip(rf.samples, other.samples)]
        met = ratio <= target
        record[key] = {"ratio": round(ratio, 3), "per_round": [round(r, 3) for r in rounds], "target": target,
                       "met": met}
        found.append(f"rangefetch / {other.label}: {ratio:.2f}x the wall time (medians; each round's "
                     f"pair {min(rounds):.2f}–{max(rounds):.2f}x); target ≤ {target}x: {'met' if met else 'NOT met'}")
    if rf.samples:
        rss = rf.spread("rss_mib")
        met = rss["max"] <= TARGET_RSS_MIB
        record["rangefetch_peak_rss_mib"] = {"max": rss["max"], "target": TARGET_RSS_MIB, "met": met}
        found.append(f"rangefetch's peak RSS: {rss['max']:.0f} MiB at most (median {rss['median']:.0f}); target "
                     f"≤ {TARGET_RSS_MIB} MiB: {'met' if met else 'NOT met'}")
    checks = [v["met"] for v in record.values() if v]
    record["all_met"] = len(checks) == 3 and all(checks)
    found.append("Targets: " + ("all met." if record["all_met"] else "not all met."))
    return found, record


def bimodal_notes(rows):
    notes = []
    for row in rows:
        if len(row.samples) < 2:
            continue
        for attribute, name in (("wall_s", "wall time"), ("cpu_s", "CPU time"), ("rss_mib", "peak RSS")):
            spread = row.spread(attribute)
            percent = (spread["max"] - spread["min"]) / spread["median"] * 100 if spread["median"] else 0
            if percent > BIMODAL_PERCENT:
                notes.append(f"{row.label}: {name} spreads {percent:.0f}% of its median (runs "
                             f"{', '.join(f'{v:g}' for v in spread['runs'])}): read it as bimodal, not as its median.")
    return notes or [f"No figure spreads over {BIMODAL_PERCENT}% of its median (wall, CPU, RSS)."]


def run():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # through timed()'s `finally`
    with open(os.environ["HUB_READY"]) as handle:
        ready = json.load(handle)
    hub_url = ready["hub"]
    with open(os.environ["HUB_REPOS"]) as handle:
        repo = json.load(handle)["repos"][0]
    root, log = os.environ["HUB_ROOT"], os.environ["HUB_LOG"]
    cap = int(os.environ.get("BENCH_HUB_CAP", "8700000"))
    hf2, hf036 = os.environ["HUB_HF2_PYTHON"], os.environ["HUB_HF036_PYTHON"]
    (commit, files), = repo["commits"].items()
    snapshot = os.path.join(bench.OUT, "hub", "models--" + repo["id"].replace("/", "--"), "snapshots", commit)
    pairs = [(os.path.join(root, f["file"]), os.path.join(snapshot, f["path"])) for f in files]
    large = [os.path.getsize(source) for (source, _), f in zip(pairs, files) if f["lfs"]]
    total = sum(os.path.getsize(source) for source, _ in pairs)

    hub_version, hub036_version = version_of(hf2, "huggingface_hub"), version_of(hf036, "huggingface_hub")
    transfer_version = version_of(hf036, "hf_transfer")
    versions = {"rangefetch": bench.first_line([bench.RF, "--version"]),
                "huggingface_hub": f"huggingface_hub {hub_version}",
                "huggingface_hub+hf_transfer": f"huggingface_hub {hub036_version} with hf_transfer {transfer_version}"}
    bench.begin_report("rangefetch hub benchmark", versions,
                       "the repository's files are read into the page cache before the first run",
                       cdn_cap_bytes_per_s=cap)
    # Each run in a fresh cache and home (no token, no leftovers), and without progress bars
    # (rangefetch runs with -q).
    env = ["env", "-u", "HF_TOKEN", f"HF_ENDPOINT={hub_url}", f"HF_HOME={bench.OUT}/home",
           f"HF_HUB_CACHE={bench.OUT}/hub", "HF_HUB_DISABLE_TELEMETRY=1", "HF_HUB_DISABLE_PROGRESS_BARS=1"]
    rf = Row("rangefetch hf://", "rangefetch", True)
    one_per_file = Row(f"huggingface_hub {hub_version} snapshot_download", "huggingface_hub")
    transfer = Row(f"huggingface_hub {hub036_version} + hf_transfer {transfer_version}", "hf_transfer")
    entries = [(rf, env + [bench.RF, "-q"] + bench.RF_FLAGS + [f"hf://{repo['id']}"]),
               (one_per_file, env + [hf2, "-c", SNAPSHOT, repo["id"]]),
               (transfer, env + ["HF_HUB_ENABLE_HF_TRANSFER=1", hf036, "-c", SNAPSHOT, repo["id"]])]
    for source, _ in pairs:
        bench.warm(source)
    title = (f"Hub: {len(large)} LFS files ({' + '.join(f'{size // MIB} MiB' for size in large)}) and "
             f"{len(pairs) - len(large)} small ones, {total / MIB:.0f} MiB, CDN capped at {cap / 1e6:g} MB/s per connection")
    say()
    say(f"running {title}: {len(entries)} commands x {RUNS} runs, alternating")
    fake_log = FakeLog(ready["pid"])
    bench.measure_alternating(entries, None, RUNS, check=lambda: bench.same_files(pairs), access_log=log,
                              log_reader=fake_log)
    rows = [row for row, _ in entries]
    found, targets = verdicts(rf, one_per_file, transfer)
    notes = [f"The fake Hub (Tests/Support/fake_hub.py, Python, on loopback) redirects each LFS file to its CDN "
             f"origin, which paces every response body at {cap:,} bytes/s per TCP connection; the small files "
             "come uncapped from the Hub origin. Tree listings in pages of 1000; signed URLs valid for an hour "
             "(none expires during a run); no rate limit.",
             f"huggingface_hub {hub_version} fetches each file over one connection, 8 files at once. With "
             f"HF_HUB_ENABLE_HF_TRANSFER=1, huggingface_hub {hub036_version}'s snapshot_download fetches one file "
             "at a time (it drops to 1 worker) and hands each file over 50 MiB to hf_transfer (10 MiB chunks, up "
             "to 100 connections at once), smaller ones over one connection; before hf_transfer starts, it opens "
             "a plain GET of the whole file and drops it unread.",
             "Every file of the snapshot is compared with its source after every run (bytes); peak RSS is the "
             "tool's largest process (/usr/bin/time); CDN TCP conns: distinct connections in the fake's log. "
             "The fake is one Python process on the same CPUs as the clients: its CPU seconds in a run (fake "
             "Hub CPU s, below) near or over the run's wall time say it may be what holds a many-connection "
             "client back.",
             "fdatasync: rangefetch fdatasyncs every file before it exits, so its wall time includes the flush "
             "to disk; huggingface_hub and hf_transfer do not."]
    section = bench.table("hub", title, rows, total, notes + bimodal_notes(rows), baselines=False,
                          extra={"kind": "hub", "repo": repo["id"], "files": len(pairs),
                                 "large_bytes": large, "cdn_cap_bytes_per_s": cap, "targets": targets})
    section["fake_hub_cpu"] = runs_table(rows, fake_log.run_cpu)
    say()
    for line in found:
        say(line)
    section["verdicts"] = found
    bench.write_report("hub")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["prepare"] and len(sys.argv) == 4:
        prepare(sys.argv[2], sys.argv[3])
    elif sys.argv[1:] == ["run"]:
        sys.exit(run())
    else:
        sys.exit("usage: hub.py prepare DATA_DIR REPOS_JSON | hub.py run")
