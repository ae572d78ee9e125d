#!/usr/bin/env python3
"""Side-by-side download benchmark: rangefetch against curl, aria2c and axel in one run.

Called by scripts/bench.sh, which installs the tools, builds rangefetch (release), the relay and
the WAN line, generates the files, starts the servers and then runs this file (stdlib only).

Scenarios (each with every tool):
  unthrottled  nginx on 127.0.0.1, nothing in between
  capped       rf-relay in front of nginx: every TCP connection capped at BENCH_RATE_MIB MiB/s
  wan          client and server in two network namespaces joined by rf-wanem (rate, delay, loss)
and each again over HTTPS (ids with -https: TLS with HTTP/1.1 only; with -h2: HTTP/2 offered by
ALPN, which curl and rangefetch take and aria2c and axel, speaking HTTP/1.1, do not). The server's
access log gives every run's TCP connections and protocol, so "16 connections" is checked, not
assumed (HTTP/2 can multiplex many ranges onto one connection).
Batch sections (many files, rangefetch -i against aria2c -i):
  many         BENCH_MANY_FILES (20000) files of BENCH_MANY_KIB (4) KiB from nginx, 16 at once, against
               curl -Z and aria2c: to disk, to tmpfs, and over HTTPS with HTTP/2 offered to tmpfs
  batchcapped  8 files of 128 MiB through the capped relay, 16 connections in all
Sections for rangefetch alone: journal (checkpoint cost), checksum (incremental SHA-256 cost),
hash (digest throughput against sha256sum, openssl and md5sum), fleet (BENCH_FLEET_CLIENTS
processes at once straight to nginx, then through nginx's slice cache cold and warm: wall time of
the whole fleet and the bytes the origin served, from its access log; docs/fleet.md).
Lists of millions (issue 26):
  lists        generated -i lists of BENCH_LIST_LINES lines: time from start to the first request
               and peak RSS, with --shard 1/100000 and without; then BENCH_LIST_FILES (100000)
               files of 4 KiB from nginx, rangefetch -i against aria2c -i, 16 at once
  caps         -n auto against -n 16, 32 and 64 (aria2c and axel at their 16 alongside) through
               relays capping each connection at BENCH_RATE_MIB and at BENCH_CAPS_RATES MiB/s

How a number is made, so that tools are compared under the same conditions:
  * the output directory is on disk (bench.sh refuses tmpfs); the served file is read once before
    each scenario, so every tool finds it in the page cache alike;
  * runs alternate (curl, aria2c, axel, rangefetch..., then again), so slow drift (another job,
    thermal, write-back) spreads over all tools instead of landing on one;
  * before and after every run the outputs are deleted and `sync`ed, so one run's dirty pages are
    never flushed during the next; every run's bytes are compared with the source (cmp);
  * /usr/bin/time gives wall time, CPU seconds (user+sys) and peak RSS of the tool itself;
  * tables show the median with the min-max spread and every run's wall time, so a bimodal figure
    is visible rather than averaged away.

Environment: RANGEFETCH (binary), WORK (scratch directory on disk), OUT (output directory),
SOURCE (the file served directly and through the relay), DIRECT_URL, CAPPED_URL (optional),
WAN_URL, WAN_SOURCE, WAN_NETNS, WAN_DESCRIPTION (optional), BENCH_RATE_MIB (25),
BENCH_RUNS (3), BENCH_RUNS_SLOW (single-connection tools in the capped and wan scenarios;
default BENCH_RUNS), BENCH_ONLY (all, or a comma list of unthrottled,capped,wan,many,batchcapped,mirrors,stream,journal,checksum,
hash,fleet,lists,caps), BENCH_TOOLS (curl aria2c axel rangefetch), BENCH_TIMEOUT_S (900 per run),
RF_FLAGS (extra rangefetch flags), RESULTS_DIR (writes latest.md and latest.json there),
DIRECT_HTTPS_URL, DIRECT_H2_URL, CAPPED_HTTPS_URL, CAPPED_H2_URL, WAN_HTTPS_URL, WAN_H2_URL,
TLS_CA (the servers' self-signed certificate), ACCESS_LOG, WAN_ACCESS_LOG (nginx's access logs,
whose last two fields are the TCP connection number and the protocol), FLEET_CACHE_URL (the
caching nginx in front of DIRECT_URL's nginx), BENCH_FLEET_CLIENTS (4), LISTS_DIR and LISTS_URL
(the lists section's small files and where nginx serves them), BENCH_LIST_LINES ("1000000
10000000"), CAPS_URLS (RATE=URL ...: the file through a relay capping each connection at RATE MiB/s).
"""

import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

RF = os.environ["RANGEFETCH"]
WORK = os.environ["WORK"]
OUT = os.environ["OUT"]
SOURCE = os.environ.get("SOURCE", "")  # required by the scenarios; Benchmarks/hub.py imports
DIRECT_URL = os.environ.get("DIRECT_URL", "")  # this file's helpers without them
CAPPED_URL = os.environ.get("CAPPED_URL", "")
WAN_URL = os.environ.get("WAN_URL", "")
WAN_SOURCE = os.environ.get("WAN_SOURCE", SOURCE)
WAN_NETNS = os.environ.get("WAN_NETNS", "")
WAN_DESCRIPTION = os.environ.get("WAN_DESCRIPTION", "")
RATE_MIB = os.environ.get("BENCH_RATE_MIB", "25")
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
RUNS_SLOW = int(os.environ.get("BENCH_RUNS_SLOW", str(RUNS)))
ONLY = {part.strip() for part in os.environ.get("BENCH_ONLY", "all").split(",") if part.strip()}
TOOL_NAMES = os.environ.get("BENCH_TOOLS", "curl aria2c axel rangefetch").split()
TIMEOUT_SECONDS = float(os.environ.get("BENCH_TIMEOUT_S", "900"))
RF_FLAGS = shlex.split(os.environ.get("RF_FLAGS", ""))
RESULTS_DIR = os.environ.get("RESULTS_DIR", "")
MANY_DIR = os.environ.get("MANY_DIR", "")          # the small files, served at MANY_URL/<name>
MANY_URL = os.environ.get("MANY_URL", "")
MANY_H2_URL = os.environ.get("MANY_H2_URL", "")  # the same over HTTPS with HTTP/2 offered
BATCH_SOURCE = os.environ.get("BATCH_SOURCE", "")  # one 128 MiB file, served as BATCH_URLS
BATCH_URLS = os.environ.get("BATCH_URLS", "").split()
MIRROR_URLS = os.environ.get("MIRROR_URLS", "").split()  # a second capped mirror, a 1 MiB/s one, a dead one
TLS_CA = os.environ.get("TLS_CA", "")
ACCESS_LOG = os.environ.get("ACCESS_LOG", "")
WAN_ACCESS_LOG = os.environ.get("WAN_ACCESS_LOG", "")
FLEET_CACHE_URL = os.environ.get("FLEET_CACHE_URL", "")  # nginx's slice cache in front of DIRECT_URL's nginx
FLEET_CLIENTS = int(os.environ.get("BENCH_FLEET_CLIENTS", "4"))
LISTS_DIR = os.environ.get("LISTS_DIR", "")        # the lists section's 4 KiB files, served at LISTS_URL/<name>
LISTS_URL = os.environ.get("LISTS_URL", "")
LIST_LINES = [int(n) for n in os.environ.get("BENCH_LIST_LINES", "1000000 10000000").split()]
CAPS_URLS = [pair.split("=", 1) for pair in os.environ.get("CAPS_URLS", "").split()]  # [[rate, url]]

