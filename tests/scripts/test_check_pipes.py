# SPDX-License-Identifier: Apache-2.0
"""Unit tests of scripts/check-pipes (make lint: no reader that leaves a pipe early in a
script run under pipefail) and of what it tells a test to write instead, grepq
(tests/tools/pipes.sh): a writer that outlives grep -q fails the pipeline, and grepq's does
not."""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True
ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PIPES = os.path.join(ROOT, "tests", "tools", "pipes.sh")


def load_check_pipes():
    path = os.path.join(ROOT, "scripts", "check-pipes")
    loader = importlib.machinery.SourceFileLoader("check_pipes", path)
    spec = importlib.util.spec_from_loader("check_pipes", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


check_pipes = load_check_pipes()

# A writer that cannot finish before its reader leaves: a line to match, then 1 MiB, more
# than the pipe holds (64 KiB) and grep reads at once; so once grep -q has left, its next
# write meets a pipe with no reader, whatever the scheduler does.
WRITER = "{ echo present; head -c 1048576 /dev/zero | tr '\\0' x; echo; }"


def bash(script):
    return subprocess.run(["bash", "-c", f"set -o pipefail; . {PIPES}; {script}"],
                          capture_output=True, text=True, timeout=60).returncode


class Grepq(unittest.TestCase):
    def test_grep_q_fails_the_pipeline(self):
        # What the lint is for: the line is there, and the pipeline fails all the same.
        self.assertNotEqual(bash(f"{WRITER} | grep -q present"), 0)
        # ... and a negated check passes although the line is there.
        self.assertEqual(bash(f"! {WRITER} | grep -q present"), 0)

    def test_grepq_found(self):
        self.assertEqual(bash(f"{WRITER} | grepq present"), 0)
        self.assertEqual(bash(f"{WRITER} | grepq -x present"), 0)
        self.assertEqual(bash(f"! {WRITER} | grepq present"), 1)

    def test_grepq_not_found(self):
        self.assertEqual(bash(f"{WRITER} | grepq absent"), 1)
        self.assertEqual(bash(f"{WRITER} | grepq -x presen"), 1)

    def test_grepq_keeps_the_writers_failure(self):
        self.assertNotEqual(bash("{ echo present; false; } | grepq present"), 0)

    def test_grepq_grep_error(self):
        self.assertEqual(bash("echo present | grepq --no-such-option present"), 2)


class Refused(unittest.TestCase):
    def readers(self, text):
        return [(n, r) for n, r in check_pipes.refused(text)]

    def test_early_readers(self):
        for line, reader in [
                ("a | grep -q x", "grep"),
                ("a | grep -qx x || fail", "grep"),
                ("a | grep -F -q x", "grep"),
                ("a | grep --quiet x", "grep"),
                ("a | grep -m1 x", "grep"),
                ("a | grep -m 1 x", "grep"),
                ("a | grep -l x", "grep"),
                ("a | head -1", "head"),
                ("x=$(a | head -n1)", "head"),
                ("a | sed s/a/b/ | grep -q x", "grep"),
                ('a "b|c" | grep -q x', "grep"),
                # |& is a pipe too; what stands before the reader is not the reader.
                ("a |& grep -q x", "grep"),
                ("a | LC_ALL=C grep -q x", "grep"),
                ("a | command grep -q x", "grep"),
                ("a | { grep -q x; }", "grep"),
                ("a | (grep -q x)", "grep"),
                ("a | ( head -1 )", "head"),
                # grep takes its options after the pattern too.
                ("a | grep -e x -q", "grep"),
                ("a | grep x --quiet", "grep"),
                # A backslash escapes the next character, in "..." and outside quotes.
                ('a "b\\" #c" | grep -q x', "grep"),
                ("echo a\\ #b | grep -q x", "grep"),
                # grepq reads its pipe to the end: given a file instead, it reads the
                # test's own stdin after grep (see t_cdi_nvidia).
                ("grepq -x x file", "grepq"),
                ("a && grepq x file", "grepq"),
                ("x=$(grepq x <file)", "grepq"),
        ]:
            with self.subTest(line=line):
                self.assertEqual(self.readers(line), [(1, reader)])

    def test_readers_that_read_to_the_end(self):
        for line in [
                "grep -q x file",
                "a || grep -q x file",
                "a | grepq x",
                "a | grepq -x x",
                "a | grep -c x",
                "a | grep -v -- -q",
                "a | sed -n 1p",
                "a | tail -1",
                "grep -q x <(a)",
                "# a | grep -q x",
                "a  # then | grep -q x",
                "echo '#' | grepq x",
                'echo "a\\"b"  # then | grep -q x',
                'echo \\"  # then | grep -q x',
                "echo a \\| grep -q x",
                'a | grep -c "x -q"',
                "a | grep -e -q x",
                "a | grep -c x && b -q",
                "a | grep -c x; b -q",
                "a | grep -c x >out 2>&1",
                "a |& grepq x",
                "a | LC_ALL=C grepq x",
                'fail "not grepq x file"',
                "grepq() {",
        ]:
            with self.subTest(line=line):
                self.assertEqual(self.readers(line), [])

    def test_continued_lines(self):
        self.assertEqual(self.readers("ok\na |\n    grep -q x ||\n    fail"), [(2, "grep")])
        self.assertEqual(self.readers("a \\\n    | head -3"), [(1, "head")])
        self.assertEqual(self.readers("a |\n    grepq x"), [])

    def test_scope(self):
        self.assertTrue(check_pipes.in_scope("scripts/x.sh", "#!/bin/bash\nset -euo pipefail\n"))
        self.assertTrue(check_pipes.in_scope("scripts/x", "#!/usr/bin/env bash\nset -o pipefail\n"))
        self.assertTrue(check_pipes.in_scope("tests/integration/t_x.sh", "echo\n"))
        self.assertTrue(check_pipes.in_scope("tests/integration/lib.sh", "echo\n"))
        for line in ["set -eu -o pipefail", "set -o errexit -o pipefail",
                     "set -e -o nounset -o pipefail", "  set -Eeuo pipefail"]:
            with self.subTest(line=line):
                self.assertTrue(check_pipes.in_scope("scripts/x.sh", f"#!/bin/bash\n{line}\n"))
        self.assertFalse(check_pipes.in_scope("scripts/x.sh", "#!/bin/bash\nset +o pipefail\n"))
        self.assertFalse(check_pipes.in_scope("scripts/x.sh", "#!/bin/sh\nset -eu\n"))
        self.assertFalse(check_pipes.in_scope("scripts/x.py", "set -o pipefail\n"))
        self.assertFalse(check_pipes.in_scope("tests/vm/test.sh", "sh -c 'a | grep -q x'\n"))

    def test_the_tree(self):
        # The tree as committed: every script under pipefail reads its pipes to the end.
        r = subprocess.run([os.path.join(ROOT, "scripts", "check-pipes")], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
