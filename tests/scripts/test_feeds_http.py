# SPDX-License-Identifier: Apache-2.0
"""The feeds' HTTP client (scripts/supplylib/feeds/http.py) against the stand-in mirror:
each failure one line naming the URL and the cause: a status, a body cut short of its
Content-Length, an answer over the bound, a redirect loop, text that is not UTF-8; a
download whose digest differs from the index's is not kept; file:// is read."""
import os
import unittest

from feeds_test import Case

from supplylib.feeds import Input


class Client(Case):
    def test_status_is_one_line(self):
        msg = self.refused(self.http.get, self.mirror.url + "/missing")
        self.assertIn("/missing: HTTP 404", msg)

    def test_truncated_body_refused(self):
        self.mirror.files["/a"] = b"x" * 5000
        self.mirror.faults["/a"] = ("truncate", 1000)
        msg = self.refused(self.http.get, self.mirror.url + "/a")
        self.assertIn("ended after 1000 of the 5000 bytes its Content-Length announced", msg)

    def test_answer_over_the_bound_refused(self):
        self.mirror.files["/big"] = b"x" * 5000
        msg = self.refused(self.http.get, self.mirror.url + "/big", limit=4096)
        self.assertIn("the answer is 5000 bytes, more than the 4096 allowed", msg)

    def test_redirect_loop_named(self):
        self.mirror.faults["/r1"] = ("redirect", self.mirror.url + "/r2")
        self.mirror.faults["/r2"] = ("redirect", "/r1")
        msg = self.refused(self.http.get, self.mirror.url + "/r1")
        self.assertIn("redirect loop (%s/r1 -> %s/r2 -> %s/r1)" % ((self.mirror.url,) * 3), msg)

    def test_redirect_followed(self):
        self.mirror.files["/b"] = b"there"
        self.mirror.faults["/a"] = ("redirect", "/b")
        self.assertEqual(self.http.get(self.mirror.url + "/a"), b"there")

    def test_not_utf8_refused(self):
        self.mirror.files["/t"] = b"Package: x\n\xff\xfe"
        msg = self.refused(self.http.text, self.mirror.url + "/t")
        self.assertIn("is not UTF-8 text (byte 0xff at offset 11)", msg)

    def test_head_reads_only_what_is_asked(self):
        self.mirror.files["/h"] = bytes(range(256)) * 100
        self.mirror.faults["/h"] = ("ignore_range",)
        self.assertEqual(self.http.get(self.mirror.url + "/h", head=300),
                         (bytes(range(256)) * 2)[:300])

    def test_download_digest_mismatch_keeps_nothing(self):
        self.mirror.files["/f.deb"] = b"payload"
        dest = os.path.join(self.dir, "f.deb")
        msg = self.refused(self.http.download, self.mirror.url + "/f.deb", dest,
                           Input("u", sha256="0" * 64, size=7))
        self.assertIn("sha256 mismatch (the index says 0000", msg)
        self.assertEqual(os.listdir(self.dir), [])
        msg = self.refused(self.http.download, self.mirror.url + "/f.deb", dest,
                           Input("u", sha256="0" * 64, size=9))
        self.assertIn("7 bytes, the index says 9", msg)

    def test_file_url(self):
        p = os.path.join(self.dir, "x")
        with open(p, "wb") as f:
            f.write(b"local")
        self.assertEqual(self.http.get("file://" + p), b"local")
        self.assertIn("not an http, https or file URL", self.refused(self.http.get, "ftp://x/y"))


if __name__ == "__main__":
    unittest.main()
