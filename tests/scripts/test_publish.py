# SPDX-License-Identifier: Apache-2.0
"""make-repo publish (scripts/make-repo, scripts/repo_publish.py): staged builds published
by processes that meet or are killed. Two publishes at once each keep the other's package;
a publish killed at every step it reaches (SIGKILL, MAKE_REPO_CRASH_AT) leaves served the
previous index or the new one whole, never an older one, and the next publish finishes
the job and leaves nothing behind. What is served is checked with openssl and, where the
installer is built (build/nvidia-driver-installer, or NDI_INSTALLER), by the installer's
own reader: `mirror` verifies the signature, refuses an index older than the one it holds
(anti-rollback) and checks every package against the index."""
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import types
import unittest

from bdp_test import SCRIPTS

from bdp import record
from bdp.common import Usage

MAKE_REPO = os.path.join(SCRIPTS, "make-repo")
INSTALLER = os.environ.get("NDI_INSTALLER") or os.path.realpath(
    os.path.join(SCRIPTS, "..", "build", "nvidia-driver-installer"))
HAVE_INSTALLER = os.access(INSTALLER, os.X_OK)
VERSION = "535.261.03"


def run(args, env=None, **kw):
    return subprocess.run([MAKE_REPO] + args, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), **kw)


class Case(unittest.TestCase):
    """A key pair, a scratch directory, and staging, publishing and reading what is served
    (test_repo_push.py's too)."""

    @classmethod
    def setUpClass(cls):
        cls.keys = tempfile.mkdtemp(prefix="test-publish-keys-")
        cls.key = os.path.join(cls.keys, "key.pem")
        cls.pub = os.path.join(cls.keys, "pub.pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-out", cls.key], check=True,
                       capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", cls.key, "-pubout", "-out", cls.pub],
                       check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.keys, True)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test-publish-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def package(self, name, content):
        """A package of one file, CONTENT, packed by make-repo pack."""
        tree = self.path("tree-" + name)
        os.makedirs(os.path.join(tree, "kernel"))
        with open(os.path.join(tree, "kernel", "nvidia.ko"), "w") as f:
            f.write(content)
        out = self.path(name + ".tar.zst")
        self.ok(run(["pack", tree, out]))
        return out

    def ok(self, p):
        self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def stage(self, name, kernel, content=None, extra=()):
        """A stage directory NAME holding one package for KERNEL."""
        d = self.path(name)
        self.ok(run(["stage", "--to", d, "--version", VERSION, "--kernel", kernel,
                     "--module-type", "proprietary", "--os", "debian"] + list(extra) +
                    [self.package(name, content or name)]))
        return d

    def publish(self, repo, *stages, env=None, extra=()):
        return run(["publish", "--repo", repo, "--key", self.key] + list(extra) + list(stages),
                   env=env)

    def served(self, repo):
        """(index as parsed, its bytes) of what a reader gets now, after checking that the
        signature beside it verifies; (None, None) where no index is served."""
        index, sig = os.path.join(repo, "index.json"), os.path.join(repo, "index.json.sig")
        if not os.path.exists(index):       # a signature alone is no index to a reader
            return None, None
        v = subprocess.run(["openssl", "dgst", "-sha256", "-verify", self.pub, "-signature",
                            sig, index], capture_output=True, text=True)
        self.assertEqual(v.returncode, 0, "the served pair does not verify: " + v.stderr)
        with open(index, "rb") as f:
            raw = f.read()
        return json.loads(raw), raw

    def kernels(self, idx):
        return sorted(p["kernel"] for d in idx["drivers"] for p in d["packages"])

    def installer_accepts(self, repo, mirror):
        """The installer's reader (mirror) takes what REPO serves into MIRROR, which holds
        what it accepted before: signature, anti-rollback, every package's digest."""
        if not HAVE_INSTALLER:
            return
        p = subprocess.run([INSTALLER, "mirror", "--repo", "file://" + os.path.abspath(repo),
                            "--repo-key", self.pub, "--to", mirror, "--fetch-retries", "0"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, "the installer refuses what %s serves: %s" % (
            repo, p.stderr))

    def leftovers(self, repo):
        """What a killed pass could leave: temporary files and generations not served."""
        out = []
        for d, dirs, files in os.walk(repo):
            out += [os.path.join(d, n) for n in files + dirs if n.startswith(".publish-")
                    and n.endswith(".tmp")]
        gens = os.path.join(repo, "index.gen")
        if os.path.isdir(gens):
            current = os.readlink(os.path.join(gens, "current"))  # never dangling
            out += [n for n in os.listdir(gens) if n not in ("current", current)]
        return out

    def reap(self, proc):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


class Publish(Case):
    # Two publishes at once: the second waits for the first's lock, re-reads the index it
    # wrote and merges; neither loses the other's package.
    def test_two_at_once(self):
        repo = self.path("repo")
        self.ok(self.publish(repo, self.stage("base", "6.1.0-1-amd64")))
        a, b = self.stage("a", "6.1.0-2-amd64"), self.stage("b", "6.1.0-3-amd64")
        first = subprocess.Popen([MAKE_REPO, "publish", "--repo", repo, "--key", self.key, a],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, MAKE_REPO_STOP_AT="merged"))
        self.addCleanup(self.reap, first)
        _, status = os.waitpid(first.pid, os.WUNTRACED)   # it read the index, merged, stopped
        self.assertTrue(os.WIFSTOPPED(status), "the first publish ended before its merge")
        second = subprocess.Popen([MAKE_REPO, "publish", "--repo", repo, "--key", self.key, b],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.reap, second)
        said = second.stderr.readline()   # it waits for the lock (or, without one, ends)
        os.kill(first.pid, signal.SIGCONT)
        self.assertEqual(first.wait(), 0, first.stderr.read())
        self.assertEqual(second.wait(), 0, said + second.stderr.read())
        idx, _ = self.served(repo)
        self.assertEqual(self.kernels(idx), ["6.1.0-1-amd64", "6.1.0-2-amd64", "6.1.0-3-amd64"])
        self.assertRegex(said, r"^make-repo: waiting for the publish lock .*\.publish\.lock "
                         r"\(make-repo publish, pid %d on " % first.pid)
        self.installer_accepts(repo, self.path("mirror"))
        self.assertEqual(self.leftovers(repo), [])

    def trial(self, base, stage, crash, mirror):
        """Publishes STAGE into a copy of BASE, killed at step CRASH; checks what is served,
        then that the next publish finishes. Returns the steps the publish reached."""
        repo = self.path("trial")
        shutil.rmtree(repo, True)
        if os.path.exists(base):
            shutil.copytree(base, repo, symlinks=True)
        before, before_raw = self.served(repo) if os.path.exists(repo) else (None, None)
        shutil.rmtree(mirror, True)
        if before is not None:
            self.installer_accepts(repo, mirror)
        trace = self.path("steps")
        if os.path.exists(trace):
            os.unlink(trace)
        env = {"MAKE_REPO_STEPS": trace}
        if crash:
            env["MAKE_REPO_CRASH_AT"] = crash
        p = self.publish(repo, stage, env=env)
        with open(trace) as f:
            steps = f.read().split()
        if crash:
            self.assertEqual(p.returncode, -signal.SIGKILL, "not killed at %s: %s" % (
                crash, p.stderr))
            self.assertEqual(steps[-1], crash if "#" in crash else crash + "#1")
            # Served: the previous index, byte for byte, or the new one whole, never older.
            idx, raw = self.served(repo)
            if raw != before_raw:
                self.assertIn("6.1.0-9-amd64", self.kernels(idx), "killed at %s" % crash)
                self.assertGreater(idx["generated"], (before or {}).get("generated", ""))
            if idx is not None:
                self.installer_accepts(repo, mirror)
            p = self.publish(repo, stage)
        self.ok(p)
        idx, _ = self.served(repo)
        self.assertIn("6.1.0-9-amd64", self.kernels(idx), "after a kill at %s" % crash)
        if before is not None:
            self.assertGreater(idx["generated"], before["generated"])
            self.assertEqual(len(self.kernels(idx)), len(self.kernels(before)) + 1)
        self.installer_accepts(repo, mirror)
        self.assertEqual(self.leftovers(repo), [], "after a kill at %s" % crash)
        return steps

    def killed_at_every_step(self, base, expect):
        stage = self.stage("new", "6.1.0-9-amd64")
        mirror = self.path("mirror")
        steps = self.trial(base, stage, None, mirror)
        for name in expect:
            self.assertIn(name, steps)
        for crash in steps:
            with self.subTest(crash=crash):
                self.trial(base, stage, crash, mirror)

    def test_killed_new_repository(self):
        self.killed_at_every_step(self.path("none"), ["package-placed#1", "link-made#3"])

    def test_killed_generations(self):
        base = self.path("base")
        self.ok(self.publish(base, self.stage("old", "6.1.0-1-amd64")))
        self.killed_at_every_step(base, ["package-copied#1", "merged#1", "switched#1"])

    def test_killed_files_of_their_own(self):
        """A repository from before generations (index.json and its signature plain files,
        as make-repo wrote them) moves over without a reader seeing other bytes."""
        base = self.path("base")
        self.ok(self.publish(base, self.stage("old", "6.1.0-1-amd64")))
        for name in ("index.json", "index.json.sig"):
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                data = f.read()
            os.unlink(path)
            with open(path, "wb") as f:
                f.write(data)
        shutil.rmtree(os.path.join(base, "index.gen"))
        self.killed_at_every_step(base, ["migrated-generation#1", "migrated-sig#1",
                                         "migrated-index#1", "link-made#4"])

    def test_published_again_is_nothing(self):
        repo = self.path("repo")
        st = self.stage("a", "6.1.0-2-amd64")
        first = self.ok(self.publish(repo, st)).stdout
        _, raw = self.served(repo)
        gen = os.readlink(os.path.join(repo, "index.gen", "current"))
        self.assertEqual(self.ok(self.publish(repo, st)).stdout, first)
        self.assertEqual(self.served(repo)[1], raw)
        self.assertEqual(os.readlink(os.path.join(repo, "index.gen", "current")), gen)

    def test_name_taken_by_other_bytes(self):
        """A build of the same name with other bytes never replaces the file the index
        names: it gets its digest in its name."""
        repo = self.path("repo")
        self.ok(self.publish(repo, self.stage("a", "6.1.0-2-amd64", "one build")))
        idx, _ = self.served(repo)
        old = idx["drivers"][0]["packages"][0]
        with open(os.path.join(repo, old["path"]), "rb") as f:
            old_bytes = f.read()
        rel = self.ok(self.publish(repo, self.stage("b", "6.1.0-2-amd64", "another"))).stdout
        idx, _ = self.served(repo)
        new = idx["drivers"][0]["packages"][0]
        self.assertEqual(rel.strip(), new["path"])
        self.assertEqual(new["path"], old["path"].replace(
            ".tar.zst", "-%s.tar.zst" % new["sha256"][:16]))
        with open(os.path.join(repo, old["path"]), "rb") as f:
            self.assertEqual(f.read(), old_bytes)
        self.installer_accepts(repo, self.path("mirror"))

    def test_lock_held(self):
        repo = self.path("repo")
        os.makedirs(repo)
        with open(os.path.join(repo, ".publish.lock"), "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write("make-repo publish, pid 4242 on builder-7, since 2026-12-06T18:00:00Z\n")
            f.flush()
            p = self.publish(repo, self.stage("a", "6.1.0-2-amd64"),
                             extra=["--lock-wait", "0.2"])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.splitlines()[-1], "make-repo: the publish lock %s/.publish"
                         ".lock is held by make-repo publish, pid 4242 on builder-7, since "
                         "2026-12-06T18:00:00Z, past 0.2 seconds of waiting: let that publish "
                         "end (or stop it), then run again, or wait longer (--lock-wait)" % repo)
        self.assertFalse(os.path.exists(os.path.join(repo, "index.json")))

    def test_signing_fails(self):
        """A key openssl cannot sign with: exit 1 in one line, the index served as it was,
        nothing left behind."""
        repo = self.path("repo")
        self.ok(self.publish(repo, self.stage("a", "6.1.0-2-amd64")))
        _, raw = self.served(repo)
        bad = self.path("bad.pem")
        with open(bad, "w") as f:
            f.write("not a key\n")
        p = run(["publish", "--repo", repo, "--key", bad, "--new-key",
                 self.stage("b", "6.1.0-3-amd64")])
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"^make-repo: signing the index of %s failed with --key %s: "
                         r".+: give the repository's private key \(a PEM file or a pkcs11: "
                         r"URI\)\n$" % (re.escape(repo), re.escape(bad)))
        self.assertEqual(self.served(repo)[1], raw)
        self.assertEqual(self.leftovers(repo), [])

    def test_generated_moves_forward(self):
        """An index dated ahead of this clock (another publisher's, a clock set back): the
        next one is dated a microsecond after it, never before."""
        repo = self.path("repo")
        self.ok(self.publish(repo, self.stage("a", "6.1.0-2-amd64")))
        idx, _ = self.served(repo)
        idx["generated"] = "2099-01-01T00:00:00.999999Z"
        with open(self.path("future.json"), "w") as f:
            json.dump(idx, f)
        with open(os.path.join(repo, "index.json"), "w") as f:   # through the link
            json.dump(idx, f)
        self.ok(run(["sign", "--repo", repo, "--key", self.key, "--new-key"]))
        self.assertEqual(self.served(repo)[0]["generated"], "2099-01-01T00:00:01.000000Z")
        self.ok(self.publish(repo, self.stage("b", "6.1.0-3-amd64")))
        self.assertEqual(self.served(repo)[0]["generated"], "2099-01-01T00:00:01.000001Z")

    def test_stage_refused(self):
        repo = self.path("repo")
        st = self.stage("a", "6.1.0-2-amd64")
        with open(os.path.join(st, "stage.json")) as f:
            rec = json.load(f)
        with open(os.path.join(st, rec["packages"][0]["file"]), "ab") as f:
            f.write(b"x")
        p = self.publish(repo, st)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"^make-repo: .*nvidia-535.261.03-debian-proprietary\.tar"
                         r"\.zst is missing or not what .*stage\.json says \(size, sha256\): "
                         r"stage it again\n$")
        other = self.stage("b", "6.1.0-3-amd64", extra=["--repository", "elsewhere"])
        p = self.publish(repo, other, extra=["--repository", "here"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("the staged builds are for repository elsewhere, not --repository here",
                      p.stderr)
        self.assertEqual(self.publish(repo).returncode, 2)   # usage: no stage directory

    def test_check_stage(self):
        """check-stage judges each stage directory alone, as publish reads it."""
        good = self.stage("a", "6.1.0-2-amd64")
        torn = self.stage("b", "6.1.0-3-amd64")
        with open(os.path.join(torn, "stage.json")) as f:
            rec = json.load(f)
        with open(os.path.join(torn, rec["packages"][0]["file"]), "ab") as f:
            f.write(b"x")
        empty = self.path("c")
        os.makedirs(empty)
        other = self.stage("d", "6.1.0-4-amd64", extra=["--repository", "elsewhere"])
        p = run(["check-stage", "--repository", "here", good, torn, empty, other])
        self.assertEqual(p.returncode, 1, p.stderr)
        got = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual([g["stage"] for g in got], [good, torn, empty, other])
        self.assertIsNone(got[0]["refused"])
        self.assertRegex(got[1]["refused"], r"is missing or not what .*stage\.json says")
        self.assertIn("stage.json: [Errno 2]", got[2]["refused"])
        self.assertIn("for repository elsewhere, not --repository here", got[3]["refused"])
        p = run(["check-stage", good, other])
        self.assertEqual((p.returncode, p.stderr), (0, ""))

    def test_dot_names_refused(self):
        """'.', '..' and a leading '.' as a kernel, arch, os or build are refused by stage,
        and by publish in a stage record made by hand: nothing is written outside the
        repository."""
        pkg = self.package("p", "p")
        for opt, value in (("--kernel", ".."), ("--arch", ".."), ("--kernel", "."),
                           ("--arch", ".hidden"), ("--os", ".."), ("--os-build", "..")):
            with self.subTest(opt=opt, value=value):
                d = self.path("s" + opt + value)
                args = {"--kernel": "6.1.0-2-amd64", "--os": "debian"}
                args[opt] = value
                p = run(["stage", "--to", d, "--version", VERSION, "--module-type",
                         "proprietary"] + [x for kv in args.items() for x in kv] + [pkg])
                self.assertEqual(p.returncode, 2, p.stderr)        # as any bad option
                self.assertIn("%s '%s'" % (opt[2:], value), p.stderr)
                self.assertFalse(os.path.exists(os.path.join(d, "stage.json")))
        # A stage record made by hand: packages/../../nvidia-....tar.zst
        st = self.stage("a", "6.1.0-2-amd64")
        with open(os.path.join(st, "stage.json")) as f:
            rec = json.load(f)
        e = rec["packages"][0]
        base = os.path.basename(e["file"])
        e.update(kernel="..", arch="..", file="packages/../../" + base)
        shutil.copyfile(os.path.join(st, "packages", "6.1.0-2-amd64", "x86_64", base),
                        os.path.join(st, e["file"]))
        with open(os.path.join(st, "stage.json"), "w") as f:
            json.dump(rec, f)
        os.makedirs(self.path("r"))
        repo = self.path("r", "repo")
        p = self.publish(repo, st)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("kernel '..' is not a name a path can carry", p.stderr)
        self.assertEqual(os.listdir(self.path("r")), [])
        # and the placing itself keeps to REPO/packages, whatever its caller checked
        import repo_publish
        os.makedirs(repo)
        with self.assertRaisesRegex(repo_publish.Failure, "not under .*/packages"):
            repo_publish.place_package(repo, os.path.join(st, e["file"]), e["file"],
                                       e["sha256"])
        self.assertEqual(os.listdir(self.path("r")), ["repo"])

    def test_record(self):
        """The stage record: what add would write into the index, and where."""
        st = self.stage("a", "6.1.0-2-amd64", extra=["--tag", "default", "--repository", "r1"])
        with open(os.path.join(st, "stage.json")) as f:
            rec = json.load(f)
        self.assertEqual(rec["stage"], 1)
        (e,) = rec["packages"]
        self.assertEqual(e["file"], "packages/6.1.0-2-amd64/x86_64/"
                         "nvidia-535.261.03-debian-proprietary.tar.zst")
        self.assertEqual({k: e[k] for k in ("version", "kernel", "arch", "os", "module_type",
                                            "tags", "repository")},
                         {"version": VERSION, "kernel": "6.1.0-2-amd64", "arch": "x86_64",
                          "os": "debian", "module_type": "proprietary", "tags": ["default"],
                          "repository": "r1"})
        self.assertEqual(e["size"], os.path.getsize(os.path.join(st, e["file"])))
        self.assertEqual(e["unpacked_size"] % 512, 0)


class Destination(unittest.TestCase):
    """build-driver-package: --repo with --repo-key, or --stage-to, one of them."""

    def check(self, **kw):
        b = types.SimpleNamespace(**dict({"repo": None, "repo_key": None, "stage_to": None},
                                         **kw))
        record.check_destination(b)

    def test_one_of_them(self):
        self.check(repo="r", repo_key="k.pem")
        self.check(stage_to="st")
        with self.assertRaisesRegex(Usage, "^--stage-to leaves the index alone"):
            self.check(repo="r", repo_key="k.pem", stage_to="st")
        with self.assertRaisesRegex(Usage, r"^give --repo DIR and --repo-key KEY\.pem"):
            self.check(repo="r")


if __name__ == "__main__":
    sys.exit(unittest.main())
