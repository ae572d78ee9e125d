#!/usr/bin/env python3
"""A fake Hugging Face Hub for rangefetch's tests (Python 3 standard library only).

Modelled on what huggingface_hub 2.4.0 (file_download.py, hf_api.py, _snapshot_download.py,
utils/_http.py) sends and expects; Tests/Support/fake_hub_check.py runs that client against it.

Start
    python3 Tests/Support/fake_hub.py --repos REPOS.json --root DIR --port 0 --cdn-port 0 \
        --ready-file PATH [--token TOKEN] [--log FILE] [--cdn-cap-bytes-per-sec N]
        [--signature-ttl SECONDS] [--page-size N] [--rate-limit N] [--gzip-small]
  Two HTTP/1.1 servers on 127.0.0.1 only (port 0 = any free port): the Hub ("hub" origin: API,
  /resolve/, control) and a CDN ("cdn" origin: signed, expiring URLs of LFS blobs). Once both
  listen, writes one JSON line {"hub": "http://127.0.0.1:A", "cdn": "http://127.0.0.1:B",
  "pid": PID} to --ready-file (a temporary file renamed into place). SIGTERM/SIGINT: exit 0.

Repos (--repos FILE, JSON)
  {"repos": [{"type": "model"|"dataset"|"space", "id": "org/name", "private": false,
              "gated": false,                          # true: /resolve/ needs the token
              "branches": {"main": "<40 hex>", ...}, "tags": {"v1": "<40 hex>"},
              "commits": {"<40 hex>": [FILE, ...], ...}}]}
  FILE = {"path": "dir/name", "lfs": bool, and one content source:
          "text": "utf-8 text" | "base64": "..." | "file": "path under --root" |
          "generate": {"size": N, "seed": "s"}}   # deterministic bytes (sha256 stream of seed)
  Every file gets its git blob sha1 (sha1(b"blob %d\\0" % len + data)); an LFS file also gets
  its sha256, and its git blob is then the LFS pointer file ("version https://git-lfs.github.com/
  spec/v1\\noid sha256:<sha256>\\nsize <n>\\n"), as on the real Hub: the tree listing's "oid" of
  an LFS file is the pointer's sha1, "lfs.oid" the content's sha256.

Hub origin
  GET  /api/{models|datasets|spaces}/ORG/NAME[/revision/REV][?blobs=true][&expand=a&expand=b]
       {"_id", "id", "author", "sha", "private", "gated", "disabled", "lastModified",
        "createdAt", "tags", "siblings": [{"rfilename"} + with blobs=true {"size", "blobId",
        "lfs": {"size", "sha256", "pointerSize"}}], ...}; with expand=, only those keys (+ _id, id).
  GET  /api/{type}s/ORG/NAME/tree/REV[/PATH]?recursive=true|false&expand=true|false[&cursor=C]
       a JSON list, at most --page-size entries (default 3), sorted by path; more pages are
       linked with `Link: <absolute url with cursor=>; rel="next"`. Entries:
       {"type": "file", "oid": <git blob sha1>, "size": <bytes>, "path",
        "lfs": {"oid": <sha256>, "size", "pointerSize"}}  (lfs only for LFS files)
       {"type": "directory", "oid": <git tree sha1>, "size": 0, "path"}
       expand=true adds "lastCommit" {"id", "title", "date"} and "securityFileStatus".
  GET  /api/{type}s/ORG/NAME/refs   {"branches": [{"name", "ref", "targetCommit"}], "tags": [...],
       "converts": []}
  HEAD|GET /[datasets/|spaces/]ORG/NAME/resolve/REV/PATH   (REV percent-encoded, "/" as %2F)
       Every answer carries X-Repo-Commit (the commit REV is at).
       LFS file: 302 to the CDN's signed URL, with ETag and X-Linked-Etag: "<sha256>",
         X-Linked-Size, Location, a small text body ("Found. Redirecting to ...").
       Small file, REV a commit: 200 (206 with Range) with ETag: "<git blob sha1>",
         Content-Length, Accept-Ranges: bytes, Content-Disposition.
       Small file, REV a branch or tag: 307 to /api/resolve-cache/{type}s/ORG/NAME/COMMIT/PATH
         (same origin, which serves as above), with ETag and X-Repo-Commit.
       No xet: no X-Xet-Hash, no Link rel="xet-auth", no xetHash in listings, so
       huggingface_hub downloads over plain HTTP even with hf_xet installed.
  Ranges: one range ("bytes=a-b", "a-", "-n") -> 206 + Content-Range "bytes a-b/SIZE";
       unsatisfiable -> 416 + "Content-Range: bytes */SIZE"; multiple ranges or unparseable ->
       200 whole (as S3 does); If-Range not equal to the ETag -> 200 whole. Same on both origins.
  --gzip-small: a GET of a small file without Range, with Accept-Encoding allowing gzip, is
       sent gzip-compressed (Content-Encoding: gzip, Content-Length of the compressed body),
       as the real Hub does for text files.
  Errors (JSON body {"error": message}; X-Error-Code / X-Error-Message headers):
       private repo without "Authorization: Bearer <--token>" (or any unknown repo, when
         anonymous)  -> 401 RepoNotFound ("Invalid username or password.");
       unknown repo with the valid token -> 404 RepoNotFound;
       gated repo, /resolve/ without the token -> 401 GatedRepo, with a wrong token -> 403 GatedRepo;
       unknown revision -> 404 RevisionNotFound ("Invalid rev id: REV");
       unknown path -> 404 EntryNotFound (with X-Repo-Commit);
       --rate-limit N: more than N /resolve/ requests (both kinds above) in one wall-clock second
         -> 429 with Retry-After: 1, RateLimit: "resolvers";r=0;t=1 and RateLimit-Policy:
         "fixed window";"resolvers";q=N;w=1 (the headers come, with r = what is left, on every
         /resolve/ answer while --rate-limit is set).
  Control (not logged):
    POST /_control/corrupt?repo=ORG/NAME[&type=model][&rev=main]&path=PATH
         from now on, the file's bytes are served with byte size//2 flipped (xor 0xff), by the
         hub and by the CDN, with unchanged headers (ETag, sizes). {"corrupted": <blob key>}
    POST /_control/restore[?repo=...&path=...]   undo one corruption, or all without repo=.
    POST /_control/clock?advance=SECONDS   move this server's clock forward (signatures issued
         before are that much older; Expires of new ones uses the moved clock too).
    POST /_control/reset   clears corruptions, the clock offset and the rate-limit window.

CDN origin
  HEAD|GET /repos/XX/YY/<sha256>?response-content-disposition=..&response-content-type=..
           &Expires=<unix seconds>&Signature=<hex hmac-sha256>&Key-Pair-Id=K2FAKEHUB
  Checked in this order: an Authorization header -> 400 InvalidArgument ("Only one auth
  mechanism allowed...", what S3 says to a signed URL that also carries Authorization);
  missing/bad signature -> 403 AccessDenied ("Access denied"); Expires in the past -> 403
  AccessDenied ("Request has expired"); unknown blob -> 404 NoSuchKey. Bodies are S3-style XML.
  200/206 with ETag "<md5 of the content>", Content-Disposition and Content-Type from the
  signed parameters, Accept-Ranges, Last-Modified. --cdn-cap-bytes-per-sec N paces each body
  at N bytes/second (small writes with sleeps).
  --signature-ttl SECONDS (default 3600): how long a signed URL stays valid.

Log (--log FILE): one JSON line per request (control requests excepted), written when its
  answer is finished or broken off: {"t", "origin": "hub"|"cdn", "method", "path" (as sent,
  percent-encoding kept, no query),
  "query", "auth" (an Authorization header came), "range" (the Range header or null), "status",
  "bytes" (body bytes sent), "conn" (TCP connection number; same = keep-alive reuse),
  "aborted" (the client went away mid-answer)}.
"""

