#!/usr/bin/env python3
"""A controllable, fault-injecting HTTP/1.1 server for rangefetch's tests (Python 3.11 stdlib only).

Start
    python3 Tests/Support/fault_server.py [--port 0] [--root DIR]
  Binds 127.0.0.1 (port 0 = any free port), prints exactly one line "PORT <n>" on stdout once
  listening, then serves until SIGTERM/SIGINT and exits 0. Nothing else is ever written to stdout;
  unexpected errors go to stderr (client hang-ups are silent). One thread per connection,
  HTTP/1.1 keep-alive, TCP_NODELAY.

Paths
  /data/<SIZE>[/<anyname>]  SIZE bytes of deterministic content (see Content below).
                            ETag "<SIZE>-<version>" (strong), Last-Modified that changes with
                            the version, Accept-Ranges: bytes, Content-Type application/octet-stream.
  /file/<name>              the file <name> under --root (no escaping it; 404 without --root),
                            same range semantics. ETag "<size>-<mtime in ns>", Last-Modified = mtime.
                            version= and changeafter= do not apply to files.
  /_stats                   GET: JSON {"open_connections", "peak_connections" (TCP connections open
                            now and at most at once since the last reset, the stats request's own
                            included; a connection whose client has closed it counts no more,
                            even before its thread sees the end), "requests", "body_bytes" (at each response's end), "written_bytes" (as sent), "by_status": {"206": n, ...},
                            "log": [{"method", "path", "query", "range", "if_range", "status",
                            "bytes", "etag", "host", "auth", "connection", "accept_encoding",
                            "accept_encoding_lines", "headers"}, ...]}
                            "path" is without the query; "bytes" = body bytes actually sent
                            (chunked framing excluded); "etag" is null for non-content answers;
                            "auth" ("cookie") tells whether an Authorization (Cookie) header came; "connection"
                            numbers TCP connections (same number = keep-alive reuse);
                            "accept_encoding" is the request's Accept-Encoding (null when absent),
                            "accept_encoding_lines" how many such header lines came; "headers"
                            every header field of the request (lower-cased name -> value, repeated
                            lines joined with ", "). A request is
                            logged once its response is finished (or broken off). Control
                            endpoints are not logged.
  CONNECT 127.0.0.1:PORT    a proxy's tunnel (https through a proxy): 200, then bytes relayed both
                            ways until either side closes; only to 127.0.0.1 (else 403). Logged
                            once the tunnel is open: method CONNECT, path "127.0.0.1:PORT", its
                            headers, bytes 0. Requests in absolute form (http://host/path, a
                            plain proxy's) are answered as any other.
  /movedbucket/KEY          an S3 endpoint whose bucket lives elsewhere: 301 to /data/4096/moved.bin
                            at host "localhost" (another origin).
  /loopingbucket            an S3 ListObjectsV2 listing whose every page is truncated with the same
                            NextContinuationToken ("same"); each page names one new key.
  /paged-N-P[-failK|-stallK]/KEY
                            an S3 bucket of N objects p/k00000.bin ... (keys of 5 digits), 100 bytes
                            each (/data/100's bytes; the listing's ETag is their MD5). A request
                            for the bucket itself (/paged-N-P/?list-type=2&...) is ListObjectsV2:
                            pages of P keys (or max-keys=, if smaller), continuation tokens "tI"
                            (I = the page's first index), encoding-type=url honoured. With -failK,
                            page K (from 1) answers 500 with an S3 InternalError body; with -stallK
                            it is answered after 60 s of silence. Any other key answers the
                            object's bytes, as /data/100/ would (ranges and all).
  /_reset                   GET or POST: clears the stats and every per-URL counter (cutcount,
                            tricklecount, stallcount, status503, status503every, statuscount, changeafter).
  /_clock?advance=SECONDS   GET or POST: moves the server's notion of "now" forward by SECONDS
                            (float >= 0) for good, as if that much time had passed: signed=T
                            signatures issued before are that much older (no test sleeps for an
                            expiry). Answers 200 with the offset now in effect ("<seconds>\n").
                            Only signed= reads this clock; pacing (rate=, stall=) keeps real time.
                            /_reset does not rewind it.

Content
  Block k (32 bytes) of version V is
      sha256(b"rangefetch" + k.to_bytes(8, "little"))                              for V = 0
      sha256(b"rangefetch" + V.to_bytes(8, "little") + k.to_bytes(8, "little"))    for V > 0
  and byte i of any /data resource is byte i % 32 of block i // 32: content does not depend on
  SIZE, so /data/100/x is a prefix of /data/200/y. Generated in 1 MiB pieces, cached (LRU) for
  SIZE <= 64 MiB, sent in 64 KiB writes.

Ranges (RFC 9110, one range per request)
  "bytes=a-b" (b clamped to SIZE-1), "bytes=a-", "bytes=-n" -> 206 with Content-Range
  "bytes a-b/SIZE". Unsatisfiable (a >= SIZE, b < a, "-0", any range of an empty resource) ->
  416 with "Content-Range: bytes */SIZE". Unparseable headers, other units and multiple ranges
  are ignored (200 with the whole body). If-Range that is not exactly the current ETag or
  Last-Modified (so W/ tags never match) -> 200 with the whole body. HEAD gets the same headers
  as GET, without a body.

Query parameters (combine freely; unknown ones are ignored but reported in an
"X-Fault-Unknown" response header and on stderr). Every counter below ("first K") is kept per
path+query exactly as requested, so two URLs that differ in any parameter count separately; add
a dummy parameter (e.g. run=3) to get fresh counters. Checks happen in this order:
auth -> redirect -> nohead -> status503 -> status -> 404 -> ranges and the body faults.

  version=V           content version 0 <= V <= 2**32 (default 0): other bytes, ETag and Last-Modified.
  auth=USER:PASS      require HTTP Basic credentials USER:PASS, else 401 with
                      WWW-Authenticate: Basic realm="rangefetch-test" (checked at every hop).
  redirect=N          N > 0: answer 302 with Location = the same URL with redirect=N-1 (every
                      other parameter kept as written); at N = 0 serve normally.
  redirecthost=1      ... the Location uses host "localhost" instead of "127.0.0.1".
  redirectstatus=C    ... use status C (301, 303, 307, 308) instead of 302.
  nohead=1            HEAD answers 405 (Allow: GET).
  status503=K         the first K requests (HEAD included) answer 503 with Retry-After.
  status503every=K    every K-th request of this path+query (the K-th, 2K-th, ...; HEAD included)
                      answers 503 with Retry-After (a server shedding load now and then).
  retryafter=S        Retry-After value for status503 (default 1) and, when given, for status=.
  status=CODE         answer CODE (small text body; none for 204/304) instead of content ...
  statuscount=K       ... for the first K requests only (default: every request).
  cut=N               after N body bytes, close the connection (the response stays incomplete;
                      responses of N bytes or fewer are sent whole).
  cutmode=fin|rst     fin (default): shutdown + close, the client sees EOF;
                      rst: SO_LINGER 0 then close, the client sees a connection reset.
  cutcount=K          only the first K responses that are longer than N get cut (default: all).
  trickle=BPS         send the body at BPS bytes/second (about 20 writes a second) ...
  trickleoffset=X     ... only for answers to a range that starts at X (a 200 counts as 0) ...
  tricklecount=K      ... only for the first K matching responses (default: all).
  trickleevery=K      ... only on every K-th TCP connection the server accepts (a peer that
                      shapes some connections, whatever range they ask for).
  rate=BPS            send every body at BPS bytes/second (trickle, when it applies, wins if slower).
  stall=S             after min(16 KiB, half the body) body bytes, stop sending for S seconds
                      (float; connection kept open), then carry on ...
  stalloffset=X       ... only for answers to a range that starts at X (a 200 counts as 0) ...
  stallcount=K        ... only for the first K matching responses (default: all).
  stallevery=K        ... only on every K-th TCP connection the server accepts.
  stallafter=N        ... after N body bytes instead of min(16 KiB, half the body); 0: the
                      headers arrive and then not a single body byte.
  shift=K             206 bodies carry the bytes from a+K while Content-Range claims a-b (a lying
                      server; bytes past the end of a /data resource continue the stream, past
                      the end of a file they are zeros).
  zerosover=N         bodies longer than N bytes are zeros (headers unchanged): a mirror that answers
                      small sample requests truly and sends zeros for real ranges.
  wrongrange=1        206 answers claim a different range than asked, with the bytes of the claim:
                      a+1..b+1 normally; a-1..b-1 when b is the last byte; a..b-1 for the whole
                      resource (a single-byte whole resource gets 416).
  rangeunsatisfied=1  every satisfiable Range answers 416 with "Content-Range: bytes */SIZE" (the
                      size HEAD announced): a server that advertises ranges and refuses them all.
  extra=N             206 bodies carry N bytes more than the Content-Range (the following bytes of
                      the stream), with ...
  extramode=length    ... (default) a Content-Length that announces them (libcurl delivers them);
  extramode=trailing  ... a Content-Length that matches the range; the N bytes trail the message
                      on the connection.
  changeevery=K       the content switches to the next version after every K body bytes sent
                      for this path+query (a file that keeps changing).
  signed=T            a signed, expiring redirect (model hubs, S3 presigned links): a request
                      without sig= answers 302 to the same URL plus "&sig=<issue time>"; one with
                      sig= older than T seconds (float) answers expirestatus (default 403) with
                      the body a store sends for an expired signature:
  expirestatus=C      403: S3's <Code>AccessDenied</Code><Message>Request has expired</Message>;
                      400: GCS's <Code>ExpiredToken</Code>; 401: Azure's AuthenticationFailed
                      ("Signed expiry time ... must be after signed start time"); 410: "gone".
  signcount=K         only the first K redirects (per URL as requested) issue a valid signature;
                      later ones issue one that has already expired (the origin refuses us for good).
                      With redirecthost=1 the signed URL names host "localhost" (another origin);
                      auth= guards only the unsigned URL (a signature is its own credential).
  authb64=B64         as auth=, given as base64("USER:PASS"), so the URL does not show the password.
  rejectauth=1        a signed request (sig=) that carries Authorization or Cookie answers 400 with
                      S3's <Code>InvalidArgument</Code> "Only one auth mechanism allowed".
  maxconcurrent=K     at most K content responses of this path+query in flight at once; a request
                      beyond that answers 503 with Retry-After: retryafter (default 1; "none" omits
                      it), as nginx's limit_conn or S3's SlowDown do.
  limitstatus=C       ... with status C (429 or 503) instead of 503.
  etagbyconn=1        the ETag depends on the TCP connection (odd/even connection number: "...-a" or
                      "...-b"), bytes and Last-Modified do not: two origins behind a balancer.
  changeafter=K       once K body bytes have been sent for this path+query (over all requests),
                      the content switches to version+1 (new bytes, ETag, Last-Modified); the
                      switch happens between requests, once.
  chunked=1           ignore Range; 200 with Transfer-Encoding: chunked, no Content-Length, no
                      Accept-Ranges.
  norange=1           ignore Range; 200 with the whole body, Content-Length, Accept-Ranges: none.
  noaccept=1          omit Accept-Ranges but still honour ranges.
  encoding=gzip       add Content-Encoding: gzip (and Vary: Accept-Encoding) unless the request's
                      Accept-Encoding is absent or exactly "identity". The body is NOT gzip.
  forceencoding=1     ... with encoding=: claim it whatever the request's Accept-Encoding.
  realgzip=1          with encoding=gzip: really gzip the body (gzip.compress, mtime 0) whenever the
                      request's Accept-Encoding allows gzip: absent (RFC 9110 12.5.3: any coding
                      is acceptable), "*" or "gzip"/"x-gzip" with q > 0. With forceencoding=1:
                      whatever the request says. An encoded answer ignores Range (200, never 206),
                      has no Accept-Ranges, Content-Length = the gzipped length, no digest headers.
  gzipzeros=1         with realgzip=1: the gzipped body is SIZE zeros (level 9, ~1000:1: a decompression
                      bomb), whatever the resource holds.
  contentlength=TEXT  send "Content-Length: TEXT" (raw, e.g. -5 or 99999999999999999999) instead of
                      the real length, then the real body, then close the connection.
  bigheader=N         add one header line "X-Big: " + N bytes of "a" to content answers.
  manyheaders=N       add N header lines "X-Filler-<i>: <value>" to content answers ...
  headerwidth=W       ... each value W bytes wide (default 8).
  contentrange=TEXT   206 answers carry "Content-Range: TEXT" (as decoded from the query, unescaped:
                      control characters such as ESC pass through) instead of the true one.
  link=VALUE          a Link header (RFC 8288) with VALUE as decoded from the query, e.g.
                      <http://127.0.0.1:P/data/...>; rel=duplicate (Metalink/HTTP, RFC 6249),
                      wherever disposition= would go.
  disposition=NAME    Content-Disposition: attachment; filename="NAME" (NAME as decoded from the
                      query, unescaped, so ../ tricks pass through).
  reprdigest=good|bad Repr-Digest: sha-256=:<base64>: of the whole representation (bad: of
                      other bytes), on every content answer (200, 206, HEAD).
  digest=good|bad     legacy Digest: SHA-256=<base64>, same scope.
  contentmd5=good|bad Content-MD5: <base64 MD5 of the whole content>, on 200 answers only.
  contentdigest=good|bad|unknown|sent
                      Content-Digest (RFC 9530) on 206 answers: good: sha-256=:<base64>: of the
                      bytes this response carries (its content); bad: of other bytes; unknown: an
                      algorithm nobody knows (xxh-test=:AAAA:); sent: of the bytes really sent
                      (the zeros of zerosover=, where that applies; else as good).
  corruptevery=K      every K-th 206 answer of this path+query (the K-th, 2K-th, ...) has its first
                      body byte flipped, while Content-Digest keeps the honest digest (a mirror
                      with a bad disk or a lying cache) ...
  corruptoffset=X     ... only answers to a range that starts at X count (and get corrupted) ...
  corruptcount=N      ... at most N answers corrupted (default: all of them).
  Flags (=1) also accept true/yes/on and an empty value; 0/false/no/off turn them off. A
  malformed number answers 400 naming the parameter.
"""

