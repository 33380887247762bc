# SPDX-License-Identifier: Apache-2.0
"""make-repo --to oci://... (scripts/repo_push.py): the push runs the installer's mirror
with the repository, the public half of --key, the target, --ca-file and --registry-auth,
after the index switch and under the publish lock; what it needs is refused before anything
is written; a push that fails is one line naming the installer's error, exit 1, the local
publish kept, and a publish with --to and no stage directory pushes again. The installer is
a stand-in here that records what it was given and what it saw (t_make_repo_oci pushes to a
real registry)."""
import json
import os
import stat
import subprocess
import unittest

from test_publish import MAKE_REPO, Case, run

import repo_push

# The stand-in: its argv, the key file's bytes, whether the publish lock was free, and the
# index served, written to $FAKE_LOG as JSON; its summary on stdout, its log on stderr, and
# with $FAKE_RC an ERROR line and that exit status.
FAKE = r"""#!/usr/bin/env python3
import fcntl, json, os, sys
a = sys.argv[1:]
repo = a[a.index("--from") + 1][len("file://"):]
fd = os.open(os.path.join(repo, ".publish.lock"), os.O_RDWR)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    free = True
except BlockingIOError:
    free = False
with open(a[a.index("--repo-key") + 1]) as f:
    key = f.read()
with open(os.path.join(repo, "index.json")) as f:
    index = json.load(f)
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"argv": a, "key": key, "lock_free": free, "index": index,
                        "log_format": os.environ.get("NVIDIA_INSTALLER_LOG_FORMAT")}) + "\n")
print("mirrored 1 package(s), 0 already present, to %s" % a[a.index("--to") + 1])
print("INFO mirror: pushing (to=%s)" % a[a.index("--to") + 1], file=sys.stderr)
rc = int(os.environ.get("FAKE_RC") or 0)
if rc:
    print("ERROR mirror: registry 127.0.0.1:5000 refused the credentials (exit %d)" % rc,
          file=sys.stderr)
    print("  a line after it", file=sys.stderr)
sys.exit(rc)
"""
TARGET = "oci://127.0.0.1:5000/nvidia/drivers:v1"