import argparse
import base64
import gzip
import hashlib
import hmac
import json
import mimetypes
import os
import secrets
import signal
import socket
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

REPO_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
DATE = "2024-01-01T00:00:00.000Z"
CHUNK = 64 * 1024


# ---------------------------------------------------------------------------------------------
# Content


class Blob:
    """The bytes of one file, in memory or in a file under --root, with its digests."""

    def __init__(self, data=None, path=None):
        self.data = data
        self.path = path
        self.size = len(data) if data is not None else os.path.getsize(path)
        sha1 = hashlib.sha1(b"blob %d\0" % self.size)
        sha256 = hashlib.sha256()
        md5 = hashlib.md5()
        for piece in self.pieces(0, self.size - 1) if self.size else []:
            sha1.update(piece)
            sha256.update(piece)
            md5.update(piece)
        self.git_sha1 = sha1.hexdigest()
        self.sha256 = sha256.hexdigest()
        self.md5 = md5.hexdigest()

    def pieces(self, start, end):
        """Bytes start..end (inclusive), in pieces of at most CHUNK."""
        if self.data is not None:
            for offset in range(start, end + 1, CHUNK):
                yield self.data[offset:min(offset + CHUNK, end + 1)]
            return
        with open(self.path, "rb") as f:
            f.seek(start)
            left = end + 1 - start
            while left > 0:
                piece = f.read(min(CHUNK, left))
                if not piece:
                    raise IOError(f"{self.path} shrank while being served")
                left -= len(piece)
                yield piece

    def read_all(self):
        return self.data if self.data is not None else b"".join(self.pieces(0, self.size - 1))


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(blob):
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{blob.sha256}\nsize {blob.size}\n".encode()


