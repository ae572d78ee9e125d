#!/usr/bin/env python3
"""Validates Tests/Support/fake_hub.py against the real huggingface_hub client.

Run
    scripts/test.sh sets up Tests/.venv with huggingface_hub==2.4.0 (scripts/lib/packages.sh: rf_test_python)
    python3 Tests/Support/fake_hub_check.py [--python Tests/.venv/bin/python] [--keep]

This script itself needs only the standard library: every huggingface_hub call runs in a child
process of --python (default: Tests/.venv/bin/python), with HF_ENDPOINT pointed at the fake,
HF_HUB_CACHE / HF_HOME in a temporary folder and no token from the environment. Prints one
"ok - ..." or "FAIL - ..." line per check, then "N passed, N failed"; exits 0 only if all pass.
"""

import argparse
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from urllib.parse import urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_hub.py")
DEFAULT_PYTHON = os.path.join(os.path.dirname(HERE), ".venv", "bin", "python")
TOKEN = "hf_fake_0123456789abcdefghij"

C_MAIN = "1" * 40
C_DEV = "2" * 40
C_PRIV = "3" * 40
C_DATA = "4" * 40
C_GATED = "5" * 40
C_SPACE = "6" * 40


# ---------------------------------------------------------------------------------------------
# Client side: runs in the child (--python), where huggingface_hub is importable.

CLIENT = r'''
import json, sys, traceback
spec = json.loads(sys.argv[1])
try:
    import huggingface_hub
    from huggingface_hub import snapshot_download, hf_hub_download
    kwargs = spec.get("kwargs", {})
    if spec["call"] == "snapshot_download":
        result = snapshot_download(spec["repo_id"], **kwargs)
    elif spec["call"] == "hf_hub_download":
        result = hf_hub_download(spec["repo_id"], spec["filename"], **kwargs)
    elif spec["call"] == "version":
        result = huggingface_hub.__version__
    print(json.dumps({"ok": True, "result": result}))
except Exception as e:
    print(json.dumps({"ok": False, "error": type(e).__name__,
                      "mro": [c.__name__ for c in type(e).__mro__], "message": str(e)[:2000]}))
'''


