#!/usr/bin/python3
"""A fault-injecting HTTP/2 server (TLS, ALPN h2) for rangefetch's tests: Debian's python3-h2 on asyncio.

Start
    /usr/bin/python3 Tests/Support/h2_fault_server.py --cert CERT.pem --key KEY.pem [--port 0]
  Binds 127.0.0.1 (port 0 = any free port), prints exactly one line "PORT <n>" on stdout once
  listening, then serves until SIGTERM/SIGINT. HTTP/2 only (ALPN h2; a client that does not
  offer h2 is dropped). One process, one thread: every stream shares one core, so a server busy
  with one stream is slower for all the others, as a CPU-bound server is.

Paths
  /data/<SIZE>[/<name>]   SIZE bytes of deterministic content (a pseudo-random pattern of a prime
                          length, so a byte at the wrong offset shows). Ranges (bytes=a-b, a-, -n)
                          answer 206 with Content-Range; ETag "<SIZE>-h2", Accept-Ranges: bytes.
                          HEAD answers the head alone.
  /_sha256/<SIZE>         the content's SHA-256, hex.
  /_stats                 JSON {"requests", "body_bytes" (DATA payload bytes sent, heads of
                          1-byte frames included), "faults" (faults fired), "log": [{"range",
                          "status", "bytes", "connection", "stream", "fault"}]}; its own request is
                          not counted.
  /_reset                 zeroes the counters and the fault counts.

Query parameters of /data (each response decides by its own URL)
  slowstart=BYTES   the first BYTES of every response body go out as 1-byte DATA frames, a PING
                    after every `ping` of them (default 64), with `burn` microseconds of busy CPU
                    per frame (default 1.0), the event loop yielding to other streams after each
                    PING; the rest in frames as large as the peer allows.
  bulkburn=MICROS   busy CPU per frame of the rest (default 0): a server CPU-bound throughout
                    (300 makes curl's one stream take about 1.5 s for 64 MiB, as the server of
                    issue 33 did: 1.8 s).
  fault=KIND        one of stall (stop sending the stream without closing it or the connection;
                    PINGs are still answered), goaway (GOAWAY naming this stream, then the
                    connection closes), rst (RST_STREAM INTERNAL_ERROR; the connection stays),
                    calm (GOAWAY ENHANCE_YOUR_CALM, then the connection closes), once a response
                    has sent `at` body bytes (default 1 MiB), to the first `times` responses of the
                    run that get there (default 1; /_reset starts a new run).
"""

import argparse
import asyncio
import hashlib
import json
import random
import signal
import ssl
import struct
import sys
import time
from urllib.parse import parse_qs, urlsplit

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

PATTERN_LENGTH = 1_000_003
_pattern = random.Random(20261127).randbytes(PATTERN_LENGTH)
_contents = {}


def content(size):
    """The deterministic bytes of /data/SIZE (cached)."""
    body = _contents.get(size)
    if body is None:
        repeats = size // PATTERN_LENGTH + 1
        body = memoryview((_pattern * repeats)[:size])
        _contents.clear()
        _contents[size] = body
    return body


class Stats:
    def __init__(self):
        self.reset()

    def reset(self):
        self.requests = 0
        self.body_bytes = 0
        self.faults = 0
        self.fired = {}
        self.log = []


STATS = Stats()