def generated_bytes(size, seed):
    out = bytearray()
    counter = 0
    seed = seed.encode()
    while len(out) < size:
        out += hashlib.sha256(seed + counter.to_bytes(8, "little")).digest()
        counter += 1
    return bytes(out[:size])


class RepoFile:
    def __init__(self, path, blob, lfs):
        self.path = path
        self.blob = blob
        self.lfs = lfs
        if lfs:
            pointer = lfs_pointer(blob)
            self.oid = git_blob_sha1(pointer)
            self.pointer_size = len(pointer)
        else:
            self.oid = blob.git_sha1
            self.pointer_size = None

    @property
    def etag(self):
        """What the Hub names the file by: sha256 for LFS, git blob sha1 otherwise."""
        return self.blob.sha256 if self.lfs else self.blob.git_sha1

    def tree_entry(self):
        entry = {"type": "file", "oid": self.oid, "size": self.blob.size, "path": self.path}
        if self.lfs:
            entry["lfs"] = {"oid": self.blob.sha256, "size": self.blob.size, "pointerSize": self.pointer_size}
        return entry

    def sibling(self, blobs):
        sibling = {"rfilename": self.path}
        if blobs:
            sibling["size"] = self.blob.size
            sibling["blobId"] = self.oid
            if self.lfs:
                sibling["lfs"] = {"size": self.blob.size, "sha256": self.blob.sha256, "pointerSize": self.pointer_size}
        return sibling


class Commit:
    def __init__(self, sha, files):
        self.sha = sha
        self.files = {f.path: f for f in files}
        self.dirs = {}  # dir path -> git tree sha1
        self._tree_sha("", sorted(self.files))

    def _tree_sha(self, prefix, paths):
        """Git tree object ids, computed as git does (mode, name, raw sha; dirs sort as 'name/')."""
        children = {}
        for path in paths:
            rest = path[len(prefix):]
            head, sep, _ = rest.partition("/")
            children.setdefault((head, bool(sep)), []).append(path)
        entries = []
        for (name, is_dir), sub in children.items():
            if is_dir:
                sha = self._tree_sha(prefix + name + "/", sub)
                entries.append((name + "/", b"40000 " + name.encode() + b"\0" + bytes.fromhex(sha)))
            else:
                sha = self.files[sub[0]].oid
                entries.append((name, b"100644 " + name.encode() + b"\0" + bytes.fromhex(sha)))
        body = b"".join(e for _, e in sorted(entries, key=lambda e: e[0].encode()))
        sha = hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()
        if prefix:
            self.dirs[prefix.rstrip("/")] = sha
        return sha

    def listing(self, path, recursive):
        """Tree entries under `path` ("" = root), or None if `path` is no directory."""
        if path and path not in self.dirs:
            return None
        base = path + "/" if path else ""
        entries = []
        for p, sha in self.dirs.items():
            if p.startswith(base) and (recursive or "/" not in p[len(base):]):
                entries.append({"type": "directory", "oid": sha, "size": 0, "path": p})
        for p, f in self.files.items():
            if p.startswith(base) and (recursive or "/" not in p[len(base):]):
                entries.append(f.tree_entry())
        return sorted(entries, key=lambda e: e["path"])


class Repo:
    def __init__(self, spec, root):
        self.type = spec.get("type", "model")
        if self.type not in URL_PREFIX:
            raise ValueError(f"repo type {self.type!r}: not model, dataset or space")
        self.id = spec["id"]
        if self.id.count("/") != 1:
            raise ValueError(f"repo id {self.id!r}: not ORG/NAME")
        self.private = bool(spec.get("private", False))
        self.gated = bool(spec.get("gated", False))
        self.branches = dict(spec.get("branches", {}))
        self.tags = dict(spec.get("tags", {}))
        self.commits = {}
        for sha, files in spec.get("commits", {}).items():
            if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
                raise ValueError(f"{self.id}: commit {sha!r} is not 40 lower-case hex digits")
            self.commits[sha] = Commit(sha, [RepoFile(f["path"], load_blob(f, root), bool(f.get("lfs"))) for f in files])
        for name, sha in list(self.branches.items()) + list(self.tags.items()):
            if sha not in self.commits:
                raise ValueError(f"{self.id}: ref {name} -> {sha}: no such commit")

    def resolve(self, rev):
        """The commit a revision names, or None."""
        if rev in self.branches:
            return self.branches[rev]
        if rev in self.tags:
            return self.tags[rev]
        if rev in self.commits:
            return rev
        return None

    @property
    def default_branch(self):
        return "main" if "main" in self.branches else next(iter(self.branches), "main")


