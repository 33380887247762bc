#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A static file server for tests: 127.0.0.1 only, Range support, a request log, faults.

  httpd.py --dir DIR --port-file F --log F [--faults F] [--lifetime SEC]
           [--tls-cert PEM --tls-key PEM]

Every request appends one JSON line to --log: time, method, path, range, status, bytes sent.
--faults names a JSON file, re-read on each request, holding a list of rules:
  {"path": "/x", "action": "status", "code": 503, "retry_after": 1, "times": 2}
  {"path": "/x", "action": "truncate", "at": 1000, "times": 1}   (promise all, send `at`)
  {"path": "/x", "action": "short_length", "at": 1000}           (say `at` bytes, send them)
  {"path": "/x", "action": "reset", "at": 1000}                  (send `at`, then a TCP RST)
  {"path": "/x", "action": "ignore_range"}                         (answer 200, whole file)
  {"path": "/x", "action": "stall", "seconds": 30, "times": 1}     (send headers, then wait;
                                                                    the path is appended to
                                                                    LOG.stalls as it begins)
  {"path": "/x", "action": "slow", "rate": 100000}                 (at most `rate` bytes/s,
                                                                    in chunks of at most
                                                                    `rate` bytes)
  {"path": "/x", "action": "redirect", "location": "URL", "code": 302}
  {"path": "/x", "action": "huge", "bytes": 20000000}              (that many bytes of "x")
  {"path": "/x", "headers": {"x-goog-hash": "md5=..."}}            (headers added, or put in
                                                                    place of --goog-hash's)
A rule without "times" applies forever. --goog-hash: each file's response carries
Cloud Storage's x-goog-hash header, md5=BASE64 of the whole object (whatever the range).
GET /.settle answers 204 (not logged) once every request that began before it has written
its log line, but for one a stall or a trickle holds while it holds it (its client has not
had the whole answer); 503, naming the requests still open, if that takes 60 s.
The server exits after --lifetime seconds, or
when the process that started it is gone. With --tls-cert it speaks HTTPS only.

For fleet simulations: --rate caps the bytes/s of all responses together (one shared
token bucket), --fail-rate P answers that fraction of requests, at random (--seed), with
a 503 or, for files, a TCP reset halfway; each log line carries "active", the requests in
flight when it started.
"""
import argparse
import base64
import hashlib
import json
import os
import random
import re
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import serverutil

RANGE_RE = re.compile(r"^bytes=(\d+)-(\d*)$")


class Bucket:
    """Bytes per second for every response together."""

    def __init__(self, rate):
        self.rate = rate
        self.lock = threading.Lock()
        self.next_free = time.monotonic()

    def take(self, n):
        if not self.rate:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_free)
            self.next_free = start + n / self.rate
        delay = start + n / self.rate - now
        if delay > 0:
            time.sleep(delay)


class State:
    def __init__(self, args):
        self.dir = os.path.realpath(args.dir)
        self.log_path = args.log
        self.faults_path = args.faults
        self.used = {}
        self.lock = threading.Lock()
        self.bucket = Bucket(args.rate)
        self.fail_rate = args.fail_rate
        self.goog_hash = args.goog_hash
        self.random = random.Random(args.seed)
        self.active = 0
        self.serial = 0
        self.open = {}  # serial: [path, held], each request until its line is written

    def random_fault(self):
        """None, or a fault drawn at --fail-rate: half 503s, half resets."""
        with self.lock:
            if self.random.random() >= self.fail_rate:
                return None
            if self.random.random() < 0.5:
                return {"action": "status", "code": 503}
            return {"action": "reset", "at_fraction": 0.5}

    def fault_for(self, path):
        if not self.faults_path or not os.path.exists(self.faults_path):
            return None
        with open(self.faults_path) as f:
            rules = json.load(f)
        with self.lock:
            for i, rule in enumerate(rules):
                if rule.get("path") != path:
                    continue
                key = (i, json.dumps(rule, sort_keys=True))
                times = rule.get("times")
                if times is not None and self.used.get(key, 0) >= times:
                    continue
                self.used[key] = self.used.get(key, 0) + 1
                return rule
        return None

    def log(self, entry):
        entry["t"] = round(time.time(), 3)
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm and
        # the client's delayed ACK add 40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send_status(self, code, entry, extra=None):
        body = b"%d\n" % code
        # Logged before the answer goes out: a test that reads the log once the client
        # has its answer finds the line (a file's line, with the bytes sent, comes after).
        entry.update(status=code, bytes=0)
        self.state.log(entry)
        self.send_response(code)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        if self.path == "/.settle":
            self.settle()
            return
        with self.state.lock:
            self.state.active += 1
            active = self.state.active
            self.state.serial += 1
            self.serial = self.state.serial
            self.state.open[self.serial] = [self.path, False]
        try:
            self.serve(active)
        finally:
            with self.state.lock:
                self.state.active -= 1
                del self.state.open[self.serial]

    def hold(self, held):
        """A fault holds the answer back (True), or lets it go on (False): see settle."""
        with self.state.lock:
            self.state.open[self.serial][1] = held

    def settle(self):
        """/.settle: answered 204 (not logged) once every request that began before it has
        written its line, so that the log holds every answer a client has had. A file's line
        is written after its bytes: its client can have them and exit first, and under load
        the line comes later still (lib.sh, http_settle). A request that a stall or a
        trickle holds is not waited for while held: its client has not had the whole
        answer, and the hold can outlast the test. 503 after 60 s, naming what is open."""
        with self.state.lock:
            before = set(self.state.open)
        deadline = time.monotonic() + 60
        while True:
            with self.state.lock:
                left = [v[0] for k, v in self.state.open.items() if k in before and not v[1]]
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.005)
        body = ("still answering: %s\n" % " ".join(left)).encode() if left else b""
        self.send_response(503 if left else 204)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def serve(self, active):
        path = self.path.split("?", 1)[0]
        rng = self.headers.get("Range")
        entry = {"method": self.command, "path": path, "range": rng, "active": active}
        fault = self.state.fault_for(path) or self.state.random_fault() or {}
        action = fault.get("action")
        if action == "status":
            extra = {}
            if "retry_after" in fault:
                extra["Retry-After"] = str(fault["retry_after"])
            return self.send_status(fault.get("code", 503), entry, extra)
        if action == "redirect":
            return self.send_status(fault.get("code", 302), entry,
                                    {"Location": fault["location"]})
        if action == "huge":
            return self.send_huge(fault.get("bytes", 20 << 20), entry)

        full = os.path.realpath(os.path.join(self.state.dir, path.lstrip("/")))
        if not full.startswith(self.state.dir + os.sep) or not os.path.isfile(full):
            return self.send_status(404, entry)
        size = os.path.getsize(full)
        start, end, code = 0, size - 1, 200
        m = RANGE_RE.match(rng) if rng else None
        if m and action != "ignore_range":
            start = int(m.group(1))
            end = int(m.group(2)) if m.group(2) else size - 1
            if start >= size or end < start:
                return self.send_status(416, entry, {"Content-Range": "bytes */%d" % size})
            end = min(end, size - 1)
            code = 206
        length = end - start + 1
        if "at_fraction" in fault:
            fault = dict(fault, at=int(length * fault["at_fraction"]))
        self.send_response(code)
        if action == "short_length":
            length = min(length, fault.get("at", length))
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        if code == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        headers = {}
        if self.state.goog_hash:
            with open(full, "rb") as f:
                headers["x-goog-hash"] = "md5=" + base64.b64encode(
                    hashlib.md5(f.read()).digest()).decode()
        headers.update(fault.get("headers", {}))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        sent = 0
        if action == "stall":
            self.wfile.flush()
            # Said as it begins (LOG.stalls, a path a line): a test can act while it lasts.
            with self.state.lock, open(self.state.log_path + ".stalls", "a") as f:
                f.write(path + "\n")
            self.hold(True)
            time.sleep(fault.get("seconds", 30))
            self.hold(False)
        if self.command == "GET":
            limit = fault.get("at", length) if action in ("truncate", "reset") else length
            with open(full, "rb") as f:
                if not fault and not self.state.bucket.rate and \
                        not isinstance(self.connection, ssl.SSLSocket):
                    # Nothing to shape: the kernel copies (the benchmark's server stays
                    # off the CPU the installer is measured on).
                    self.wfile.flush()
                    sent = self.send_file(f, start, limit)
                f.seek(start + sent)
                # A trickle goes out in chunks of at most `rate` bytes, a second or less
                # apart: a client that left is noticed at the next write, and logged.
                most = min(65536, int(fault.get("rate", 100000))) if action == "slow" \
                    else 65536
                while sent < limit:
                    chunk = f.read(min(max(most, 1), limit - sent))
                    if not chunk:
                        break
                    self.state.bucket.take(len(chunk))
                    try:
                        self.wfile.write(chunk)
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True  # the client left: no next request
                        break
                    sent += len(chunk)
                    if action == "slow":
                        # Held between chunks only: after the last, the client has it all.
                        self.hold(sent < limit)
                        time.sleep(len(chunk) / fault.get("rate", 100000))
                        self.hold(False)
            if action == "truncate":
                self.close_connection = True
            if action == "reset":
                # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
                self.wfile.flush()
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
        entry.update(status=code, bytes=sent)
        self.state.log(entry)

    def send_file(self, f, start, n):
        try:
            return self.connection.sendfile(f, start, n)
        except (BrokenPipeError, ConnectionResetError):
            return f.tell() - start

    def send_huge(self, n, entry):
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        sent = 0
        block = b"x" * 65536
        try:
            while sent < n and self.command == "GET":
                chunk = block[:min(len(block), n - sent)]
                self.wfile.write(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        entry.update(status=200, bytes=sent)
        self.state.log(entry)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--faults")
    ap.add_argument("--lifetime", type=float, default=600)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--rate", type=float, default=0, help="bytes/s for all responses together")
    ap.add_argument("--fail-rate", type=float, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--goog-hash", action="store_true",
                    help="x-goog-hash: md5=... on file responses, as Cloud Storage sends")
    args = ap.parse_args()

    Handler.state = State(args)
    ThreadingHTTPServer.request_queue_size = 256  # a fleet connects at once
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    serverutil.serve(server, args.port_file, args.lifetime)


if __name__ == "__main__":
    sys.exit(main())
