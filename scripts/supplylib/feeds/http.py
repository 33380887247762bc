# SPDX-License-Identifier: Apache-2.0
"""The feeds' HTTP client: urllib with a timeout on every read, a bound on every answer's
size, redirects followed by hand (at most MAX_REDIRECTS, never back to a URL already asked,
never from https to another scheme), retries with backoff on 429, 5xx and transport
errors, and a body held to the Content-Length it announced. http, https and, for tests and
local mirrors, file:// URLs. Every failure is one FeedError line naming the URL."""
import hashlib
import http.client
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from .image import FeedError

CHUNK = 1 << 16
MAX_REDIRECTS = 5
DEFAULT_LIMIT = 256 << 20   # an index or a package: Debian's main Packages.xz is ~10 MiB
REDIRECTS = (301, 302, 303, 307, 308)
TRANSIENT = (429, 500, 502, 503, 504)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Hands a redirect back as the HTTPError it is: Http follows it itself."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class Http:
    def __init__(self, timeout=30.0, limit=DEFAULT_LIMIT, retries=2, backoff=1.0,
                 agent="nvidia-driver-installer-supply"):
        self.timeout = timeout
        self.limit = limit
        self.retries = retries
        self.backoff = backoff
        self.agent = agent
        self.opener = urllib.request.build_opener(_NoRedirect)

    # ---- one request ----

    def _open(self, url, headers):
        """The response to GET URL, redirects followed: (final URL, response)."""
        seen = [url]
        while True:
            scheme = urllib.parse.urlsplit(url).scheme
            if scheme not in ("http", "https", "file"):
                raise FeedError("GET %s: not an http, https or file URL" % url)
            req = urllib.request.Request(url, headers=dict(headers, **{"User-Agent": self.agent}))
            try:
                return url, self.opener.open(req, timeout=self.timeout)
            except urllib.error.HTTPError as e:
                if e.code not in REDIRECTS:
                    e.close()
                    raise _Status(url, e.code, e.reason)
                loc = e.headers.get("Location")
                e.close()
                if not loc:
                    raise FeedError("GET %s: HTTP %d without a Location" % (url, e.code))
                nxt = urllib.parse.urljoin(url, loc)
                nscheme = urllib.parse.urlsplit(nxt).scheme
                if nscheme not in ("http", "https") or (scheme == "https" and nscheme != scheme):
                    raise FeedError("GET %s: redirected to %s, another scheme: refused" % (
                        seen[0], nxt))
                if nxt in seen:
                    raise FeedError("GET %s: redirect loop (%s): fix the feed's URL or the "
                                    "mirror" % (seen[0], " -> ".join(seen + [nxt])))
                if len(seen) > MAX_REDIRECTS:
                    raise FeedError("GET %s: more than %d redirects: fix the feed's URL" % (
                        seen[0], MAX_REDIRECTS))
                seen.append(nxt)
                url = nxt
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                if scheme == "file":    # a local file: nothing to wait for
                    raise FeedError("GET %s: %s" % (url, getattr(e, "reason", e))) from None
                raise _Transport(url, getattr(e, "reason", e))

    def _read(self, url, r, limit, sink, head=None):
        """R's body into SINK, at most LIMIT bytes; the whole of what Content-Length
        announced (HEAD: only the first HEAD bytes wanted, the rest left unread)."""
        length = r.headers.get("Content-Length")
        try:
            length = int(length) if length is not None else None
        except ValueError:
            raise FeedError("GET %s: Content-Length %r is not a number" % (url, length))
        if head is None and length is not None and length > limit:
            raise FeedError("GET %s: the answer is %d bytes, more than the %d allowed: refused"
                            % (url, length, limit))
        n = 0
        while True:
            want = CHUNK if head is None else min(CHUNK, head - n)
            if want <= 0:
                return n
            try:
                chunk = r.read(want)
            except (OSError, http.client.HTTPException) as e:
                raise _Transport(url, "the answer was cut off after %d bytes (%s)" % (n, e))
            if not chunk:
                break
            n += len(chunk)
            if n > limit:
                raise FeedError("GET %s: the answer is more than the %d bytes allowed: refused"
                                % (url, limit))
            sink(chunk)
        if length is not None and n != length and head is None:
            raise _Transport(url, "the answer ended after %d of the %d bytes its "
                             "Content-Length announced (a transfer cut short)" % (n, length))
        return n

    def _with_retries(self, url, attempt):
        for i in range(self.retries + 1):
            try:
                return attempt()
            except (_Status, _Transport) as e:
                transient = isinstance(e, _Transport) or e.code in TRANSIENT
                if not transient or i == self.retries:
                    raise FeedError(str(e)) from None
                time.sleep(self.backoff * (2 ** i))

    # ---- what the feeds call ----

    def get(self, url, limit=None, head=None):
        """GET URL's body, bytes; at most LIMIT (default the client's). HEAD: only its
        first HEAD bytes are wanted (a Range request; a server that ignores Range is read
        no further)."""
        limit = limit or self.limit

        def attempt():
            parts = []
            hdrs = {"Range": "bytes=0-%d" % (head - 1)} if head else {}
            final, r = self._open(url, hdrs)
            with r:
                self._read(final, r, limit if head is None else head, parts.append, head)
            return b"".join(parts)
        return self._with_retries(url, attempt)

    def text(self, url, limit=None):
        """GET URL's body as UTF-8 text; refused when it is not."""
        return decode(self.get(url, limit), url)

    def download(self, url, dest, expect=None, limit=None):
        """URL into DEST (through a .part file, renamed once whole and checked): its size and
        digests must be those EXPECT (an Input) states. Returns DEST's SHA-256."""
        limit = limit or self.limit
        if expect is not None and expect.size is not None and expect.size > limit:
            raise FeedError("%s: the index says %d bytes, more than the %d allowed: refused"
                            % (url, expect.size, limit))
        # A name of this process's own: two passes sharing a cache never write one file.
        part = "%s.%d.%d.part" % (dest, os.getpid(), threading.get_ident())

        def attempt():
            sha, md5 = hashlib.sha256(), hashlib.md5()
            final, r = self._open(url, {})
            with r, open(part, "wb") as f:
                def sink(chunk):
                    f.write(chunk)
                    sha.update(chunk)
                    md5.update(chunk)
                n = self._read(final, r, limit, sink)
            return n, sha.hexdigest(), md5.hexdigest()
        try:
            n, sha, md5 = self._with_retries(url, attempt)
            if expect is not None:
                check(url, expect, n, sha, md5)
        except BaseException:
            if os.path.exists(part):
                os.unlink(part)
            raise
        os.replace(part, dest)
        return sha


def check(url, expect, size, sha256, md5):
    """Refuses bytes of another size or digest than EXPECT (an Input) states."""
    if expect.size is not None and size != expect.size:
        raise FeedError("%s: %d bytes, the index says %d: refused (a truncated or altered "
                        "file; nothing kept)" % (url, size, expect.size))
    for name, want, got in (("sha256", expect.sha256, sha256), ("md5", expect.md5, md5)):
        if want is not None and want.lower() != got:
            raise FeedError("%s: %s mismatch (the index says %s, the bytes hash to %s): "
                            "refused, nothing kept" % (url, name, want, got))


def file_digest(path, algo):
    """The hex digest ALGO ("sha256", "md5") of the file PATH."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, algo).hexdigest()


def decode(data, where):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FeedError("%s is not UTF-8 text (byte 0x%02x at offset %d): refused" % (
            where, data[e.start], e.start)) from None


class _Status(Exception):
    def __init__(self, url, code, reason):
        super().__init__("GET %s: HTTP %d %s" % (url, code, reason or ""))
        self.code = code

    def __str__(self):
        return self.args[0].rstrip()


class _Transport(Exception):
    def __init__(self, url, why):
        super().__init__("GET %s: %s" % (url, why))