def load_blob(spec, root):
    if "text" in spec:
        return Blob(data=spec["text"].encode("utf-8"))
    if "base64" in spec:
        return Blob(data=base64.b64decode(spec["base64"]))
    if "generate" in spec:
        g = spec["generate"]
        return Blob(data=generated_bytes(int(g["size"]), str(g.get("seed", spec["path"]))))
    if "file" in spec:
        if root is None:
            raise ValueError(f"{spec['path']}: a 'file' source needs --root")
        real_root = os.path.realpath(root)
        path = os.path.realpath(os.path.join(real_root, spec["file"]))
        if os.path.commonpath([real_root, path]) != real_root:
            raise ValueError(f"{spec['file']}: outside --root")
        return Blob(path=path)
    raise ValueError(f"{spec.get('path')}: no content source (text, base64, file, generate)")


# ---------------------------------------------------------------------------------------------
# Shared state


class State:
    def __init__(self, args, repos):
        self.args = args
        self.repos = repos  # (type, id) -> Repo
        self.lock = threading.Lock()
        self.secret = secrets.token_bytes(32)
        self.clock_offset = 0.0
        self.corrupted = set()  # blob keys (sha256 for LFS, git sha1 otherwise)
        self.window = None  # (second, count) of /resolve/ requests
        self.log_file = open(args.log, "a", buffering=1) if args.log else None
        self.connections = 0
        self.hub_url = None
        self.cdn_url = None
        self.blobs_by_sha256 = {}
        for repo in repos.values():
            for commit in repo.commits.values():
                for f in commit.files.values():
                    if f.lfs:
                        self.blobs_by_sha256[f.blob.sha256] = f

    def now(self):
        with self.lock:
            return time.time() + self.clock_offset

    def next_connection(self):
        with self.lock:
            self.connections += 1
            return self.connections

    def log(self, record):
        if self.log_file is None:
            return
        line = json.dumps(record, sort_keys=True)
        with self.lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def count_resolve(self):
        """Counts one /resolve/ request; returns (allowed, remaining, limit) or None without a limit."""
        limit = self.args.rate_limit
        if not limit:
            return None
        second = int(time.time())
        with self.lock:
            if self.window is None or self.window[0] != second:
                self.window = (second, 0)
            count = self.window[1] + 1
            self.window = (second, count)
        return (count <= limit, max(0, limit - count), limit)

    def sign(self, path, expires, disposition, content_type):
        message = f"{path}\n{expires}\n{disposition}\n{content_type}".encode()
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def signed_url(self, f):
        sha = f.blob.sha256
        path = f"/repos/{sha[:2]}/{sha[2:4]}/{sha}"
        name = f.path.rsplit("/", 1)[-1]
        disposition = f"inline; filename*=UTF-8''{quote(name)}; filename=\"{name}\";"
        content_type = "application/octet-stream"
        expires = int(self.now() + self.args.signature_ttl)
        query = urlencode({
            "response-content-disposition": disposition,
            "response-content-type": content_type,
            "Expires": str(expires),
            "Signature": self.sign(path, expires, disposition, content_type),
            "Key-Pair-Id": "K2FAKEHUB",
        }, quote_via=quote)
        return f"{self.cdn_url}{path}?{query}"


# ---------------------------------------------------------------------------------------------
# HTTP


