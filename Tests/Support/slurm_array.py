#!/usr/bin/env python3
"""A real Slurm on this machine for one test: munged, slurmctld and slurmd from Debian's
slurm-wlm and munge, configured and started inside a private work directory, one job array run
with `sbatch --wait`, then every daemon stopped by its pid (also on errors and timeouts).

    python3 Tests/Support/slurm_array.py --work DIR --array 1-4 [--timeout 180] -- SCRIPT
    python3 Tests/Support/slurm_array.py --install       # apt-get install slurm-wlm munge if missing

DIR must be an empty directory of the caller's (a fresh temporary one). SCRIPT runs once per
task with the caller's environment (sbatch exports it all) plus Slurm's SLURM_ARRAY_TASK_ID and
SLURM_ARRAY_TASK_COUNT. Prints one JSON line {"exit": sbatch's status, "tasks": {"1": 0, ...}}
and exits 0 only when every task exited 0. The daemons listen on free loopback ports, so a
system Slurm or another run never clashes; no cgroups (proctrack/linuxproc, task/none).
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def install():
    missing = [p for p in ("slurm-wlm", "munge")
               if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if missing:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env, stdout=subprocess.DEVNULL)


def node_line():
    """slurmd -C's NodeName line with the name replaced by localhost."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("NodeName="))
    fields = [f for f in line.split() if not f.startswith("NodeName=") and not f.startswith("UpTime=")]
    return "NodeName=localhost NodeAddr=127.0.0.1 " + " ".join(fields) + " State=UNKNOWN"


def tail(path, lines=15):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--install", action="store_true")
    parser.add_argument("--work")
    parser.add_argument("--array", default="1-4")
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("script", nargs="?")
    args = parser.parse_args()
    if args.install:
        install()
        return 0
    if not args.work or not args.script:
        parser.error("--work DIR and a SCRIPT are needed")

    work = os.path.abspath(args.work)
    for sub in ("munge", "state", "spool", "log", "run"):
        os.makedirs(os.path.join(work, sub), mode=0o700, exist_ok=True)
    key = os.path.join(work, "munge", "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    munge_socket = os.path.join(work, "munge", "munge.socket")
    conf = os.path.join(work, "slurm.conf")
    with open(conf, "w") as f:
        f.write(f"""ClusterName=rftest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/run/slurmctld.pid
SlurmdPidFile={work}/run/slurmd.pid
SlurmctldLogFile={work}/log/slurmctld.log
SlurmdLogFile={work}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SlurmctldTimeout=30
SlurmdTimeout=30
MaxArraySize=1001
{node_line()}
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
    env = dict(os.environ, SLURM_CONF=conf)

    daemons = []

    def start(argv, log):
        out = open(os.path.join(work, "log", log), "ab")
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        daemons.append(process)
        return process

    def stop_all():
        for process in reversed(daemons):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.time() + 10
        for process in reversed(daemons):
            try:
                process.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def fail(why, logs=("slurmctld.log", "slurmd.log", "munged.log")):
        detail = "\n".join(f"--- {name}\n{tail(os.path.join(work, 'log', name))}" for name in logs)
        raise SystemExit(f"slurm_array: {why}\n{detail}")

    result = {"exit": None, "tasks": {}}
    try:
        start(["munged", "--foreground", "--force", f"--socket={munge_socket}", f"--key-file={key}",
               f"--pid-file={work}/run/munged.pid", f"--log-file={work}/log/munged.log",
               f"--seed-file={work}/munge/munged.seed"], "munged.out")
        deadline = time.time() + 30
        while not os.path.exists(munge_socket):
            if time.time() > deadline or daemons[0].poll() is not None:
                fail("munged did not start", ("munged.log", "munged.out"))
            time.sleep(0.1)
        start(["slurmctld", "-D", "-i", "-f", conf], "slurmctld.out")
        start(["slurmd", "-D", "-f", conf, "-N", "localhost"], "slurmd.out")
        deadline = time.time() + 60
        while True:
            state = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True)
            if state.returncode == 0 and state.stdout.strip().rstrip("*") in ("idle", "mixed", "allocated"):
                break
            if time.time() > deadline or any(p.poll() is not None for p in daemons):
                fail(f"the node did not come up (sinfo: {state.stdout.strip() or state.stderr.strip()})")
            time.sleep(0.3)

        # The caller's script, wrapped so each task's exit status is kept.
        wrapper = os.path.join(work, "task.sh")
        with open(wrapper, "w") as f:
            f.write(f"""#!/bin/sh
"{os.path.abspath(args.script)}"
status=$?
echo $status > "{work}/exit-$SLURM_ARRAY_TASK_ID"
exit $status
""")
        os.chmod(wrapper, 0o755)
        try:
            batch = subprocess.run(["sbatch", "--wait", f"--array={args.array}", "--export=ALL",
                                    f"--output={work}/out-%a.txt", "--chdir", work, wrapper],
                                   env=env, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            subprocess.run(["scancel", "--user", str(os.getuid())], env=env)
            fail(f"the array did not end within {args.timeout:.0f} s")
        result["exit"] = batch.returncode
        first, last = (int(x) for x in args.array.split("-"))
        for task in range(first, last + 1):
            try:
                with open(os.path.join(work, f"exit-{task}")) as f:
                    result["tasks"][str(task)] = int(f.read().strip())
            except (OSError, ValueError):
                result["tasks"][str(task)] = None
        if batch.returncode != 0:
            sys.stderr.write(batch.stderr)
            for task in result["tasks"]:
                sys.stderr.write(f"--- task {task}\n{tail(os.path.join(work, f'out-{task}.txt'))}")
    finally:
        stop_all()
    print(json.dumps(result))
    ok = result["exit"] == 0 and all(code == 0 for code in result["tasks"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