import argparse
import base64
import binascii
import collections
import email.utils
import gzip
import hashlib
import itertools
import json
import math
import os
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

WRITE_CHUNK = 64 * 1024          # one socket write
PIECE = 1 << 20                  # unit of content generation and caching
BLOCK = 32                       # bytes per SHA-256 counter block
CACHE_SIZES_UP_TO = 64 << 20     # /data resources up to this size are cached ...
CACHE_LIMIT = 192 << 20          # ... in an LRU of at most this many bytes
STALL_AFTER = 16 * 1024
BASE_DATE = 1_700_000_000        # Last-Modified of version 0 (2023-11-14); +1 day per version
FOREVER = 1 << 62


PAGED_BUCKET = re.compile(r"^/paged-(?P<count>\d+)-(?P<page>\d+)(?:-(?P<fault>fail|stall)(?P<faulty>\d+))?(?P<rest>/.*)?$")
PAGED_OBJECT_SIZE = 100
PAGED_STALL_SECONDS = 60


def log_error(message):
    try:
        print(f"fault_server: {message}", file=sys.stderr, flush=True)
    except Exception:
        pass


_warned = set()
_warned_lock = threading.Lock()


def warn_unknown(names, path):
    """One stderr line per unknown parameter name (a typo would otherwise test nothing)."""
    with _warned_lock:
        fresh = [name for name in names if name not in _warned]
        _warned.update(fresh)
    if fresh:
        log_error(f"ignoring unknown parameter(s) {', '.join(fresh)} (first seen in {path})")