class Done(Exception):
    """The answer has been sent."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-hub/1"
    sys_version = ""
    origin = "hub"

    # -- plumbing ------------------------------------------------------------------------------

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn_id = self.server.state.next_connection()

    def log_message(self, format, *args):
        pass

    @property
    def state(self):
        return self.server.state

    def do_GET(self):
        self.handle_request("GET")

    def do_HEAD(self):
        self.handle_request("HEAD")

    def do_POST(self):
        self.handle_request("POST")

    def do_PUT(self):
        self.handle_request("PUT")

    def do_DELETE(self):
        self.handle_request("DELETE")

    def handle_request(self, method):
        self.method = method
        self.status = None
        self.sent = 0
        self.aborted = False
        split = urlsplit(self.path)
        self.raw_path = split.path
        self.query = split.query
        self.params = parse_qsl(split.query, keep_blank_values=True)
        control = self.raw_path.startswith("/_control/")
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        try:
            self.route(method)
        except Done:
            pass
        except (ConnectionError, TimeoutError, socket.timeout):
            self.aborted = True
            self.close_connection = True
        except Exception:
            sys.stderr.write(f"fake_hub: error answering {method} {self.path}:\n{traceback.format_exc()}")
            sys.stderr.flush()
            if self.status is None:
                try:
                    self.error(500, "InternalError", "internal error")
                except Done:
                    pass
                except Exception:
                    self.close_connection = True
            else:
                self.close_connection = True
        if not control:
            self.state.log({
                "t": round(time.time(), 6),
                "origin": self.origin,
                "method": method,
                "path": self.raw_path,
                "query": self.query,
                "auth": self.headers.get("Authorization") is not None,
                "range": self.headers.get("Range"),
                "status": self.status,
                "bytes": self.sent,
                "conn": self.conn_id,
                "aborted": self.aborted,
            })

    def param(self, name, default=None):
        values = [v for k, v in self.params if k == name]
        return values[-1] if values else default

    def start(self, status, headers):
        self.status = status
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def answer(self, status, body=b"", headers=(), content_type="application/json; charset=utf-8"):
        headers = list(headers) + [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        self.start(status, headers)
        if self.method != "HEAD" and body:
            self.wfile.write(body)
            self.sent += len(body)
        raise Done()

    def answer_json(self, status, value, headers=()):
        self.answer(status, json.dumps(value).encode(), headers)

    def error(self, status, code, message, headers=()):
        headers = list(headers) + [("X-Error-Message", message)]
        if code:
            headers.append(("X-Error-Code", code))
        self.answer_json(status, {"error": message}, headers)

    # -- bodies and ranges -----------------------------------------------------------------------

    def parse_range(self, size, etag):
        """(start, end) for a satisfiable single range, None for the whole body; 416 answered here."""
        header = self.headers.get("Range")
        if header is None:
            return None
        if_range = self.headers.get("If-Range")
        if if_range is not None and if_range.strip() != etag:
            return None
        unit, _, spec = header.strip().partition("=")
        if unit.strip().lower() != "bytes" or "," in spec:
            return None
        first, dash, last = spec.strip().partition("-")
        first, last = first.strip(), last.strip()
        if not dash or (first and not first.isdigit()) or (last and not last.isdigit()) or not (first or last):
            return None
        if first:
            start = int(first)
            end = min(int(last), size - 1) if last else size - 1
            if start >= size or (last and int(last) < start):
                self.unsatisfiable(size)
        else:
            n = int(last)
            if n == 0 or size == 0:
                self.unsatisfiable(size)
            start, end = max(0, size - n), size - 1
        return (start, end)

    def unsatisfiable(self, size):
        self.answer(416, b"", [("Content-Range", f"bytes */{size}")], content_type="text/plain")

    def send_blob(self, f, headers, etag, allow_gzip=False):
        """Answers 200/206/416 with the file's bytes (corrupted if asked), honouring Range."""
        blob = f.blob
        size = blob.size
        rng = self.parse_range(size, etag)
        corrupt_at = size // 2 if f.etag in self.state.corrupted and size else None
        headers = list(headers) + [("ETag", etag), ("Accept-Ranges", "bytes")]
        if (allow_gzip and rng is None and self.method == "GET"
                and "gzip" in (self.headers.get("Accept-Encoding") or "").lower()):
            data = bytearray(blob.read_all())
            if corrupt_at is not None:
                data[corrupt_at] ^= 0xFF
            body = gzip.compress(bytes(data), mtime=0)
            self.start(200, headers + [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding"),
                                       ("Content-Length", str(len(body)))])
            self.wfile.write(body)
            self.sent += len(body)
            raise Done()
        if rng is None:
            status, start, end = 200, 0, size - 1
            headers.append(("Content-Length", str(size)))
        else:
            status, (start, end) = 206, rng
            headers += [("Content-Length", str(end - start + 1)), ("Content-Range", f"bytes {start}-{end}/{size}")]
        self.start(status, headers)
        if self.method == "HEAD" or size == 0:
            raise Done()
        cap = self.state.args.cdn_cap_bytes_per_sec if self.origin == "cdn" else 0
        step = max(1024, min(CHUNK, cap // 20)) if cap else CHUNK
        began = time.monotonic()
        offset = start
        for piece in blob.pieces(start, end):
            if corrupt_at is not None and offset <= corrupt_at < offset + len(piece):
                piece = bytearray(piece)
                piece[corrupt_at - offset] ^= 0xFF
                piece = bytes(piece)
            for i in range(0, len(piece), step):
                part = piece[i:i + step]
                self.wfile.write(part)
                self.sent += len(part)
                if cap:
                    delay = began + self.sent / cap - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
            offset += len(piece)
        raise Done()


class HubHandler(Handler):
    origin = "hub"

    def route(self, method):
        parts = [unquote(p) for p in self.raw_path.split("/")[1:]]
        if parts and parts[0] == "_control":
            return self.control(method, parts[1:])
        if method not in ("GET", "HEAD"):
            self.error(405, None, "method not allowed", [("Allow", "GET, HEAD")])
        if len(parts) >= 2 and parts[0] == "api" and parts[1] == "resolve-cache":
            # /api/resolve-cache/{type}s/ORG/NAME/COMMIT/PATH...
            if len(parts) < 7 or parts[2] not in REPO_TYPES:
                self.error(404, None, "Not Found")
            return self.resolve(REPO_TYPES[parts[2]], f"{parts[3]}/{parts[4]}", parts[5], "/".join(parts[6:]), cached=True)
        if len(parts) >= 4 and parts[0] == "api" and parts[1] in REPO_TYPES:
            repo_type, repo_id, rest = REPO_TYPES[parts[1]], f"{parts[2]}/{parts[3]}", parts[4:]
            if not rest:
                return self.repo_info(repo_type, repo_id, None)
            if rest[0] == "revision" and len(rest) == 2:
                return self.repo_info(repo_type, repo_id, rest[1])
            if rest[0] == "tree" and len(rest) >= 2:
                return self.tree(repo_type, repo_id, rest[1], "/".join(p for p in rest[2:] if p))
            if rest == ["refs"]:
                return self.refs(repo_type, repo_id)
            self.error(404, None, "Not Found")
        # /[datasets/|spaces/]ORG/NAME/resolve/REV/PATH...
        repo_type = "model"
        if parts and parts[0] in ("datasets", "spaces"):
            repo_type = REPO_TYPES[parts[0]]
            parts = parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(repo_type, f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:]), cached=False)
        self.error(404, None, "Not Found")

    # -- access ----------------------------------------------------------------------------------

    def token_state(self):
        """'none', 'valid' or 'invalid' for the request's Authorization header."""
        header = self.headers.get("Authorization")
        if header is None:
            return "none"
        token = self.state.args.token
        scheme, _, value = header.partition(" ")
        if token and scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), token):
            return "valid"
        return "invalid"

    def find_repo(self, repo_type, repo_id, resolve=False):
        repo = self.state.repos.get((repo_type, repo_id))
        auth = self.token_state()
        if repo is None or (repo.private and auth != "valid"):
            if repo is None and auth == "valid":
                self.error(404, "RepoNotFound", "Repository not found")
            self.error(401, "RepoNotFound", "Invalid username or password.")
        if resolve and repo.gated and auth != "valid":
            message = (f"Access to {repo.type} {repo.id} is restricted. You must have access to it "
                       "and be authenticated to access it. Please log in.")
            self.error(401 if auth == "none" else 403, "GatedRepo", message)
        return repo

    def find_commit(self, repo, rev, extra_headers=()):
        sha = repo.resolve(rev)
        if sha is None:
            self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}", extra_headers)
        return repo.commits[sha]

    # -- API -------------------------------------------------------------------------------------

    def repo_info(self, repo_type, repo_id, rev):
        repo = self.find_repo(repo_type, repo_id)
        commit = self.find_commit(repo, rev if rev is not None else repo.default_branch)
        blobs = self.param("blobs", "").lower() in ("1", "true")
        author = repo.id.split("/")[0]
        info = {
            "_id": hashlib.sha1(f"{repo.type}/{repo.id}".encode()).hexdigest()[:24],
            "id": repo.id,
            "author": author,
            "sha": commit.sha,
            "lastModified": DATE,
            "createdAt": DATE,
            "private": repo.private,
            "gated": "auto" if repo.gated else False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": [f.sibling(blobs) for _, f in sorted(commit.files.items())],
        }
        if repo.type == "model":
            info.update({"modelId": repo.id, "library_name": None, "pipeline_tag": None})
        if repo.type == "space":
            info.update({"sdk": "static", "runtime": {"stage": "RUNNING", "hardware": {"current": None,
                                                                                      "requested": None}}})
        expand = [v for k, v in self.params if k in ("expand", "expand[]")]
        if expand:
            info = {k: v for k, v in info.items() if k in expand or k in ("_id", "id")}
        self.answer_json(200, info)

    def tree(self, repo_type, repo_id, rev, path):
        repo = self.find_repo(repo_type, repo_id)
        commit = self.find_commit(repo, rev)
        recursive = self.param("recursive", "false").lower() in ("1", "true")
        expand = self.param("expand", "false").lower() in ("1", "true")
        entries = commit.listing(path, recursive)
        if entries is None:
            self.error(404, "EntryNotFound", f"{path} does not exist on \"{rev}\"")
        offset = 0
        cursor = self.param("cursor")
        if cursor:
            try:
                offset = int(json.loads(base64.urlsafe_b64decode(cursor.encode()))["offset"])
            except Exception:
                self.error(400, None, "Invalid cursor")
        page_size = self.state.args.page_size
        page = entries[offset:offset + page_size]
        if expand:
            page = [dict(e, lastCommit={"id": commit.sha, "title": "fake commit", "date": DATE},
                         **({"securityFileStatus": {"status": "safe", "avScan": {"virusFound": False, "virusNames": None},
                                                    "pickleImportScan": None}} if e["type"] == "file" else {}))
                    for e in page]
        headers = []
        if offset + page_size < len(entries):
            token = base64.urlsafe_b64encode(json.dumps({"offset": offset + page_size}).encode()).decode()
            query = [(k, v) for k, v in self.params if k != "cursor"] + [("cursor", token)]
            headers.append(("Link", f"<{self.state.hub_url}{self.raw_path}?{urlencode(query)}>; rel=\"next\""))
        self.answer_json(200, page, headers)

    def refs(self, repo_type, repo_id):
        repo = self.find_repo(repo_type, repo_id)
        self.answer_json(200, {
            "branches": [{"name": n, "ref": f"refs/heads/{n}", "targetCommit": s} for n, s in repo.branches.items()],
            "tags": [{"name": n, "ref": f"refs/tags/{n}", "targetCommit": s} for n, s in repo.tags.items()],
            "converts": [],
        })

    # -- files -----------------------------------------------------------------------------------

    def resolve(self, repo_type, repo_id, rev, path, cached):
        headers = []
        counted = self.state.count_resolve()
        if counted is not None:
            allowed, remaining, limit = counted
            headers += [("RateLimit", f"\"resolvers\";r={remaining};t=1"),
                        ("RateLimit-Policy", f"\"fixed window\";\"resolvers\";q={limit};w=1")]
            if not allowed:
                self.error(429, None, "Too Many Requests: you have reached your 'resolvers' rate limit.",
                           headers + [("Retry-After", "1")])
        repo = self.find_repo(repo_type, repo_id, resolve=True)
        if cached and rev not in repo.commits:
            self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}", headers)
        commit = self.find_commit(repo, rev, headers)
        headers.append(("X-Repo-Commit", commit.sha))
        f = commit.files.get(path)
        if f is None:
            self.error(404, "EntryNotFound", "Entry not found", headers)
        if f.lfs:
            location = self.state.signed_url(f)
            body = f"Found. Redirecting to {location}".encode()
            self.answer(302, body, headers + [
                ("Location", location),
                ("ETag", f"\"{f.blob.sha256}\""),
                ("X-Linked-Etag", f"\"{f.blob.sha256}\""),
                ("X-Linked-Size", str(f.blob.size)),
                ("Accept-Ranges", "bytes"),
            ], content_type="text/plain; charset=utf-8")
        if rev != commit.sha:
            location = f"/api/resolve-cache/{repo.type}s/{repo.id}/{commit.sha}/{quote(path)}"
            body = f"Temporary Redirect. Redirecting to {location}".encode()
            self.answer(307, body, headers + [("Location", location), ("ETag", f"\"{f.blob.git_sha1}\"")],
                        content_type="text/plain; charset=utf-8")
        name = path.rsplit("/", 1)[-1]
        content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        headers += [
            ("Content-Type", content_type),
            ("Content-Disposition", f"inline; filename*=UTF-8''{quote(name)}; filename=\"{name}\";"),
            ("Cache-Control", "public, max-age=31536000, immutable" if rev == commit.sha else "no-cache"),
        ]
        self.send_blob(f, headers, f"\"{f.blob.git_sha1}\"", allow_gzip=self.state.args.gzip_small)

    # -- control ---------------------------------------------------------------------------------

    def control(self, method, parts):
        if method != "POST":
            self.error(405, None, "POST only", [("Allow", "POST")])
        state = self.state
        if parts == ["corrupt"] or parts == ["restore"]:
            key = None
            if self.param("repo"):
                repo = state.repos.get((self.param("type", "model"), self.param("repo")))
                if repo is None:
                    self.error(404, None, "no such repo")
                sha = repo.resolve(self.param("rev", repo.default_branch))
                f = repo.commits[sha].files.get(self.param("path", "")) if sha else None
                if f is None:
                    self.error(404, None, "no such revision or path")
                key = f.etag
            with state.lock:
                if parts == ["corrupt"]:
                    if key is None:
                        self.error(400, None, "repo= and path= needed")
                    state.corrupted.add(key)
                elif key is None:
                    state.corrupted.clear()
                else:
                    state.corrupted.discard(key)
            self.answer_json(200, {"corrupted" if parts == ["corrupt"] else "restored": key})
        if parts == ["clock"]:
            try:
                advance = float(self.param("advance", "0"))
            except ValueError:
                advance = -1
            if advance < 0:
                self.error(400, None, "advance= must be a number >= 0")
            with state.lock:
                state.clock_offset += advance
                offset = state.clock_offset
            self.answer_json(200, {"offset": offset})
        if parts == ["reset"]:
            with state.lock:
                state.corrupted.clear()
                state.clock_offset = 0.0
                state.window = None
            self.answer_json(200, {"reset": True})
        self.error(404, None, "Not Found")


