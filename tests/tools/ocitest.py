# SPDX-License-Identifier: Apache-2.0
"""What the registry tests' servers (oci-registry.py, oci-standin.py) share.

- a throwaway CA made with `openssl` (ca.pem), a server certificate for 127.0.0.1, 127.0.0.2
  and localhost, and a token-signing certificate issued by the same CA;
- the distribution token server (docs: distribution's docs/spec/auth/token.md, installed by
  Debian at /usr/share/doc/docker-registry/spec/auth/token.md.gz), its JWTs signed RS256 by
  `openssl dgst` with the signing certificate in the header's x5c;
- a "storage" server: the files of a directory over HTTPS, every request's headers logged;
- HTTPS servers on a host and a port the kernel picks, and a watch on the process that owns
  them (a pidfd: the servers go when the test that started them is gone).
"""
import base64
import json
import os
import secrets
import select
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# The names the server certificate carries: the registry on 127.0.0.1, a storage host
# another name for libcurl (127.0.0.2: a redirect there is to another host).
SERVER_NAMES = "IP:127.0.0.1,IP:127.0.0.2,DNS:localhost"


def run(*argv, stdin=None):
    """Runs a command (openssl), its output as bytes; its stderr in the exception."""
    p = subprocess.run(argv, input=stdin, capture_output=True)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), p.stderr.decode(errors="replace")))
    return p.stdout


def make_pki(d):
    """D/ca.pem and its key, D/server.{pem,key}, D/signing.{pem,key} (RSA, for RS256)."""
    ca, cakey = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    if os.path.exists(ca):
        return
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-days", "2", "-subj", "/CN=ndi oci test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout", cakey, "-out", ca)
    for name, alg, ext in (
            ("server", ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
             "subjectAltName=%s\nextendedKeyUsage=serverAuth\n" % SERVER_NAMES),
            ("signing", ["rsa:2048"], "keyUsage=critical,digitalSignature\n")):
        key, csr = os.path.join(d, name + ".key"), os.path.join(d, name + ".csr")
        extf = os.path.join(d, name + ".ext")
        run("openssl", "req", "-newkey", *alg, "-nodes", "-subj", "/CN=ndi oci test " + name,
            "-keyout", key, "-out", csr)
        with open(extf, "w") as f:
            f.write("basicConstraints=CA:FALSE\n" + ext)
        run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey,
            "-CAcreateserial", "-days", "2", "-extfile", extf,
            "-out", os.path.join(d, name + ".pem"))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_rs256(d, claims):
    """A compact JWS (RFC 7515) of CLAIMS, RS256 by D/signing.key, x5c the signing
    certificate: distribution's token.go (v2.8.2, registry/auth/token/token.go,
    VerifySigningKey and parseAndVerifyCertChain) takes the key from x5c[0] once that
    certificate verifies to auth.token.rootcertbundle (here ca.pem)."""
    der = run("openssl", "x509", "-in", os.path.join(d, "signing.pem"), "-outform", "DER")
    header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(der).decode()]}
    signing_input = (b64url(json.dumps(header).encode()) + "." +
                     b64url(json.dumps(claims).encode()))
    # RSASSA-PKCS1-v1_5 over SHA-256 of the signing input: RS256 (RFC 7518, 3.3).
    sig = run("openssl", "dgst", "-sha256", "-sign", os.path.join(d, "signing.key"),
              stdin=signing_input.encode())
    return signing_input + "." + b64url(sig)


def parse_scope(scope):
    """'repository:NAME:pull,push' -> (type, name, [actions]); the name may hold ':'
    (HOST:PORT/NAME), so the type is before the first ':' and the actions after the last
    (docs/spec/auth/scope.md)."""
    typ, _, rest = scope.partition(":")
    name, _, actions = rest.rpartition(":")
    return typ, name, [a for a in actions.split(",") if a]


def basic_credentials(headers):
    """(user, password) of an `Authorization: Basic` header, or None."""
    value = headers.get("Authorization", "")
    if not value.lower().startswith("basic "):
        return None
    try:
        user, _, password = base64.b64decode(value[6:].strip()).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return user, password


