# SPDX-License-Identifier: Apache-2.0
"""What the unit tests of scripts/bdp/ (test_bdp_*.py) share: the modules on the path, a
scratch directory per test, and a stand-in of the build record with only what a parser
reads."""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import types
import unittest

sys.dont_write_bytecode = True
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
sys.path.insert(0, os.path.realpath(SCRIPTS))

from bdp.common import PROGRESS, Failure  # noqa: E402


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test-bdp-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        # What the code says (say() on stdout) kept for the test to read; no progress lines.
        self.out = io.StringIO()
        redirect = contextlib.redirect_stdout(self.out)
        redirect.__enter__()
        self.addCleanup(redirect.__exit__, None, None, None)
        self.addCleanup(PROGRESS.update, dict(PROGRESS))
        PROGRESS["quiet"] = True

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, rel, text, mode="w"):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, mode) as f:
            f.write(text)
        return p

    def refused(self, fn, *args):
        """FN(*ARGS)'s refusal, as its one message."""
        with self.assertRaises(Failure) as cm:
            fn(*args)
        return str(cm.exception)

    def record(self, **kw):
        """A stand-in of the build record (record.Build) with the fields KW."""
        return types.SimpleNamespace(**kw)