def s3_error(code, message, extra=""):
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message>"
            f"{extra}<RequestId>{secrets.token_hex(8).upper()}</RequestId></Error>").encode()


class CdnHandler(Handler):
    origin = "cdn"

    def route(self, method):
        xml = "application/xml"
        if method not in ("GET", "HEAD"):
            self.answer(405, s3_error("MethodNotAllowed", "The specified method is not allowed against this resource."),
                        [("Allow", "GET, HEAD")], content_type=xml)
        if self.headers.get("Authorization") is not None:
            self.answer(400, s3_error("InvalidArgument", "Only one auth mechanism allowed; only the X-Amz-Algorithm "
                                      "query parameter, Signature query string parameter or the Authorization header "
                                      "should be specified"), content_type=xml)
        parts = self.raw_path.split("/")[1:]
        sha = parts[3] if len(parts) == 4 and parts[0] == "repos" else ""
        disposition = self.param("response-content-disposition", "")
        content_type = self.param("response-content-type", "")
        expires = self.param("Expires", "")
        signature = self.param("Signature", "")
        state = self.state
        if (not expires.isdigit() or not signature or parts[1:3] != [sha[:2], sha[2:4]]
                or not hmac.compare_digest(signature, state.sign(self.raw_path, int(expires), disposition, content_type))):
            self.answer(403, s3_error("AccessDenied", "Access denied"), content_type=xml)
        now = state.now()
        if int(expires) < now:
            stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
            self.answer(403, s3_error("AccessDenied", "Request has expired",
                                      f"<Expires>{stamp(int(expires))}</Expires><ServerTime>{stamp(now)}</ServerTime>"),
                        content_type=xml)
        f = state.blobs_by_sha256.get(sha)
        if f is None:
            self.answer(404, s3_error("NoSuchKey", "The specified key does not exist."), content_type=xml)
        headers = [
            ("Content-Type", content_type or "application/octet-stream"),
            ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"),
            ("Cache-Control", "public, max-age=604800, immutable, s-maxage=604800"),
            ("X-Cache", "Miss from cloudfront"),
        ]
        if disposition:
            headers.append(("Content-Disposition", disposition))
        self.send_blob(f, headers, f"\"{f.blob.md5}\"")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError, socket.timeout)):
            return
        sys.stderr.write(f"fake_hub: error on a connection from {client_address}:\n{traceback.format_exc()}")


