#!/usr/bin/env python3
"""A real Slurm on this machine for one test: munged, slurmctld and slurmd from Debian's
slurm-wlm and munge, configured and started inside a private work directory, one job array run
with `sbatch --wait`, then every daemon stopped by its pid (also on errors, timeouts and SIGTERM).

    python3 Tests/Support/slurm_array.py --work DIR --array 1-4 [--timeout 120] -- SCRIPT [ARGS...]
    python3 Tests/Support/slurm_array.py --install    # apt-get install slurm-wlm munge if missing

Needs root (slurmd runs jobs as their user; SlurmUser=root). DIR is the caller's fresh private
directory; everything goes in it: munge key, socket and seed, slurm.conf, cgroup.conf, state,
spool, daemon logs (DIR/log/*.log), each task's output (DIR/out-<id>.txt) and exit status
(DIR/exit-<id>). SCRIPT runs once per task, in the caller's working directory, with the
caller's environment (sbatch --export=ALL) plus Slurm's SLURM_ARRAY_TASK_ID and
SLURM_ARRAY_TASK_COUNT. --timeout bounds the array (sbatch --wait); the daemons get
--start-timeout to come up. Prints one JSON line
    {"exit": sbatch's status, "tasks": {"1": 0, ...}, "job": N, "seconds": S[, "error": "..."]}
(a task's status is null when it wrote none) and exits 0 only when sbatch and every task exited 0.
The daemons listen on free loopback ports, so a system Slurm or another run never clashes; no
cgroups (proctrack/linuxproc, task/none), no accounting.
"""

import argparse
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PACKAGES = ("slurm-wlm", "munge")
TOOLS = ("munged", "munge", "slurmctld", "slurmd", "sbatch", "sinfo", "scancel")
SUN_PATH_MAX = 100  # sockaddr_un holds 108 bytes; slurmd's step sockets add ~30 to its spool dir
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


class Failure(Exception):
    pass


class Interrupted(Exception):
    pass


def log(message):
    sys.stderr.write(f"slurm_array: {message}\n")
    sys.stderr.flush()


def install():
    missing = [p for p in PACKAGES if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if not missing:
        return
    log(f"installing {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
                   check=True, env=env, stdout=subprocess.DEVNULL)


def task_ids(spec):
    """The task ids of an --array spec: "1-4", "0,3,7", "1-9:2", with an optional "%N" limit."""
    ids = []
    for part in spec.split("%")[0].split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part.strip())
        if not m:
            raise Failure(f"cannot read --array {spec!r} (expected e.g. 1-4, 0,2,5 or 1-9:2)")
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else first
        ids += range(first, last + 1, int(m.group(3) or 1))
    return sorted(set(ids))


def free_ports(count):
    """Ports free on 127.0.0.1 now, all different (the sockets are held until all are picked)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def node_line():
    """slurmd -C's NodeName line for this machine, named localhost."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=60)
    line = next((l for l in out.stdout.splitlines() if l.startswith("NodeName=")), None)
    if out.returncode != 0 or line is None:
        raise Failure(f"slurmd -C failed ({out.returncode}): {out.stderr.strip()}")
    fields = [f for f in line.split() if not f.startswith(("NodeName=", "UpTime="))]
    return "NodeName=localhost NodeAddr=127.0.0.1 " + " ".join(fields) + " State=UNKNOWN"


# Lines every start logs here, harmlessly: a fresh state dir, no PMIx library, munged's notes on
# Slurm's own credential checks ("not a cause for concern", Slurm's NEWS).
NOISE = re.compile(r"state file|NOTE: Trying backup|pmix|PMIx|MPI: Cannot create|Unauthorized credential for client UID=0 ")


def tail(path, lines=20, quiet=False):
    try:
        with open(path, errors="replace") as f:
            kept = [l for l in f if not (quiet and NOISE.search(l))]
        return "".join(kept[-lines:]).rstrip("\n") or "(empty)"
    except OSError:
        return "(none)"