class Check:
    def __init__(self, args):
        self.args = args
        self.passed = 0
        self.failed = 0
        self.procs = []

    def ok(self, condition, what, detail=""):
        if condition:
            self.passed += 1
            print(f"ok - {what}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL - {what}" + (f": {detail}" if detail else ""), flush=True)
        return condition

    # -- fake server -----------------------------------------------------------------------------

    def start_fake(self, tmp, name, extra=()):
        ready = os.path.join(tmp, f"{name}.ready")
        log = os.path.join(tmp, f"{name}.log")
        cmd = [sys.executable if self.args.fake_python is None else self.args.fake_python, FAKE,
               "--repos", os.path.join(tmp, "repos.json"), "--root", os.path.join(tmp, "root"),
               "--port", "0", "--cdn-port", "0", "--ready-file", ready, "--token", TOKEN,
               "--log", log, *extra]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(tmp, f"{name}.stderr"), "w"))
        self.procs.append(proc)
        deadline = time.time() + 60
        while not os.path.exists(ready):
            if proc.poll() is not None:
                raise RuntimeError(f"fake_hub exited {proc.returncode}: "
                                   + open(os.path.join(tmp, f"{name}.stderr")).read())
            if time.time() > deadline:
                raise RuntimeError("fake_hub did not become ready in 60 s")
            time.sleep(0.05)
        info = json.loads(open(ready).read())
        info["log"] = log
        info["proc"] = proc
        return info

    # -- client ----------------------------------------------------------------------------------

    def client(self, env_extra, call, repo_id=None, **kwargs):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
        env.update({
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
            "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        })
        env.update(env_extra)
        filename = kwargs.pop("filename", None)
        spec = {"call": call, "repo_id": repo_id, "filename": filename, "kwargs": kwargs}
        out = subprocess.run([self.args.python, "-c", CLIENT, json.dumps(spec)], env=env,
                             capture_output=True, text=True, timeout=300)
        lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
        if not lines:
            return {"ok": False, "error": "NoOutput", "mro": [], "message": out.stderr[-3000:]}
        return json.loads(lines[-1])


# ---------------------------------------------------------------------------------------------
# Fixtures


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def generated(size, seed):
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(seed.encode() + counter.to_bytes(8, "little")).digest()
        counter += 1
    return bytes(out[:size])


def make_fixtures(tmp):
    """Writes repos.json and root/; returns {(type, id, commit): {path: (bytes, lfs)}}."""
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.join(root, "blobs"))
    big = random.Random(7).randbytes(3 * 1024 * 1024 + 123)  # ~3 MiB, from a file under --root
    with open(os.path.join(root, "blobs", "model.safetensors"), "wb") as f:
        f.write(big)
    expected = {}
    repos = []

    def repo(type_, id_, branches, commits, private=False, gated=False, tags=None):
        spec = {"type": type_, "id": id_, "private": private, "gated": gated, "branches": branches,
                "tags": tags or {}, "commits": {}}
        for sha, files in commits.items():
            spec["commits"][sha] = []
            expected[(type_, id_, sha)] = {}
            for path, source, lfs in files:
                entry = {"path": path, "lfs": lfs}
                if isinstance(source, str):
                    entry["text"] = source
                    data = source.encode()
                elif isinstance(source, tuple) and source[0] == "file":
                    entry["file"] = source[1]
                    data = open(os.path.join(root, source[1]), "rb").read()
                else:
                    entry["generate"] = {"size": source[1], "seed": source[2]}
                    data = generated(source[1], source[2])
                spec["commits"][sha].append(entry)
                expected[(type_, id_, sha)][path] = (data, lfs)
        repos.append(spec)

    gitattributes = "*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.bin filter=lfs diff=lfs merge=lfs -text\n"
    repo("model", "acme/public-model", {"main": C_MAIN, "dev": C_DEV}, {
        C_MAIN: [
            (".gitattributes", gitattributes, False),
            ("config.json", '{"hidden_size": 8, "model_type": "fake"}\n', False),
            ("sub/notes.txt", "notes in a subfolder\n" * 20, False),
            ("model.safetensors", ("file", "blobs/model.safetensors"), True),
            ("sub/weights.bin", ("gen", 200 * 1024 + 5, "weights"), True),
        ],
        C_DEV: [
            (".gitattributes", gitattributes, False),
            ("config.json", '{"hidden_size": 16, "model_type": "fake", "branch": "dev"}\n', False),
            ("model.safetensors", ("gen", 300 * 1024, "dev-weights"), True),
        ],
    }, tags={"v1.0": C_MAIN})
    repo("model", "acme/private-model", {"main": C_PRIV}, {
        C_PRIV: [
            ("README.md", "# private\n", False),
            ("pytorch_model.bin", ("gen", 512 * 1024, "private"), True),
        ],
    }, private=True)
    repo("dataset", "acme/data", {"main": C_DATA}, {
        C_DATA: [
            ("README.md", "---\nlicense: mit\n---\n# data\n", False),
            ("data/train.csv", "a,b\n" + "1,2\n" * 500, False),
            ("data/part-0.parquet", ("gen", 150 * 1024, "parquet"), True),
        ],
    })
    repo("model", "acme/gated-model", {"main": C_GATED}, {
        C_GATED: [("config.json", "{}\n", False), ("model.bin", ("gen", 4096, "gated"), True)],
    }, gated=True)
    repo("space", "acme/space", {"main": C_SPACE}, {
        C_SPACE: [("app.py", "print('hi')\n", False), ("assets/logo.png", ("gen", 70000, "logo"), True)],
    })
    with open(os.path.join(tmp, "repos.json"), "w") as f:
        json.dump({"repos": repos}, f, indent=1)
    return expected


# ---------------------------------------------------------------------------------------------
# Helpers


def read_log(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def wait_log(path, predicate, seconds=5.0):
    """The first entry of the log at path that predicate accepts, waited for up to seconds: the
    fake logs a request once its response has gone out, so a client that has read the response
    may look before the line is written. None when none came."""
    deadline = time.monotonic() + seconds
    while True:
        found = next((entry for entry in read_log(path) if predicate(entry)), None)
        if found is not None or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def fetch(url, method="GET", headers=None):
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    target = parts.path + ("?" + parts.query if parts.query else "")
    conn.request(method, target, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def compare_tree(folder, files):
    """Differences between a downloaded folder (following links) and the expected files."""
    problems = []
    for path, (data, _) in files.items():
        local = os.path.join(folder, *path.split("/"))
        if not os.path.isfile(local):
            problems.append(f"{path}: missing")
        elif open(local, "rb").read() != data:
            problems.append(f"{path}: bytes differ")
    return problems


def storage(cache, type_, repo_id):
    return os.path.join(cache, f"{type_}s--" + repo_id.replace("/", "--"))


def check_cache_layout(c, cache, type_, repo_id, commit, files, refs):
    folder = storage(cache, type_, repo_id)
    problems = []
    for path, (data, lfs) in files.items():
        name = hashlib.sha256(data).hexdigest() if lfs else git_sha1(data)
        blob = os.path.join(folder, "blobs", name)
        link = os.path.join(folder, "snapshots", commit, *path.split("/"))
        if not os.path.isfile(blob) or os.path.islink(blob):
            problems.append(f"blobs/{name} ({path}) missing or not a plain file")
        if not os.path.islink(link):
            problems.append(f"snapshots/{commit[:7]}/{path} not a symlink")
            continue
        target = os.readlink(link)
        depth = path.count("/")
        want = "../" * (depth + 2) + "blobs/" + name
        if target != want:
            problems.append(f"{path} -> {target}, expected {want}")
    for ref in refs:
        ref_file = os.path.join(folder, "refs", ref)
        content = open(ref_file, "rb").read() if os.path.isfile(ref_file) else None
        if content != commit.encode():
            problems.append(f"refs/{ref} = {content!r}, expected {commit!r} without newline")
    tree = os.path.join(folder, "trees", f"{commit}.json")
    if not os.path.isfile(tree):
        problems.append(f"trees/{commit}.json missing")
    else:
        listing = json.load(open(tree))
        if listing.get("format_version") != 1 or set(listing.get("files", {})) != set(files):
            problems.append(f"trees/{commit}.json: {listing}")
    c.ok(not problems, f"cache layout of {type_} {repo_id}@{commit[:7]}", "; ".join(problems))


# ---------------------------------------------------------------------------------------------
# The checks


def run(c, tmp):
    version = c.client({}, "version")
    if not version.get("ok"):
        print(f"huggingface_hub not importable with {c.args.python}: {version.get('message')}\n"
              "Set up: scripts/test.sh sets up Tests/.venv with huggingface_hub==2.4.0 (scripts/lib/packages.sh: rf_test_python)",
              file=sys.stderr)
        c.failed += 1
        return
    print(f"# huggingface_hub {version['result']} ({c.args.python})", flush=True)

    expected = make_fixtures(tmp)
    fake = c.start_fake(tmp, "fake")
    print(f"# fake hub {fake['hub']}, cdn {fake['cdn']}, pid {fake['pid']}", flush=True)
    cache = os.path.join(tmp, "cache")
    env = {"HF_ENDPOINT": fake["hub"], "HF_HUB_CACHE": cache, "HF_HOME": os.path.join(tmp, "hf_home")}
    pub = ("model", "acme/public-model")

    # 1. Public model, default revision (main).
    r = c.client(env, "snapshot_download", "acme/public-model")
    want_path = os.path.join(storage(cache, *pub), "snapshots", C_MAIN)
    if c.ok(r["ok"] and os.path.realpath(r["result"]) == os.path.realpath(want_path),
            "snapshot_download public model (main)", json.dumps(r)[:1500]):
        problems = compare_tree(r["result"], expected[(*pub, C_MAIN)])
        c.ok(not problems, "public model: every file byte for byte (2 LFS incl. 3 MiB, 3 small incl. subfolder)",
             "; ".join(problems))
        check_cache_layout(c, cache, *pub, C_MAIN, expected[(*pub, C_MAIN)], ["main"])

    # 2. A branch name as revision.
    r = c.client(env, "snapshot_download", "acme/public-model", revision="dev")
    if c.ok(r["ok"] and r["result"].endswith(C_DEV), "snapshot_download revision='dev'", json.dumps(r)[:1500]):
        c.ok(not compare_tree(r["result"], expected[(*pub, C_DEV)]), "dev branch: files byte for byte")
        check_cache_layout(c, cache, *pub, C_DEV, expected[(*pub, C_DEV)], ["dev"])

    # 3. A tag, and a full commit hash (no repo_info call: revision is already a commit).
    r = c.client(env, "snapshot_download", "acme/public-model", revision="v1.0")
    c.ok(r["ok"] and r["result"].endswith(C_MAIN) and
         open(os.path.join(storage(cache, *pub), "refs", "v1.0")).read() == C_MAIN,
         "snapshot_download revision='v1.0' (tag) -> refs/v1.0", json.dumps(r)[:800])

    # 4. Private model: with the token, without, with a wrong one.
    priv = ("model", "acme/private-model")
    r = c.client(env, "snapshot_download", "acme/private-model", token=TOKEN)
    if c.ok(r["ok"], "snapshot_download private model with token", json.dumps(r)[:1500]):
        c.ok(not compare_tree(r["result"], expected[(*priv, C_PRIV)]), "private model: files byte for byte")
        check_cache_layout(c, cache, *priv, C_PRIV, expected[(*priv, C_PRIV)], ["main"])
    fresh = dict(env, HF_HUB_CACHE=os.path.join(tmp, "cache-noauth"))
    r = c.client(fresh, "snapshot_download", "acme/private-model")
    c.ok(not r["ok"] and "RepositoryNotFoundError" in r["mro"], "private model without token: RepositoryNotFoundError",
         json.dumps(r)[:800])
    r = c.client(fresh, "snapshot_download", "acme/private-model", token="hf_wrong")
    c.ok(not r["ok"] and "RepositoryNotFoundError" in r["mro"], "private model with a wrong token: RepositoryNotFoundError",
         json.dumps(r)[:800])

    # 5. Dataset, space.
    data = ("dataset", "acme/data")
    r = c.client(env, "snapshot_download", "acme/data", repo_type="dataset")
    if c.ok(r["ok"], "snapshot_download dataset", json.dumps(r)[:1500]):
        c.ok(not compare_tree(r["result"], expected[(*data, C_DATA)]), "dataset: files byte for byte")
        check_cache_layout(c, cache, *data, C_DATA, expected[(*data, C_DATA)], ["main"])
    space = ("space", "acme/space")
    r = c.client(env, "snapshot_download", "acme/space", repo_type="space")
    c.ok(r["ok"] and not compare_tree(r["result"], expected[(*space, C_SPACE)]), "snapshot_download space, byte for byte",
         json.dumps(r)[:800])

    # 6. Gated model: GatedRepoError without the token, files with it.
    r = c.client(fresh, "snapshot_download", "acme/gated-model")
    c.ok(not r["ok"] and "GatedRepoError" in r["mro"], "gated model without token: GatedRepoError", json.dumps(r)[:800])
    r = c.client(env, "snapshot_download", "acme/gated-model", token=TOKEN)
    c.ok(r["ok"] and not compare_tree(r["result"], expected[("model", "acme/gated-model", C_GATED)]),
         "gated model with token, byte for byte", json.dumps(r)[:800])

    # 7. Errors of hf_hub_download: unknown revision, unknown file (-> .no_exist), unknown repo.
    r = c.client(env, "hf_hub_download", "acme/public-model", filename="config.json", revision="nope")
    c.ok(not r["ok"] and "RevisionNotFoundError" in r["mro"], "unknown revision: RevisionNotFoundError", json.dumps(r)[:800])
    r = c.client(env, "hf_hub_download", "acme/public-model", filename="missing.txt")
    no_exist = os.path.join(storage(cache, *pub), ".no_exist", C_MAIN, "missing.txt")
    c.ok(not r["ok"] and "RemoteEntryNotFoundError" in r["mro"] and os.path.isfile(no_exist),
         "unknown file: RemoteEntryNotFoundError and .no_exist/<commit>/missing.txt", json.dumps(r)[:800])
    r = c.client(env, "snapshot_download", "acme/no-such-repo")
    c.ok(not r["ok"] and "RepositoryNotFoundError" in r["mro"], "unknown repo: RepositoryNotFoundError", json.dumps(r)[:800])

    # 8. hf_hub_download by branch name in a fresh cache: small file via the same-origin 307.
    cache3 = os.path.join(tmp, "cache-single")
    r = c.client(dict(env, HF_HUB_CACHE=cache3), "hf_hub_download", "acme/public-model", filename="sub/notes.txt")
    c.ok(r["ok"] and open(r["result"], "rb").read() == expected[(*pub, C_MAIN)]["sub/notes.txt"][0]
         and open(os.path.join(storage(cache3, *pub), "refs", "main")).read() == C_MAIN,
         "hf_hub_download small file by branch (307 to /api/resolve-cache)", json.dumps(r)[:800])

    # 9. local_dir download and its metadata.
    local = os.path.join(tmp, "local")
    r = c.client(env, "snapshot_download", "acme/public-model", local_dir=local)
    if c.ok(r["ok"], "snapshot_download local_dir", json.dumps(r)[:1500]):
        files = expected[(*pub, C_MAIN)]
        c.ok(not compare_tree(local, files), "local_dir: files byte for byte (plain files)")
        problems = []
        for path, (content, lfs) in files.items():
            if os.path.islink(os.path.join(local, *path.split("/"))):
                problems.append(f"{path} is a symlink")
            meta = os.path.join(local, ".cache", "huggingface", "download", *path.split("/")) + ".metadata"
            lines = open(meta).read().split("\n") if os.path.isfile(meta) else []
            etag = hashlib.sha256(content).hexdigest() if lfs else git_sha1(content)
            if len(lines) != 4 or lines[0] != C_MAIN or lines[1] != etag or lines[3] != "":
                problems.append(f"{path}.metadata = {lines!r}")
            else:
                float(lines[2])
        if not os.path.isfile(os.path.join(local, ".cache", "huggingface", "trees", f"{C_MAIN}.json")):
            problems.append("local_dir .cache/huggingface/trees/<commit>.json missing")
        c.ok(not problems, "local_dir metadata: '<commit>\\n<etag>\\n<timestamp>\\n' per file", "; ".join(problems))

    # 10. Offline: no request at all, every file found.
    before = len(read_log(fake["log"]))
    offline = dict(env, HF_HUB_OFFLINE="1")
    for key, kwargs, what in [
        (pub + (C_MAIN,), {}, "public model"),
        (pub + (C_DEV,), {"revision": "dev"}, "public model revision='dev'"),
        (priv + (C_PRIV,), {}, "private model (no token)"),
        (data + (C_DATA,), {"repo_type": "dataset"}, "dataset"),
    ]:
        r = c.client(offline, "snapshot_download", key[1], local_files_only=True, **kwargs)
        c.ok(r["ok"] and r["result"].endswith(key[2]) and not compare_tree(r["result"], expected[key]),
             f"offline local_files_only: {what}", json.dumps(r)[:800])
    r = c.client(offline, "hf_hub_download", "acme/public-model", filename="sub/weights.bin", local_files_only=True)
    c.ok(r["ok"] and open(r["result"], "rb").read() == expected[(*pub, C_MAIN)]["sub/weights.bin"][0],
         "offline hf_hub_download of a subfolder LFS file", json.dumps(r)[:800])
    r = c.client(offline, "snapshot_download", "acme/never-downloaded", local_files_only=True)
    c.ok(not r["ok"] and "LocalEntryNotFoundError" in r["mro"],
         "offline: an uncached repo raises LocalEntryNotFoundError", json.dumps(r)[:800])
    c.ok(len(read_log(fake["log"])) == before, "offline runs sent no request")

    # 11. The log: the CDN never saw Authorization; LFS bytes came from the CDN; pagination used.
    log = read_log(fake["log"])
    cdn = [e for e in log if e["origin"] == "cdn"]
    c.ok(cdn and not any(e["auth"] for e in cdn), "CDN never saw an Authorization header",
         json.dumps([e for e in cdn if e["auth"]])[:500])
    c.ok(all(e["status"] in (200, 206) for e in cdn), "every CDN request succeeded")
    hub_lfs_get = [e for e in log if e["origin"] == "hub" and e["method"] == "GET" and "/resolve/" in e["path"]
                   and e["path"].endswith((".safetensors", ".bin", ".parquet", ".png"))]
    c.ok(not hub_lfs_get, "no LFS bytes fetched from the hub origin (HEAD there, GET on the CDN)", json.dumps(hub_lfs_get)[:500])
    c.ok(any("cursor=" in e["query"] for e in log if "/tree/" in e["path"]), "tree listing followed Link rel=next pages")
    c.ok(any(e["auth"] for e in log if e["origin"] == "hub" and "private-model" in e["path"]),
         "the hub saw the token for the private repo")
    c.ok(not any(e["status"] is None or e["status"] >= 500 for e in log), "no 5xx in the log")

    # 12. Raw HTTP: ranges, signatures, expiry, Authorization at the CDN, corruption, rate-limit headers.
    hub = fake["hub"]
    big = expected[(*pub, C_MAIN)]["model.safetensors"][0]
    status, h, body = fetch(f"{hub}/acme/public-model/resolve/main/model.safetensors", "HEAD")
    sha = hashlib.sha256(big).hexdigest()
    c.ok(status == 302 and h.get("x-linked-etag") == f'"{sha}"' and h.get("x-linked-size") == str(len(big))
         and h.get("x-repo-commit") == C_MAIN and h.get("location", "").startswith(fake["cdn"])
         and "x-xet-hash" not in h and "Expires=" in h["location"] and "Signature=" in h["location"],
         "HEAD resolve LFS: 302 + X-Linked-Etag/Size, X-Repo-Commit, signed CDN Location, no xet", str(h))
    location = h.get("location", "")
    status, h2, body = fetch(location, headers={"Range": "bytes=100-199"})
    c.ok(status == 206 and body == big[100:200] and h2.get("content-range") == f"bytes 100-199/{len(big)}",
         "CDN Range -> 206 with Content-Range", f"{status} {h2}")
    status, h2, body = fetch(location, headers={"Range": "bytes=-10"})
    c.ok(status == 206 and body == big[-10:], "CDN suffix range")
    status, h2, body = fetch(location, headers={"Range": f"bytes={len(big)}-"})
    c.ok(status == 416 and h2.get("content-range") == f"bytes */{len(big)}", "CDN range past the end -> 416", str(status))
    status, h2, body = fetch(location, headers={"Range": "bytes=0-9", "If-Range": '"stale"'})
    c.ok(status == 200 and len(body) == len(big), "If-Range mismatch -> 200 whole", str(status))
    status, h2, body = fetch(location, headers={"Authorization": "Bearer " + TOKEN})
    c.ok(status == 400 and b"Only one auth mechanism" in body, "CDN refuses a request with Authorization (400)",
         f"{status} {body[:200]!r}")
    c.ok(wait_log(fake["log"], lambda e: e["origin"] == "cdn" and e["auth"] and e["status"] == 400) is not None,
         "... and logs auth: true")
    status, h2, body = fetch(location.replace("Signature=", "Signature=0"))
    c.ok(status == 403 and b"AccessDenied" in body, "CDN: tampered signature -> 403 AccessDenied", str(status))
    small = expected[(*pub, C_MAIN)]["sub/notes.txt"][0]
    status, h2, body = fetch(f"{hub}/acme/public-model/resolve/{C_MAIN}/sub/notes.txt", headers={"Range": "bytes=5-"})
    c.ok(status == 206 and body == small[5:] and h2.get("etag") == f'"{git_sha1(small)}"'
         and h2.get("x-repo-commit") == C_MAIN, "hub small file Range -> 206, ETag = git blob sha1", f"{status} {h2}")
    status, h2, _ = fetch(f"{hub}/acme/public-model/resolve/main/sub/notes.txt", "HEAD")
    c.ok(status == 307 and h2.get("location", "").startswith(f"/api/resolve-cache/models/acme/public-model/{C_MAIN}/"),
         "HEAD small file by branch: 307 to /api/resolve-cache", f"{status} {h2}")
    status, h2, body = fetch(f"{hub}/api/models/acme/public-model/tree/main?recursive=true&expand=false")
    entries = json.loads(body)
    lfs_entry = [e for e in entries if e.get("lfs")]
    c.ok(status == 200 and len(entries) == 3 and 'rel="next"' in h2.get("link", ""),
         "tree page of 3 with Link rel=next", f"{status} {h2.get('link')} {entries}")
    status, h2, body = fetch(f"{hub}/api/models/acme/private-model/revision/main")
    c.ok(status == 401 and h2.get("x-error-code") == "RepoNotFound", "private repo info anonymous: 401 RepoNotFound")
    status, h2, body = fetch(f"{hub}/acme/public-model/resolve/nope/config.json", "HEAD")
    c.ok(status == 404 and h2.get("x-error-code") == "RevisionNotFound", "HEAD unknown revision: 404 RevisionNotFound")
    status, h2, body = fetch(f"{hub}/acme/public-model/resolve/main/nope.txt", "HEAD")
    c.ok(status == 404 and h2.get("x-error-code") == "EntryNotFound" and h2.get("x-repo-commit") == C_MAIN,
         "HEAD unknown file: 404 EntryNotFound + X-Repo-Commit")

    status, _, _ = fetch(f"{hub}/_control/clock?advance=7200", "POST")
    status, h2, body = fetch(location)
    c.ok(status == 403 and b"Request has expired" in body, "CDN: expired signature -> 403 'Request has expired'",
         f"{status} {body[:200]!r}")
    fetch(f"{hub}/_control/reset", "POST")
    status, h, _ = fetch(f"{hub}/acme/public-model/resolve/main/model.safetensors", "HEAD")
    location = h["location"]

    status, _, body = fetch(f"{hub}/_control/corrupt?repo=acme/public-model&path=model.safetensors", "POST")
    status, _, body = fetch(location)
    diff = [i for i in range(len(big)) if body[i] != big[i]] if len(body) == len(big) else None
    c.ok(diff == [len(big) // 2], "corrupt: CDN serves the LFS file with one byte flipped", str(diff)[:200])
    status, _, body = fetch(f"{hub}/_control/corrupt?repo=acme/public-model&path=config.json", "POST")
    status, _, body = fetch(f"{hub}/acme/public-model/resolve/{C_MAIN}/config.json")
    cfg = expected[(*pub, C_MAIN)]["config.json"][0]
    c.ok(len(body) == len(cfg) and body != cfg, "corrupt: hub serves a small file with one byte flipped")
    cache4 = os.path.join(tmp, "cache-corrupt")
    r = c.client(dict(env, HF_HUB_CACHE=cache4), "hf_hub_download", "acme/public-model", filename="model.safetensors")
    accepted = r["ok"] and open(r["result"], "rb").read() != big
    c.ok(r["ok"], "huggingface_hub 2.4.0 on corrupted LFS bytes: " +
         ("accepted them silently (it does not check sha256)" if accepted else "rejected them"), json.dumps(r)[:500])
    fetch(f"{hub}/_control/restore", "POST")
    status, _, body = fetch(location)
    c.ok(body == big, "restore: bytes back to normal")

    # 13. A second fake: rate limit, CDN pacing, gzip of small files; the client copes.
    fake2 = c.start_fake(tmp, "fake2", ["--rate-limit", "2", "--cdn-cap-bytes-per-sec", str(2 * 1024 * 1024),
                                        "--gzip-small", "--page-size", "2"])
    cache5 = os.path.join(tmp, "cache-limited")
    env2 = {"HF_ENDPOINT": fake2["hub"], "HF_HUB_CACHE": cache5, "HF_HOME": os.path.join(tmp, "hf_home")}
    t0 = time.time()
    r = c.client(env2, "snapshot_download", "acme/public-model", max_workers=8)
    took = time.time() - t0
    if c.ok(r["ok"], f"rate-limited + paced + gzip hub: snapshot_download ({took:.1f} s)", json.dumps(r)[:1500]):
        c.ok(not compare_tree(r["result"], expected[(*pub, C_MAIN)]), "... files byte for byte")
    log2 = read_log(fake2["log"])
    c.ok(any(e["status"] == 429 for e in log2), "... and the hub did answer 429 at least once",
         str(sorted({e["status"] for e in log2})))
    status, h2, _ = fetch(f"{fake2['hub']}/acme/public-model/resolve/{C_MAIN}/config.json", "HEAD")
    for _ in range(5):
        status, h2, _ = fetch(f"{fake2['hub']}/acme/public-model/resolve/{C_MAIN}/config.json", "HEAD")
        if status == 429:
            break
    c.ok(status == 429 and h2.get("retry-after") == "1" and h2.get("ratelimit") == '"resolvers";r=0;t=1'
         and "q=2;w=1" in h2.get("ratelimit-policy", ""), "429 carries Retry-After, RateLimit, RateLimit-Policy", str(h2))
    time.sleep(1.1)
    status, h, _ = fetch(f"{fake2['hub']}/acme/public-model/resolve/main/model.safetensors", "HEAD")
    t0 = time.time()
    status, _, body = fetch(h["location"], headers={"Range": "bytes=0-1048575"})
    took = time.time() - t0
    c.ok(status == 206 and len(body) == 1048576 and 0.4 <= took <= 2.0, f"CDN pacing: 1 MiB at 2 MiB/s took {took:.2f} s")
    status, h2, body = fetch(f"{fake2['hub']}/acme/public-model/resolve/{C_MAIN}/sub/notes.txt",
                            headers={"Accept-Encoding": "gzip"})
    c.ok(status == 200 and h2.get("content-encoding") == "gzip", "--gzip-small: small file sent gzip-encoded", str(h2))

    # 14. SIGTERM stops both fakes cleanly.
    for info in (fake, fake2):
        info["proc"].send_signal(signal.SIGTERM)
        try:
            code = info["proc"].wait(10)
        except subprocess.TimeoutExpired:
            code = None
        c.ok(code == 0, f"SIGTERM: fake pid {info['pid']} exited 0", str(code))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="python with huggingface_hub installed")
    parser.add_argument("--fake-python", default="python3", help="python that runs fake_hub.py (stdlib only)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    c = Check(args)
    tmp = tempfile.mkdtemp(prefix="fake_hub_check.")
    try:
        run(c, tmp)
    except Exception:
        c.failed += 1
        print("FAIL - the check crashed:\n" + traceback.format_exc(), flush=True)
    finally:
        for proc in c.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if args.keep:
            print(f"# kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{c.passed} passed, {c.failed} failed")
    sys.exit(0 if c.failed == 0 and c.passed > 0 else 1)


if __name__ == "__main__":
    main()
