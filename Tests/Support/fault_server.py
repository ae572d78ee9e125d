#!/usr/bin/env python3
"""A controllable, fault-injecting HTTP/1.1 server for rangefetch's tests (stdlib only).

Start: python3 fault_server.py [--port 0] [--root DIR]
It binds 127.0.0.1, prints exactly one line "PORT <n>" on stdout once listening, then serves
until SIGTERM/SIGINT. Nothing else is written to stdout.

Paths
  /data/<SIZE>/<name>   SIZE bytes of deterministic pseudo-random content (SHA-256 counter
                        stream seeded by the version), strong ETag "<size>-<version>",
                        Last-Modified that changes with the version, Accept-Ranges: bytes.
  /file/<name>          a real file from --root, same range semantics.
  /_stats               JSON: requests, body_bytes, by_status, log[{method,path,range,if_range,status,bytes}]
  /_reset               clears the counters and the per-URL fault counters.

Ranges: one range per request, "bytes=a-b", "bytes=a-", "bytes=-n"; 206 with Content-Range;
416 with "Content-Range: bytes */SIZE" when unsatisfiable. If-Range that does not match the
current ETag (or Last-Modified) gets a 200 with the whole body.

Query parameters (combine freely; counters are kept per path+query):
  version=V            content version (changes bytes, ETag and Last-Modified)
  cut=N                close the connection after N body bytes of each response
  cutmode=fin|rst      normal close (default) or RST (SO_LINGER 0)
  cutcount=K           only the first K requests are cut (default: all)
  trickle=BPS          send the body at BPS bytes/second
  trickleoffset=X      ... only responses whose range starts at X
  tricklecount=K       ... only the first K matching responses
  rate=BPS             send every body at BPS bytes/second (a per-connection cap)
  shift=K              serve bytes from a+K while claiming Content-Range a-b (lying server)
  wrongrange=1         answer a Content-Range one byte later than asked (with matching bytes)
  changeafter=K        after K body bytes served for this URL, content becomes version+1
  status503=K          first K requests answer 503 with Retry-After: retryafter (default 1)
  status=CODE          first statuscount (default: all) requests answer CODE
  chunked=1            ignore Range; 200 with Transfer-Encoding: chunked, no length, no Accept-Ranges
  norange=1            ignore Range; 200 with full body and Accept-Ranges: none
  noaccept=1           omit Accept-Ranges but still honour ranges
  nohead=1             HEAD answers 405
  redirect=N           302 to the same URL with redirect=N-1; redirecthost=1 uses "localhost"
  auth=user:pass       require HTTP Basic auth (401 otherwise)
  reprdigest=good|bad  Repr-Digest: sha-256=:b64: of the whole content (bad: of other bytes)
  digest=good|bad      legacy Digest: SHA-256=b64
  contentmd5=good|bad  Content-MD5 on 200 full responses
  disposition=NAME     Content-Disposition: attachment; filename="NAME"
  encoding=gzip        claim Content-Encoding: gzip unless Accept-Encoding is identity or absent
  forceencoding=1      with encoding=gzip: claim it whatever the request asked
  extra=N              send N bytes more than announced on range responses
  stall=S              stop sending for S seconds after 16 KiB of the body
  stalloffset=X        ... only responses whose range starts at X
  stallcount=K         ... only the first K matching responses
"""

import argparse
import base64
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CHUNK = 64 * 1024
BLOCK = 32  # bytes per SHA-256 counter block

_lock = threading.Lock()
_stats = {"requests": 0, "body_bytes": 0, "by_status": {}, "log": []}
_counters = {}  # (url key, counter name) -> int
_cache = {}  # (size, version) -> bytes, for sizes up to CACHE_LIMIT
CACHE_LIMIT = 64 << 20


def count(key, name, increment=1):
    """Returns the counter's value before adding `increment`."""
    with _lock:
        value = _counters.get((key, name), 0)
        _counters[(key, name)] = value + increment
        return value


def content(size, version, start, end):
    """Bytes [start, end) of the deterministic stream for (size, version)."""
    if size <= CACHE_LIMIT:
        with _lock:
            data = _cache.get((size, version))
        if data is None:
            data = generate(version, 0, size)
            with _lock:
                _cache[(size, version)] = data
        return data[start:end]
    return generate(version, start, end)


def generate(version, start, end):
    seed = b"rangefetch" + struct.pack("<I", version)
    first, last = start // BLOCK, (end + BLOCK - 1) // BLOCK
    out = bytearray()
    for block in range(first, last):
        out += hashlib.sha256(seed + struct.pack("<Q", block)).digest()
    offset = start - first * BLOCK
    return bytes(out[offset:offset + (end - start)])