def proc_table():
    """{pid: (ppid, starttime)} of every process now."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                table[int(name)] = (int(fields[1]), fields[19])
            except (OSError, IndexError, ValueError):
                pass
    return table


def descendants(roots):
    """{pid: starttime} of the processes below `roots` (not the roots themselves)."""
    table = proc_table()
    found, frontier = {}, set(roots)
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier and pid not in found}
        found.update({pid: table[pid][1] for pid in frontier})
    return found


def marked(conf):
    """{pid: starttime} of the processes whose environment has SLURM_CONF=conf: the daemons,
    slurmstepd and every job process (sbatch --export=ALL hands it on)."""
    needle = b"\0SLURM_CONF=" + conf.encode() + b"\0"
    found = {}
    for pid, (_, start) in proc_table().items():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in b"\0" + f.read():
                    found[pid] = start
        except OSError:
            pass
    return found


def sweep(conf, exclude=(), grace=3.0):
    """SIGTERM, then SIGKILL, the processes marked with conf; returns the pids SIGKILLed."""
    killed = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = {pid: start for pid, start in marked(conf).items() if pid not in exclude}
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if sig == signal.SIGKILL:
            killed = list(left)
        end = time.monotonic() + grace
        while time.monotonic() < end and any(p in left for p in marked(conf)):
            time.sleep(0.1)
    return killed


def watchdog(conf):
    """A process that outlives us: when we die without saying "done" (SIGKILL), it ends what we
    started (the daemons die with us anyway; slurmstepd and job processes would not).
    Returns (its pid, the pipe to write "done" to)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(r)
        return pid, w
    try:
        os.setsid()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, r)
        os.closerange(r + 1, 65536)
        said = b""
        while True:
            chunk = os.read(r, 64)
            if not chunk:
                break
            said += chunk
        if b"done" not in said:
            sweep(conf)
    finally:
        os._exit(0)


def in_child():
    """In each daemon before exec: die with us, even on SIGKILL."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Cluster:
    def __init__(self, work, start_timeout):
        self.work = work
        self.start_timeout = start_timeout
        self.daemons = {}  # name -> Popen
        self.alias = None
        self.guard = None  # (watchdog pid, its pipe)
        self.conf = None

    def path(self, *parts):
        return os.path.join(self.base, *parts)

    def configure(self):
        work = self.work
        for sub in ("munge", "state", "spool", "log", "run"):
            os.makedirs(os.path.join(work, sub), mode=0o700, exist_ok=True)
        for name in os.listdir(work):
            if re.fullmatch(r"(exit-\d+|out-\d+\.txt)", name):
                os.unlink(os.path.join(work, name))
        # Unix socket paths are short: munged's socket and slurmd's step sockets live in DIR; a
        # long DIR is reached through a short symlink in /tmp (removed at the end).
        self.base = work
        if len(os.path.join(work, "spool", "localhost_4294967294.4294967294")) > SUN_PATH_MAX:
            self.alias = tempfile.mktemp(prefix="sa-", dir="/tmp")
            os.symlink(work, self.alias)
            self.base = self.alias
        self.key = self.path("munge", "munge.key")
        if os.path.exists(self.key):
            os.chmod(self.key, 0o600)
        with open(self.key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(self.key, 0o400)  # munged runs as root here (see start), so root owns it
        self.socket = self.path("munge", "munge.socket")
        self.conf = self.path("slurm.conf")
        ctld_port, slurmd_port = free_ports(2)
        self.ports = (ctld_port, slurmd_port)
        with open(os.path.join(work, "slurm.conf"), "w") as f:
            f.write(f"""# Written by Tests/Support/slurm_array.py: one node, this machine, on loopback.