class Push(Case):
    def setUp(self):
        super().setUp()
        self.fake = self.path("fake-installer")
        with open(self.fake, "w") as f:
            f.write(FAKE)
        os.chmod(self.fake, 0o755)
        self.log = self.path("fake.log")
        self.env = {"FAKE_LOG": self.log, "FAKE_RC": "", "NVIDIA_INSTALLER_LOG_FORMAT": "json"}

    def pushes(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(l) for l in f]

    def push_args(self, *extra):
        return ["--to", TARGET, "--installer", self.fake] + list(extra)

    def test_pushed_after_the_switch_under_the_lock(self):
        repo = self.path("repo")
        ca, auth1, auth2 = (self.path(n) for n in ("ca.pem", "a.json", "b.json"))
        for p in (ca, auth1, auth2):
            open(p, "w").close()
        p = self.ok(self.publish(repo, self.stage("s", "6.1.0-1-amd64"), env=self.env,
                                 extra=self.push_args("--ca-file", ca, "--registry-auth",
                                                      auth1, "--registry-auth", auth2)))
        (got,) = self.pushes()
        self.assertEqual(got["argv"][:2], ["mirror", "--from"])
        self.assertEqual(got["argv"][2], "file://" + os.path.realpath(repo))
        self.assertEqual(got["argv"][3], "--repo-key")
        self.assertEqual(got["argv"][5:], ["--to", TARGET, "--ca-file", ca, "--registry-auth",
                                           auth1, "--registry-auth", auth2])
        with open(self.pub) as f:
            self.assertEqual(got["key"], f.read(), "the public half of --key")
        self.assertFalse(got["lock_free"], "the push runs under the publish lock")
        self.assertEqual(self.kernels(got["index"]), ["6.1.0-1-amd64"],
                         "the push reads the index after the switch")
        self.assertEqual(got["log_format"], "text", "the installer's errors read as text")
        # make-repo's stdout is its paths alone; the installer's summary went to stderr.
        self.assertEqual(p.stdout.split(), ["packages/6.1.0-1-amd64/x86_64/"
                                            "nvidia-535.261.03-debian-proprietary.tar.zst"])
        self.assertIn("mirrored 1 package(s)", p.stderr)
        self.assertFalse(os.path.exists(got["argv"][4]), "the key file is removed")

    def test_failed_push_keeps_the_publish(self):
        repo = self.path("repo")
        p = self.publish(repo, self.stage("s", "6.1.0-1-amd64"),
                         env=dict(self.env, FAKE_RC="4"), extra=self.push_args())
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout.split(), ["packages/6.1.0-1-amd64/x86_64/"
                                            "nvidia-535.261.03-debian-proprietary.tar.zst"],
                         "what was published is said before the push")
        last = p.stderr.strip().splitlines()[-1]
        self.assertRegex(last, r"^make-repo: the push to %s failed \(fake-installer mirror, "
                         r"exit 4: ERROR mirror: registry 127.0.0.1:5000 refused the "
                         r"credentials \(exit 4\)\); .* is published here: run the publish "
                         r"again to push what the registry lacks$" % TARGET)
        idx, raw = self.served(repo)
        self.assertEqual(self.kernels(idx), ["6.1.0-1-amd64"], "the local publish stays")
        self.installer_accepts(repo, self.path("mirror"))
        # The re-run: no stage directory, the repository pushed as it is, the index unchanged.
        self.ok(run(["publish", "--repo", repo, "--key", self.key] + self.push_args(),
                    env=self.env))
        self.assertEqual(self.served(repo)[1], raw)
        self.assertEqual(len(self.pushes()), 2)
        self.assertEqual(self.kernels(self.pushes()[1]["index"]), ["6.1.0-1-amd64"])

    def test_refused_before_anything_is_written(self):
        repo = self.path("repo")
        stage = self.stage("s", "6.1.0-1-amd64")
        auth = self.path("auth.json")
        open(auth, "w").close()
        bad = [
            (["--to", "https://r.example.com/nvidia"], "give a registry repository"),
            (["--to", "oci://r.example.com"], "the registry host 'r.example.com' is not"),
            (["--to", "oci://user:pw@r.example.com/nvidia"], "credentials in the reference"),
            (["--to", "oci://r.example.com/Nvidia"], "part 'Nvidia'"),
            (["--to", "oci://r.example.com/a//b"], "part ''"),
            (["--to", "oci://r.example.com/a/../b"], "part '..'"),
            (["--to", "oci://r.example.com/a:b:c"], "the tag 'b:c'"),
            (["--to", "oci://r.example.com/a?x=1"], "a query or fragment"),
            (["--to", "oci://r.example.com/a@sha256:" + "0" * 64], "not a digest"),
            (["--to", TARGET, "--installer", self.path("none")], "is not an executable file"),
            (["--to", TARGET, "--installer", self.fake, "--registry-auth", self.path("no")],
             "--registry-auth %s cannot be read" % self.path("no")),
            (["--to", TARGET, "--installer", self.fake, "--ca-file", self.path("no")],
             "--ca-file %s cannot be read" % self.path("no")),
        ]
        for extra, words in bad:
            p = self.publish(repo, stage, env=self.env, extra=extra)
            self.assertEqual(p.returncode, 2, (extra, p.stderr))
            self.assertIn(words, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertFalse(os.path.exists(repo), "%s: written before the refusal" % extra)
        self.assertEqual(self.pushes(), [])
        # No stage directory: only with --to, and only where there is an index to push.
        p = run(["publish", "--repo", repo, "--key", self.key])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("give the STAGE_DIRs to publish", p.stderr)
        p = run(["publish", "--repo", repo, "--key", self.key] + self.push_args(), env=self.env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("has no index.json to push", p.stderr)
        self.assertEqual(self.pushes(), [])

    def test_installer_found(self):
        """--installer, else $MAKE_REPO_INSTALLER, else the checkout's build/ or PATH."""
        repo = self.path("repo")
        self.ok(self.publish(repo, self.stage("s", "6.1.0-1-amd64"),
                             env=dict(self.env, MAKE_REPO_INSTALLER=self.fake),
                             extra=["--to", TARGET]))
        self.assertEqual(len(self.pushes()), 1)
        p = self.publish(repo, self.stage("t", "6.1.0-2-amd64"),
                         env=dict(self.env, MAKE_REPO_INSTALLER=self.path("none")),
                         extra=["--to", TARGET])
        self.assertEqual(p.returncode, 2)
        self.assertIn("$MAKE_REPO_INSTALLER %s is not an executable file" % self.path("none"),
                      p.stderr)
        os.environ.pop("MAKE_REPO_INSTALLER", None)
        os.environ["PATH"], old = self.dir + os.pathsep + os.environ["PATH"], os.environ["PATH"]
        self.addCleanup(os.environ.__setitem__, "PATH", old)
        os.symlink(self.fake, self.path("nvidia-driver-installer"))
        got = repo_push.installer_of(None)
        built = os.path.realpath(os.path.join(os.path.dirname(MAKE_REPO), "..", "build",
                                              "nvidia-driver-installer"))
        self.assertIn(got, (built, os.path.realpath(self.fake)))

    def test_each_target_and_sign(self):
        repo = self.path("repo")
        other = "oci://[::1]:5000/mirror/nvidia"
        self.ok(self.publish(repo, self.stage("s", "6.1.0-1-amd64"), env=self.env,
                             extra=self.push_args("--to", other)))
        self.assertEqual([p["argv"][6] for p in self.pushes()], [TARGET, other])
        self.ok(run(["sign", "--repo", repo, "--key", self.key] + self.push_args(),
                    env=self.env))
        self.assertEqual(len(self.pushes()), 3)
        self.assertFalse(self.pushes()[2]["lock_free"])
        # A second target that fails fails the command, after the first was pushed.
        p = run(["sign", "--repo", repo, "--key", self.key, "--to", TARGET, "--to", other,
                 "--installer", self.fake], env=dict(self.env, FAKE_RC="5"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("the push to %s failed" % TARGET, p.stderr)

    def test_installer_that_cannot_run(self):
        repo = self.path("repo")
        broken = self.path("broken")
        with open(broken, "w") as f:
            f.write("#!/nonexistent/interpreter\n")
        os.chmod(broken, stat.S_IRWXU)
        p = self.publish(repo, self.stage("s", "6.1.0-1-amd64"), env=self.env,
                         extra=["--to", TARGET, "--installer", broken])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot be run", p.stderr)
        self.assertEqual(self.kernels(self.served(repo)[0]), ["6.1.0-1-amd64"])


class Targets(unittest.TestCase):
    def test_good(self):
        for t in ("oci://r.example.com/nvidia", "oci://127.0.0.1:5000/a/b-c/d__e:v1.2_x",
                  "oci://europe-docker.pkg.dev/proj/repo/drivers:latest",
                  "oci://[::1]:5000/x"):
            self.assertEqual(repo_push.check_target(t), t)

    def test_error_line(self):
        self.assertEqual(repo_push.error_line(["INFO a\n", "ERROR b\n", "  hint\n"]), "ERROR b")
        self.assertEqual(repo_push.error_line(["INFO a\n", "\n"]), "INFO a")
        self.assertIsNone(repo_push.error_line([]))


if __name__ == "__main__":
    unittest.main()