class Resource:
    """What a path serves: size, validators, and a way to read bytes."""

    def __init__(self, size, etag, last_modified, reader):
        self.size, self.etag, self.last_modified, self.read = size, etag, last_modified, reader


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "faultserver/1"

    def log_message(self, *args):
        pass

    # -- plumbing -----------------------------------------------------------------------

    def do_HEAD(self):
        self.handle_request(head=True)

    def do_GET(self):
        self.handle_request(head=False)

    def do_POST(self):
        self.handle_request(head=False)

    def record(self, status, sent, range_header):
        with _lock:
            _stats["requests"] += 1
            _stats["body_bytes"] += sent
            _stats["by_status"][str(status)] = _stats["by_status"].get(str(status), 0) + 1
            _stats["log"].append({"method": self.command, "path": self.path.split("?")[0],
                                  "range": range_header, "if_range": self.headers.get("If-Range"),
                                  "status": status, "bytes": sent})

    def simple(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.record(status, 0 if self.command == "HEAD" else len(body), self.headers.get("Range"))

    # -- request handling ---------------------------------------------------------------

    def handle_request(self, head):
        url = urlsplit(self.path)
        if url.path == "/_stats":
            with _lock:
                body = json.dumps(_stats).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if url.path == "/_reset":
            with _lock:
                _stats.update({"requests": 0, "body_bytes": 0, "by_status": {}, "log": []})
                _counters.clear()
            self.simple(204)
            return

        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        key = self.path
        number = lambda name, default=0: int(q.get(name, default))

        if "auth" in q:
            expected = "Basic " + base64.b64encode(q["auth"].encode()).decode()
            if self.headers.get("Authorization") != expected:
                self.simple(401, b"auth required", [("WWW-Authenticate", 'Basic realm="test"')])
                return
        if number("redirect") > 0:
            host = "localhost" if q.get("redirecthost") == "1" else "127.0.0.1"
            rest = "&".join(f"{k}={v}" for k, v in q.items() if k != "redirect")
            location = f"http://{host}:{self.server.server_port}{url.path}?redirect={number('redirect') - 1}"
            self.simple(302, b"", [("Location", location + ("&" + rest if rest else ""))])
            return
        if head and q.get("nohead") == "1":
            self.simple(405, b"", [("Allow", "GET")])
            return
        if "status503" in q and count(key, "503") < number("status503"):
            self.simple(503, b"busy", [("Retry-After", q.get("retryafter", "1"))])
            return
        if "status" in q and count(key, "status") < number("statuscount", 1 << 30):
            self.simple(number("status"), b"status")
            return

        resource = self.resource(url.path, q, key)
        if resource is None:
            self.simple(404, b"not found")
            return
        self.serve(resource, q, key, head)

    def resource(self, path, q, key):
        parts = path.split("/")
        if len(parts) >= 3 and parts[1] == "data" and parts[2].isdigit():
            size = int(parts[2])
            version = number_of(q, "version")
            if "changeafter" in q:
                with _lock:
                    served = _counters.get((key, "served"), 0)
                if served >= int(q["changeafter"]):
                    version += 1
            lm = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(1_700_000_000 + version * 1000))
            return Resource(size, f'"{size}-{version}"', lm, lambda a, b: content(size, version, a, b))
        if len(parts) >= 3 and parts[1] == "file" and self.server.root:
            name = "/".join(parts[2:])
            if ".." in name.split("/"):
                return None
            full = f"{self.server.root}/{name}"
            try:
                with open(full, "rb") as f:
                    f.seek(0, 2)
                    size = f.tell()
                mtime = os.stat(full).st_mtime
            except OSError:
                return None

            def read(a, b):
                with open(full, "rb") as f:
                    f.seek(a)
                    return f.read(b - a)
            lm = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(mtime))
            return Resource(size, f'"{size}-{int(mtime)}"', lm, read)
        return None

    def serve(self, res, q, key, head):
        range_header = self.headers.get("Range")
        ignore_range = q.get("chunked") == "1" or q.get("norange") == "1"
        if_range = self.headers.get("If-Range")
        if if_range is not None and if_range not in (res.etag, res.last_modified):
            range_header_effective = None
        else:
            range_header_effective = range_header

        start, end, status = 0, res.size, 200
        if range_header_effective and not ignore_range:
            parsed = parse_range(range_header_effective, res.size)
            if parsed is None:
                self.simple(416, b"", [("Content-Range", f"bytes */{res.size}")])
                return
            start, end = parsed
            status = 206

        claim_start, claim_end = start, end
        if status == 206 and q.get("wrongrange") == "1" and end < res.size:
            start, end = start + 1, end + 1
            claim_start, claim_end = start, end
        body_start = start + number_of(q, "shift") if status == 206 else start
        body_end = min(body_start + (end - start), res.size)

        self.send_response(status)
        if q.get("chunked") == "1":
            self.send_header("Transfer-Encoding", "chunked")
        else:
            # extra=N: a body longer than the range announced, with a length to match it.
            overlong = number_of(q, "extra") if status == 206 else 0
            self.send_header("Content-Length", str(end - start + overlong))
            if q.get("norange") == "1":
                self.send_header("Accept-Ranges", "none")
            elif q.get("noaccept") != "1":
                self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {claim_start}-{claim_end - 1}/{res.size}")
        self.send_header("ETag", res.etag)
        self.send_header("Last-Modified", res.last_modified)
        self.send_header("Content-Type", "application/octet-stream")
        if "disposition" in q:
            self.send_header("Content-Disposition", f'attachment; filename="{q["disposition"]}"')
        encoding_asked = self.headers.get("Accept-Encoding")
        if q.get("encoding") == "gzip" and (q.get("forceencoding") == "1" or encoding_asked not in (None, "identity")):
            self.send_header("Content-Encoding", "gzip")
        self.digest_headers(res, q, status)
        self.end_headers()
        if head:
            self.record(status, 0, range_header)
            return

        extra = number_of(q, "extra") if status == 206 else 0
        sent = self.send_body(res, q, key, body_start, body_end, extra, start, status)
        self.record(status, sent, range_header)

    def digest_headers(self, res, q, status):
        def whole(algorithm, good):
            data = res.read(0, res.size) if good else b"something else"
            return base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
        if q.get("reprdigest") in ("good", "bad"):
            self.send_header("Repr-Digest", f"sha-256=:{whole('sha256', q['reprdigest'] == 'good')}:")
        if q.get("digest") in ("good", "bad"):
            self.send_header("Digest", f"SHA-256={whole('sha256', q['digest'] == 'good')}")
        if q.get("contentmd5") in ("good", "bad") and status == 200:
            self.send_header("Content-MD5", whole("md5", q["contentmd5"] == "good"))

    def send_body(self, res, q, key, body_start, body_end, extra, range_start, status):
        chunked = q.get("chunked") == "1"
        limit = None
        if "cut" in q and count(key, "cut") < number_of(q, "cutcount", 1 << 30):
            limit = int(q["cut"])
        rate = None
        if "rate" in q:
            rate = int(q["rate"])
        if "trickle" in q:
            offset_ok = "trickleoffset" not in q or int(q["trickleoffset"]) == range_start
            if offset_ok and count(key, "trickle") < number_of(q, "tricklecount", 1 << 30):
                rate = int(q["trickle"])
        stall = 0.0
        if "stall" in q:
            offset_ok = "stalloffset" not in q or int(q["stalloffset"]) == range_start
            if offset_ok and count(key, "stall") < number_of(q, "stallcount", 1 << 30):
                stall = float(q["stall"])

        sent = 0
        began = time.monotonic()
        position = body_start
        total = (body_end - body_start) + extra
        try:
            while sent < total:
                step = min(CHUNK, total - sent)
                if rate:
                    step = min(step, max(1, rate // 20))
                if limit is not None:
                    step = min(step, limit - sent)
                    if step <= 0:
                        break
                if stall and sent >= 16 * 1024:
                    time.sleep(stall)
                    stall = 0.0
                if stall:
                    step = min(step, 16 * 1024 - sent)
                data = res.read(position, min(position + step, res.size)) if position < res.size else b""
                data += b"\0" * (step - len(data))  # the overlong tail, if any
                if chunked:
                    self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
                else:
                    self.wfile.write(data)
                sent += len(data)
                position += len(data)
                if "changeafter" in q:
                    count(key, "served", len(data))
                if rate:
                    ahead = began + sent / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
            if limit is not None and sent >= limit:
                self.cut(q)
                return sent
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout, OSError):
            self.close_connection = True
        return sent

    def cut(self, q):
        self.wfile.flush()
        if q.get("cutmode") == "rst":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR) if q.get("cutmode") != "rst" else None
        except OSError:
            pass
        self.connection.close()


def number_of(q, name, default=0):
    return int(q.get(name, default))


def parse_range(header, size):
    """One byte range -> (start, end) half-open, or None when unsatisfiable/unsupported."""
    if not header.startswith("bytes=") or "," in header:
        return None
    spec = header[6:].strip()
    first, _, last = spec.partition("-")
    try:
        if first == "":
            n = int(last)
            if n <= 0:
                return None
            return (max(0, size - n), size) if size > 0 else None
        a = int(first)
        b = int(last) if last else size - 1
    except ValueError:
        return None
    if a >= size or b < a:
        return None
    return a, min(b, size - 1) + 1


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass  # clients that hang up mid-body are expected here


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--root", default=None)
    args = parser.parse_args()
    server = Server(("127.0.0.1", args.port), Handler)
    server.root = args.root
    # A parent that spawned us from a thread with signals blocked (Dispatch does) passes that
    # mask on: unblock, so SIGTERM stops us at once. Nothing needs a graceful drain.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    print(f"PORT {server.server_port}", flush=True)
    server.serve_forever(poll_interval=0.2)
    server.server_close()


if __name__ == "__main__":
    main()