# ---------------------------------------------------------------------------------------------
# Shared state: statistics and per-URL counters


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests, self.body_bytes, self.by_status, self.log = 0, 0, {}, []
        self.written_bytes = 0  # body bytes as each write goes out, not at a response's end
        self.open_connections, self.peak_connections = 0, 0
        self.sockets = {}  # connection id -> socket, while its thread serves it
        self.counters = {}  # (url key, counter name) -> int
        self.clock_offset = 0.0  # seconds /_clock?advance= has moved "now" forward

    def now(self):
        """The server's "now" for signatures: wall time plus what /_clock has advanced."""
        with self.lock:
            return time.time() + self.clock_offset

    def advance_clock(self, seconds):
        with self.lock:
            self.clock_offset += seconds
            return self.clock_offset

    def reset(self):
        with self.lock:
            self.requests, self.body_bytes, self.by_status, self.log = 0, 0, {}, []
            self.written_bytes = 0
            self.peak_connections = self.open_connections
            self.counters = {}

    def take(self, key, name, limit):
        """Counts one more event; True while at most `limit` events have been counted."""
        with self.lock:
            value = self.counters.get((key, name), 0)
            if value >= limit:
                return False
            self.counters[(key, name)] = value + 1
            return True

    def value(self, key, name):
        with self.lock:
            return self.counters.get((key, name), 0)

    def add(self, key, name, amount):
        with self.lock:
            self.counters[(key, name)] = self.counters.get((key, name), 0) + amount
            return self.counters[(key, name)]

    def wrote(self, amount):
        with self.lock:
            self.written_bytes += amount

    def record(self, entry):
        with self.lock:
            self.requests += 1
            self.body_bytes += entry["bytes"]
            status = str(entry["status"])
            self.by_status[status] = self.by_status.get(status, 0) + 1
            self.log.append(entry)

    def connection_opened(self, connection_id, sock):
        """Counts a new connection. The peak counts only connections whose client has not hung up:
        a thread asleep in a slow answer, or not yet scheduled on a loaded machine, sees the end
        late, and a client that closed one connection before opening the next never had both open."""
        hung_up = select.POLLRDHUP | select.POLLHUP | select.POLLERR | select.POLLNVAL
        with self.lock:
            self.sockets[connection_id] = sock
            self.open_connections += 1
            poller = select.poll()
            for other in self.sockets.values():
                poller.register(other, hung_up)
            ended = {fd for fd, events in poller.poll(0) if events & hung_up}
            live = sum(1 for other in self.sockets.values() if other.fileno() not in ended)
            self.peak_connections = max(self.peak_connections, live)

    def connection_closed(self, connection_id):
        with self.lock:
            if self.sockets.pop(connection_id, None) is not None:
                self.open_connections -= 1

    def snapshot(self):
        with self.lock:
            return json.dumps({"open_connections": self.open_connections,
                               "peak_connections": self.peak_connections,
                               "requests": self.requests, "body_bytes": self.body_bytes,
                               "written_bytes": self.written_bytes,
                               "by_status": dict(self.by_status), "log": list(self.log)})


STATE = State()


# ---------------------------------------------------------------------------------------------
# Deterministic content


def generate(version, start, end):
    """Bytes [start, end) of the SHA-256 counter stream of `version` (any offsets >= 0)."""
    if end <= start:
        return b""
    prefix = b"rangefetch" + (version.to_bytes(8, "little") if version else b"")
    seeded = hashlib.sha256(prefix)
    pack = struct.Struct("<Q").pack
    first, last = start // BLOCK, (end + BLOCK - 1) // BLOCK
    blocks = []
    for k in range(first, last):
        h = seeded.copy()
        h.update(pack(k))
        blocks.append(h.digest())
    skip = start - first * BLOCK
    return b"".join(blocks)[skip:skip + (end - start)]


class OnceCache:
    """LRU of computed values; concurrent askers of one key wait for a single computation."""

    def __init__(self, limit, weigh=len):
        self.limit, self.weigh = limit, weigh
        self.lock = threading.Lock()
        self.items = collections.OrderedDict()
        self.weight = 0
        self.pending = {}

    def get(self, key, compute):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
            gate = self.pending.setdefault(key, threading.Lock())
        with gate:
            with self.lock:
                if key in self.items:
                    return self.items[key]
            value = compute()
            with self.lock:
                self.items[key] = value
                self.weight += self.weigh(value)
                while self.weight > self.limit and len(self.items) > 1:
                    _, old = self.items.popitem(last=False)
                    self.weight -= self.weigh(old)
                self.pending.pop(key, None)
            return value


PIECES = OnceCache(CACHE_LIMIT)
ENCODED = OnceCache(64 << 20)  # (resource identity, coding) -> encoded body, for realgzip=1
DIGESTS = OnceCache(1 << 20, weigh=lambda _: 64)
CONTENT_DIGESTS = OnceCache(1 << 20, weigh=lambda _: 64)  # (identity, start, end) -> sha-256 of that content


def data_bytes(version, start, end, cached):
    """Bytes [start, end) of the stream, through the piece cache when `cached`."""
    if not cached:
        return generate(version, start, end)
    out = []
    position = start
    while position < end:
        index = position // PIECE
        piece = PIECES.get((version, index),
                           lambda: generate(version, index * PIECE, (index + 1) * PIECE))
        lo = position - index * PIECE
        hi = min(end - index * PIECE, PIECE)
        out.append(memoryview(piece)[lo:hi])
        position += hi - lo
    return out[0] if len(out) == 1 else b"".join(out)


def http_date(seconds):
    return email.utils.formatdate(seconds, usegmt=True)


class Resource:
    """What a content path serves. read(a, b) may go past `size` (for shift= and extra=)."""

    def __init__(self, size, etag, last_modified, read, identity):
        self.size, self.etag, self.last_modified = size, etag, last_modified
        self.read, self.identity = read, identity

    def digest(self, algorithm):
        """Digest of the whole representation, computed once per (resource, algorithm)."""
        def compute():
            h = hashlib.new(algorithm)
            for position in range(0, self.size, PIECE):
                h.update(self.read(position, min(position + PIECE, self.size)))
            return h.digest()
        return DIGESTS.get((self.identity, algorithm), compute)


