# SPDX-License-Identifier: Apache-2.0
"""The few registry calls of a release that skopeo cannot make: whether the registry lists
referrers itself, and the referrers tag's image index read and written byte for byte
(skopeo 1.9 re-serialises an image index, dropping its descriptors' artifactType, which the
referrers tag schema requires). The OCI distribution spec v1.1 (spec.md): GET and PUT
/v2/NAME/manifests/REF, GET /v2/NAME/referrers/DIGEST ("Listing Referrers").

Authentication as skopeo's: credentials from --creds (USER:PASS) or a Docker config.json's
"auths" entry for the host ("auth" base64(user:pass), or "username"/"password"); the
registry's 401 challenge (RFC 7235) answered with Basic, or with a Bearer token from the
challenge's realm (distribution's token spec, docs/spec/auth/token.md: GET
realm?service=S&scope=repository:NAME:pull,push, Basic credentials when there are any;
"token" or "access_token" in the JSON answer). TLS as skopeo's --cert-dir: the directory's
*.crt files are CAs (containers-certs.d(5)), besides the system's."""
import base64
import glob
import http.client
import json
import re
import ssl
import urllib.parse

TIMEOUT = 60
CHALLENGE_RE = re.compile(r'([A-Za-z_]+)="([^"]*)"')


class RegistryError(Exception):
    """The registry refused or failed a call (exit 1, with its status and body)."""


def credentials(host, creds="", authfile=""):
    """(user, password) for HOST, or None."""
    if creds:
        user, sep, password = creds.partition(":")
        if not sep:
            raise RegistryError("the credentials must be USER:PASSWORD")
        return user, password
    if not authfile:
        return None
    with open(authfile, encoding="utf-8") as f:
        auths = json.load(f).get("auths", {})
    for key, v in auths.items():
        if re.sub(r"^https?://", "", key).rstrip("/").split("/")[0] != host:
            continue
        if v.get("auth"):
            user, _, password = base64.b64decode(v["auth"]).decode().partition(":")
            return user, password
        if v.get("username"):
            return v["username"], v.get("password", "")
    return None


class Client:
    def __init__(self, host, name, creds=None, cert_dir=""):
        self.host, self.name, self.creds = host, name, creds
        self.ctx = ssl.create_default_context()
        for ca in sorted(glob.glob(cert_dir + "/*.crt")) if cert_dir else []:
            self.ctx.load_verify_locations(ca)
        self.auth = None

    def _send(self, method, url, body=None, headers=None):
        u = urllib.parse.urlsplit(url)
        conn = http.client.HTTPSConnection(u.netloc, timeout=TIMEOUT, context=self.ctx)
        try:
            path = u.path + ("?" + u.query if u.query else "")
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def _basic(self):
        return "Basic " + base64.b64encode(("%s:%s" % self.creds).encode()).decode()

    def _authorise(self, challenge):
        scheme, _, params = challenge.partition(" ")
        p = dict(CHALLENGE_RE.findall(params))
        if scheme.lower() == "basic":
            if not self.creds:
                raise RegistryError("%s asks for credentials: give RELEASE_CREDS or "
                                    "RELEASE_AUTHFILE" % self.host)
            self.auth = self._basic()
            return
        if scheme.lower() != "bearer" or not p.get("realm", "").startswith("https://"):
            raise RegistryError("%s: an authentication challenge this client does not "
                                "answer: %s" % (self.host, challenge[:200]))
        q = {"scope": "repository:%s:pull,push" % self.name}
        if p.get("service"):
            q["service"] = p["service"]
        sep = "&" if "?" in p["realm"] else "?"
        status, _, body = self._send("GET", p["realm"] + sep + urllib.parse.urlencode(q),
                                     headers={"Authorization": self._basic()}
                                     if self.creds else {})
        try:
            token = json.loads(body)
            token = token.get("token") or token.get("access_token")
        except (ValueError, AttributeError):
            token = None
        if status != 200 or not isinstance(token, str) or not token:
            raise RegistryError("the token endpoint %s answered %d without a token"
                                % (p["realm"], status))
        self.auth = "Bearer " + token

    def request(self, method, path, body=None, headers=None):
        url = "https://%s/v2/%s/%s" % (self.host, self.name, path)
        for _ in range(2):
            h = dict(headers or {})
            if self.auth:
                h["Authorization"] = self.auth
            status, rh, data = self._send(method, url, body, h)
            if status != 401 or "www-authenticate" not in rh:
                return status, rh, data
            self._authorise(rh["www-authenticate"])
        raise RegistryError("%s refused the credentials (401 on %s %s)" % (self.host, method,
                                                                           path))

    def has_referrers_api(self, digest):
        """Whether the registry answers GET /v2/NAME/referrers/DIGEST with an image index."""
        status, rh, _ = self.request("GET", "referrers/" + digest,
                                     headers={"Accept": "application/vnd.oci.image.index.v1+json"})
        return status == 200 and rh.get("content-type", "").startswith(
            "application/vnd.oci.image.index.v1+json")

    def get_manifest(self, ref, media_type):
        """The manifest's bytes, or None when the registry has none by REF."""
        status, _, data = self.request("GET", "manifests/" + ref, headers={"Accept": media_type})
        if status == 404:
            return None
        if status != 200:
            raise RegistryError("GET %s/manifests/%s: HTTP %d %s" % (self.name, ref, status,
                                                                    data[:200]))
        return data

    def put_manifest(self, ref, raw, media_type):
        """PUT the bytes; the digest the registry answers."""
        status, rh, data = self.request("PUT", "manifests/" + ref, raw,
                                        {"Content-Type": media_type})
        if status != 201:
            raise RegistryError("PUT %s/manifests/%s: HTTP %d %s" % (self.name, ref, status,
                                                                    data[:200]))
        return rh.get("docker-content-digest", "")