TARGET_NAME = "file.bin"
TARGET = os.path.join(OUT, TARGET_NAME)
MIB = 1 << 20
FSYNC_NOTE = ("fdatasync: rangefetch fdatasyncs its output before it exits, so its wall time "
              "includes the flush to disk; curl, aria2c and axel do not, and leave dirty pages "
              "for the kernel to write back after they exit.")


@dataclass
class Tool:
    """One command line of the comparison. `argv` uses {url}, {out}, {outdir} and {outname}."""
    label: str
    name: str  # for BENCH_TOOLS and the chart's colours
    argv: list
    fdatasync: bool
    single_connection: bool = False  # slow through a per-connection cap: BENCH_RUNS_SLOW runs
    tls_argv: list = field(default_factory=list)  # before the URL when it is https; {ca}: TLS_CA


# The comparison table. A rangefetch row whose flags the binary does not support (say `-n auto`
# while it is being written) simply ends up as a "failed" row; the benchmark goes on.
TOOLS = [
    Tool("curl", "curl", ["curl", "-sS", "-f", "-o", "{out}", "{url}"],
         fdatasync=False, single_connection=True, tls_argv=["--cacert", "{ca}"]),
    Tool("aria2c -x16 -s16 -k1M", "aria2c",
         ["aria2c", "-q", "-x16", "-s16", "-k1M", "--file-allocation=none", "--allow-overwrite=true",
          "--auto-file-renaming=false", "-d", "{outdir}", "-o", "{outname}", "{url}"], fdatasync=False,
         tls_argv=["--ca-certificate={ca}"]),
    # axel has no option for a CA file: -k skips the certificate check (the handshake is the same).
    Tool("axel -n 16", "axel", ["axel", "-q", "-n", "16", "-o", "{out}", "{url}"], fdatasync=False,
         tls_argv=["-k"]),
    Tool("rangefetch -n 16", "rangefetch", [RF, "-q", "-n", "16"] + RF_FLAGS + ["-o", "{out}", "{url}"],
         fdatasync=True, tls_argv=["--cacert", "{ca}"]),
    Tool("rangefetch -n auto", "rangefetch", [RF, "-q", "-n", "auto"] + RF_FLAGS + ["-o", "{out}", "{url}"],
         fdatasync=True, tls_argv=["--cacert", "{ca}"]),
]
BASELINES = ("axel -n 16", "curl")  # the "speed vs" columns: baseline median wall / this median wall

lines = []
report = {}    # latest.json: the run's facts, then "sections"
sections = []  # one per table, in the order printed


def say(text=""):
    print(text, flush=True)
    lines.append(text)


def wanted(section):
    return "all" in ONLY or section in ONLY or (section.endswith(("-https", "-h2")) and "https" in ONLY)


# -- running one command -----------------------------------------------------------------------

class RunFailed(Exception):
    pass


@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    rss_mib: float
    bytes_ok: bool = True
    stdout: str = ""
    tcp_connections: int = None  # distinct TCP connections of the run's GETs in the server's log
    protocols: str = ""          # their protocols, joined by + (HTTP/1.1, HTTP/2.0)