def data_resource(size, version):
    cached = size <= CACHE_SIZES_UP_TO
    return Resource(size, f'"{size}-{version}"', http_date(BASE_DATE + version * 86400),
                    lambda a, b: data_bytes(version, a, b, cached), ("data", size, version))


def file_resource(root, name):
    if not root:
        return None
    root = os.path.realpath(root)
    full = os.path.realpath(os.path.join(root, name))
    if os.path.commonpath([root, full]) != root:
        return None
    try:
        info = os.stat(full)
    except OSError:
        return None
    if not os.path.isfile(full):
        return None
    size = info.st_size

    def read(a, b):
        with open(full, "rb") as f:
            f.seek(min(a, size))
            data = f.read(max(0, min(b, size) - a))
        return data + b"\0" * ((b - a) - len(data))  # past the end (shift=, extra=): zeros
    return Resource(size, f'"{size}-{info.st_mtime_ns}"', http_date(int(info.st_mtime)), read,
                    ("file", full, size, info.st_mtime_ns))


# ---------------------------------------------------------------------------------------------
# Ranges


def parse_range(header, size):
    """A Range header -> (start, end) half-open, "unsatisfiable", or None (ignore the header)."""
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    first, last = first.strip(), last.strip()
    if not dash or not (first.isdigit() or first == "") or not (last.isdigit() or last == ""):
        return None
    if first == "":
        if last == "":
            return None
        n = int(last)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - n), size
    a = int(first)
    b = int(last) if last else size - 1
    if a >= size or b < a:
        return "unsatisfiable"
    return a, min(b, size - 1) + 1


def accepts_coding(field, coding):
    """Whether an Accept-Encoding field value allows `coding` (RFC 9110 12.5.3).

    No field at all allows every coding; an empty field allows only identity; otherwise the
    coding (or "*") must be listed with q > 0 (x-gzip counts as gzip)."""
    if field is None:
        return True
    aliases = {coding, "x-gzip" if coding == "gzip" else coding, "gzip" if coding == "x-gzip" else coding}
    star = None
    for item in field.split(","):
        name, _, parameters = item.partition(";")
        name = name.strip().lower()
        if not name:
            continue
        q = 1.0
        for parameter in parameters.split(";"):
            key, _, value = parameter.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
        if name in aliases:
            return q > 0
        if name == "*":
            star = q
    return star is not None and star > 0


# ---------------------------------------------------------------------------------------------
# Query parameters


class BadParameter(Exception):
    pass


# name -> (type, minimum, maximum) for numeric parameters; name -> allowed values for the others.
NUMBERS = {
    "version": (int, 0, 1 << 32), "redirect": (int, 0, None), "redirectstatus": (int, 300, 399),
    "status503": (int, 0, None), "status503every": (int, 1, None), "status": (int, 200, 599), "statuscount": (int, 0, None),
    "cut": (int, 0, None), "cutcount": (int, 0, None), "trickle": (int, 1, None),
    "trickleoffset": (int, 0, None), "tricklecount": (int, 0, None), "rate": (int, 1, None),
    "trickleevery": (int, 1, None), "stallevery": (int, 1, None), "stallafter": (int, 0, None),
    "stall": (float, 0, None), "stalloffset": (int, 0, None), "stallcount": (int, 0, None),
    "zerosover": (int, 0, None), "shift": (int, None, None), "extra": (int, 0, None), "changeafter": (int, 0, None), "changeevery": (int, 1, None),
    "bigheader": (int, 0, 64 << 20), "manyheaders": (int, 0, 1 << 20), "headerwidth": (int, 1, 1 << 20),
    "signed": (float, 0, None), "sig": (float, 0, None), "signcount": (int, 0, None),
    "maxconcurrent": (int, 1, None), "corruptevery": (int, 1, None), "corruptcount": (int, 0, None),
    "corruptoffset": (int, 0, None),
}
CHOICES = {
    "cutmode": ("fin", "rst"), "extramode": ("length", "trailing"),
    "reprdigest": ("good", "bad"), "digest": ("good", "bad"), "contentmd5": ("good", "bad"),
    "contentdigest": ("good", "bad", "unknown", "sent"),
    "expirestatus": ("400", "401", "403", "410"), "limitstatus": ("429", "503"),
}
KNOWN_PARAMETERS = set(NUMBERS) | set(CHOICES) | {
    "auth", "redirecthost", "nohead", "retryafter", "wrongrange", "chunked", "norange",
    "noaccept", "encoding", "forceencoding", "disposition", "contentrange", "realgzip", "gzipzeros", "contentlength",
    "etagbyconn", "rejectauth", "authb64", "link",
}


class Faults:
    """The query parameters of one request, checked up front (BadParameter -> 400)."""

    def __init__(self, query):
        self.raw = query
        self.values = dict(parse_qsl(query, keep_blank_values=True))
        self.unknown = sorted(set(self.values) - KNOWN_PARAMETERS)
        for name, (kind, low, high) in NUMBERS.items():
            if name in self.values:
                try:
                    value = kind(self.values[name])
                except ValueError:
                    raise BadParameter(f"{name}={self.values[name]!r} is not a number") from None
                if (not math.isfinite(value) or (low is not None and value < low)
                        or (high is not None and value > high)):
                    raise BadParameter(f"{name}={value} is out of range")
        for name, allowed in CHOICES.items():
            if name in self.values and self.values[name] not in allowed:
                raise BadParameter(f"{name} must be one of {', '.join(allowed)}")

    def has(self, name):
        return name in self.values

    def text(self, name, default=None):
        return self.values.get(name, default)

    def number(self, name, default=0):
        return NUMBERS[name][0](self.values[name]) if name in self.values else default

    def flag(self, name):
        value = self.values.get(name)
        return value is not None and value.strip().lower() not in ("0", "false", "no", "off")


class Plan:
    """How one content response is sent."""

    def __init__(self):
        self.status = 200
        self.body_start = 0      # first byte of the stream sent
        self.length = 0          # bytes the headers announce as the representation part
        self.claim = None        # (first, last) inclusive for Content-Range
        self.overlong = 0        # extra= bytes sent after the announced part
        self.announce_overlong = True
        self.chunked = False
        self.cut_after = None    # cut=
        self.rst = False
        self.rate = None         # bytes/second
        self.stall_after = None  # body bytes before the stall
        self.stall_seconds = 0.0
        self.corrupt = False     # corruptevery=: flip the body's first byte


def request_headers(message):
    """A request's header fields for the log: lower-cased name -> value (repeated lines joined
    with ", ")."""
    fields = {}
    for name, value in message.items():
        key = name.lower()
        fields[key] = fields[key] + ", " + value if key in fields else value
    return fields


