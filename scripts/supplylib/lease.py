# SPDX-License-Identifier: Apache-2.0
"""The lock a supply pass holds around `make-repo publish` in a cluster: a
coordination.k8s.io/v1 Lease, taken and kept as client-go's leader election takes and keeps
one, so that passes in different pods (or a pass and `kubectl`) agree on who publishes.

    with Lease(kube, "nvidia-supply", "nvidia-supply-publish", holder, duration=60):
        make-repo publish ...

The rules are client-go's (k8s.io/client-go tools/leaderelection/leaderelection.go,
tryAcquireOrRenew, release, isLeaseValid; the record as a Lease in
tools/leaderelection/resourcelock/leaselock.go, LeaderElectionRecordToLeaseSpec):

- the record is spec.holderIdentity, leaseDurationSeconds, acquireTime, renewTime
  (metav1.MicroTime) and leaseTransitions;
- no Lease: create it (a 409 AlreadyExists: another holder was first; read it again);
- a Lease held by another is free once it has not changed for its leaseDurationSeconds, by
  this process's monotonic clock from when it first saw that record (renewTime is another
  machine's clock and is never compared with ours); one with an empty holderIdentity is
  free at once;
- taking it over, or renewing it, is an update with the resourceVersion read (409 Conflict:
  someone wrote it meanwhile; read it again and decide again); a new holder adds one to
  leaseTransitions and sets acquireTime, the same holder keeps both;
- the holder renews it every retry period and gives up when no renewal succeeded within the
  renew deadline (client-go's defaults 15 s, 10 s and 2 s, kept here in proportion to
  DURATION); release writes an empty holderIdentity with leaseDurationSeconds 1, so the next
  holder need not wait.

Like client-go's, this is no fencing: a holder that stalls past its lease while still
publishing can overlap the next. make-repo publish's own lock file and its re-read of the
index under it stay the guard of the index; the Lease keeps passes in different pods from
publishing at once where that file lock does not reach (a volume without working flock).
"""
import datetime
import random
import threading
import time

from supplylib import kube as kubelib

GROUP = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"


class LeaseLost(Exception):
    """The lease was not renewed within its renew deadline, or another holder took it."""


