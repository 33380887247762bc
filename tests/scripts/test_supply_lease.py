# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/lease.py against tests/tools/kube-api.py: two holders never inside at
once (a create race and updates with resourceVersion), a dead holder's lease taken only after
its leaseDurationSeconds by our own clock, a lease taken away noticed, release as client-go's."""
import os
import sys
import threading
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from supplylib import lease  # noqa: E402
from test_supply_kube import Stub  # noqa: E402

NS = "kube-system"
PATH = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/" % NS


class Counting(lease.Lease):
    """A Lease that counts its failed tries (another holder inside) under CV."""

    def __init__(self, cv, *a, **kw):
        super().__init__(*a, **kw)
        self.cv, self.refused, self.done = cv, 0, False

    def try_acquire_or_renew(self):
        got = super().try_acquire_or_renew()
        if not got:
            with self.cv:
                self.refused += 1
                self.cv.notify_all()
        return got


class LeaseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stub = Stub({"leases": [{
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "dead", "namespace": NS},
            "spec": {"holderIdentity": "pass-that-died", "leaseDurationSeconds": 3,
                     "acquireTime": "2020-01-01T00:00:00.000000Z",
                     "renewTime": "2020-01-01T00:00:00.000000Z", "leaseTransitions": 4}}]})

    @classmethod
    def tearDownClass(cls):
        cls.stub.stop()

    def spec(self, name):
        return self.stub.client().get(PATH + name)["spec"]

    def test_two_holders_never_both_inside(self):
        inside, most, entries, lock = [0], [0], [], threading.Lock()
        cv = threading.Condition()
        holders = [Counting(cv, self.stub.client(), NS, "publish", "pass-%d" % i, duration=30,
                            retry=0.05) for i in range(2)]
        start = threading.Barrier(2)
        errors = []

        def run(me, other):
            try:
                start.wait()
                for _ in range(3):
                    with me:
                        with lock:
                            inside[0] += 1
                            most[0] = max(most[0], inside[0])
                            entries.append(me.holder)
                        self.assertEqual(self.spec("publish")["holderIdentity"], me.holder)
                        # Inside until the other was refused at least once: contention seen.
                        with cv:
                            seen = other.refused
                            self.assertTrue(cv.wait_for(
                                lambda: other.refused > seen or other.done, 30))
                        with lock:
                            inside[0] -= 1
            except Exception as e:  # reported by the main thread
                errors.append(e)
            with cv:
                me.done = True
                cv.notify_all()
        threads = [threading.Thread(target=run, args=(holders[i], holders[1 - i]))
                   for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        self.assertEqual(most[0], 1, "two holders inside at once: %s" % entries)
        self.assertEqual(sorted(entries), ["pass-0"] * 3 + ["pass-1"] * 3)
        spec = self.spec("publish")
        self.assertEqual((spec["holderIdentity"], spec["leaseDurationSeconds"]), ("", 1))
        # One create; every change of holder counted once.
        changes = sum(1 for a, b in zip(entries, entries[1:]) if a != b)
        self.assertEqual(spec["leaseTransitions"], 5, entries)
        self.assertGreaterEqual(changes, 1)
        creates = [r for r in self.stub.requests() if r["method"] == "POST" and
                   r["path"].endswith("/leases") and '"publish"' in r["body"]]
        self.assertEqual(sum(r["status"] == 201 for r in creates), 1)

    def test_dead_holder_waited_for_by_our_clock(self):
        t0 = time.monotonic()
        with lease.Lease(self.stub.client(), NS, "dead", "pass-new", duration=30, retry=0.1):
            waited = time.monotonic() - t0
            spec = self.spec("dead")
        # renewTime is six years old, but only our own clock counts: 3 s from first sight.
        self.assertGreaterEqual(waited, 3.0)
        self.assertEqual((spec["holderIdentity"], spec["leaseTransitions"],
                          spec["leaseDurationSeconds"]), ("pass-new", 5, 30))
        self.assertNotEqual(spec["acquireTime"], "2020-01-01T00:00:00.000000Z")

    def test_lease_taken_away_is_lost(self):
        told = []
        c = self.stub.client()
        with self.assertRaises(lease.LeaseLost):  # out of the exit: the holder is told
            with lease.Lease(c, NS, "taken", "pass-a", duration=30, retry=0.05,
                             on_lost=told.append) as held:
                cur = c.get(PATH + "taken")
                cur["spec"]["holderIdentity"] = "pass-b"
                c.replace(PATH + "taken", cur)
                self.assertTrue(held.lost.wait(300))
                with self.assertRaises(lease.LeaseLost):
                    held.check()
        self.assertEqual(told, ["taken by pass-b"])
        # Not ours any more: left as pass-b wrote it.
        self.assertEqual(self.spec("taken")["holderIdentity"], "pass-b")

    def test_released_lease_taken_at_once(self):
        c = self.stub.client()
        # A released Lease is taken without waiting out its duration (300 s here, so that
        # the bound below has minutes of margin on a loaded machine).
        with lease.Lease(c, NS, "handover", "pass-a", duration=300, retry=0.05):
            pass
        t0 = time.monotonic()
        with lease.Lease(c, NS, "handover", "pass-b", duration=300, retry=0.05, timeout=200):
            self.assertEqual(self.spec("handover")["holderIdentity"], "pass-b")
        self.assertLess(time.monotonic() - t0, 200)
        spec = self.spec("handover")
        self.assertEqual((spec["holderIdentity"], spec["leaseTransitions"]), ("", 1))


if __name__ == "__main__":
    unittest.main()