def parse_range(header, size):
    """(start, end exclusive) or None for the whole; 'bad' when unsatisfiable."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    spec = header[6:].strip()
    first, _, last = spec.partition("-")
    try:
        if first == "":
            n = int(last)
            if n <= 0:
                return "bad"
            return (max(0, size - n), size)
        start = int(first)
        end = int(last) + 1 if last else size
    except ValueError:
        return None
    if start >= size:
        return "bad"
    return (start, min(end, size))


def burn(microseconds):
    """Busy CPU for this long: the event loop (and every other stream) waits."""
    if microseconds <= 0:
        return
    deadline = time.perf_counter() + microseconds / 1e6
    while time.perf_counter() < deadline:
        pass


class Connection:
    counter = 0

    def __init__(self, reader, writer):
        Connection.counter += 1
        self.number = Connection.counter
        self.reader = reader
        self.writer = writer
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.window_changed = asyncio.Event()
        self.tasks = {}
        self.closed = False

    def flush(self):
        data = self.h2.data_to_send()
        if data and not self.closed and not self.writer.transport.is_closing():
            self.writer.write(data)

    async def drain(self):
        if self.closed or self.writer.transport.is_closing():
            raise ConnectionError("closed")
        await self.writer.drain()

    async def run(self):
        self.h2.initiate_connection()
        self.flush()
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError:
                    self.flush()
                    break
                for event in events:
                    self.handle(event)
                self.flush()
        except (ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            self.closed = True
            for task in self.tasks.values():
                task.cancel()
            self.window_changed.set()
            try:
                self.writer.close()
            except Exception:
                pass

    def handle(self, event):
        if isinstance(event, h2.events.RequestReceived):
            headers = dict(event.headers)
            self.tasks[event.stream_id] = asyncio.ensure_future(self.respond(event.stream_id, headers))
        elif isinstance(event, h2.events.WindowUpdated) or isinstance(event, h2.events.RemoteSettingsChanged):
            self.window_changed.set()
        elif isinstance(event, h2.events.StreamReset):
            task = self.tasks.pop(event.stream_id, None)
            if task:
                task.cancel()

    async def respond(self, sid, headers):
        try:
            await self.answer(sid, headers)
        except asyncio.CancelledError:
            pass
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            self.tasks.pop(sid, None)

    async def send_small(self, sid, status, body, content_type="text/plain"):
        self.h2.send_headers(sid, [(":status", str(status)), ("content-type", content_type),
                                   ("content-length", str(len(body)))], end_stream=not body)
        self.flush()
        pos = 0
        while pos < len(body):
            await self.wait_window(sid)
            n = min(self.h2.local_flow_control_window(sid), self.h2.max_outbound_frame_size, len(body) - pos)
            self.h2.send_data(sid, body[pos:pos + n], end_stream=pos + n == len(body))
            pos += n
            self.flush()
            await self.drain()

    async def answer(self, sid, headers):
        url = urlsplit(headers.get(":path", "/"))
        parts = [p for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if parts == ["_stats"]:
            body = json.dumps({"requests": STATS.requests, "body_bytes": STATS.body_bytes, "faults": STATS.faults,
                               "log": STATS.log}).encode()
            return await self.send_small(sid, 200, body, "application/json")
        if parts == ["_reset"]:
            STATS.reset()
            return await self.send_small(sid, 200, b"ok\n")
        if len(parts) == 2 and parts[0] == "_sha256":
            return await self.send_small(sid, 200, hashlib.sha256(content(int(parts[1]))).hexdigest().encode() + b"\n")
        if len(parts) < 2 or parts[0] != "data" or not parts[1].isdigit():
            return await self.send_small(sid, 404, b"not found\n")
        size = int(parts[1])
        wanted = parse_range(headers.get("range"), size)
        if wanted == "bad":
            self.h2.send_headers(sid, [(":status", "416"), ("content-range", f"bytes */{size}"),
                                       ("content-length", "0")], end_stream=True)
            self.flush()
            return
        entry = {"range": headers.get("range"), "connection": self.number, "stream": sid, "bytes": 0, "fault": None}
        STATS.requests += 1
        STATS.log.append(entry)
        start, end = wanted if wanted else (0, size)
        response = [(":status", "206" if wanted else "200"), ("content-length", str(end - start)),
                    ("accept-ranges", "bytes"), ("etag", f'"{size}-h2"'),
                    ("last-modified", "Fri, 27 Nov 2026 12:00:00 GMT"), ("content-type", "application/octet-stream")]
        if wanted:
            response.append(("content-range", f"bytes {start}-{end - 1}/{size}"))
        entry["status"] = int(response[0][1])
        if headers.get(":method") == "HEAD":
            self.h2.send_headers(sid, response, end_stream=True)
            self.flush()
            return
        self.h2.send_headers(sid, response)
        self.flush()
        await self.send_body(sid, content(size), start, end, query, entry)

    async def wait_window(self, sid):
        while not self.closed and self.h2.local_flow_control_window(sid) <= 0:
            self.window_changed.clear()
            await self.window_changed.wait()
        if self.closed:
            raise ConnectionError("closed")

    def fault_due(self, query, sent):
        kind = query.get("fault")
        if not kind or sent < int(query.get("at", 1 << 20)):
            return None
        key = (kind, query.get("at"))
        if STATS.fired.get(key, 0) >= int(query.get("times", 1)):
            return None
        STATS.fired[key] = STATS.fired.get(key, 0) + 1
        STATS.faults += 1
        return kind

    async def fire(self, kind, sid):
        if kind == "stall":
            # Nothing more on this stream, ever; the connection stays and answers PINGs.
            await asyncio.Event().wait()
        elif kind == "rst":
            self.h2.reset_stream(sid, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
            self.flush()
        elif kind in ("goaway", "calm"):
            code = h2.errors.ErrorCodes.ENHANCE_YOUR_CALM if kind == "calm" else h2.errors.ErrorCodes.NO_ERROR
            self.h2.close_connection(error_code=code, last_stream_id=sid)
            self.flush()
            await self.drain()
            await asyncio.sleep(0.05)
            self.closed = True
            self.writer.close()

    async def send_body(self, sid, body, start, end, query, entry):
        pos = start
        head_end = start + min(int(query.get("slowstart", 0)), end - start)
        ping_every = max(1, int(query.get("ping", 64)))
        burn_us = float(query.get("burn", 1.0))
        bulk_burn_us = float(query.get("bulkburn", 0))
        fault_checked = "fault" in query
        header = struct.pack(">I", 1)[1:] + b"\x00\x00" + struct.pack(">I", sid)
        pings = 0
        while pos < end:
            if fault_checked:
                kind = self.fault_due(query, pos - start)
                if kind:
                    entry["fault"] = kind
                    await self.fire(kind, sid)
                    return
            await self.wait_window(sid)
            window = self.h2.local_flow_control_window(sid)
            if pos < head_end:
                # Raw 1-byte DATA frames (h2 frames each through Python too slowly to be the
                # point): the flow-control windows are charged by hand.
                count = min(ping_every, head_end - pos, window)
                frames = bytearray((header + b"\x00") * count)
                frames[9::10] = body[pos:pos + count]
                pings += 1
                frames += b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + struct.pack(">Q", pings)
                self.h2.outbound_flow_control_window -= count
                self.h2._get_stream_by_id(sid).outbound_flow_control_window -= count
                burn(burn_us * count)
                self.flush()
                self.writer.write(bytes(frames))
                pos += count
                entry["bytes"] += count
                STATS.body_bytes += count
                await self.drain()
                await asyncio.sleep(0)
                continue
            frame = self.h2.max_outbound_frame_size
            limit = min(window, end - pos, 16 * frame)
            if fault_checked and pos - start < int(query.get("at", 1 << 20)):
                limit = min(limit, int(query.get("at", 1 << 20)) - (pos - start))
            sent = 0
            while sent < limit:
                n = min(frame, limit - sent)
                burn(bulk_burn_us)
                self.h2.send_data(sid, body[pos + sent:pos + sent + n].tobytes(), end_stream=(pos + sent + n == end))
                sent += n
            pos += sent
            entry["bytes"] += sent
            STATS.body_bytes += sent
            self.flush()
            await self.drain()
            # Let the connection's reader run between chunks, as a real server's event loop does:
            # drain() does not yield while the socket takes everything, so without this a
            # stream's whole range went out before a RST_STREAM for it was even read (and the
            # other streams of the process waited for it).
            await asyncio.sleep(0)
        if pos == start == end:
            self.h2.send_data(sid, b"", end_stream=True)
            self.flush()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["h2"])

    async def serve(reader, writer):
        ssl_object = writer.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
            writer.close()
            return
        await Connection(reader, writer).run()

    server = await asyncio.start_server(serve, "127.0.0.1", args.port, ssl=context, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    sys.exit(0)