def clean(out=None):
    """Deletes every output in out (OUT; aria2c and axel leave control files too, the hub section
    a cache tree), then syncs, so the next run starts with an empty directory and no write-back
    pending."""
    out = out or OUT
    for name in os.listdir(out):
        path = os.path.join(out, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    subprocess.run(["sync"], check=True)


def warm(path):
    """Reads the served file once, so nginx serves it from the page cache for every tool."""
    with open(path, "rb", buffering=0) as handle:
        while handle.read(8 * MIB):
            pass


def timed(argv, netns="", timeout_s=None):
    """Runs argv under /usr/bin/time (inside netns if given); returns a Sample or raises RunFailed.
    The tool gets its own process group, so a timeout (timeout_s, else BENCH_TIMEOUT_S) kills it
    and every child it started."""
    timeout_s = timeout_s or TIMEOUT_SECONDS
    stats = os.path.join(WORK, "time.txt")
    command = ["/usr/bin/time", "-o", stats, "-f", "%e %U %S %M"] + argv
    if netns:
        command = ["ip", "netns", "exec", netns] + command
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise RunFailed(f"timed out after {timeout_s:.0f} s")
    finally:
        if process.poll() is None:  # we are being stopped (SIGTERM, Ctrl-C): take the tool along
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if process.returncode != 0:
        # The first line says what went wrong (usage text and help may follow it); a Python
        # traceback says it in its last line.
        said = [line.strip() for line in stderr.splitlines() if line.strip()] or ["no message"]
        message = said[-1] if said[0].startswith("Traceback") else said[0]
        raise RunFailed(f"exit {process.returncode}: {message[:200]}")
    wall, user, system, rss_kib = open(stats).read().split()[-4:]
    return Sample(float(wall), float(user) + float(system), int(rss_kib) / 1024, stdout=stdout)


def log_size(path):
    return os.path.getsize(path) if path and os.path.exists(path) else 0


def served(path, offset):
    """The GET requests nginx logged after offset: (distinct TCP connections, protocols)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    connections, protocols = set(), set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 7 and fields[0] == "GET":
            connections.add(fields[-2])
            protocols.add(fields[-1])
    return len(connections), "+".join(sorted(protocols))


def identical(source):
    return subprocess.run(["cmp", "-s", source, TARGET]).returncode == 0


# -- rows and statistics -------------------------------------------------------------------------

@dataclass
class Row:
    label: str
    tool: str = ""
    fdatasync: bool = False
    samples: list = field(default_factory=list)
    error: str = ""
    bad_runs: list = field(default_factory=list)  # 1-based runs whose bytes differed

    def spread(self, attribute):
        values = [round(getattr(s, attribute), 2) for s in self.samples]
        return {"median": statistics.median(values), "min": min(values), "max": max(values),
                "runs": values}


def measure_alternating(entries, source, runs, netns="", runs_for=lambda entry: None, check=None, access_log="",
                        timeout_s=None, out=None, log_reader=None):
    """entries: [(Row, argv)]. Runs round 1 of every entry, then round 2, ...; a failed entry is not
    retried. runs_for(entry) may lower an entry's number of rounds (slow single streams); timeout_s
    replaces BENCH_TIMEOUT_S for one run.
    check() tells whether a run's output is right (default: TARGET has the bytes of source).
    With access_log (nginx's), each run's TCP connections and protocols are read from it, by
    log_reader(access_log, offset) when given (another server's log), else by served().
    out: the directory emptied before each run (OUT)."""
    log_reader = log_reader or served
    check = check or (lambda: identical(source))
    for index in range(runs):
        for row, argv in entries:
            limit = runs_for(row) or runs
            if row.error or index >= limit:
                continue
            clean(out)
            offset = log_size(access_log)
            try:
                sample = timed(argv, netns, timeout_s)
            except RunFailed as failure:
                row.error = f"run {index + 1}: {failure}"
                say(f"  {row.label}: failed, {row.error}")
                continue
            sample.bytes_ok = check()
            if access_log:
                time.sleep(0.1)  # nginx logs a request when its response ends
                sample.tcp_connections, sample.protocols = log_reader(access_log, offset)
            if not sample.bytes_ok:
                row.bad_runs.append(index + 1)
            row.samples.append(sample)
            print(f"  run {index + 1}/{limit} {row.label}: {sample.wall_s:.2f} s"
                  + (f", {sample.tcp_connections} TCP connections, {sample.protocols}" if access_log else "")
                  + ("" if sample.bytes_ok else "  BYTES DIFFER"), flush=True)
    clean(out)


def range_text(spread, digits):
    if spread["min"] == spread["max"]:
        return f"{spread['median']:.{digits}f}"
    return f"{spread['median']:.{digits}f} ({spread['min']:.{digits}f}–{spread['max']:.{digits}f})"


def row_record(row, size, medians, baselines):
    """The row as JSON, and its markdown cells (None when it has no successful run)."""
    record = {"label": row.label, "tool": row.tool, "fdatasync": row.fdatasync,
              "status": "failed" if row.error and not row.samples else "ok", "error": row.error or None,
              "runs": [{"wall_s": s.wall_s, "cpu_s": s.cpu_s, "rss_mib": round(s.rss_mib, 1),
                        "bytes_ok": s.bytes_ok, "tcp_connections": s.tcp_connections,
                        "protocol": s.protocols or None} for s in row.samples]}
    if not row.samples:
        return record, None
    wall, cpu, rss = row.spread("wall_s"), row.spread("cpu_s"), row.spread("rss_mib")
    spread_percent = (wall["max"] - wall["min"]) / wall["median"] * 100 if wall["median"] else 0
    record.update(wall_s=wall, cpu_s=cpu, rss_mib=rss, wall_spread_percent=round(spread_percent, 1),
                  mib_per_s=round(size / MIB / wall["median"], 1) if wall["median"] else None)
    cells = [row.label, "yes" if row.fdatasync else "no", str(len(row.samples)), range_text(wall, 2),
             " ".join(f"{v:.2f}" for v in wall["runs"]), f"{spread_percent:.0f}%",
             f"{size / MIB / wall['median']:.0f}" if wall["median"] else "-",
             range_text(cpu, 2), range_text(rss, 0)]
    if any(s.tcp_connections is not None for s in row.samples):
        counts = sorted({s.tcp_connections for s in row.samples})
        protocols = sorted({p for s in row.samples for p in s.protocols.split("+") if p})
        cells.append(f"{'/'.join(map(str, counts))} {'+'.join(protocols)}")
    for baseline in baselines:
        ratio = medians[baseline] / wall["median"] if baseline in medians and wall["median"] else None
        record[f"speed_vs_{baseline.split()[0]}"] = round(ratio, 3) if ratio else None
        cells.append(f"{ratio:.2f}" if ratio else "-")
    bytes_cell = "OK" if not row.bad_runs else f"FAIL (run {', '.join(map(str, row.bad_runs))})"
    if row.error:
        bytes_cell += f"; then failed, {row.error}"
    cells.append(bytes_cell)
    return record, cells


def table(section_id, title, rows, size, notes=(), baselines=True, extra=None):
    """Prints a markdown table of rows and adds the section to the JSON report. baselines: True
    for the "speed vs" columns of BASELINES, False for none, or the labels of the rows to compare with."""
    medians = {r.label: r.spread("wall_s")["median"] for r in rows if r.samples}
    say()
    say(f"## {title}")
    heads = ["command", "fdatasync", "runs", "wall s median (min–max)", "wall s, every run", "spread",
             "MiB/s", "CPU s (user+sys)", "peak RSS MiB"]
    used_baselines = BASELINES if baselines is True else tuple(baselines or ())
    logged = any(s.tcp_connections is not None for r in rows for s in r.samples)
    if logged:
        heads.append("TCP conns (server log)")
    heads += [f"speed vs {b.split()[0]}" for b in used_baselines] + ["bytes (cmp, every run)"]
    say("| " + " | ".join(heads) + " |")
    say("|" + "---|" * len(heads))
    records = []
    for row in rows:
        record, cells = row_record(row, size, medians, used_baselines)
        records.append(record)
        if cells is None:
            cells = [row.label, "yes" if row.fdatasync else "no", "0", "failed", "-", "-", "-", "-", "-"] + \
                ["-"] * (len(used_baselines) + logged) + [row.error]
        say("| " + " | ".join(cells) + " |")
    for note in notes:
        say(note)
    section = {"id": section_id, "title": title, "size_bytes": size, "rows": records}
    if extra:
        section.update(extra)
    sections.append(section)
    return section


# -- the sections ---------------------------------------------------------------------------------

def expand(tool, url):
    """The tool's command line for url; over HTTPS with its TLS options before the URL (last)."""
    argv = tool.argv[:-1] + (tool.tls_argv if url.startswith("https:") else []) + tool.argv[-1:]
    values = {"url": url, "out": TARGET, "outdir": OUT, "outname": TARGET_NAME, "ca": TLS_CA}
    return [part.format(**values) for part in argv]


def scenario(section_id, title, chart_title, url, source, netns="", notes=(), access_log="", tools=TOOLS,
             baselines=True):
    tools = [tool for tool in tools if tool.name in TOOL_NAMES]
    entries = [(Row(tool.label, tool.name, tool.fdatasync), expand(tool, url)) for tool in tools]
    single = {tool.label for tool in tools if tool.single_connection}
    slow = section_id.split("-")[0] in ("capped", "wan")
    say()
    say(f"running {title}: {len(entries)} commands x {RUNS} runs, alternating", )
    warm(source)
    measure_alternating(entries, source, RUNS, netns,
                        runs_for=lambda row: RUNS_SLOW if slow and row.label in single else None,
                        access_log=access_log)
    notes = list(notes) + [FSYNC_NOTE, "speed vs X = X's median wall time / this row's (above 1: faster)."]
    return table(section_id, title, [row for row, _ in entries], os.path.getsize(source), notes, baselines=baselines,
                 extra={"kind": "scenario", "chart_title": chart_title, "url": url, "netns": netns or None})


def mirrors_section():
    """One file from one capped source, from two, and with a crawling or a dead third."""
    mirror, slow, dead = MIRROR_URLS
    base = [RF, "-q", "--max-connections-per-host", "8"] + RF_FLAGS + ["-o", TARGET, CAPPED_URL]
    entries = [
        (Row("rangefetch, one source (8 connections)", "rangefetch", True), base),
        (Row("rangefetch --mirror: two sources", "rangefetch", True), base + ["--mirror", mirror]),
        (Row("rangefetch, two + one at 1 MiB/s per connection", "rangefetch", True),
         base + ["--mirror", mirror, "--mirror", slow]),
        (Row("rangefetch, two + a dead one", "rangefetch", True), base + ["--mirror", mirror, "--mirror", dead]),
        (Row("aria2c -x8 -s16 with both URLs", "aria2c"),
         ["aria2c", "-q", "-x8", "-s16", "-k1M", "-d", OUT, "-o", TARGET_NAME, "--file-allocation=none",
          "--allow-overwrite=true", "--auto-file-renaming=false", CAPPED_URL, mirror]),
    ]
    say()
    say("running mirrors")
    warm(SOURCE)
    measure_alternating(entries, SOURCE, RUNS)
    medians = {row.label: statistics.median(s.wall_s for s in row.samples) for row, _ in entries if row.samples}
    one = medians.get(entries[0][0].label)
    two = medians.get(entries[1][0].label)
    notes = [f"Every source is a relay capping each TCP connection at {RATE_MIB} MiB/s; --max-connections-per-host 8 "
             "counts per source, so two sources give 16 connections."]
    if one and two:
        notes.append(f"two sources: {one / two:.2f}x the speed of one (median wall times).")
        for row, _ in entries[2:4]:
            if row.label in medians:
                notes.append(f"{row.label}: {medians[row.label] / two:.2f}x the time of two sources.")
    table("mirrors", "Mirrors: one file from several capped sources", [row for row, _ in entries],
          os.path.getsize(SOURCE), notes, baselines=False, extra={"kind": "mirrors"})


def stream_section():
    """-o - (ordered streaming to a pipe) against the same download to a file, the reader alone
    (sha256sum of the file on disk) and curl | ...; the pipe's time to its first byte on stdout
    comes from its finish event (first_byte_seconds)."""
    digest_file = os.path.join(OUT, "stream.sha256")
    events_file = os.path.join(WORK, "stream-events.jsonl")
    want = subprocess.run(["sha256sum", SOURCE], capture_output=True, text=True, check=True).stdout.split()[0]

    def check():
        if os.path.exists(TARGET):
            return identical(SOURCE)
        with open(digest_file) as handle:
            return handle.read().split()[0] == want

    quoted = shlex.quote(CAPPED_URL)
    file_row = Row("rangefetch -n 16 -o FILE", "rangefetch", True)
    pipe_row = Row("rangefetch -n 16 -o - | sha256sum", "rangefetch")
    reader_row = Row("sha256sum FILE (the reader alone, warm cache)", "sha256sum")
    # The events go to a file and are printed once the pipe is done: the sample's stdout.
    entries = [
        (file_row, [RF, "-q", "-n", "16"] + RF_FLAGS + ["-o", TARGET, CAPPED_URL]),
        (pipe_row,
         ["sh", "-c", " ".join([shlex.quote(RF), "--json", "-n", "16"] + [shlex.quote(f) for f in RF_FLAGS]
                               + ["-o", "-", quoted, "2>" + shlex.quote(events_file), "|", "sha256sum", ">",
                                  shlex.quote(digest_file), "&&", "cat", shlex.quote(events_file)])]),
        (reader_row, ["sh", "-c", f"sha256sum {shlex.quote(SOURCE)} > {shlex.quote(digest_file)}"]),
    ]
    if "curl" in TOOL_NAMES:
        entries.append((Row("curl | sha256sum", "curl"), ["sh", "-c", f"curl -s {quoted} | sha256sum > {shlex.quote(digest_file)}"]))
    say()
    say("running streaming to a pipe")
    warm(SOURCE)
    measure_alternating(entries, SOURCE, RUNS, check=check,
                        runs_for=lambda row: RUNS_SLOW if row.tool == "curl" else None)
    notes = ["The pipe rows are checked by the digest sha256sum printed; peak RSS is the pipeline's largest process.",
             "speed vs X = X's median wall time / this row's (above 1: faster)."]
    extra = {"kind": "stream"}
    first_bytes = [finish_event(s.stdout).get("first_byte_seconds") for s in pipe_row.samples]
    first_bytes = [value * 1000 for value in first_bytes if isinstance(value, (int, float))]
    if first_bytes:
        extra["first_byte_ms"] = first_bytes
        notes.append(f"first byte on the pipe (from the start, probe included): median {statistics.median(first_bytes):.0f} ms "
                     f"(runs: {', '.join(f'{t:.0f}' for t in first_bytes)} ms)")
    if pipe_row.samples and file_row.samples and reader_row.samples:
        slower = max(file_row.spread("wall_s")["median"], reader_row.spread("wall_s")["median"])
        ratio = pipe_row.spread("wall_s")["median"] / slower
        extra["pipe_vs_slower_of_file_and_reader"] = round(ratio, 3)
        notes.append(f"pipe / slower of (-o FILE, the reader alone): {ratio:.2f}x (medians)")
    table("stream", f"Streaming to a pipe: -o - | sha256sum through the {RATE_MIB} MiB/s-per-connection relay",
          [row for row, _ in entries], os.path.getsize(SOURCE), notes, extra=extra)


def journal_section():
    entries = []
    for url, where in ((DIRECT_URL, "unthrottled"), (CAPPED_URL, "capped")):
        if url:
            base = [RF, "-q", "-n", "16"] + RF_FLAGS + ["-o", TARGET, url]
            entries.append((Row(f"journal on, {where}", "rangefetch", True), base))
            entries.append((Row(f"--no-journal, {where}", "rangefetch", True), base + ["--no-journal"]))
    say()
    say("running the journal's cost")
    warm(SOURCE)
    measure_alternating(entries, SOURCE, RUNS)
    table("journal", "Checkpoint overhead (journal every 1 s: fdatasync + atomic replace)",
          [row for row, _ in entries], os.path.getsize(SOURCE), baselines=False, extra={"kind": "rangefetch"})


def finish_event(stdout):
    for line in stdout.splitlines():
        if '"event":"finish"' in line:
            return json.loads(line)
    return {}


def checksum_section():
    digest = subprocess.run(["openssl", "dgst", "-sha256", "-r", SOURCE], capture_output=True,
                            text=True, check=True).stdout.split()[0]
    entries, verified = [], []
    for url, where in ((DIRECT_URL, "unthrottled"), (CAPPED_URL, "capped")):
        if url:
            base = [RF, "--json", "-n", "16"] + RF_FLAGS + ["-o", TARGET, url]
            entries.append((Row(f"no checksum, {where}", "rangefetch", True), base))
            row = Row(f"--checksum sha256, {where}", "rangefetch", True)
            entries.append((row, base + ["--checksum", f"sha256={digest}"]))
            verified.append((row, where))
    say()
    say("running the checksum's cost")
    warm(SOURCE)
    measure_alternating(entries, SOURCE, RUNS)
    notes, tails_record = [], {}
    for row, where in verified:
        tails = [float(finish_event(s.stdout).get("verification_seconds") or "nan") * 1000 for s in row.samples]
        if tails:
            tails_record[where] = tails
            notes.append(f"last byte -> verified ({where}): median {statistics.median(tails):.0f} ms "
                         f"(runs: {', '.join(f'{t:.0f}' for t in tails)} ms; includes the final fdatasync)")
    table("checksum", "Verification cost (incremental SHA-256 while downloading)",
          [row for row, _ in entries], os.path.getsize(SOURCE), notes, baselines=False,
          extra={"kind": "rangefetch", "last_byte_to_verified_ms": tails_record})


def hash_section():
    commands = [("rangefetch verify --print-digest sha256", [RF, "verify", SOURCE, "--print-digest", "sha256"]),
                ("sha256sum", ["sha256sum", SOURCE]),
                ("openssl dgst -sha256", ["openssl", "dgst", "-sha256", SOURCE]),
                ("rangefetch verify --print-digest md5", [RF, "verify", SOURCE, "--print-digest", "md5"]),
                ("md5sum", ["md5sum", SOURCE])]
    rows = [Row(label, argv[0]) for label, argv in commands]
    warm(SOURCE)
    for _ in range(RUNS):  # alternating, like the downloads
        for row, (_, argv) in zip(rows, commands):
            try:
                row.samples.append(timed(argv))
            except RunFailed as failure:
                row.error = str(failure)
    size = os.path.getsize(SOURCE)
    say()
    say("## Hashing throughput (file in page cache)")
    say("| command | wall s median (min–max) | wall s, every run | MiB/s | CPU s |")
    say("|---|---|---|---|---|")
    records = []
    for row in rows:
        if not row.samples:
            say(f"| {row.label} | failed | - | - | {row.error} |")
            records.append({"label": row.label, "status": "failed", "error": row.error})
            continue
        wall, cpu = row.spread("wall_s"), row.spread("cpu_s")
        say(f"| {row.label} | {range_text(wall, 2)} | {' '.join(f'{v:.2f}' for v in wall['runs'])} | "
            f"{size / MIB / wall['median']:.0f} | {range_text(cpu, 2)} |")
        records.append({"label": row.label, "status": "ok", "wall_s": wall, "cpu_s": cpu})
    sections.append({"id": "hash", "kind": "hash", "title": "Hashing throughput (file in page cache)",
                               "size_bytes": size, "rows": records})


# -- many files -----------------------------------------------------------------------------------

def write_list(name, urls):
    path = os.path.join(WORK, name)
    with open(path, "w") as handle:
        handle.write("\n".join(urls) + "\n")
    return path


def same_bytes(source, output):
    """Whether output exists with source's bytes (cmp, without a process per file: the lists
    section compares 100,000 files after every run)."""
    if not os.path.exists(output) or os.path.getsize(source) != os.path.getsize(output):
        return False
    with open(source, "rb") as first, open(output, "rb") as second:
        while True:
            left, right = first.read(MIB), second.read(MIB)
            if left != right:
                return False
            if not left:
                return True


def same_files(pairs):
    """pairs: [(source, output)]; True when every output exists with the source's bytes."""
    return all(same_bytes(source, out) for source, out in pairs)


def batch_section(section_id, title, commands, pairs, total_bytes, notes, timeout_s=None, out=None):
    """commands: [(Row, argv)] that each fetch every file of `pairs` into out (OUT); alternating
    runs, every file compared with its source after every run."""
    say()
    say(f"running {title}: {len(commands)} commands x {RUNS} runs, alternating")
    measure_alternating(commands, None, RUNS, check=lambda: same_files(pairs), timeout_s=timeout_s, out=out)
    rows = [row for row, _ in commands]
    files = len(pairs)
    extra_notes = []
    for row in rows:
        if row.samples:
            wall = row.spread("wall_s")
            extra_notes.append(f"{row.label}: {files / wall['median']:.0f} files/s, "
                               f"{total_bytes / MIB / wall['median']:.0f} MiB/s (median)")
    section = table(section_id, title, rows, total_bytes, list(notes) + extra_notes, baselines=False,
                    extra={"kind": "batch", "files": files})
    # Against aria2c's best configuration in the section.
    arias = [r for r in section["rows"] if r["tool"] == "aria2c" and r["status"] == "ok" and r.get("wall_s")]
    aria = min(arias, key=lambda r: r["wall_s"]["median"]) if arias else None
    for record in section["rows"]:
        if aria and record["status"] == "ok" and record.get("wall_s"):
            record["speed_vs_aria2c"] = round(aria["wall_s"]["median"] / record["wall_s"]["median"], 3)
            say(f"{record['label']}: {record['speed_vs_aria2c']:.2f}x the speed of {aria['label']} (median wall time ratio)")


def many_section():
    """The many-files batch three ways: to disk (OUT), to tmpfs (no disk in the way: the tools' own
    cost per file), and over HTTPS with HTTP/2 offered to tmpfs; curl -Z beside aria2c."""
    files_batch_section("many", MANY_DIR, MANY_URL, "Many files, to disk", curl=True)
    tmpfs = "/dev/shm/rangefetch-bench-many"
    os.makedirs(tmpfs, exist_ok=True)
    try:
        files_batch_section("many-tmpfs", MANY_DIR, MANY_URL, "Many files, to tmpfs", out=tmpfs, curl=True)
        if MANY_H2_URL:
            files_batch_section("many-h2-tmpfs", MANY_DIR, MANY_H2_URL,
                                "Many files, HTTPS with HTTP/2 offered, to tmpfs", out=tmpfs, curl=True)
    finally:
        shutil.rmtree(tmpfs, ignore_errors=True)


def files_batch_section(section_id, directory, url, heading, out=None, curl=False):
    """Every file of directory (served at url/<name>) by one -i list into out (OUT), rangefetch
    against aria2c (and curl -Z with curl), 16 at once; an https url's CA given to each."""
    out = out or OUT
    names = sorted(os.listdir(directory))
    listing = write_list(f"{section_id}.txt", [f"{url}/{name}" for name in names])
    pairs = [(os.path.join(directory, name), os.path.join(out, name)) for name in names]
    https = url.startswith("https:")
    commands = [
        (Row("aria2c -j16 -i", "aria2c"), ["aria2c", "-q", "-j16", "-i", listing, "-d", out, "--file-allocation=none",
                                          "--allow-overwrite=true", "--auto-file-renaming=false"]
                                          + ([f"--ca-certificate={TLS_CA}"] if https else [])),
        (Row("rangefetch -j 16 -i", "rangefetch", True), [RF, "-q", "-j", "16", "-i", listing, "-d", out] + RF_FLAGS
                                                         + (["--cacert", TLS_CA] if https else [])),
    ]
    if curl:
        # curl's list as a config file: 20,000 URLs do not fit one command line everywhere.
        config = os.path.join(WORK, f"{section_id}.curl")
        with open(config, "w") as handle:
            handle.write("".join(f'url = "{url}/{name}"\n' for name in names))
        commands.insert(0, (Row("curl -Z --parallel-max 16", "curl"),
                            ["curl", "-sS", "-f", "-Z", "--parallel-max", "16", "--output-dir", out, "--remote-name-all",
                             "-K", config] + (["--cacert", TLS_CA] if https else [])))
    for name in names[:64]:
        warm(os.path.join(directory, name))
    total = sum(os.path.getsize(source) for source, _ in pairs)
    # aria2c fetches about a hundred small files a second: 100,000 of them outlast BENCH_TIMEOUT_S.
    batch_section(section_id, f"{heading}: {len(names)} x {total // len(names) // 1024} KiB from nginx, 16 at once",
                  commands, pairs, total,
                  ["The wall time covers the whole list; rangefetch fdatasyncs every file before its rename."],
                  timeout_s=max(TIMEOUT_SECONDS, len(names) * 0.05), out=out)


def batch_capped_section():
    urls = BATCH_URLS
    names = [url.rsplit("/", 1)[1] for url in urls]
    listing = write_list("batch.txt", urls)
    pairs = [(BATCH_SOURCE, os.path.join(OUT, name)) for name in names]
    budget = 16
    per_file = budget // len(urls)
    commands = [
        (Row(f"aria2c -j{len(urls)} -x{per_file} -s{per_file} -i", "aria2c"),
         ["aria2c", "-q", f"-j{len(urls)}", f"-x{per_file}", f"-s{per_file}", "-k1M", "-i", listing, "-d", OUT,
          "--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false"]),
        (Row(f"aria2c -j4 -x4 -s4 -i", "aria2c"),
         ["aria2c", "-q", "-j4", "-x4", "-s4", "-k1M", "-i", listing, "-d", OUT,
          "--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false"]),
        (Row(f"rangefetch -j {len(urls)} --max-connections {budget} -i", "rangefetch", True),
         [RF, "-q", "-j", str(len(urls)), "--max-connections", str(budget), "-i", listing, "-d", OUT] + RF_FLAGS),
        (Row(f"rangefetch --max-connections {budget} -i (default -j 4)", "rangefetch", True),
         [RF, "-q", "--max-connections", str(budget), "-i", listing, "-d", OUT] + RF_FLAGS),
    ]
    warm(BATCH_SOURCE)
    batch_section("batchcapped", f"{len(urls)} files of {os.path.getsize(BATCH_SOURCE) // MIB} MiB through the "
                  f"{RATE_MIB} MiB/s-per-connection relay, {budget} connections in all",
                  commands, pairs, os.path.getsize(BATCH_SOURCE) * len(urls),
                  [f"Ceiling: {budget} x {RATE_MIB} MiB/s = {budget * float(RATE_MIB):.0f} MiB/s."])


# -- a fleet pulling one file ---------------------------------------------------------------------

def origin_bytes(offset, name):
    """Body bytes the origin nginx logged for /name after offset (its access log's 4th field)."""
    with open(ACCESS_LOG, "rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    fields = (line.split() for line in text.splitlines())
    return sum(int(f[3]) for f in fields if len(f) >= 4 and f[1] == "/" + name and f[3].isdigit())


def fleet_run(url, outputs):
    """Starts one rangefetch per output at once and waits for all of them: a Sample with the
    fleet's wall time (first start to last exit), the CPU seconds of all and the largest RSS.
    Each process has its own group, so a timeout or our own stop takes every one along."""
    errors = [os.path.join(WORK, f"fleet-{index}.err") for index in range(len(outputs))]
    started = time.monotonic()
    pending = {}
    cpu, rss_kib, failures = 0.0, 0, []
    try:
        for output, error in zip(outputs, errors):
            with open(error, "w") as handle:
                process = subprocess.Popen([RF, "-q"] + RF_FLAGS + ["-o", output, url], stdout=subprocess.DEVNULL,
                                           stderr=handle, start_new_session=True)
            pending[process.pid] = (process, error)
        finished = started
        while pending:
            for pid in list(pending):
                done, status, usage = os.wait4(pid, os.WNOHANG)
                if not done:
                    continue
                process, error = pending.pop(pid)
                process.returncode = os.waitstatus_to_exitcode(status)
                finished = time.monotonic()
                cpu += usage.ru_utime + usage.ru_stime
                rss_kib = max(rss_kib, usage.ru_maxrss)
                if process.returncode != 0:
                    message = next((line.strip() for line in open(error) if line.strip()), "no message")
                    failures.append(f"exit {process.returncode}: {message[:200]}")
            if pending and time.monotonic() - started > TIMEOUT_SECONDS:
                raise RunFailed(f"timed out after {TIMEOUT_SECONDS:.0f} s")
            time.sleep(0.01)
    finally:
        for process, _ in pending.values():
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if failures:
        raise RunFailed(f"{len(failures)} of {len(outputs)} clients failed, first: {failures[0]}")
    return Sample(finished - started, cpu, rss_kib / 1024)


def fleet_section():
    """N clients at once straight to the origin, then through the slice cache cold (a name the
    cache has not seen: a hard link to the file per round) and warm (the same name again)."""
    clients = FLEET_CLIENTS
    size = os.path.getsize(SOURCE)
    outputs = [os.path.join(OUT, f"client-{index + 1}.bin") for index in range(clients)]
    cache = FLEET_CACHE_URL.rstrip("/")
    rows = [Row(f"{clients} x rangefetch, straight to the origin", "rangefetch", True),
            Row(f"{clients} x rangefetch through the slice cache, cold", "rangefetch", True),
            Row(f"{clients} x rangefetch through the slice cache, warm", "rangefetch", True)]
    served = {row.label: [] for row in rows}
    say()
    say(f"running fleet: {clients} clients at once, {len(rows)} set-ups x {RUNS} runs, alternating")
    warm(SOURCE)
    directory, source_name = os.path.split(SOURCE)
    for index in range(RUNS):
        name = f"fleet-{os.getpid()}-{index + 1}.bin"
        os.link(SOURCE, os.path.join(directory, name))
        urls = [f"{DIRECT_URL.rsplit('/', 1)[0]}/{source_name}", f"{cache}/{name}", f"{cache}/{name}"]
        for row, url in zip(rows, urls):
            if row.error:
                continue
            clean()
            offset = log_size(ACCESS_LOG)
            try:
                sample = fleet_run(url, outputs)
            except RunFailed as failure:
                row.error = f"run {index + 1}: {failure}"
                say(f"  {row.label}: failed, {row.error}")
                continue
            sample.bytes_ok = same_files([(SOURCE, output) for output in outputs])
            time.sleep(0.1)  # nginx logs a request when its response ends
            served[row.label].append(origin_bytes(offset, url.rsplit("/", 1)[1]))
            if not sample.bytes_ok:
                row.bad_runs.append(index + 1)
            row.samples.append(sample)
            print(f"  run {index + 1}/{RUNS} {row.label}: {sample.wall_s:.2f} s, origin served "
                  f"{served[row.label][-1] / size:.2f}x the file" + ("" if sample.bytes_ok else "  BYTES DIFFER"),
                  flush=True)
    clean()
    notes = [f"{clients} rangefetch processes (default -n) started together, each writing its own copy; wall time "
             "is the first start to the last exit; CPU is all of them; MiB/s counts every client's bytes.",
             "The cache is nginx's proxy_cache with slice 8m, proxy_cache_key $uri$slice_range and proxy_cache_lock "
             "on, on the same machine as the origin (docs/fleet.md); cold: a name the cache has not seen, warm: the "
             "same name again right after.",
             "Everything is on loopback, where the origin is no bottleneck and the cache is one more hop; the figure "
             "that carries over to a real fleet is the origin's bytes, which a shared uplink divides the time by."]
    for row in rows:
        if served[row.label]:
            every = ", ".join(f"{value / size:.2f}" for value in served[row.label])
            notes.append(f"{row.label}: the origin served {statistics.median(served[row.label]) / size:.2f}x "
                         f"the file (median; every run: {every}).")
    table("fleet", f"A fleet pulling one file: {clients} clients at once, {size // MIB} MiB each, "
          "straight to the origin and through a slice cache", rows, size * clients, notes, baselines=False,
          extra={"kind": "fleet", "clients": clients,
                 "origin_bytes": {row.label: served[row.label] for row in rows}})


# -- lists of millions (issue 26) ----------------------------------------------------------------

LIST_SHARD_COUNT = 100000
LIST_SHARD_DEPTH = 200000     # the line the shard's first request waits for (about twice the mean)
FIRST_REQUEST_TARGET_S = 1.0  # the figures: the first request within 1 s of start,
RSS_TARGET_MIB = 100          # and at most 100 MiB of peak RSS for 10 M lines


class RequestClock:
    """A loopback server answering every GET with 4 KiB and noting when the first came (nginx
    logs a request only when its response ends, and not to the microsecond)."""

    def __init__(self):
        import http.server
        import socketserver
        import threading
        clock = self
        body = b"x" * 4096

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                if clock.first is None:
                    clock.first = time.monotonic()
                    clock.first_cpu = clock.cpu_seconds()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client stopped mid-request (the runs without a shard are cut short)

        self.first = None
        self.first_cpu = None
        self.pid = None  # the client's, whose CPU time the first request notes
        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def cpu_seconds(self):
        """The client's CPU time so far (user+system, from /proc), or None: unlike the wall time to
        the first request, it does not grow when other work on the machine takes the CPUs."""
        try:
            with open(f"/proc/{self.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, TypeError, IndexError, ValueError):
            return None


def generated_list(lines, port):
    """A list of `lines` URLs of 4 KiB files on port, and a shard K of LIST_SHARD_COUNT whose first
    line is LIST_SHARD_DEPTH (or the first line after it that starts a shard; half the list for a
    shorter one): the first request of --shard K/N waits for that many lines to be read, so the
    figure does not depend on where the port (part of every URL) puts shard 1's first line.
    Returns (path, K, that line)."""
    import hashlib
    path = os.path.join(WORK, f"list-{lines}.txt")
    width = len(str(lines))
    depth = LIST_SHARD_DEPTH if lines >= 2 * LIST_SHARD_DEPTH else max(1, lines // 2)
    seen, found = set(), None
    with open(path, "w") as handle:
        for start in range(0, lines, 100000):
            urls = [f"http://127.0.0.1:{port}/data/4096/f{i:0{width}d}.bin" for i in range(start, min(lines, start + 100000))]
            handle.write("\n".join(urls) + "\n")
            for offset, url in enumerate(urls):
                if found:
                    break
                shard = int.from_bytes(hashlib.sha256(url.encode()).digest()[:8], "big") % LIST_SHARD_COUNT
                if start + offset + 1 >= depth and shard not in seen:
                    found = (shard, start + offset + 1)
                seen.add(shard)
    return (path,) + (found or (1, None))


def first_request_run(clock, listing, shard, limit_s):
    """rangefetch -i listing (with --shard shard, if any), stopped after limit_s when given: a
    Sample (wall time, CPU, peak RSS), the seconds from its start to the first request, and its
    CPU seconds by then."""
    clean()
    clock.first = clock.first_cpu = None
    argv = [RF, "-q", "-i", listing, "-d", OUT] + RF_FLAGS + (["--shard", shard] if shard else [])
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    clock.pid = process.pid
    try:
        deadline = started + (limit_s or TIMEOUT_SECONDS)
        while True:
            done, status, usage = os.wait4(process.pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGTERM)
                done, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.005)
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    wall = time.monotonic() - started
    if process.returncode != 0 and not limit_s:
        raise RunFailed(f"exit {process.returncode}")
    sample = Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
    return sample, (clock.first - started) if clock.first is not None else None, clock.first_cpu


def lists_section():
    """Time to the first request and peak RSS for generated lists of BENCH_LIST_LINES lines,
    then BENCH_LIST_FILES files of 4 KiB by one list against aria2c."""
    clock = RequestClock()
    say()
    say(f"running lists: {', '.join(f'{n:,}' for n in LIST_LINES)} lines, --shard K/{LIST_SHARD_COUNT} and "
        f"without (stopped after 3 s), {RUNS} runs each, alternating")
    records, table_lines, notes = [], [], []
    for lines in LIST_LINES:
        listing, shard, first_line_number = generated_list(lines, clock.port)
        setups = [(f"--shard {shard}/{LIST_SHARD_COUNT} (its first line: {format(first_line_number, ',') if first_line_number else 'none'})",
                   f"{shard}/{LIST_SHARD_COUNT}", None), ("no shard, stopped after 3 s", None, 3.0)]
        firsts = {label: [] for label, _, _ in setups}
        first_cpus = {label: [] for label, _, _ in setups}
        samples = {label: [] for label, _, _ in setups}
        errors = {}
        for index in range(RUNS):
            for label, shard, limit in setups:
                if label in errors:
                    continue
                try:
                    sample, first, first_cpu = first_request_run(clock, listing, shard, limit)
                except RunFailed as failure:
                    errors[label] = f"run {index + 1}: {failure}"
                    say(f"  {lines:,} lines, {label}: failed, {errors[label]}")
                    continue
                samples[label].append(sample)
                firsts[label].append(first if first is not None else float("nan"))
                first_cpus[label].append(first_cpu if first_cpu is not None else float("nan"))
                print(f"  run {index + 1}/{RUNS} {lines:,} lines, {label}: first request "
                      f"{'-' if first is None else f'{first:.2f} s'} ({'-' if first_cpu is None else f'{first_cpu:.2f}'} "
                      f"CPU s), {sample.wall_s:.2f} s, {sample.rss_mib:.0f} MiB",
                      flush=True)
        for label, _, limit in setups:
            if not samples[label]:
                table_lines.append(f"| {lines:,} | {label} | 0 | failed | - | - | - | - | {errors.get(label, '')} |")
                records.append({"lines": lines, "setup": label, "status": "failed", "error": errors.get(label)})
                continue
            row = Row(label, samples=samples[label])
            first = {"median": round(statistics.median(firsts[label]), 3), "min": round(min(firsts[label]), 3),
                     "max": round(max(firsts[label]), 3), "runs": [round(f, 3) for f in firsts[label]]}
            first_cpu = {"median": round(statistics.median(first_cpus[label]), 2), "min": round(min(first_cpus[label]), 2),
                         "max": round(max(first_cpus[label]), 2), "runs": [round(c, 2) for c in first_cpus[label]]}
            wall, cpu, rss = row.spread("wall_s"), row.spread("cpu_s"), row.spread("rss_mib")
            met = first["max"] <= FIRST_REQUEST_TARGET_S and rss["max"] <= RSS_TARGET_MIB
            table_lines.append(f"| {lines:,} | {label} | {len(row.samples)} | {range_text(first, 2)} | {range_text(first_cpu, 2)} | "
                               f"{'-' if limit else range_text(wall, 2)} | {range_text(cpu, 2)} | {range_text(rss, 0)} | "
                               f"{'yes' if met else 'no'} |")
            records.append({"lines": lines, "setup": label, "status": "ok", "first_request_s": first,
                            "cpu_s_at_first_request": first_cpu,
                            "wall_s": None if limit else wall, "cpu_s": cpu, "rss_mib": rss, "target_met": met})
    clock.server.shutdown()
    say()
    say(f"## Lists of millions: time from start to the first request, and peak RSS")
    say("| lines | setup | runs | first request s median (min–max) | CPU s by then | wall s | CPU s | peak RSS MiB | "
        f"first request ≤ {FIRST_REQUEST_TARGET_S:.0f} s and RSS ≤ {RSS_TARGET_MIB} MiB |")
    say("|---|---|---|---|---|---|---|---|---|")
    for line in table_lines:
        say(line)
    notes += [f"Load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (the first request "
              "waits for CPU work, so a busy machine delays it; CPU s is the process's own).",
              f"The list is generated (http://127.0.0.1:PORT/data/4096/fNNN.bin, a 4 KiB answer from a loopback "
              f"server of the benchmark's own); every line is checked (syntax, distinct paths) whatever the shard; "
              f"with --shard only the shard's ~1/{LIST_SHARD_COUNT} is fetched, so the wall time is the whole "
              f"list's reading. The shard K is one whose first line is line {LIST_SHARD_DEPTH:,} or just after "
              "(half the list for a shorter one), about twice the mean depth of a shard's first line: its first "
              "request waits for the lines before it to be checked. Without a shard the run is stopped after 3 s: "
              "only its first request and RSS count."]
    for note in notes:
        say(note)
    sections.append({"id": "lists", "kind": "lists", "title": "Lists of millions: time to the first request",
                     "rows": records})
    if LISTS_DIR:
        files_batch_section("lists-batch", LISTS_DIR, LISTS_URL, "Lists: a batch of small files")


def caps_section():
    """-n auto against fixed counts through relays capping every connection, at each rate."""
    fixed = [16, 32, 64]
    tools = [tool for tool in TOOLS if tool.name in ("aria2c", "axel")] + \
        [Tool(f"rangefetch -n {count}", "rangefetch", [RF, "-q", "-n", str(count)] + RF_FLAGS + ["-o", "{out}", "{url}"],
              fdatasync=True) for count in fixed] + \
        [tool for tool in TOOLS if tool.label == "rangefetch -n auto"]
    for rate, url in CAPS_URLS:
        section = scenario(f"caps-{rate}", f"Per-connection cap {rate} MiB/s: -n auto against fixed counts",
                           f"Capped: {rate} MiB/s per connection", url, SOURCE, access_log=ACCESS_LOG, tools=tools,
                           baselines=("axel -n 16",),
                           notes=[f"Every TCP connection is capped at {rate} MiB/s by rf-relay in front of nginx; "
                                  "aria2c and axel at their maximum of 16 connections."])
        medians = {r["label"]: r["wall_s"]["median"] for r in section["rows"] if r["status"] == "ok" and r.get("wall_s")}
        fixed_medians = {label: wall for label, wall in medians.items()
                         if label.startswith("rangefetch -n ") and label != "rangefetch -n auto"}
        auto = medians.get("rangefetch -n auto")
        if auto and fixed_medians:
            best = min(fixed_medians, key=fixed_medians.get)
            slower = (auto / fixed_medians[best] - 1) * 100
            verdict = "within 5%" if slower <= 5 else "NOT within 5%"
            section["auto_vs_best_fixed"] = {"best": best, "percent_slower": round(slower, 1), "within_5_percent": slower <= 5}
            say(f"-n auto at {rate} MiB/s per connection: {auto:.2f} s against {fixed_medians[best]:.2f} s for the best fixed "
                f"count ({best}): {slower:+.1f}%, {verdict} (median wall times)")


# -- main -----------------------------------------------------------------------------------------

def first_line(argv):
    try:
        result = subprocess.run(argv, capture_output=True, text=True)
        return (result.stdout or result.stderr).strip().split("\n")[0]
    except OSError as error:
        return f"unavailable ({error})"


def begin_report(title, versions, warmed, notes=(), **facts):
    """The report's heading: its title and date, how the runs were made (warmed: how the served
    bytes reached the page cache), notes, the tools' versions (rangefetch's first); and its facts
    in the JSON."""
    os.makedirs(OUT, exist_ok=True)
    filesystem = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", OUT], capture_output=True,
                                text=True).stdout.strip()
    started = time.strftime("%Y-%m-%d %H:%M")
    report.update(date=started, host={"kernel": platform.release(), "cpus": os.cpu_count(),
                                      "output_dir": OUT, "output_filesystem": filesystem},
                  tools=versions, runs=RUNS, rf_flags=RF_FLAGS, **facts)
    say(f"# {title}, {started}")
    say(f"{RUNS} runs per command, alternating between commands; medians with (min–max). "
        f"Output on {filesystem} ({OUT}), deleted and synced between runs; {warmed}. "
        f"{os.cpu_count()} CPUs, Linux {platform.release()}.")
    for note in notes:
        say(note)
    say("tools: rangefetch " + " / ".join(versions.values()))


def write_report(name):
    """Writes what was said to RESULTS_DIR/name.md and the report to name.json (without
    RESULTS_DIR, nothing)."""
    report["sections"] = sections
    if RESULTS_DIR:
        os.makedirs(RESULTS_DIR, exist_ok=True)
        with open(os.path.join(RESULTS_DIR, f"{name}.md"), "w") as handle:
            handle.write("\n".join(lines) + "\n")
        with open(os.path.join(RESULTS_DIR, f"{name}.json"), "w") as handle:
            json.dump(report, handle, indent=1)
            handle.write("\n")


def main():
    # bench.sh stops us with SIGTERM on Ctrl-C or kill; exit through the `finally` in timed(),
    # so the tool being measured dies too before the namespaces are deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    versions = {"rangefetch": first_line([RF, "--version"]), "curl": first_line(["curl", "--version"]),
                "aria2c": first_line(["aria2c", "--version"]), "axel": first_line(["axel", "--version"])}
    begin_report("rangefetch benchmark", versions, "the served file is read into the page cache before each scenario",
                 [f"Single-connection tools (curl) run {RUNS_SLOW} times in the capped and WAN scenarios."]
                 if RUNS_SLOW != RUNS else [],
                 runs_single_connection=RUNS_SLOW, capped_mib_per_connection=float(RATE_MIB),
                 wan_link=WAN_DESCRIPTION or None)

    wan_chart = "Lossy WAN: " + ", ".join(WAN_DESCRIPTION.split(", ")[:3]).replace(" round trip", " RTT") \
        .replace(" server->client", "")
    kinds = (  # (id, title, chart title, notes, netns, source, log, plain URL, HTTPS/1.1 URL, h2 URL)
        ("unthrottled", "Unthrottled loopback", "Unthrottled loopback",
         ["nginx on 127.0.0.1 (sendfile over plain HTTP), no limit: measures the tools' own costs."],
         "", SOURCE, ACCESS_LOG, DIRECT_URL, os.environ.get("DIRECT_HTTPS_URL", ""), os.environ.get("DIRECT_H2_URL", "")),
        ("capped", f"Per-connection cap {RATE_MIB} MiB/s (rf-relay in front of nginx)",
         f"Capped: {RATE_MIB} MiB/s per connection",
         [f"Every TCP connection is capped at {RATE_MIB} MiB/s, as CDNs shape flows."],
         "", SOURCE, ACCESS_LOG, CAPPED_URL, os.environ.get("CAPPED_HTTPS_URL", ""), os.environ.get("CAPPED_H2_URL", "")),
        ("wan", f"Lossy WAN: {WAN_DESCRIPTION}", wan_chart,
         ["Client and server in two network namespaces joined by rf-wanem "
          "(Benchmarks/wanem), a userspace delay-and-loss line over TUN devices."],
         WAN_NETNS, WAN_SOURCE, WAN_ACCESS_LOG, WAN_URL, os.environ.get("WAN_HTTPS_URL", ""),
         os.environ.get("WAN_H2_URL", "")),
    )
    # A scenario's three protocols run one after the other, so that they meet the same conditions.
    for kind, title, chart, notes, netns, source, log, plain, https, h2 in kinds:
        for suffix, url, protocol in (("", plain, ""), ("-https", https, "HTTPS, HTTP/1.1 only"),
                                      ("-h2", h2, "HTTPS, HTTP/2 offered")):
            if url and wanted(kind + suffix):
                extra = [f"{protocol}: curl and rangefetch get the server's CA file; aria2c too; axel, "
                         "which has no CA option, runs with -k."] if protocol else []
                scenario(kind + suffix, title + (f" — {protocol}" if protocol else ""),
                         chart + (f"\n{protocol}" if protocol else ""), url, source, netns=netns,
                         notes=notes + extra, access_log=log)
    if MANY_DIR and wanted("many"):
        many_section()
    if BATCH_URLS and wanted("batchcapped"):
        batch_capped_section()
    if "rangefetch" in TOOL_NAMES and len(MIRROR_URLS) == 3 and wanted("mirrors"):
        mirrors_section()
    if "rangefetch" in TOOL_NAMES and CAPPED_URL and wanted("stream"):
        stream_section()
    if "rangefetch" in TOOL_NAMES and wanted("journal"):
        journal_section()
    if "rangefetch" in TOOL_NAMES and wanted("checksum"):
        checksum_section()
    if wanted("hash"):
        hash_section()
    if "rangefetch" in TOOL_NAMES and FLEET_CACHE_URL and wanted("fleet"):
        fleet_section()
    if "rangefetch" in TOOL_NAMES and wanted("lists"):
        lists_section()
    if CAPS_URLS and wanted("caps"):
        caps_section()

    write_report("latest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