# ---------------------------------------------------------------------------------------------
# The handler


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "rangefetch-fault-server/1"
    timeout = 300  # idle keep-alive connections (and blocked writes) give up after this

    connection_ids = itertools.count(1)

    def setup(self):
        super().setup()
        self.connection_id = next(self.connection_ids)
        STATE.connection_opened(self.connection_id, self.connection)
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def handle(self):
        try:
            super().handle()
        except (ConnectionError, socket.timeout, TimeoutError):
            pass

    def finish(self):
        STATE.connection_closed(self.connection_id)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format, *args):
        pass  # stdout and stderr stay quiet; see /_stats

    def end_headers(self):
        self.headers_sent = True
        super().end_headers()

    # -- methods --------------------------------------------------------------------------------

    def do_GET(self):
        self.dispatch(head=False)

    def do_HEAD(self):
        self.dispatch(head=True)

    def do_POST(self):
        length = self.headers.get("Content-Length")
        if length and length.isdigit():
            self.rfile.read(int(length))
        path = urlsplit(self.path).path
        if path in ("/_reset", "/_stats", "/_clock"):
            self.dispatch(head=False)
        else:
            self.simple(405, b"POST is for /_reset and /_clock\n", [("Allow", "GET, HEAD")], record=False)

    def dispatch(self, head):
        self.headers_sent = False
        self.response_etag = None
        self.faults, self.key = Faults(""), self.path
        try:
            self.route(head)
        except BadParameter as error:  # raised before any header went out
            if self.headers_sent:
                self.close_connection = True
            else:
                self.simple(400, f"bad parameter: {error}\n".encode())
        except (ConnectionError, socket.timeout, TimeoutError):
            self.close_connection = True
        except Exception:
            log_error(f"error serving {self.command} {self.path}:\n{traceback.format_exc()}")
            self.close_connection = True
            if not self.headers_sent:
                try:
                    self.simple(500, b"fault server bug, see its stderr\n")
                except OSError:
                    pass

    # -- routing --------------------------------------------------------------------------------

    def route(self, head):
        url = urlsplit(self.path)
        path = unquote(url.path)
        if path == "/_stats":
            body = STATE.snapshot().encode()
            self.simple(200, body, [("Content-Type", "application/json")], record=False)
            return
        if path == "/_clock":
            advance = dict(parse_qsl(url.query)).get("advance", "0")
            try:
                seconds = float(advance)
            except ValueError:
                seconds = -1.0
            if not seconds >= 0:
                self.simple(400, f"bad parameter: advance={advance} (seconds >= 0)\n".encode(), record=False)
                return
            self.simple(200, f"{STATE.advance_clock(seconds)}\n".encode(), record=False)
            return
        if path == "/_reset":
            STATE.reset()
            self.simple(204, b"", record=False)
            return
        if path.startswith("/movedbucket/"):
            # An S3 endpoint answering for a bucket in another region: 301 to another host (as
            # S3's PermanentRedirect names the regional endpoint). The target serves the key's
            # bytes and logs whether the request carried Authorization or a security token.
            target = f"http://localhost:{self.server.server_address[1]}/data/4096/moved.bin"
            self.simple(301, b"<Error><Code>PermanentRedirect</Code></Error>", [("Location", target)])
            return
        if path.rstrip("/") == "/loopingbucket":
            # An S3 store whose ListObjectsV2 pages never end: every page is truncated and names
            # the same NextContinuationToken (botocore stops: "the same next token was received
            # twice"). Each page lists one new key.
            page = STATE.add(self.key.split("?")[0], "pages", 1)
            body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                    f'<Name>loopingbucket</Name><Prefix>p/</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys>'
                    f'<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated><NextContinuationToken>same</NextContinuationToken>'
                    f'<Contents><Key>p/k{page}.bin</Key><Size>10</Size><ETag>"x"</ETag></Contents></ListBucketResult>')
            self.simple(200, body.encode(), [("Content-Type", "application/xml")])
            return

        paged = PAGED_BUCKET.match(path)
        if paged:
            if (paged.group("rest") or "/") == "/":
                self.serve_paged_listing(paged, url.query)
                return
            path = f"/data/{PAGED_OBJECT_SIZE}/{paged.group('rest').rsplit('/', 1)[-1]}"
            url = url._replace(query="")

        faults = Faults(url.query)
        self.key = self.path  # per path+query counters, exactly as requested
        self.faults = faults
        warn_unknown(faults.unknown, self.path)

        # Answers that never reach the content, in this order.
        for check in (self.check_auth, self.check_redirect, self.check_signed, self.check_nohead,
                      self.check_status503, self.check_status):
            if check(faults, head):
                return

        resource = self.find_resource(path, faults)
        if resource is None:
            self.simple(404, b"not found\n")
            return
        if faults.flag("etagbyconn"):
            resource.etag = resource.etag[:-1] + ("-a" if self.connection_id % 2 else "-b") + '"'
        if not faults.has("maxconcurrent"):
            self.serve(resource, faults, head)
            return
        with STATE.lock:
            in_flight = STATE.counters.get((self.key, "inflight"), 0)
            admitted = in_flight < faults.number("maxconcurrent")
            if admitted:
                STATE.counters[(self.key, "inflight")] = in_flight + 1
        if not admitted:
            after = faults.text("retryafter", "1")
            self.simple(int(faults.text("limitstatus", "503")), b"too many connections\n",
                        [] if after == "none" else [("Retry-After", after)])
            return
        try:
            self.serve(resource, faults, head)
        finally:
            STATE.add(self.key, "inflight", -1)

    def serve_paged_listing(self, paged, query):
        """ListObjectsV2 for /paged-N-P[-failK]: see the docstring."""
        count, page_size = int(paged.group("count")), int(paged.group("page"))
        faulty = int(paged.group("faulty") or 0)
        fields = dict(parse_qsl(query))
        if fields.get("max-keys", "").isdigit():
            page_size = max(1, min(page_size, int(fields["max-keys"])))
        token = fields.get("continuation-token")
        if token is not None and not (token.startswith("t") and token[1:].isdigit()):
            self.simple(400, b"<Error><Code>InvalidArgument</Code><Message>bad token</Message></Error>")
            return
        first = int(token[1:]) if token else 0
        if faulty and first // page_size + 1 == faulty and paged.group("fault") == "stall":
            time.sleep(PAGED_STALL_SECONDS)
        elif faulty and first // page_size + 1 == faulty:
            self.simple(500, b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
                             b'<Message>We encountered an internal error. Please try again.</Message></Error>',
                        [("Content-Type", "application/xml")])
            return
        last = min(count, first + page_size)
        etag = hashlib.md5(data_bytes(0, 0, PAGED_OBJECT_SIZE, True)).hexdigest()
        encoded = fields.get("encoding-type") == "url"
        contents = "".join(f'<Contents><Key>p%2Fk{index:05d}.bin</Key><Size>{PAGED_OBJECT_SIZE}</Size>'
                           f'<ETag>&quot;{etag}&quot;</ETag></Contents>' if encoded else
                           f'<Contents><Key>p/k{index:05d}.bin</Key><Size>{PAGED_OBJECT_SIZE}</Size>'
                           f'<ETag>&quot;{etag}&quot;</ETag></Contents>' for index in range(first, last))
        truncated = last < count
        body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                f'<Name>paged</Name><Prefix>p/</Prefix><KeyCount>{last - first}</KeyCount><MaxKeys>{page_size}</MaxKeys>'
                + ('<EncodingType>url</EncodingType>' if encoded else '')
                + f'<IsTruncated>{"true" if truncated else "false"}</IsTruncated>'
                + (f'<NextContinuationToken>t{last}</NextContinuationToken>' if truncated else '')
                + contents + '</ListBucketResult>')
        self.simple(200, body.encode(), [("Content-Type", "application/xml")])

    def find_resource(self, path, faults):
        parts = path.split("/", 3)  # "", kind, first, rest
        if len(parts) >= 3 and parts[1] == "data":
            if not parts[2].isdigit():
                return None
            version = faults.number("version") + self.changed_versions(faults)
            return data_resource(int(parts[2]), version)
        if len(parts) >= 3 and parts[1] == "file":
            return file_resource(self.server.root, path[len("/file/"):])
        return None

    # -- faults that replace the answer ---------------------------------------------------------

    def check_auth(self, faults, head):
        """auth=USER:PASS (or authb64=, base64 of it: a URL that must not show the password):
        HTTP Basic, 401 without the right credentials."""
        if faults.has("authb64") and not (faults.has("signed") and faults.has("sig")):
            scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
            if scheme.lower() == "basic" and token.strip() == faults.text("authb64"):
                return False
            self.simple(401, b"authentication required\n", [("WWW-Authenticate", 'Basic realm="rangefetch-test"')])
            return True
        if not faults.has("auth") or (faults.has("signed") and faults.has("sig")):
            return False
        scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
        try:
            given = base64.b64decode(token.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            given = None
        if scheme.lower() == "basic" and given == faults.text("auth"):
            return False
        self.simple(401, b"authentication required\n",
                    [("WWW-Authenticate", 'Basic realm="rangefetch-test"')])
        return True

    def check_redirect(self, faults, head):
        """redirect=N: 302 (or redirectstatus=) to the same URL with redirect=N-1."""
        remaining = faults.number("redirect")
        if remaining <= 0:
            return False
        query = re.sub(r"(^|&)redirect=[^&]*", lambda m: f"{m.group(1)}redirect={remaining - 1}",
                       faults.raw)
        host = "localhost" if faults.flag("redirecthost") else "127.0.0.1"
        location = f"http://{host}:{self.server.server_port}{urlsplit(self.path).path}?{query}"
        status = faults.number("redirectstatus", 302)
        self.simple(status, b"", [("Location", location)])
        return True

    EXPIRED_BODIES = {
        403: b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
             b"<Message>Request has expired</Message></Error>\n",
        400: b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>ExpiredToken</Code>"
             b"<Message>The provided token has expired.</Message></Error>\n",
        401: b"<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code>"
             b"<Message>Signed expiry time must be after signed start time</Message></Error>\n",
        410: b"gone\n",
    }

    def check_signed(self, faults, head):
        """signed=T: redirect to a signature valid T seconds; refuse an expired one."""
        if not faults.has("signed"):
            return False
        lifetime = faults.number("signed")
        if not faults.has("sig"):
            issued = STATE.now()
            if not STATE.take(self.key, "signcount", faults.number("signcount", FOREVER)):
                issued -= lifetime + 1  # an origin that keeps refusing us
            host = "localhost" if faults.flag("redirecthost") else "127.0.0.1"
            location = (f"http://{host}:{self.server.server_port}{urlsplit(self.path).path}"
                        f"?{faults.raw}&sig={issued:.3f}")
            self.simple(302, b"", [("Location", location)])
            return True
        if faults.flag("rejectauth") and (self.headers.get("Authorization") or self.headers.get("Cookie")):
            self.simple(400, b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InvalidArgument</Code>"
                        b"<Message>Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, "
                        b"Signature query string parameter or the Authorization header should be specified"
                        b"</Message></Error>\n", [("Content-Type", "application/xml")])
            return True
        if STATE.now() - faults.number("sig") <= lifetime:
            return False
        status = int(faults.text("expirestatus", "403"))
        self.simple(status, self.EXPIRED_BODIES[status], [("Content-Type", "application/xml")])
        return True

    def check_nohead(self, faults, head):
        """nohead=1: HEAD is not allowed."""
        if not (head and faults.flag("nohead")):
            return False
        self.simple(405, b"", [("Allow", "GET")])
        return True

    def check_status503(self, faults, head):
        """status503=K: the first K requests get 503 with Retry-After: retryafter (default 1).
        status503every=K: every K-th request does."""
        if faults.has("status503every"):
            if STATE.add(self.key, "status503every", 1) % faults.number("status503every") != 0:
                return False
        elif not faults.has("status503"):
            return False
        elif not STATE.take(self.key, "status503", faults.number("status503")):
            return False
        self.simple(503, b"service unavailable\n", [("Retry-After", faults.text("retryafter", "1"))])
        return True

    def check_status(self, faults, head):
        """status=CODE: the first statuscount=K requests (default all) answer CODE."""
        if not faults.has("status"):
            return False
        if not STATE.take(self.key, "status", faults.number("statuscount", FOREVER)):
            return False
        headers = [("Retry-After", faults.text("retryafter"))] if faults.has("retryafter") else []
        self.simple(faults.number("status"), f"status {faults.text('status')}\n".encode(),
                    headers)
        return True

    def changed_versions(self, faults):
        """changeafter=K: 1 once K body bytes went out for this URL, else 0.
        changeevery=K: one more for every K body bytes sent."""
        if faults.has("changeevery"):
            return STATE.value(self.key, "served") // faults.number("changeevery")
        if not faults.has("changeafter"):
            return 0
        return 1 if STATE.value(self.key, "served") >= faults.number("changeafter") else 0

    # -- content --------------------------------------------------------------------------------

    def serve(self, res, faults, head):
        if self.real_coding(faults):
            self.serve_encoded(res, faults, head)
            return
        plan = Plan()
        plan.length = res.size
        range_header = self.headers.get("Range")
        plan.chunked = faults.flag("chunked")
        requested_start = 0  # what trickleoffset= and stalloffset= compare with
        ignore_range = plan.chunked or faults.flag("norange") or not self.if_range_holds(res)

        if range_header is not None and not ignore_range:
            parsed = parse_range(range_header, res.size)
            if parsed == "unsatisfiable" or (parsed is not None and faults.flag("rangeunsatisfied")):
                self.unsatisfiable(res, faults)
                return
            if parsed is not None:
                plan.status = 206
                plan.body_start, end = parsed
                requested_start = plan.body_start
                plan.length = end - plan.body_start
                plan.claim = (plan.body_start, end - 1)
                if faults.flag("wrongrange") and not self.apply_wrongrange(plan, res):
                    self.unsatisfiable(res, faults)
                    return
                self.apply_shift(plan, faults)
                self.apply_extra(plan, faults)
                self.plan_corrupt(plan, faults)

        self.send_response(plan.status)
        if plan.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif faults.has("contentlength"):
            self.send_header("Content-Length", faults.text("contentlength"))
            self.close_connection = True  # the announced length means nothing: EOF ends the body
        else:
            length = plan.length + (plan.overlong if plan.announce_overlong else 0)
            self.send_header("Content-Length", str(length))
        self.accept_ranges_header(faults)
        if plan.claim is not None and faults.has("contentrange"):
            self.send_header("Content-Range", faults.text("contentrange"))
        elif plan.claim is not None:
            self.send_header("Content-Range", f"bytes {plan.claim[0]}-{plan.claim[1]}/{res.size}")
        self.validator_headers(res)
        self.send_header("Content-Type", "application/octet-stream")
        self.disposition_header(faults)
        self.encoding_header(faults)
        self.digest_headers(res, faults, plan.status)
        self.content_digest_header(res, faults, plan)
        self.filler_headers(faults)
        self.unknown_header(faults)
        self.end_headers()
        if head:
            self.record(plan.status, 0)
            return

        self.plan_cut(plan, faults)
        self.plan_rate(plan, faults, requested_start)
        self.plan_stall(plan, faults, requested_start)
        sent = self.send_body(res, plan, faults)
        self.record(plan.status, sent)

    def if_range_holds(self, res):
        """If-Range must equal the current ETag or Last-Modified for a Range to be honoured."""
        validator = self.headers.get("If-Range")
        return validator is None or validator.strip() in (res.etag, res.last_modified)

    def unsatisfiable(self, res, faults):
        headers = [("Content-Range", f"bytes */{res.size}")]
        if not faults.flag("noaccept"):
            headers.append(("Accept-Ranges", "bytes"))
        self.response_etag = res.etag
        self.simple(416, b"", headers + [("ETag", res.etag)])

    def apply_wrongrange(self, plan, res):
        """wrongrange=1: claim (and send) a neighbouring range instead of the one asked."""
        first, last = plan.claim
        if last + 1 < res.size:
            first, last = first + 1, last + 1
        elif first > 0:
            first, last = first - 1, last - 1
        elif last > first:
            last -= 1
        else:
            return False  # a one-byte resource has no other range
        plan.claim = (first, last)
        plan.body_start, plan.length = first, last - first + 1
        return True

    def apply_shift(self, plan, faults):
        """shift=K: the bytes from a+K under the claim a-b."""
        plan.body_start += faults.number("shift")
        if plan.body_start < 0:
            raise BadParameter("shift= moves the range before byte 0")

    def apply_extra(self, plan, faults):
        """extra=N: N bytes more than the range (announced by Content-Length or trailing)."""
        plan.overlong = faults.number("extra")
        plan.announce_overlong = faults.text("extramode", "length") == "length"

    def accept_ranges_header(self, faults):
        """chunked=1: none at all; norange=1: "none"; noaccept=1: omitted; else "bytes"."""
        if faults.flag("chunked") or faults.flag("noaccept"):
            return
        self.send_header("Accept-Ranges", "none" if faults.flag("norange") else "bytes")

    def validator_headers(self, res):
        self.response_etag = res.etag
        self.send_header("ETag", res.etag)
        self.send_header("Last-Modified", res.last_modified)

    def disposition_header(self, faults):
        """disposition=NAME, link=VALUE."""
        if faults.has("disposition"):
            self.send_header("Content-Disposition", f'attachment; filename="{faults.text("disposition")}"')
        if faults.has("link"):
            self.send_header("Link", faults.text("link"))

    def encoding_header(self, faults):
        """encoding=gzip (+ forceencoding=1): claim a content coding the body does not have."""
        coding = faults.text("encoding")
        if not coding:
            return
        asked = self.headers.get("Accept-Encoding")
        wants_identity = asked is None or asked.strip().lower() == "identity"
        if not faults.flag("realgzip") and (faults.flag("forceencoding") or not wants_identity):
            self.send_header("Content-Encoding", coding)
        self.send_header("Vary", "Accept-Encoding")

    def real_coding(self, faults):
        """realgzip=1 (+ encoding=gzip): "gzip" when this answer is really gzipped, else None."""
        if not faults.flag("realgzip"):
            return None
        coding = faults.text("encoding", "gzip").lower()
        if coding not in ("gzip", "x-gzip"):
            raise BadParameter("realgzip=1 supports encoding=gzip only")
        if faults.flag("forceencoding") or accepts_coding(self.headers.get("Accept-Encoding"), coding):
            return coding
        return None

    def serve_encoded(self, res, faults, head):
        """realgzip=1: the whole representation gzipped, as a 200 whatever the Range said."""
        coding = self.real_coding(faults)
        if faults.flag("gzipzeros"):  # a decompression bomb: the size's worth of zeros, gzipped hard
            body = ENCODED.get((res.identity, coding, "zeros"), lambda: gzip.compress(bytes(res.size), compresslevel=9, mtime=0))
        else:
            body = ENCODED.get((res.identity, coding),
                               lambda: gzip.compress(bytes(res.read(0, res.size)), compresslevel=1, mtime=0))
        self.send_response(200)
        if faults.has("contentlength"):
            self.send_header("Content-Length", faults.text("contentlength"))
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
        self.validator_headers(res)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Encoding", coding)
        self.send_header("Vary", "Accept-Encoding")
        self.disposition_header(faults)
        self.filler_headers(faults)
        self.unknown_header(faults)
        self.end_headers()
        sent = 0
        if not head:
            try:
                for position in range(0, len(body), WRITE_CHUNK):
                    self.wfile.write(body[position:position + WRITE_CHUNK])
                    sent += len(body[position:position + WRITE_CHUNK])
            except OSError:
                self.close_connection = True
        self.record(200, sent)

    def filler_headers(self, faults):
        """bigheader=N: one N-byte header value; manyheaders=N (+ headerwidth=W): N header lines."""
        if faults.has("bigheader"):
            self.send_header("X-Big", "a" * faults.number("bigheader"))
        if faults.has("manyheaders"):
            value = "v" * faults.number("headerwidth", 8)
            for index in range(faults.number("manyheaders")):
                self.send_header(f"X-Filler-{index}", value)

    def digest_headers(self, res, faults, status):
        """reprdigest=, digest= (every content answer) and contentmd5= (200 only): good|bad."""
        def encoded(algorithm, mode):
            if mode == "good":
                raw = res.digest(algorithm)
            else:
                raw = hashlib.new(algorithm, b"not the content " + res.etag.encode()).digest()
            return base64.b64encode(raw).decode()
        if faults.has("reprdigest"):
            self.send_header("Repr-Digest", f"sha-256=:{encoded('sha256', faults.text('reprdigest'))}:")
        if faults.has("digest"):
            self.send_header("Digest", f"SHA-256={encoded('sha256', faults.text('digest'))}")
        if faults.has("contentmd5") and status == 200:
            self.send_header("Content-MD5", encoded("md5", faults.text("contentmd5")))

    def content_digest_header(self, res, faults, plan):
        """contentdigest=good|bad|unknown: Content-Digest of this 206's content (honest even when
        corruptevery= flips a byte of it)."""
        if not faults.has("contentdigest") or plan.status != 206:
            return
        mode = faults.text("contentdigest")
        if mode == "unknown":
            self.send_header("Content-Digest", "xxh-test=:AAAA:")
            return
        start, end = plan.body_start, plan.body_start + plan.length + plan.overlong
        if mode == "sent" and faults.has("zerosover") and plan.length > faults.number("zerosover"):
            # The digest of the zeros it really sends: a mirror vouching for its own lie.
            h = hashlib.sha256()
            for position in range(start, end, PIECE):
                h.update(bytes(min(PIECE, end - position)))
            raw = h.digest()
        elif mode == "bad":
            raw = hashlib.sha256(b"not the content " + bytes(res.read(start, min(end, start + 64)))).digest()
        else:
            def compute():
                h = hashlib.sha256()
                for position in range(start, end, PIECE):
                    h.update(res.read(position, min(position + PIECE, end)))
                return h.digest()
            raw = CONTENT_DIGESTS.get((res.identity, start, end), compute)
        encoded = base64.b64encode(raw).decode()
        self.send_header("Content-Digest", f"sha-256=:{encoded}:")

    def plan_corrupt(self, plan, faults):
        """corruptevery=K (+ corruptcount=N): flip the first body byte of every K-th 206."""
        if not faults.has("corruptevery") or plan.length + plan.overlong == 0:
            return
        if faults.has("corruptoffset") and faults.number("corruptoffset") != plan.body_start:
            return
        if STATE.add(self.key, "ranges", 1) % faults.number("corruptevery") == 0:
            plan.corrupt = STATE.take(self.key, "corrupt", faults.number("corruptcount", FOREVER))

    def unknown_header(self, faults):
        if faults.unknown:
            self.send_header("X-Fault-Unknown", ", ".join(faults.unknown))

    # -- body faults ----------------------------------------------------------------------------

    def plan_cut(self, plan, faults):
        """cut=N (+ cutmode=fin|rst, cutcount=K): break off responses longer than N."""
        if not faults.has("cut"):
            return
        after = faults.number("cut")
        if plan.length + plan.overlong <= after:
            return  # nothing to cut; does not use up cutcount
        if STATE.take(self.key, "cut", faults.number("cutcount", FOREVER)):
            plan.cut_after, plan.rst = after, faults.text("cutmode") == "rst"

    def plan_rate(self, plan, faults, range_start):
        """trickle=BPS (+ trickleoffset=X, tricklecount=K) and rate=BPS."""
        rates = []
        if faults.has("rate"):
            rates.append(faults.number("rate"))
        if faults.has("trickle") and self.on_every(faults, "trickleevery"):
            offset = faults.number("trickleoffset", None)
            if offset is None or offset == range_start:
                if STATE.take(self.key, "trickle", faults.number("tricklecount", FOREVER)):
                    rates.append(faults.number("trickle"))
        plan.rate = min(rates) if rates else None

    def plan_stall(self, plan, faults, range_start):
        """stall=S (+ stalloffset=X, stallcount=K): pause S seconds partway through the body."""
        if not faults.has("stall") or not self.on_every(faults, "stallevery"):
            return
        seconds = faults.number("stall")
        offset = faults.number("stalloffset", None)
        if offset is not None and offset != range_start:
            return
        if STATE.take(self.key, "stall", faults.number("stallcount", FOREVER)):
            plan.stall_after = faults.number("stallafter", min(STALL_AFTER, (plan.length + plan.overlong) // 2))
            plan.stall_seconds = seconds

    def on_every(self, faults, name):
        """trickleevery=K / stallevery=K: whether this connection is one of every K-th."""
        every = faults.number(name, None)
        return every is None or self.connection_id % every == 0

    def send_body(self, res, plan, faults):
        """Writes the body as planned; returns the body bytes sent."""
        total = plan.length + plan.overlong
        sent, position = 0, plan.body_start
        began = time.monotonic()
        counts_served = faults.has("changeafter") or faults.has("changeevery")
        zeros = faults.has("zerosover") and plan.length > faults.number("zerosover")
        try:
            while sent < total:
                step = min(WRITE_CHUNK, total - sent)
                if plan.rate:
                    step = min(step, max(1, plan.rate // 20))
                if plan.cut_after is not None:
                    if sent >= plan.cut_after:
                        break
                    step = min(step, plan.cut_after - sent)
                if plan.stall_after is not None:
                    if sent >= plan.stall_after:
                        time.sleep(plan.stall_seconds)
                        plan.stall_after = None
                        began += plan.stall_seconds  # the rate resumes after the pause
                    else:
                        step = min(step, plan.stall_after - sent)
                if plan.rate:  # pace before writing, so the last write is not followed by a sleep
                    ahead = began + sent / plan.rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
                data = res.read(position, position + step)
                if zeros:
                    data = bytes(len(data))
                if plan.corrupt and sent == 0 and len(data) > 0:
                    data = bytes([data[0] ^ 0xFF]) + bytes(data[1:])
                if plan.chunked:
                    self.wfile.write(b"%x\r\n" % len(data) + bytes(data) + b"\r\n")
                else:
                    self.wfile.write(data)
                sent += len(data)
                position += len(data)
                STATE.wrote(len(data))
                if counts_served:
                    STATE.add(self.key, "served", len(data))
            if plan.cut_after is not None and sent < total:
                self.cut(plan.rst)
                return sent
            if plan.chunked:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client went away (reset, broken pipe, timeout)
            self.close_connection = True
        return sent

    def cut(self, rst):
        """Ends the connection mid-body: FIN (shutdown) or RST (SO_LINGER 0, close)."""
        self.close_connection = True
        try:
            if rst:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.rfile.close()       # drop the makefile reference so close() is real
                self.connection.close()  # -> RST
            else:
                self.connection.shutdown(socket.SHUT_RDWR)  # -> FIN; the server closes it after
        except OSError:
            pass

    # -- plain answers and bookkeeping ----------------------------------------------------------

    def simple(self, status, body=b"", headers=(), record=True):
        if status in (204, 304) or 100 <= status < 200:
            body = b""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if status not in (204, 304) and not 100 <= status < 200:
            self.send_header("Content-Length", str(len(body)))
        if record:
            self.unknown_header(self.faults)
        self.end_headers()
        sent = 0
        if self.command != "HEAD" and body:
            self.wfile.write(body)
            sent = len(body)
        if record:
            self.record(status, sent)

    def record(self, status, sent):
        url = urlsplit(self.path)
        STATE.record({
            "method": self.command, "path": unquote(url.path), "query": url.query,
            "range": self.headers.get("Range"), "if_range": self.headers.get("If-Range"),
            "status": status, "bytes": sent, "etag": self.response_etag,
            "host": self.headers.get("Host"), "auth": "Authorization" in self.headers, "cookie": "Cookie" in self.headers,
            "connection": self.connection_id,
            "accept_encoding": self.headers.get("Accept-Encoding"),
            "accept_encoding_lines": len(self.headers.get_all("Accept-Encoding") or []),
            "headers": request_headers(self.headers),
        })

    def do_CONNECT(self):
        """A proxy's tunnel, to a port on 127.0.0.1 only: logged (with its headers) once open."""
        self.response_etag = None
        self.faults, self.key = Faults(""), self.path
        host, _, port = self.path.rpartition(":")
        if host not in ("127.0.0.1", "localhost") or not port.isdigit():
            self.simple(403, b"CONNECT goes to 127.0.0.1 only\n")
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
        except OSError:
            self.simple(502, b"cannot connect\n")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        self.record(200, 0)
        self.close_connection = True

        def pump(source, target):
            try:
                while data := source.recv(65536):
                    target.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    target.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        upstream.settimeout(None)
        self.connection.settimeout(None)
        back = threading.Thread(target=pump, args=(upstream, self.connection), daemon=True)
        back.start()
        pump(self.connection, upstream)
        back.join()
        upstream.close()


# ---------------------------------------------------------------------------------------------


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    root = None

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError, socket.timeout)):
            return
        log_error(f"error on a connection from {client_address}:\n{traceback.format_exc()}")


def main():
    parser = argparse.ArgumentParser(description="fault-injecting HTTP/1.1 server for rangefetch's tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--root", default=None, help="directory served under /file/")
    args = parser.parse_args()

    server = Server(("127.0.0.1", args.port), Handler)
    server.root = args.root

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # A parent that spawned us from a thread with signals blocked (Dispatch does) passes that
    # mask on: unblock, so SIGTERM stops us at once.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

    print(f"PORT {server.server_port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except SystemExit:
        pass
    finally:
        server.server_close()
        # Connection threads are daemons that may sit in sleep() (stall=) or a blocked write:
        # leave without waiting for them or for interpreter teardown.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(0)


if __name__ == "__main__":
    main()
