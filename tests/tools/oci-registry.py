#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real OCI registry for tests: Debian's docker-registry (CNCF distribution 2.8) on
127.0.0.1 with TLS from a throwaway CA, anonymous, with htpasswd or behind a token server.

  oci-registry.py start --dir D --mode anonymous|htpasswd|token [--storage-redirect]
                        [--owner PID] [--lifetime SEC] [--timeout SEC]
  oci-registry.py stop --dir D

`start` returns once the registry answers /v2/ (within --timeout, 180 s), having written
D/env, shell assignments a test sources:
  OCI_HOST=127.0.0.1:PORT  OCI_CA=D/ca.pem  OCI_CERT_DIR=D/certs (ca.crt, for skopeo's
  --dest-cert-dir/--src-cert-dir)  OCI_USER, OCI_PASS (empty when anonymous)
  OCI_AUTH_FILE=D/config.json (a Docker config.json with those credentials)
  OCI_PID (the supervisor: SIGTERM stops everything)  OCI_LOG=D/registry.log (the
  registry's own log, JSON at level info, one line per request, and its access log)
  OCI_TOKEN_LOG=D/token.log (a JSON line per token request; empty unless mode token)
  OCI_STORAGE_LOG=D/storage.log (--storage-redirect: a JSON line per request, headers whole)
  OCI_MODE, OCI_DIR
--storage-redirect: blobs answered with a 307 to a storage server on 127.0.0.2 (another host
for a client; distribution's `redirect` storage middleware, configuration.md "middleware"),
which serves the registry's storage directory and logs every request's headers.
htpasswd is bcrypt ($2b$, which golang.org/x/crypto/bcrypt reads). The token server follows
distribution's token spec (docs/spec/auth/token.md); its JWTs are RS256 with the signing
certificate in x5c, verified by the registry against ca.pem (auth.token.rootcertbundle).
Everything stops on `stop`, after --lifetime seconds (900), or once --owner (default: the
process that ran `start`) is gone.
"""
import argparse
import base64
import http.client
import json
import os
import secrets
import select
import shlex
import signal
import ssl
import subprocess
import sys
import threading
import time
import warnings

import ocitest

SERVICE = "ndi-oci-test"
ISSUER = "ndi-oci-test-token-server"
USER = "ndi-test"


def bcrypt_hash(password):
    """A bcrypt hash of PASSWORD: crypt(3)'s $2b$ (python3.11's crypt module), or Apache's
    htpasswd -B where the module is gone (Python 3.13)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt
        h = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
        if h and h.startswith("$2"):
            return h
    except ImportError:
        pass
    out = ocitest.run("htpasswd", "-nbB", USER, password).decode()
    return out.strip().split(":", 1)[1]


def registry_config(d, mode, port, token_port, storage_port):
    """distribution's configuration (docs: configuration.md), as JSON (which YAML reads)."""
    conf = {
        "version": "0.1",
        "log": {"level": "info", "formatter": "json", "fields": {"service": "registry"},
                "accesslog": {"disabled": False}},
        "storage": {"filesystem": {"rootdirectory": os.path.join(d, "storage")},
                    "delete": {"enabled": True},
                    "maintenance": {"uploadpurging": {"enabled": False}}},
        "http": {"addr": "127.0.0.1:%d" % port, "secret": secrets.token_hex(16),
                 "tls": {"certificate": os.path.join(d, "server.pem"),
                         "key": os.path.join(d, "server.key")},
                 "headers": {"X-Content-Type-Options": ["nosniff"]}},
        "health": {"storagedriver": {"enabled": False}},
    }
    if mode == "htpasswd":
        conf["auth"] = {"htpasswd": {"realm": "ndi-oci-test",
                                     "path": os.path.join(d, "htpasswd")}}
    elif mode == "token":
        conf["auth"] = {"token": {"realm": "https://127.0.0.1:%d/token" % token_port,
                                  "service": SERVICE, "issuer": ISSUER,
                                  "rootcertbundle": os.path.join(d, "ca.pem")}}
    if storage_port:
        conf["middleware"] = {"storage": [{"name": "redirect", "options": {
            "baseurl": "https://127.0.0.2:%d" % storage_port}}]}
    path = os.path.join(d, "config.yml")
    ocitest.write_atomic(path, json.dumps(conf, indent=1) + "\n")
    return path


def answers_v2(d, port):
    """Whether the registry answers GET /v2/ over TLS (any status: 200, or 401 with auth)."""
    ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
    try:
        conn.request("GET", "/v2/")
        return conn.getresponse().status in (200, 401)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def start_registry(d, mode, token_port, storage_port, deadline):
    """docker-registry serve on a free port; (process, port) once /v2/ answers. A port
    taken between the probe and the registry's bind is tried again with another."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    log_path = os.path.join(d, "registry.log")
    for _ in range(5):
        port = ocitest.free_port()
        conf = registry_config(d, mode, port, token_port, storage_port)
        start = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(["docker-registry", "serve", conf], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log, env=env)
        while time.monotonic() < deadline and proc.poll() is None:
            if answers_v2(d, port):
                return proc, port
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            raise RuntimeError("docker-registry did not answer /v2/ in time (%s)" % log_path)
        with open(log_path, "rb") as f:
            f.seek(start)
            said = f.read().decode(errors="replace")
        if "address already in use" not in said:
            raise RuntimeError("docker-registry exited with status %d: %s" %
                               (proc.returncode, said.strip()[-2000:]))
    raise RuntimeError("docker-registry found no free port in 5 tries")


def write_credentials(d, mode):
    """D/htpasswd (read by the registry as it starts); (user, password), empty when
    anonymous."""
    if mode == "anonymous":
        return "", ""
    user, password = USER, secrets.token_hex(12)
    with open(os.path.join(d, "htpasswd"), "w") as f:
        f.write("%s:%s\n" % (user, bcrypt_hash(password)))
    return user, password


def write_auth_file(d, host, user, password):
    """D/config.json, a Docker config.json naming HOST with USER:PASSWORD (none if empty)."""
    auths = {}
    if user:
        auths[host] = {"auth": base64.b64encode(("%s:%s" % (user, password)).encode()).decode()}
    ocitest.write_atomic(os.path.join(d, "config.json"),
                         json.dumps({"auths": auths}, indent=1) + "\n")


def serve(args):
    """The supervisor: servers, the registry, D/env, then waits for its end."""
    d = args.dir
    deadline = time.monotonic() + args.timeout
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    token_port = storage_port = 0
    open(os.path.join(d, "token.log"), "a").close()
    if args.mode == "token":
        users = {}
        ocitest.TokenHandler.conf = {"dir": d, "service": SERVICE, "issuer": ISSUER,
                                     "users": users,
                                     "log": ocitest.Log(os.path.join(d, "token.log"))}
        token_port = ocitest.https_server(ocitest.TokenHandler, d).server_address[1]
    if args.storage_redirect:
        os.makedirs(os.path.join(d, "storage"), exist_ok=True)
        open(os.path.join(d, "storage.log"), "a").close()
        ocitest.StorageHandler.conf = {"root": os.path.join(d, "storage"),
                                       "log": ocitest.Log(os.path.join(d, "storage.log"))}
        storage_port = ocitest.https_server(ocitest.StorageHandler, d,
                                            host="127.0.0.2").server_address[1]
    user, password = write_credentials(d, args.mode)
    if args.mode == "token":
        # The token server checks the credentials; the registry trusts its tokens.
        ocitest.TokenHandler.conf["users"][user] = password
    proc, port = start_registry(d, args.mode, token_port, storage_port, deadline)
    write_auth_file(d, "127.0.0.1:%d" % port, user, password)
    env = {
        "OCI_HOST": "127.0.0.1:%d" % port, "OCI_CA": os.path.join(d, "ca.pem"),
        "OCI_CERT_DIR": os.path.join(d, "certs"), "OCI_USER": user, "OCI_PASS": password,
        "OCI_AUTH_FILE": os.path.join(d, "config.json"), "OCI_PID": str(os.getpid()),
        "OCI_REGISTRY_PID": str(proc.pid), "OCI_LOG": os.path.join(d, "registry.log"),
        "OCI_TOKEN_LOG": os.path.join(d, "token.log"),
        "OCI_STORAGE_LOG": os.path.join(d, "storage.log") if storage_port else "",
        "OCI_MODE": args.mode, "OCI_DIR": d}
    ocitest.write_atomic(os.path.join(d, "env"), "".join(
        "%s=%s\n" % (k, shlex.quote(v)) for k, v in env.items()))
    os.write(args.ready_fd, b"ready\n")
    os.close(args.ready_fd)

    def registry_exit():
        proc.wait()
        stop.set()

    threading.Thread(target=registry_exit, daemon=True).start()
    ocitest.wait_owner(args.owner, time.monotonic() + args.lifetime, stop)
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    else:
        print("oci-registry: docker-registry exited with status %d" % proc.returncode,
              file=sys.stderr)
    try:
        os.unlink(os.path.join(d, "env"))
    except FileNotFoundError:
        pass
    return 0


def tail(path, n=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def start(args):
    d = os.path.abspath(args.dir)
    os.makedirs(os.path.join(d, "certs"), exist_ok=True)
    if os.path.exists(os.path.join(d, "env")):
        print("oci-registry: %s already has a registry (its env): stop it first" % d,
              file=sys.stderr)
        return 1
    ocitest.make_pki(d)
    with open(os.path.join(d, "ca.pem"), "rb") as f, \
            open(os.path.join(d, "certs", "ca.crt"), "wb") as out:
        out.write(f.read())
    owner = args.owner if args.owner is not None else os.getppid()
    r, w = os.pipe()
    with open(os.path.join(d, "supervisor.log"), "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "serve", "--dir", d, "--mode",
             args.mode, "--owner", str(owner), "--lifetime", str(args.lifetime),
             "--timeout", str(args.timeout), "--ready-fd", str(w)]
            + (["--storage-redirect"] if args.storage_redirect else []),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(w,),
            start_new_session=True)
    os.close(w)
    ocitest.write_atomic(os.path.join(d, "supervisor.pid"), "%d\n" % proc.pid)
    # The supervisor says "ready" on the pipe once D/env is written; EOF without it: it died.
    with os.fdopen(r, "rb") as ready:
        said = ready.readline()
    if said == b"ready\n":
        return 0
    proc.wait()
    print("oci-registry: the registry in %s did not start (%s mode):\n%s%s" % (
        d, args.mode, tail(os.path.join(d, "supervisor.log")),
        tail(os.path.join(d, "registry.log"), 5)), file=sys.stderr)
    return 1


def stop(args):
    """SIGTERM to the supervisor, then waits (pidfd) for it to stop the registry and go."""
    d = os.path.abspath(args.dir)
    try:
        with open(os.path.join(d, "supervisor.pid")) as f:
            pid = int(f.read())
    except (OSError, ValueError):
        print("oci-registry: no registry was started in %s" % d, file=sys.stderr)
        return 1
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return 0
    try:
        os.kill(pid, signal.SIGTERM)
        if not select.select([fd], [], [], 60)[0]:
            print("oci-registry: the supervisor %d did not stop in 60 s" % pid, file=sys.stderr)
            return 1
    finally:
        os.close(fd)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("start", "serve"):
        p = sub.add_parser(name)
        p.add_argument("--dir", required=True)
        p.add_argument("--mode", required=True, choices=("anonymous", "htpasswd", "token"))
        p.add_argument("--storage-redirect", action="store_true")
        p.add_argument("--owner", type=int)
        p.add_argument("--lifetime", type=float, default=900)
        p.add_argument("--timeout", type=float, default=180)
        if name == "serve":
            p.add_argument("--ready-fd", type=int, required=True)
    p = sub.add_parser("stop")
    p.add_argument("--dir", required=True)
    args = ap.parse_args()
    if args.cmd == "serve":
        try:
            return serve(args)
        except Exception as e:  # said in supervisor.log, which start shows
            print("oci-registry: %s" % e, file=sys.stderr)
            return 1
    return start(args) if args.cmd == "start" else stop(args)


if __name__ == "__main__":
    sys.exit(main())