ClusterName=satest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={self.path('state')}
SlurmdSpoolDir={self.path('spool')}
SlurmctldPidFile={self.path('run', 'slurmctld.pid')}
SlurmdPidFile={self.path('run', 'slurmd.pid')}
SlurmctldLogFile={self.path('log', 'slurmctld.log')}
SlurmdLogFile={self.path('log', 'slurmd.log')}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Schedule at once on submission and on each task's end (default: batched every 3 s).
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
# sbatch --wait polls every 2 s while 2 >= MinJobAge/2 (else it backs off to 8 and 32 s); 2 is
# the least Slurm takes. Task statuses come from DIR/exit-<id>, not from the job records.
MinJobAge=4
SlurmctldTimeout=60
SlurmdTimeout=120
MessageTimeout=30
MaxArraySize=100001
{node_line()}
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
        with open(os.path.join(work, "cgroup.conf"), "w") as f:
            f.write("# No cgroups: proctrack/linuxproc and task/none never read this; here so no\n"
                    "# system /etc/slurm/cgroup.conf is picked up.\nCgroupAutomount=no\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}
        path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(":")
        env["PATH"] = ":".join(path + [d for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin") if d not in path])
        env["SLURM_CONF"] = self.conf
        self.env = env
        missing = [t for t in TOOLS if not shutil.which(t, path=env["PATH"])]
        if missing:
            raise Failure(f"{', '.join(missing)} not found: run `slurm_array.py --install` "
                          f"(apt-get install {' '.join(PACKAGES)})")
        self.guard = watchdog(self.conf)

    def start(self, name, argv):
        out = open(os.path.join(self.work, "log", f"{name}.out"), "ab")
        try:
            self.daemons[name] = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                                  stderr=subprocess.STDOUT, start_new_session=True,
                                                  preexec_fn=in_child)
        finally:
            out.close()

    def logs(self, *names):
        parts = []
        for name in names or ("munged", "slurmctld", "slurmd"):
            # The daemons log to their log file and, in the foreground, to stderr (.out); munged
            # only to stderr. The .out has what came before the log file was opened.
            files = [os.path.join(self.work, "log", name + suffix) for suffix in (".log", ".out")]
            file = next((f for f in files if os.path.exists(f) and os.path.getsize(f)), files[-1])
            parts.append(f"--- {file} (tail, routine noise left out)\n{tail(file, quiet=True)}")
        return "\n".join(parts)

    def dead(self):
        return [f"{name} exited with status {p.returncode}" for name, p in self.daemons.items() if p.poll() is not None]

    def run(self, argv, timeout=30):
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def up(self):
        # munged refuses a socket whose directory is not world-searchable (DIR is private):
        # --force turns that into a warning. As root it needs no munge user.
        self.start("munged", ["munged", "--foreground", "--force", f"--socket={self.socket}",
                              f"--key-file={self.key}", f"--pid-file={self.path('run', 'munged.pid')}",
                              f"--seed-file={self.path('munge', 'munged.seed')}",
                              f"--log-file={self.path('log', 'munged.log')}", "--num-threads=4"])
        deadline = time.monotonic() + self.start_timeout
        while True:
            probe = self.run(["munge", "-n", "-S", self.socket]) if os.path.exists(self.socket) else None
            if probe is not None and probe.returncode == 0:
                break
            if self.dead() or time.monotonic() > deadline:
                why = probe.stderr.strip() if probe else "no socket"
                raise Failure(f"munged did not come up in {self.start_timeout:.0f} s ({'; '.join(self.dead()) or why})\n"
                              + self.logs("munged"))
            time.sleep(0.2)
        self.start("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        self.start("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", "localhost"])
        state, since = "", time.monotonic()
        while True:
            try:
                out = self.run(["sinfo", "-h", "-N", "-o", "%T"], timeout=20)
                state = out.stdout.strip() or out.stderr.strip()
                if out.returncode == 0 and state.rstrip("*~#") in ("idle", "mixed", "allocated"):
                    return
            except subprocess.TimeoutExpired:
                state = "sinfo timed out"
            # "inval": slurmctld refused the node's registration (it never recovers by itself).
            if self.dead() or time.monotonic() > deadline or state.startswith("inval"):
                reason = ""
                try:
                    reason = self.run(["sinfo", "-h", "-N", "-o", "%E"], timeout=10).stdout.strip()
                except subprocess.TimeoutExpired:
                    pass
                raise Failure(f"the node was not idle after {time.monotonic() - since:.0f} s (sinfo: {state!r}"
                              f"{', reason: ' + reason if reason else ''}; {'; '.join(self.dead()) or 'daemons running'})\n"
                              + self.logs())
            time.sleep(0.3)

    def down(self, grace=10.0):
        """SIGTERM slurmd, slurmctld, munged (in that order), SIGKILL what is left after `grace`;
        then whatever they left behind (slurmstepd, job processes)."""
        pids = [p.pid for p in self.daemons.values() if p.poll() is None]
        left = descendants(pids + [os.getpid()])
        if self.guard:
            left.pop(self.guard[0], None)
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.daemons.get(name)
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=grace / 2 if name != "munged" else 3)
                except subprocess.TimeoutExpired:
                    pass
        deadline = time.monotonic() + grace
        for name, p in self.daemons.items():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"{name} (pid {p.pid}) ignored SIGTERM for {grace:.0f} s: SIGKILL")
                p.kill()
                p.wait()
        # Stragglers: processes that were below the daemons or us (orphans come to us: we are a
        # child subreaper), if they are still the same processes (same start time).
        mine = {p.pid for p in self.daemons.values()} | ({self.guard[0]} if self.guard else set())
        left.update(descendants([os.getpid()]))
        if self.conf:
            left.update(marked(self.conf))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            table = proc_table()
            alive = [pid for pid, start in left.items()
                     if pid not in mine and pid in table and table[pid][1] == start and pid != os.getpid()]
            for pid in alive:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + 3
            while alive and time.monotonic() < end:
                for pid in list(alive):
                    try:  # our own (reparented) children must be reaped, the others just vanish
                        if table.get(pid, (0,))[0] == os.getpid():
                            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                                alive.remove(pid)
                        elif not os.path.exists(f"/proc/{pid}"):
                            alive.remove(pid)
                    except ChildProcessError:
                        alive.remove(pid)
                time.sleep(0.1)
            if not alive:
                break
            log(f"still running 3 s after {sig.name}: pids {alive}")
        if self.alias:
            try:
                os.unlink(self.alias)
            except OSError:
                pass
        if self.guard:
            pid, pipe = self.guard
            os.write(pipe, b"done")
            os.close(pipe)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def main():
    argv = sys.argv[1:]
    command = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", action="store_true", help="apt-get install slurm-wlm munge when missing")
    parser.add_argument("--work", help="an empty private directory for everything")
    parser.add_argument("--array", default="1-4", help="sbatch --array spec (default 1-4)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds for the whole array (default 120)")
    parser.add_argument("--start-timeout", type=float, default=120, help="seconds for the daemons to come up")
    parser.add_argument("script", nargs="?")
    args = parser.parse_args(argv)
    if args.script:
        command = [args.script] + command
    if args.install:
        install()
        if not command:
            return 0
    if not args.work or not command:
        parser.error("--work DIR and -- SCRIPT are needed")
    if os.geteuid() != 0:
        parser.error("must run as root (slurmd and SlurmUser=root)")

    def interrupted(signum, frame):
        raise Interrupted(f"got {signal.Signals(signum).name}")

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, interrupted)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    started = time.monotonic()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    result = {"exit": None, "tasks": {}, "job": None}
    cluster = Cluster(work, args.start_timeout)
    batch = None
    try:
        ids = task_ids(args.array)
        result["tasks"] = {str(i): None for i in ids}
        script = os.path.abspath(command[0])
        if not os.access(script, os.X_OK):
            raise Failure(f"{script} is not an executable file")
        cluster.configure()
        cluster.up()
        log(f"node idle after {time.monotonic() - started:.1f} s (ports {cluster.ports[0]}, {cluster.ports[1]})")

        # The caller's script, wrapped so each task's exit status is kept.
        wrapper = os.path.join(work, "task.sh")
        with open(wrapper, "w") as f:
            f.write(f"""#!/bin/sh
{shlex.join([script] + command[1:])}
status=$?
echo $status > {shlex.quote(cluster.path('exit-'))}"$SLURM_ARRAY_TASK_ID"
exit $status
""")
        os.chmod(wrapper, 0o755)
        minutes = int(args.timeout // 60) + 2  # Slurm's own limit, past ours
        sbatch_out = os.path.join(work, "sbatch.out")
        with open(sbatch_out, "w") as out:
            batch = subprocess.Popen(["sbatch", "--wait", f"--array={args.array}", "--export=ALL",
                                      f"--output={cluster.path('out-%a.txt')}", "--job-name=slurm_array",
                                      f"--time={minutes}", wrapper],
                                     env=cluster.env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + args.timeout
        while batch.poll() is None:
            if result["job"] is None:
                m = re.search(r"Submitted batch job (\d+)", tail(sbatch_out))
                result["job"] = int(m.group(1)) if m else None
            if cluster.dead():
                raise Failure(f"a daemon died during the array: {'; '.join(cluster.dead())}\n" + cluster.logs())
            if time.monotonic() > deadline:
                raise Failure(f"the array did not end within {args.timeout:.0f} s\n--- sbatch\n{tail(sbatch_out)}")
            time.sleep(0.2)
        m = re.search(r"Submitted batch job (\d+)", tail(sbatch_out))
        result["job"] = int(m.group(1)) if m else result["job"]
        result["exit"] = batch.returncode
        if batch.returncode != 0:
            log(f"sbatch exited {batch.returncode}:\n{tail(sbatch_out)}")
    except Exception as e:  # Failure, Interrupted, or anything else: reported, then cleaned up
        result["error"] = str(e).split("\n")[0] or type(e).__name__
        log(str(e) if isinstance(e, (Failure, Interrupted)) else f"{type(e).__name__}: {e}")
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
        try:
            if batch is not None and batch.poll() is None:
                batch.kill()
                batch.wait()
                if result["job"] is not None and not cluster.dead():
                    try:
                        cluster.run(["scancel", str(result["job"])], timeout=15)
                    except subprocess.TimeoutExpired:
                        pass
        finally:
            cluster.down()
    for task in result["tasks"] if batch is not None else ():
        try:
            with open(os.path.join(work, f"exit-{task}")) as f:
                result["tasks"][task] = int(f.read().strip())
        except (OSError, ValueError):
            pass
    failed = [t for t, code in result["tasks"].items() if code != 0]
    if failed and "error" not in result:
        for task in failed:
            log(f"task {task} exited {result['tasks'][task]}; its output (tail):\n"
                f"{tail(os.path.join(work, f'out-{task}.txt'))}")
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result), flush=True)
    return 0 if result["exit"] == 0 and result["tasks"] and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
