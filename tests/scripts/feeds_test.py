# SPDX-License-Identifier: Apache-2.0
"""What the unit tests of scripts/supplylib/feeds/ (test_feeds_*.py) share: the package on
the path, a scratch directory, and a stand-in mirror on 127.0.0.1 that serves files from
memory (Range honoured), answers Cloud Storage's objects.list over the files of a bucket
(https://cloud.google.com/storage/docs/json_api/v1/objects/list: prefix, delimiter,
pageToken; a page is PAGE_SIZE entries here, so that every listing pages), logs each
request, and misbehaves on demand (FAULTS: a status, a body cut short of its
Content-Length, a redirect, Range ignored, a fixed body in place of the answer). The mirror
speaks https (a CA of the test's own, made by tests/tools/kube-certs and trusted through
SSL_CERT_FILE, which OpenSSL's default paths read), as the feeds demand of an index no
signature vouches for; Mirror(tls=False) is plain http, for a signed Debian archive."""
import atexit
import base64
import hashlib
import json
import lzma
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.realpath(os.path.join(HERE, "..", "..", "scripts"))
DATA = os.path.join(HERE, "data", "feeds")
sys.path.insert(0, SCRIPTS)

from supplylib import feeds  # noqa: E402
from supplylib.feeds import FeedError  # noqa: E402

PAGE_SIZE = 2
KUBE_CERTS = os.path.join(HERE, "..", "tools", "kube-certs")
_CERTS = []


def certs():
    """The directory of a CA (sa/ca.crt) and the mirror's certificate for 127.0.0.1
    (api.pem, api.key), made once for the process."""
    if not _CERTS:
        d = tempfile.mkdtemp(prefix="test-feeds-certs-")
        atexit.register(shutil.rmtree, d, True)
        subprocess.run([KUBE_CERTS, d, "127.0.0.1"], check=True)
        _CERTS.append(d)
    return _CERTS[0]


def sample(name):
    with open(os.path.join(DATA, name)) as f:
        return f.read()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        srv.log.append(self.path)
        fault = srv.faults.get(path)
        if fault and fault[0] == "status":
            return self.answer(fault[1], b"no\n")
        if fault and fault[0] == "body":
            return self.answer(200, fault[1])
        if fault and fault[0] == "redirect":
            self.send_response(302)
            self.send_header("Location", fault[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path.startswith("/storage/v1/b/"):
            return self.listing(path, urllib.parse.parse_qs(url.query))
        body = srv.files.get(path)
        if body is None:
            return self.answer(404, b"not found\n")
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=0-") and not (fault and fault[0] == "ignore_range"):
            end = int(rng[len("bytes=0-"):]) + 1
            return self.answer(206, body[:end])
        if fault and fault[0] == "truncate":
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:fault[1]])
            self.wfile.flush()
            self.close_connection = True
            return
        self.answer(200, body)

    def answer(self, code, body, ctype="application/octet-stream"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def listing(self, path, q):
        """objects.list: the names under PREFIX; with delimiter "/", those with a further
        "/" folded into prefixes; PAGE_SIZE entries a page, the rest behind a token."""
        parts = path.split("/")
        if len(parts) != 6 or parts[5] != "o":
            return self.answer(404, b"{}")
        bucket = parts[4]
        prefix = q.get("prefix", [""])[0]
        delim = q.get("delimiter", [None])[0]
        start = int(q.get("pageToken", ["0"])[0])
        entries = set()
        for name in sorted(self.server.files):
            if not name.startswith("/%s/%s" % (bucket, prefix)):
                continue
            rest = name[len(bucket) + 2 + len(prefix):]
            if delim and delim in rest:
                entries.add(("p", prefix + rest.split(delim)[0] + delim))
            else:
                entries.add(("i", name[len(bucket) + 2:]))
        entries = sorted(entries, key=lambda e: e[1])
        page = entries[start:start + PAGE_SIZE]
        out = {"kind": "storage#objects"}
        if any(k == "p" for k, _ in page):
            out["prefixes"] = [v for k, v in page if k == "p"]
        items = []
        for k, v in page:
            if k == "i":
                body = self.server.files["/%s/%s" % (bucket, v)]
                items.append({"kind": "storage#object", "name": v, "bucket": bucket,
                              "size": str(len(body)), "contentType": "application/octet-stream",
                              "md5Hash": base64.b64encode(
                                  hashlib.md5(body).digest()).decode()})
        if items:
            out["items"] = items
        if start + PAGE_SIZE < len(entries):
            out["nextPageToken"] = str(start + PAGE_SIZE)
        self.answer(200, json.dumps(out).encode(), "application/json")


class Mirror:
    def __init__(self, tls=True):
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.srv.daemon_threads = True
        self.srv.files, self.srv.faults, self.srv.log = {}, {}, []
        self.files, self.faults, self.log = self.srv.files, self.srv.faults, self.srv.log
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(os.path.join(certs(), "api.pem"),
                                os.path.join(certs(), "api.key"))
            self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.url = "%s://127.0.0.1:%d" % ("https" if tls else "http",
                                          self.srv.server_address[1])
        self.thread = threading.Thread(target=self.srv.serve_forever, args=(0.02,),
                                       daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test-feeds-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        old = os.environ.get("SSL_CERT_FILE")
        os.environ["SSL_CERT_FILE"] = os.path.join(certs(), "sa", "ca.crt")
        self.addCleanup(lambda: os.environ.pop("SSL_CERT_FILE") if old is None else
                        os.environ.__setitem__("SSL_CERT_FILE", old))
        self.mirror = Mirror()
        self.addCleanup(self.mirror.close)
        self.http = feeds.Http(timeout=10, retries=0, backoff=0)

    def refused(self, fn, *args, **kw):
        with self.assertRaises(FeedError) as cm:
            fn(*args, **kw)
        msg = str(cm.exception)
        self.assertNotIn("\n", msg)
        return msg

    def debian_archive(self, suite, component, arch, packages_text, release_head, at="/"):
        """SUITE's Release and COMPONENT/binary-ARCH/Packages.xz, served under AT."""
        data = lzma.compress(packages_text.encode(), format=lzma.FORMAT_XZ)
        rel = "%s/binary-%s/Packages.xz" % (component, arch)
        base = "%sdists/%s/" % (at, suite)
        self.mirror.files[base + rel] = data
        self.mirror.files[base + "Release"] = (
            release_head + "SHA256:\n %s %16d %s\n %s %16d %s/binary-%s/Release\n" % (
                hashlib.sha256(data).hexdigest(), len(data), rel,
                hashlib.sha256(b"").hexdigest(), 0, component, arch)).encode()
        return base + rel
