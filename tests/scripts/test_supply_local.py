# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/local.py, the local executor: at most PARALLEL builds at once, each
build's result kept in order with its exit code and last line (a failure does not stop the
others; exit 0 without a stage record is no success), and a pass stopped by SIGTERM kills
its builds' whole process groups before it exits; two passes never share a work directory."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))

from supplylib import local, passes  # noqa: E402
from supplylib.executor import Build  # noqa: E402

# Builds 0 and 1 wait until both have started (a serial executor fails them, 300 s on); every build
# notes how many run beside it.
BUILD = r'''
id=$1 d=$2 stage=$3
touch "$d/running/$id"
n=$(ls "$d/running" | wc -l); echo "$n" >>"$d/counts"
if [ "$id" -lt 2 ]; then
    touch "$d/arrived/$id"
    i=0
    while [ "$(ls "$d/arrived" | wc -l)" -lt 2 ]; do
        i=$((i + 1)); [ $i -lt 6000 ] || { rm "$d/running/$id"; exit 9; }; sleep 0.05
    done
fi
rm "$d/running/$id"
case $id in
    3) echo "build-driver-package: no kernel headers for 6.1.0-58-amd64"; exit 1 ;;
    4) echo "no stage record"; exit 0 ;;
esac
echo '{}' >"$stage/stage.json"
echo "build-driver-package: done"
'''


def builds(d, n, script=BUILD, argv=None):
    out = []
    for i in range(n):
        stage = os.path.join(d, "stage", "b%d" % i)
        out.append(Build("b%d" % i, None, argv or ["sh", "-c", script, "sh", str(i), d, stage],
                         os.path.join(d, "build", "b%d" % i), stage,
                         os.path.join(d, "log", "b%d.log" % i)))
    return out


class Local(unittest.TestCase):
    def test_parallel_bound_and_results(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "running"))
            os.makedirs(os.path.join(d, "arrived"))
            bs = builds(d, 6)
            rs = local.Local().run(bs, 2)
            with open(os.path.join(d, "counts")) as f:
                counts = [int(x) for x in f.read().split()]
            self.assertEqual(len(counts), 6)
            self.assertLessEqual(max(counts), 2, counts)
            self.assertEqual([r.id for r in rs], [b.id for b in bs])
            self.assertEqual([r.ok for r in rs], [True, True, True, False, False, True])
            self.assertEqual(rs[0].exit_code, 0)
            self.assertEqual(rs[3].exit_code, 1)
            self.assertEqual(rs[3].last,
                             "build-driver-package: no kernel headers for 6.1.0-58-amd64")
            self.assertIn("exit 0 but no %s/stage.json" % bs[4].stage, rs[4].last)
            self.assertEqual(rs[5].stage, bs[5].stage)
            with open(bs[0].log) as f:
                self.assertIn("done", f.read())

    def test_cannot_start(self):
        with tempfile.TemporaryDirectory() as d:
            bs = builds(d, 2, argv=[os.path.join(d, "no-such-program")])
            rs = local.Local().run(bs, 1)
            self.assertEqual([(r.ok, r.exit_code) for r in rs], [(False, None)] * 2)
            self.assertIn("cannot run", rs[0].last)

    def test_stopped_pass_kills_its_builds(self):
        with tempfile.TemporaryDirectory() as d:
            pidf = os.path.join(d, "grandchild.pid")
            # A build whose own child (make, cc) ignores nothing and outlives a killed shell.
            script = 'sleep 1000 & echo $! >"%s.tmp"; mv "%s.tmp" "%s"; wait' % (pidf, pidf, pidf)
            driver = (
                "import signal, sys\n"
                "sys.path.insert(0, %r)\n"
                "from supplylib import local\n"
                "from supplylib.executor import Build\n"
                "signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))\n"
                "b = Build('k', None, ['sh', '-c', %r], %r, %r, %r)\n"
                "local.Local().run([b], 1)\n" % (
                    os.path.join(TOP, "scripts"), script, os.path.join(d, "w"),
                    os.path.join(d, "s"), os.path.join(d, "k.log")))
            p = subprocess.Popen([sys.executable, "-c", driver])
            end = time.monotonic() + 600
            while not os.path.exists(pidf):
                self.assertIsNone(p.poll(), "the pass ended before its build started")
                self.assertLess(time.monotonic(), end, "the build never started")
                time.sleep(0.05)
            with open(pidf) as f:
                gc = int(f.read())
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(600), 143)
            # The grandchild was killed with its group: gone, or a zombie of init's.
            try:
                with open("/proc/%d/stat" % gc) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:
                state = "gone"
            if state not in ("gone", "Z"):
                os.kill(gc, signal.SIGKILL)
            self.assertIn(state, ("gone", "Z"))


class WorkLock(unittest.TestCase):
    def test_second_pass_in_one_work_dir_refused(self):
        with tempfile.TemporaryDirectory() as d:
            held = passes.lock_work(d)
            with self.assertRaises(passes.Busy) as c:
                passes.lock_work(d)
            self.assertIn("another pass (pid %d) works in %s" % (os.getpid(), d),
                          str(c.exception))
            held.close()
            passes.lock_work(d).close()


if __name__ == "__main__":
    unittest.main()
