#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile OCI registry for tests: just enough of the distribution API (the OCI
distribution spec's pull side: /v2/, manifests, blobs) to serve a repository directory
(the HTTP layout: index.json, index.json.sig, packages) as the artifact of
docs/repository-format.md, "In an OCI registry", with faults chosen per request.

  oci-standin.py --dir D --repo DIR [--name NAME] [--tag TAG] [--owner PID] [--lifetime SEC]

HTTPS on 127.0.0.1 (the CA is D/ca.pem, made as oci-registry.py makes it); a storage server
on 127.0.0.2 (another host to libcurl) serves every blob at /blobs/sha256/HEX. Once both
listen it writes D/env: STANDIN_HOST, STANDIN_REF (oci://HOST/NAME:TAG), STANDIN_CA,
STANDIN_USER, STANDIN_PASS, STANDIN_AUTH_FILE (a Docker config.json for HOST),
STANDIN_FAULTS, STANDIN_LOG, STANDIN_TOKEN_LOG, STANDIN_STORAGE_LOG, STANDIN_STORAGE,
STANDIN_OTHER (the other repository's name), STANDIN_PID. Each log is a JSON line per
request, headers whole. D/faults.json (STANDIN_FAULTS) is read on each request:
  {"auth": "none" | "basic" | "token", "faults": [{"fault": NAME, ...}, ...]}
auth basic: every /v2/ request needs Basic STANDIN_USER:STANDIN_PASS (401 with a Basic
challenge); token: a Bearer challenge naming the realm https://HOST/token, whose tokens
(for those credentials; none anonymous) the registry then takes. The faults:
  lying-blob {layer}         the blob of LAYER (index, sig, package: the first package, or
                             N: the manifest's layers[N]) answered with other bytes of the
                             same length
  foreign-blob {layer}       this repository lacks LAYER's blob (404 BLOB_UNKNOWN); it is
                             held, and served, under STANDIN_OTHER on the same server
  urls {layer}               LAYER's descriptor carries `urls` (on the storage host)
  redirect                   every blob is a 307 to the storage host
  storage-challenge          (with redirect) the storage host answers every blob 401 with a
                             Bearer challenge of its own realm (https://STORAGE/token), and
                             logs what comes to that realm (a client that took the challenge
                             for the registry's would send the registry's credentials there)
  token-garbage {body}       the token endpoint answers 200 with BODY (default: not JSON)
  token-stall                the token endpoint accepts the request and never answers
  token-redirect             the token endpoint answers 307 to the storage host's /token
  upload-elsewhere           a push's POST blobs/uploads/ is answered 202 with a Location on
                             the storage host, which logs the PUT that follows and refuses
                             it (403); without it a POST is 405 (the stand-in takes no push)
  storm                      every /v2/ request 401, whatever token it carries
  huge-manifest {bytes, sized}  the manifest padded to BYTES (5 MiB) with an annotation
                             (its digest true); sized false: no Content-Length (close ends it);
                             its log line says the bytes the client took before it stopped
  digest-header-lies         Docker-Content-Digest names other bytes than the manifest's,
                             and the manifest is served by that digest too (not by its own)
Manifests are served only to an Accept naming the OCI manifest type (distribution 2.8
answers 404 otherwise). GET /.settle answers 204 (not logged) once no other request is
being answered (a request is logged when its answer ends). The server exits after
--lifetime seconds (900) or once --owner (default: its parent) is gone.
"""
import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import ocitest

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
ARTIFACT_TYPE = "application/vnd.nvidia.driver-installer.repository.v1"
EMPTY = {"mediaType": "application/vnd.oci.empty.v1+json",
         "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
         "size": 2}
USER = "ndi-test"
OTHER = "other/drivers"
PATH_RE = re.compile(r"^/v2/(.+)/(manifests|blobs)/([^/]+)$")


def package_type(path):
    """The package layer's media type by its path's suffix (SPEC: tar+zstd, +xz, +gzip)."""
    base = "application/vnd.nvidia.driver-installer.package.v1.tar"
    for suffix, kind in ((".tar.zst", "+zstd"), (".tar.xz", "+xz"), (".tar.gz", "+gzip")):
        if path.endswith(suffix):
            return base + kind
    return base


class Artifact:
    """The repository's blobs (digest -> bytes) and its layers' descriptors, in order."""

    def __init__(self, repo):
        self.blobs = {EMPTY["digest"]: b"{}"}
        self.layers = []
        with open(os.path.join(repo, "index.json"), "rb") as f:
            index = f.read()
        with open(os.path.join(repo, "index.json.sig"), "rb") as f:
            sig = f.read()
        self.add(index, "application/vnd.nvidia.driver-installer.index.v1+json", "index.json")
        self.add(sig, "application/vnd.nvidia.driver-installer.index.signature.v1",
                 "index.json.sig")
        doc = json.loads(index)
        self.created = doc.get("generated", "")
        seen = set()
        for driver in doc.get("drivers", []):
            for pkg in driver.get("packages", []):
                if pkg["sha256"] in seen:
                    continue
                seen.add(pkg["sha256"])
                with open(os.path.join(repo, pkg["path"]), "rb") as f:
                    self.add(f.read(), package_type(pkg["path"]), pkg["path"])

    def add(self, data, media_type, title):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.blobs[digest] = data
        self.layers.append({"mediaType": media_type, "digest": digest, "size": len(data),
                            "annotations": {"org.opencontainers.image.title": title}})

    def layer(self, which):
        """The descriptor of `index`, `sig`, `package` (the first package) or layer N."""
        if isinstance(which, int):
            return self.layers[which]
        return self.layers[{"index": 0, "sig": 1, "package": 2}[which]]


class State:
    def __init__(self, args, artifact, storage_url):
        self.dir = args.dir
        self.name = args.name
        self.tag = args.tag
        self.artifact = artifact
        self.storage_url = storage_url
        self.faults_path = os.path.join(args.dir, "faults.json")
        self.password = secrets.token_hex(12)
        self.tokens = set()
        self.lock = threading.Lock()
        self.log = ocitest.Log(os.path.join(args.dir, "registry.log"))
        self.token_log = ocitest.Log(os.path.join(args.dir, "token.log"))
        self.stop = threading.Event()
        self.last_manifest = (None, b"")
        self.active = 0

    def config(self):
        try:
            with open(self.faults_path) as f:
                conf = json.load(f)
        except FileNotFoundError:
            conf = {}
        faults = {f["fault"]: f for f in conf.get("faults", [])}
        return conf.get("auth", "none"), faults

    def manifest(self, faults):
        """The manifest's bytes under FAULTS."""
        layers = [dict(d) for d in self.artifact.layers]
        if "urls" in faults:
            i = layers.index(self.artifact.layer(faults["urls"].get("layer", "package")))
            layers[i]["urls"] = ["%s/blobs/sha256/%s" % (self.storage_url,
                                                         layers[i]["digest"][7:])]
        doc = {"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "artifactType": ARTIFACT_TYPE,
               "config": EMPTY, "layers": layers,
               "annotations": {"org.opencontainers.image.created": self.artifact.created}}
        if "huge-manifest" in faults:
            size = faults["huge-manifest"].get("bytes", 5 << 20)
            base = len(json.dumps(doc))
            pad = "x" * max(0, size - base - len(', "padding": ""'))
            doc["annotations"]["padding"] = pad
        return json.dumps(doc).encode()

    def manifest_cached(self, faults):
        """manifest(), made once for each set of faults (a huge one takes time)."""
        key = json.dumps(faults, sort_keys=True)
        with self.lock:
            if self.last_manifest[0] != key:
                self.last_manifest = (key, self.manifest(faults))
            return self.last_manifest[1]


class Registry(ocitest.Handler):
    state = None

    def do_HEAD(self):
        self.do_GET()

    def entry(self):
        return {"method": self.command, "path": self.path,
                "headers": dict(self.headers.items())}

    def do_GET(self):
        if self.path == "/.settle":
            return self.settle()
        with self.state.lock:
            self.state.active += 1
        try:
            self.serve()
        finally:
            with self.state.lock:
                self.state.active -= 1

    def do_POST(self):
        """A push's upload start: 202 with a Location on the storage host (upload-elsewhere),
        as a registry behind a misconfigured proxy or a hostile one may answer."""
        with self.state.lock:
            self.state.active += 1
        try:
            st = self.state
            auth, faults = st.config()
            entry = self.entry()
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            if not self.authorized(auth, faults, entry):
                return
            if "upload-elsewhere" not in faults or \
                    not urlsplit(self.path).path.endswith("/blobs/uploads/"):
                return self.error(405, "UNSUPPORTED", entry)
            self.send(202, entry, b"", {"Location": st.storage_url + "/upload/1",
                                        "Docker-Upload-UUID": "1"})
        finally:
            with self.state.lock:
                self.state.active -= 1

    def settle(self):
        """/.settle: answered (204, not logged) once no other request is being answered,
        so that every answer given so far is in the log (as httpd.py's)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with self.state.lock:
                if self.state.active == 0:
                    break
            time.sleep(0.005)
        self.answer(204)

    def serve(self):
        st = self.state
        auth, faults = st.config()
        entry = self.entry()
        url = urlsplit(self.path)
        if url.path == "/token":
            return self.token(faults, url)
        if not self.authorized(auth, faults, entry):
            return
        if url.path == "/v2/":
            return self.send(200, entry, b"{}", {"Content-Type": "application/json"})
        m = PATH_RE.match(url.path)
        if not m:
            return self.error(404, "NAME_UNKNOWN", entry)
        name, kind, ref = m.groups()
        if name not in (st.name, OTHER):
            return self.error(404, "NAME_UNKNOWN", entry)
        if kind == "manifests":
            return self.manifest(name, ref, faults, entry)
        return self.blob(name, ref, faults, entry)

    def send(self, code, entry, body=b"", headers=None):
        entry.update(status=code, bytes=0 if self.command == "HEAD" else len(body))
        self.state.log.write(entry)
        self.answer(code, body, headers)

    def error(self, code, what, entry, headers=None):
        body = json.dumps({"errors": [{"code": what, "message": what.lower()}]}).encode()
        self.send(code, entry, body, dict(headers or {}, **{"Content-Type": "application/json"}))

    def authorized(self, auth, faults, entry):
        st = self.state
        host = self.headers.get("Host", "127.0.0.1")
        if auth == "none" and "storm" not in faults:
            return True
        value = self.headers.get("Authorization", "")
        if auth == "basic":
            if ocitest.basic_credentials(self.headers) == (USER, st.password) and \
                    "storm" not in faults:
                return True
            challenge = 'Basic realm="ndi-standin"'
        else:
            with st.lock:
                ok = value.startswith("Bearer ") and value[7:] in st.tokens
            if ok and "storm" not in faults:
                return True
            m = PATH_RE.match(urlsplit(self.path).path)
            scope = ',scope="repository:%s:pull"' % m.group(1) if m else ""
            challenge = 'Bearer realm="https://%s/token",service="ndi-standin"%s' % (host, scope)
        self.error(401, "UNAUTHORIZED", entry, {"WWW-Authenticate": challenge})
        return False

    def token(self, faults, url):
        st = self.state
        q = parse_qs(url.query)
        creds = ocitest.basic_credentials(self.headers)
        entry = dict(self.entry(), service=q.get("service", [""])[0], scope=q.get("scope", []))
        if "token-stall" in faults:
            entry["status"] = "stalled"
            st.token_log.write(entry)
            # Accepted, read, and never answered while the server lives (not counted as
            # being answered: /.settle does not wait for it).
            with st.lock:
                st.active -= 1
            st.stop.wait()
            with st.lock:
                st.active += 1
            return
        if "token-redirect" in faults:
            entry["status"] = 307
            st.token_log.write(entry)
            return self.answer(307, b"", {"Location": st.storage_url + "/token"})
        if "token-garbage" in faults:
            body = faults["token-garbage"].get("body", "<html>token service</html>\n")
            entry["status"] = 200
            st.token_log.write(entry)
            return self.answer(200, body.encode(), {"Content-Type": "application/json"})
        if creds != (USER, st.password):
            entry["status"] = 401
            st.token_log.write(entry)
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}\n',
                               {"WWW-Authenticate": 'Basic realm="ndi-standin-token"'})
        token = secrets.token_urlsafe(24)
        with st.lock:
            st.tokens.add(token)
        entry["status"] = 200
        st.token_log.write(entry)
        self.answer(200, json.dumps({"token": token, "expires_in": 300}).encode(),
                    {"Content-Type": "application/json"})

    def manifest(self, name, ref, faults, entry):
        st = self.state
        if MANIFEST_TYPE not in self.headers.get("Accept", ""):
            return self.error(404, "MANIFEST_UNKNOWN", entry)
        body = st.manifest_cached(faults)
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        if "digest-header-lies" in faults:
            # The lie told throughout: the same bytes by the digest it names too.
            digest = "sha256:" + hashlib.sha256(body + b" ").hexdigest()
        if name != st.name or ref not in (st.tag, digest):
            return self.error(404, "MANIFEST_UNKNOWN", entry)
        headers = {"Content-Type": MANIFEST_TYPE, "Docker-Content-Digest": digest}
        self.counted(entry, body, headers, faults.get("huge-manifest", {}).get("sized", True))

    def counted(self, entry, body, headers, sized):
        """BODY in 64 KiB writes, logged once they end with the bytes the client took
        (`bytes`; a client that stops reading ends them); without SIZED no Content-Length:
        the connection's end is the body's end."""
        self.send_response(200)
        for k, v in headers.items():
            self.send_header(k, v)
        if sized:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        sent = 0
        try:
            self.wfile.flush()
            while self.command == "GET" and sent < len(body):
                self.wfile.write(body[sent:sent + 65536])
                sent += min(65536, len(body) - sent)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        entry.update(status=200, bytes=sent, size=len(body), sized=sized)
        self.state.log.write(entry)

    def blob(self, name, digest, faults, entry):
        st = self.state
        data = st.artifact.blobs.get(digest)
        foreign = faults.get("foreign-blob")
        if foreign and digest == st.artifact.layer(foreign.get("layer", "package"))["digest"]:
            held = name == OTHER
        else:
            held = name == st.name
        if data is None or not held:
            return self.error(404, "BLOB_UNKNOWN", entry)
        lying = faults.get("lying-blob")
        if lying and digest == st.artifact.layer(lying.get("layer", "package"))["digest"]:
            data = bytes([data[0] ^ 0xff]) + data[1:]
        if "redirect" in faults:
            return self.send(307, entry, b"", {
                "Location": "%s/blobs/sha256/%s" % (st.storage_url, digest[7:])})
        headers = {"Content-Type": "application/octet-stream", "Docker-Content-Digest": digest,
                   "Accept-Ranges": "bytes"}
        code = 200
        m = re.match(r"^bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if m and int(m.group(1)) < len(data):
            start = int(m.group(1))
            end = min(int(m.group(2)), len(data) - 1) if m.group(2) else len(data) - 1
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, len(data))
            data, code = data[start:end + 1], 206
        self.send(code, entry, data, headers)


class StandinStorage(ocitest.StorageHandler):
    """The storage host, with the storage-challenge fault: a 401 and a realm of its own;
    a PUT (upload-elsewhere's) logged whole and refused."""
    faults_path = None

    def do_PUT(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.conf["log"].write({"method": "PUT", "path": self.path, "status": 403,
                                "headers": dict(self.headers.items())})
        self.answer(403)

    def do_GET(self):
        try:
            with open(self.faults_path) as f:
                faults = {x["fault"] for x in json.load(f).get("faults", [])}
        except (OSError, ValueError):
            faults = set()
        if "storage-challenge" not in faults:
            return super().do_GET()
        entry = {"method": self.command, "path": self.path, "headers": dict(self.headers.items())}
        if self.path.startswith("/token"):
            entry["status"] = 200
            self.conf["log"].write(entry)
            return self.answer(200, b'{"token": "storage-token"}\n',
                               {"Content-Type": "application/json"})
        entry["status"] = 401
        self.conf["log"].write(entry)
        realm = "https://%s:%d/token" % self.server.server_address[:2]
        self.answer(401, b"", {"WWW-Authenticate":
                               'Bearer realm="%s",service="storage",scope="x"' % realm})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--repo", required=True, help="a repository in the HTTP layout")
    ap.add_argument("--name", default="ndi/drivers")
    ap.add_argument("--tag", default="latest")
    ap.add_argument("--owner", type=int)
    ap.add_argument("--lifetime", type=float, default=900)
    args = ap.parse_args()
    if args.owner == os.getpid():
        # $BASHPID read inside the background command that became this process.
        sys.exit("oci-standin: --owner %d is this process: give the test shell's" % args.owner)
    args.dir = os.path.abspath(args.dir)
    os.makedirs(args.dir, exist_ok=True)
    ocitest.make_pki(args.dir)
    artifact = Artifact(args.repo)
    # The storage host's files: every blob, by digest.
    storage = os.path.join(args.dir, "storage")
    shutil.rmtree(storage, ignore_errors=True)
    os.makedirs(os.path.join(storage, "blobs", "sha256"))
    for digest, data in artifact.blobs.items():
        with open(os.path.join(storage, "blobs", "sha256", digest[7:]), "wb") as f:
            f.write(data)
    for log in ("registry.log", "token.log", "storage.log"):
        open(os.path.join(args.dir, log), "w").close()
    ocitest.StorageHandler.conf = {"root": storage,
                                   "log": ocitest.Log(os.path.join(args.dir, "storage.log"))}
    StandinStorage.faults_path = os.path.join(args.dir, "faults.json")
    sserver = ocitest.https_server(StandinStorage, args.dir, host="127.0.0.2")
    state = State(args, artifact, "https://127.0.0.2:%d" % sserver.server_address[1])
    Registry.state = state
    server = ocitest.https_server(Registry, args.dir)
    host = "127.0.0.1:%d" % server.server_address[1]
    auth = base64.b64encode(("%s:%s" % (USER, state.password)).encode()).decode()
    ocitest.write_atomic(os.path.join(args.dir, "auth.json"),
                         json.dumps({"auths": {host: {"auth": auth}}}) + "\n")
    env = {"STANDIN_HOST": host, "STANDIN_REF": "oci://%s/%s:%s" % (host, args.name, args.tag),
           "STANDIN_CA": os.path.join(args.dir, "ca.pem"), "STANDIN_USER": USER,
           "STANDIN_PASS": state.password,
           "STANDIN_AUTH_FILE": os.path.join(args.dir, "auth.json"),
           "STANDIN_FAULTS": state.faults_path,
           "STANDIN_LOG": os.path.join(args.dir, "registry.log"),
           "STANDIN_TOKEN_LOG": os.path.join(args.dir, "token.log"),
           "STANDIN_STORAGE_LOG": os.path.join(args.dir, "storage.log"),
           "STANDIN_STORAGE": state.storage_url, "STANDIN_OTHER": OTHER,
           "STANDIN_PID": str(os.getpid())}
    ocitest.write_atomic(os.path.join(args.dir, "env"), "".join(
        "%s=%s\n" % (k, shlex.quote(v)) for k, v in env.items()))
    owner = args.owner if args.owner is not None else os.getppid()
    ocitest.wait_owner(owner, time.monotonic() + args.lifetime, threading.Event())
    state.stop.set()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
