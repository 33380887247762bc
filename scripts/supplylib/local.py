# SPDX-License-Identifier: Apache-2.0
"""The local executor (executor.py's interface): each build a process group of its own on
this machine, at most PARALLEL at once, its output whole in its own log.

A build waits for a free place in the order given (the plan's: asked first). The pass waits
for events (a waiter thread per process puts its end on a queue), never for time. When the
pass is stopped (SIGTERM made SystemExit by cli.py, or SIGINT's KeyboardInterrupt) while
builds run, each build's process group gets SIGTERM, and SIGKILL after KILL_GRACE_S, and is
reaped before the exception goes up: no build-driver-package (nor its make, cc or dpkg)
outlives the pass.
"""
import os
import queue
import shutil
import signal
import subprocess
import threading
import time

import privkey
from bdp.common import last_line
from supplylib.executor import Result, stage_ok

KILL_GRACE_S = 10


class Local:
    """Runs builds as processes here; ENV, when given, is their environment, else this
    one's with the token PIN given back (privkey.child_env: build-driver-package signs)."""
    name = "local"

    def __init__(self, env=None, on_start=None):
        self.env = env if env is not None else privkey.child_env()
        self.on_start = on_start
        self.running = {}                      # build id -> Popen

    def _start(self, b, ended):
        shutil.rmtree(b.stage, ignore_errors=True)
        os.makedirs(b.stage)
        os.makedirs(b.work, exist_ok=True)
        os.makedirs(os.path.dirname(b.log), exist_ok=True)
        t0 = time.monotonic()
        with open(b.log, "wb") as log:
            try:
                p = subprocess.Popen(b.argv, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, env=self.env,
                                     start_new_session=True)
            except OSError as e:
                ended.put((b.id, None, t0, "cannot run %s: %s" % (b.argv[0], e.strerror)))
                return
        self.running[b.id] = p
        if self.on_start:
            self.on_start(b)
        threading.Thread(target=lambda: ended.put((b.id, p.wait(), t0, None)),
                         daemon=True).start()

    def stop(self):
        """Every running build's process group: SIGTERM, SIGKILL after the grace, reaped."""
        for p in self.running.values():
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        end = time.monotonic() + KILL_GRACE_S
        for p in self.running.values():
            try:
                p.wait(max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        self.running.clear()

    def run(self, builds, parallel):
        parallel = max(1, int(parallel))
        byid = {b.id: b for b in builds}
        results, waiting, ended = {}, list(builds), queue.Queue()
        try:
            while len(results) < len(builds):
                while waiting and len(self.running) < parallel:
                    self._start(waiting.pop(0), ended)
                bid, rc, t0, why = ended.get()
                b = byid[bid]
                self.running.pop(bid, None)
                secs = time.monotonic() - t0
                if rc is None:
                    results[bid] = Result(bid, False, None, 0.0, why, b.stage)
                    continue
                ok = rc == 0 and stage_ok(b.stage)
                last = last_line(b.log)
                if rc == 0 and not ok:
                    last = "exit 0 but no %s/stage.json: %s" % (b.stage, last)
                results[bid] = Result(bid, ok, rc, secs, last, b.stage)
        except BaseException:
            self.stop()
            raise
        return [results[b.id] for b in builds]