class Log:
    """A JSON line per event, appended under a lock; each line flushed as it is written."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def write(self, entry):
        entry["t"] = round(time.time(), 3)
        with self.lock, open(self.path, "a") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    """Quiet HTTP/1.1 handler with a helper for whole answers."""
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, code, body=b"", headers=None):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class TokenHandler(Handler):
    """GET /token?service=S&scope=...: a bearer token (distribution's token spec, token.md:
    "Requesting a Token" and "Token Response Fields"). The token server of mode token:
    Basic credentials equal to `users` are granted the actions they ask for; no credentials
    get a token granting nothing (as Docker Hub does for a private repository); wrong ones
    401. Each request is logged: path, service, scopes, user, result (never a password)."""
    conf = None  # {"dir", "service", "issuer", "users": {user: pass}, "log": Log}

    def do_GET(self):
        conf = self.conf
        url = urlsplit(self.path)
        q = parse_qs(url.query)
        creds = basic_credentials(self.headers)
        entry = {"method": "GET", "path": url.path, "service": q.get("service", [""])[0],
                 "scope": q.get("scope", []), "user": creds[0] if creds else None,
                 "authorization": self.headers.get("Authorization", "").split(" ")[0]}
        if url.path != "/token":
            entry["status"] = 404
            conf["log"].write(entry)
            return self.answer(404)
        if creds is not None and conf["users"].get(creds[0]) != creds[1]:
            entry["status"] = 401
            conf["log"].write(entry)
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}\n',
                               {"WWW-Authenticate": 'Basic realm="token"',
                                "Content-Type": "application/json"})
        access = []
        for scope in q.get("scope", []):
            for one in scope.split(" "):
                typ, name, actions = parse_scope(one)
                if creds is not None and typ and name:
                    access.append({"type": typ, "name": name, "actions": actions})
        now = int(time.time())
        # The claims token.go's ClaimSet names and Verify checks: iss against
        # auth.token.issuer, aud against auth.token.service, exp and nbf with 60 s leeway.
        claims = {"iss": conf["issuer"], "sub": creds[0] if creds else "",
                  "aud": entry["service"], "exp": now + 300, "nbf": now - 10, "iat": now,
                  "jti": secrets.token_hex(16), "access": access}
        token = jwt_rs256(conf["dir"], claims)
        body = json.dumps({"token": token, "access_token": token, "expires_in": 300,
                           "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                      time.gmtime(now))}).encode()
        entry.update(status=200, granted=access)
        conf["log"].write(entry)
        self.answer(200, body, {"Content-Type": "application/json"})


class StorageHandler(Handler):
    """A blob store's stand-in: GET/HEAD of the files under `root` (Range honoured), and
    every request's method, path and headers logged whole (the test looks for an
    Authorization header that followed a redirect)."""
    conf = None  # {"root", "log": Log}

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = urlsplit(self.path).path
        entry = {"method": self.command, "path": path, "headers": dict(self.headers.items())}
        root = os.path.realpath(self.conf["root"])
        full = os.path.realpath(os.path.join(root, path.lstrip("/")))
        if not full.startswith(root + os.sep) or not os.path.isfile(full):
            entry["status"] = 404
            self.conf["log"].write(entry)
            return self.answer(404)
        with open(full, "rb") as f:
            data = f.read()
        code, headers = 200, {"Content-Type": "application/octet-stream"}
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and "-" in rng and "," not in rng:
            first, _, last = rng[6:].partition("-")
            start = int(first or 0)
            end = min(int(last), len(data) - 1) if last else len(data) - 1
            if start < len(data):
                headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, len(data))
                data, code = data[start:end + 1], 206
        entry["status"] = code
        self.conf["log"].write(entry)
        self.answer(code, data, headers)


def https_server(handler, d, host="127.0.0.1", port=0):
    """A threading HTTPS server for HANDLER with D/server.pem, on HOST:PORT (0: the kernel
    picks), serving in a thread of its own; returns the server."""
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "server.pem"), os.path.join(d, "server.key"))
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port(host="127.0.0.1"):
    """A port on HOST nothing listens on now (for a server that must be told its port)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def owner_gone_fd(pid):
    """A pidfd of PID (readable once it exits), or None where pidfd_open is missing."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def wait_owner(pid, deadline, stop_event):
    """Returns when PID is gone, DEADLINE (monotonic) passes or STOP_EVENT is set."""
    fd = owner_gone_fd(pid) if pid else None
    try:
        while not stop_event.is_set() and time.monotonic() < deadline:
            if fd is not None:
                if select.select([fd], [], [], 0.5)[0]:
                    return
            else:
                if pid:
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        return
                stop_event.wait(0.5)
    finally:
        if fd is not None:
            os.close(fd)