def load_repos(path, root):
    with open(path) as f:
        spec = json.load(f)
    repos = {}
    for r in spec.get("repos", []):
        repo = Repo(r, root)
        if (repo.type, repo.id) in repos:
            raise ValueError(f"{repo.type} {repo.id} defined twice")
        repos[(repo.type, repo.id)] = repo
    return repos


def main():
    parser = argparse.ArgumentParser(description="fake Hugging Face Hub (API + CDN) for tests")
    parser.add_argument("--repos", required=True, help="JSON file defining the repos")
    parser.add_argument("--root", default=None, help="directory that 'file' content sources are relative to")
    parser.add_argument("--port", type=int, default=0, help="hub port (0 = any free)")
    parser.add_argument("--cdn-port", type=int, default=0, help="CDN port (0 = any free)")
    parser.add_argument("--ready-file", required=True)
    parser.add_argument("--token", default=None, help="the one valid token for private and gated repos")
    parser.add_argument("--log", default=None, help="JSON-lines request log")
    parser.add_argument("--cdn-cap-bytes-per-sec", type=int, default=0)
    parser.add_argument("--signature-ttl", type=float, default=3600.0)
    parser.add_argument("--page-size", type=int, default=3)
    parser.add_argument("--rate-limit", type=int, default=0, help="max /resolve/ requests per second (0 = none)")
    parser.add_argument("--gzip-small", action="store_true", help="gzip small files when the client accepts it")
    args = parser.parse_args()
    if args.page_size < 1:
        parser.error("--page-size must be >= 1")

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # A parent that spawned us with signals blocked (Dispatch does) passes that mask on.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

    try:
        state = State(args, load_repos(args.repos, args.root))
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write(f"fake_hub: bad --repos: {e}\n")
        sys.exit(2)

    hub = Server(("127.0.0.1", args.port), HubHandler)
    cdn = Server(("127.0.0.1", args.cdn_port), CdnHandler)
    hub.state = cdn.state = state
    state.hub_url = f"http://127.0.0.1:{hub.server_port}"
    state.cdn_url = f"http://127.0.0.1:{cdn.server_port}"
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True) for s in (hub, cdn)]
    for t in threads:
        t.start()

    ready = {"hub": state.hub_url, "cdn": state.cdn_url, "pid": os.getpid()}
    tmp = f"{args.ready_file}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(ready) + "\n")
    os.replace(tmp, args.ready_file)

    try:
        while True:
            time.sleep(3600)
    except SystemExit:
        pass
    finally:
        for s in (hub, cdn):
            s.server_close()
        # Connection threads are daemons that may sit in a paced write: leave without waiting.
        try:
            if state.log_file:
                state.log_file.flush()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(0)


if __name__ == "__main__":
    main()