def micro_time(t=None):
    """metav1.MicroTime's JSON form: RFC 3339 with six digits of fraction, UTC."""
    d = datetime.datetime.fromtimestamp(time.time() if t is None else t, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Lease:
    """HOLDER's hold on Lease NAMESPACE/NAME; a context manager (acquire on entry, renewed by
    a thread while inside, released on exit, LeaseLost out of the exit when it was lost
    meanwhile). ON_LOST, if given, is called (from the renewing thread) when the lease is
    lost; `lost` is an Event set then, and check() raises."""

    def __init__(self, kube, namespace, name, holder, duration=60, timeout=None,
                 on_lost=None, retry=None, clock=time.monotonic):
        if not holder:
            raise ValueError("a lease holder needs an identity")
        if duration < 3:
            raise ValueError("a lease lasts at least 3 seconds, not %s" % duration)
        self.kube, self.ns, self.name, self.holder = kube, namespace, name, holder
        self.duration = int(duration)
        # client-go's 15 s / 10 s / 2 s, in proportion.
        self.renew_deadline = self.duration * 2 / 3
        self.retry = retry or self.duration * 2 / 15
        self.timeout, self.on_lost, self.clock = timeout, on_lost, clock
        self.path = GROUP % namespace + "/" + name
        self.observed, self.observed_at = None, 0.0
        self.transitions = 0
        self.acquired = None
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = None

    def _record(self, acquired, transitions, holder=None, duration=None):
        now = micro_time()
        return {"holderIdentity": self.holder if holder is None else holder,
                "leaseDurationSeconds": self.duration if duration is None else duration,
                "acquireTime": acquired or now, "renewTime": now,
                "leaseTransitions": transitions}

    def _observe(self, spec):
        """Keep SPEC as the observed record; its time is now when it changed."""
        if spec != self.observed:
            self.observed, self.observed_at = spec, self.clock()

    def try_acquire_or_renew(self):
        """One round of client-go's tryAcquireOrRenew: True when this holder holds the
        lease afterwards."""
        try:
            cur = self.kube.get(self.path, missing_ok=True)
            if cur is None:
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": self.name, "namespace": self.ns},
                        "spec": self._record(None, 0)}
                made = self.kube.create(GROUP % self.ns, body)
                self._observe(made.get("spec"))
                self.acquired, self.transitions = body["spec"]["acquireTime"], 0
                return True
            spec = cur.get("spec") or {}
            self._observe(spec)
            holder = spec.get("holderIdentity") or ""
            ours = holder == self.holder
            valid = self.clock() < self.observed_at + (spec.get("leaseDurationSeconds") or 0)
            if holder and valid and not ours:
                return False
            transitions = (spec.get("leaseTransitions") or 0) + (0 if ours else 1)
            acquired = spec.get("acquireTime") if ours else None
            want = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": dict(cur["metadata"]), "spec": self._record(acquired, transitions)}
            got = self.kube.replace(self.path, want)
            self._observe(got.get("spec"))
            self.acquired, self.transitions = want["spec"]["acquireTime"], transitions
            return True
        except kubelib.KubeError as e:
            if e.status == 409:  # another holder wrote first: read again, decide again
                return False
            raise

    def acquire(self):
        """Waits until this holder holds the lease (TimeoutError past `timeout` seconds)."""
        end = None if self.timeout is None else self.clock() + self.timeout
        while not self.try_acquire_or_renew():
            # Jittered as client-go's wait.JitterUntil (JitterFactor 1.2).
            wait = self.retry * (1 + 1.2 * random.random())
            if end is not None and self.clock() + wait > end:
                raise TimeoutError("lease %s/%s: held by %s; gave up after %s s" % (
                    self.ns, self.name, (self.observed or {}).get("holderIdentity"),
                    self.timeout))
            time.sleep(wait)

    def _renew(self):
        last = self.clock()
        while not self._stop.wait(self.retry):
            try:
                if self.try_acquire_or_renew():
                    last = self.clock()
                    continue
                other = (self.observed or {}).get("holderIdentity")
                reason, taken = "taken by %s" % other, other != self.holder
            except (kubelib.KubeError, OSError) as e:
                reason, taken = str(e), False
            if taken or self.clock() - last >= self.renew_deadline:
                self.lost.set()
                if self.on_lost:
                    self.on_lost(reason)
                return

    def check(self):
        """Raises LeaseLost when the lease is no longer this holder's."""
        if self.lost.is_set():
            raise LeaseLost("lease %s/%s lost: not renewed within %.0f s" % (
                self.ns, self.name, self.renew_deadline))

    def release(self):
        """client-go's release: an empty holder, leaseDurationSeconds 1, when it is ours."""
        try:
            cur = self.kube.get(self.path, missing_ok=True)
            if not cur or (cur.get("spec") or {}).get("holderIdentity") != self.holder:
                return False
            want = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": dict(cur["metadata"]),
                    "spec": self._record(None, (cur.get("spec") or {}).get("leaseTransitions")
                                         or 0, holder="", duration=1)}
            self.kube.replace(self.path, want)
            return True
        except kubelib.KubeError as e:
            if e.status == 409:  # written meanwhile: no longer ours to release
                return False
            raise

    def __enter__(self):
        self.acquire()
        self.lost.clear()
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew, name="lease-renew", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind, *exc):
        """Releases the lease; raises LeaseLost when it was lost while held (what it
        guarded may have overlapped another holder's), unless another exception is on its
        way out."""
        self._stop.set()
        self._thread.join()
        if not self.lost.is_set():
            self.release()
        elif kind is None:
            self.check()
        return False
