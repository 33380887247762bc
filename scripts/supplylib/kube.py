# SPDX-License-Identifier: Apache-2.0
"""A Kubernetes API client for the supply pass: only what it calls, the standard library only.

The configuration is a pod's (in_cluster: KUBERNETES_SERVICE_HOST and _PORT, the service
account's token, ca.crt and namespace under /var/run/secrets/kubernetes.io/serviceaccount,
as client-go's rest.InClusterConfig reads them) or given (server URL, token file, CA file).
The token is read again whenever its file changed: the kubelet replaces a projected token
before it expires.

Retried within DEADLINE_S with a doubling backoff, as the API server may answer otherwise
later: a transport error, 429 and 5xx (Retry-After, when sent, sets the wait). 401 re-reads
the token and tries once more. Other answers are the caller's: KubeError carries the status
and the API server's Status reason and message (404 NotFound, 409 AlreadyExists or Conflict,
422 Invalid).
"""
import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEADLINE_S = 30
BODY_MAX = 8 << 20
PAGE_LIMIT = 500
USER_AGENT = "nvidia-driver-supply"


class KubeError(Exception):
    """A call that failed: STATUS the HTTP status (0: no answer), REASON the Status's."""

    def __init__(self, what, status, reason="", message=""):
        self.status, self.reason = status, reason
        super().__init__("%s: %s%s" % (what, ("%d %s" % (status, reason)).strip() if status
                                       else "no answer", ": " + message if message else ""))


class Client:
    def __init__(self, server, token_file, ca_file, namespace="default", deadline_s=DEADLINE_S,
                 user_agent=USER_AGENT):
        u = urllib.parse.urlsplit(server)
        if u.scheme != "https" or not u.netloc:
            raise ValueError("the API server must be an https:// URL, not '%s'" % server)
        self.server = server.rstrip("/")
        self.token_file, self.namespace, self.deadline_s = token_file, namespace, deadline_s
        self.user_agent = user_agent
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self._token, self._token_stamp = None, None

    @classmethod
    def in_cluster(cls, sa_dir=SA_DIR):
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
        if not host or not port:
            raise ValueError("not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                             "are unset (give --kube-server, --kube-token-file and --kube-ca)")
        if ":" in host:
            host = "[%s]" % host
        try:
            with open(os.path.join(sa_dir, "namespace")) as f:
                ns = f.read().strip()
        except OSError:
            ns = "default"
        return cls("https://%s:%s" % (host, port), os.path.join(sa_dir, "token"),
                   os.path.join(sa_dir, "ca.crt"), ns)

    def _bearer(self, again=False):
        st = os.stat(self.token_file)
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if again or self._token is None or stamp != self._token_stamp:
            with open(self.token_file) as f:
                self._token, self._token_stamp = f.read().strip(), stamp
        return self._token

    def call(self, method, path, body=None, content_type="application/json", query=None):
        """The answer of METHOD PATH (parsed JSON), retried as said above; KubeError else."""
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        what = "%s %s" % (method, path)
        data = json.dumps(body).encode() if body is not None else None
        end = time.monotonic() + self.deadline_s
        wait, reauth = 0.1, False
        while True:
            status, reason, message, retry_after = 0, "", "", None
            req = urllib.request.Request(url, data=data, method=method)
            req.add_header("Authorization", "Bearer " + self._bearer(reauth))
            req.add_header("Accept", "application/json")
            req.add_header("User-Agent", self.user_agent)
            if data is not None:
                req.add_header("Content-Type", content_type)
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=self.deadline_s) as r:
                    raw = r.read(BODY_MAX + 1)
                    if len(raw) > BODY_MAX:
                        raise KubeError(what, r.status, "", "answer past %d bytes" % BODY_MAX)
                    return json.loads(raw) if raw else {}
            except urllib.error.HTTPError as e:
                status, retry_after = e.code, e.headers.get("Retry-After")
                try:
                    st = json.loads(e.read(BODY_MAX))
                    reason, message = st.get("reason", ""), st.get("message", "")
                except (ValueError, AttributeError):
                    pass
            except (urllib.error.URLError, OSError) as e:
                message = str(getattr(e, "reason", e))
            except ValueError as e:
                raise KubeError(what, 200, "", "not JSON: %s" % e) from None
            if status == 401 and not reauth:
                reauth = True
                continue
            if status and status != 429 and status < 500:
                raise KubeError(what, status, reason, message)
            if retry_after and retry_after.isdigit():
                wait = max(wait, float(retry_after))
            if time.monotonic() + wait > end:
                raise KubeError(what, status, reason, message)
            time.sleep(wait)
            wait = min(wait * 2, 5.0)

    def get(self, path, missing_ok=False):
        try:
            return self.call("GET", path)
        except KubeError as e:
            if missing_ok and e.status == 404:
                return None
            raise

    def list(self, path, limit=PAGE_LIMIT, **query):
        """Every item of the list at PATH, read in pages of LIMIT items (limit, continue):
        a page must stay under BODY_MAX, so big objects want a smaller LIMIT."""
        items, query = [], dict(query, limit=limit)
        while True:
            page = self.call("GET", path, query=query)
            items += page.get("items") or []
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return items
            query["continue"] = cont

    def create(self, path, obj):
        return self.call("POST", path, obj)

    def replace(self, path, obj):
        return self.call("PUT", path, obj)

    def patch_merge(self, path, patch):
        return self.call("PATCH", path, patch, "application/merge-patch+json")

    def delete(self, path, propagation="Background"):
        """Deletes PATH (its dependents as PROPAGATION says); None when it was gone."""
        try:
            return self.call("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                              "propagationPolicy": propagation})
        except KubeError as e:
            if e.status == 404:
                return None
            raise
