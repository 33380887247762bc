#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A forward proxy for tests: 127.0.0.1 only, HTTP (absolute-URI requests) and CONNECT.

  proxy.py --port-file F --log F --map NAME=PORT [--map ...] [--lifetime SEC]

Host names given with --map are sent to 127.0.0.1:PORT whatever port the client named,
so a test can use names no resolver knows (a client that reaches them went through the
proxy). Every request appends a JSON line to --log: method, target. Other hosts get 502.
The proxy exits after --lifetime seconds, or when the process that started it is gone.
"""
import argparse
import json
import select
import socket
import sys
import threading
from socketserver import StreamRequestHandler, ThreadingTCPServer

import serverutil


class Handler(StreamRequestHandler):
    mapping = {}
    log_path = None
    lock = threading.Lock()

    def log(self, method, target):
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps({"method": method, "target": target}) + "\n")

    def upstream(self, host):
        port = self.mapping.get(host.split(":")[0].lower())
        if port is None:
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return None
        return socket.create_connection(("127.0.0.1", port))

    def handle(self):
        line = self.rfile.readline(65536).decode("latin-1")
        if not line:
            return
        method, target, _ = line.split(" ", 2)
        headers = []
        while True:
            h = self.rfile.readline(65536)
            if h in (b"\r\n", b"\n", b""):
                break
            headers.append(h)
        self.log(method, target)
        if method == "CONNECT":
            up = self.upstream(target)
            if up is None:
                return
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self.wfile.flush()
            self.pipe(up)
            return
        # http://host[:port]/path -> GET /path to the mapped server, one request per connection.
        rest = target.split("://", 1)[1]
        host, _, path = rest.partition("/")
        up = self.upstream(host)
        if up is None:
            return
        req = "%s /%s HTTP/1.1\r\n" % (method, path)
        kept = [h for h in headers if not h.lower().startswith((b"proxy-", b"connection"))]
        up.sendall(req.encode("latin-1") + b"".join(kept) + b"Connection: close\r\n\r\n")
        self.pipe(up)

    def pipe(self, up):
        client = self.connection
        socks = [client, up]
        try:
            while True:
                readable, _, _ = select.select(socks, [], [], 60)
                if not readable:
                    return
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    (up if s is client else client).sendall(data)
        except OSError:
            return
        finally:
            up.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--map", action="append", default=[])
    ap.add_argument("--lifetime", type=float, default=300)
    args = ap.parse_args()
    for m in args.map:
        name, port = m.split("=")
        Handler.mapping[name.lower()] = int(port)
    Handler.log_path = args.log
    ThreadingTCPServer.allow_reuse_address = True
    server = ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    serverutil.serve(server, args.port_file, args.lifetime)


if __name__ == "__main__":
    sys.exit(main())
