# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/jobs.py, the Kubernetes executor, against tests/tools/kube-api.py. The
test is the Job controller and the kubelet (Cluster): it runs each Job's command here, as the
pod would, then writes the Job's status through the status subresource, retrying a failed
pod up to spec.backoffLimit as the controller does. The journal (the stand-in's request log)
shows one Job per build, never more than PARALLEL at once, each deleted with its pods; a
killed pass's Jobs deleted; a dead pass's Job adopted; the API server's validation of a Job
as kube-apiserver's; and every body the executor sent passes tests/k8s/check-requests.mjs
(the Kubernetes schemas, kubernetes-models) and deploy/supply.yaml's RBAC rules, both ways
(tests/tools/rbac-check.py)."""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.realpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))

from supplylib import jobs, kube, lease  # noqa: E402
from supplylib.executor import Build, ExecutorError  # noqa: E402
from test_supply_kube import Stub  # noqa: E402

NS = "nvidia-supply"
JOBS = "/apis/batch/v1/namespaces/%s/jobs" % NS
HARNESS = "test-harness/1"

# build-driver-package as far as the executor can tell: its command line recorded, a stage
# left, or a failure by the kernel's name (-broken always, -flaky on its first try), or a
# build that runs until stopped (-slow: until its work dir has "release", or SIGTERM).
FAKE_BDP = r'''#!/usr/bin/env python3
import json, os, sys, time
a = sys.argv[1:]
opt = lambda k: a[a.index(k) + 1]
stage, work, kernel = opt("--stage-to"), opt("--work"), opt("--kernel")
with open(os.path.join(os.path.dirname(os.path.dirname(work)), "argv.log"), "a") as f:
    f.write(json.dumps(sys.argv) + "\n")
print("building for", kernel, flush=True)
if kernel.endswith("-broken"):
    print("build-driver-package: the kernel's headers are missing", flush=True)
    sys.exit(3)
if kernel.endswith("-flaky") and not os.path.exists(os.path.join(work, "tried")):
    open(os.path.join(work, "tried"), "w").close()
    print("build-driver-package: the mirror answered 503", flush=True)
    sys.exit(1)
if kernel.endswith("-slow"):
    open(os.path.join(work, "started"), "w").close()
    while not os.path.exists(os.path.join(work, "release")):
        if not os.path.isdir(work):  # the test is over
            sys.exit(4)
        time.sleep(0.05)
with open(os.path.join(stage, "stage.json"), "w") as f:
    json.dump({"kernel": kernel}, f)
print("staged", kernel)
'''


@dataclasses.dataclass
class Target:
    kernel: str

    def as_json(self):
        return {"os": "debian", "kernel": self.kernel, "arch": "x86_64"}


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Cluster(threading.Thread):
    """The Job controller and the kubelet: each new Job's command run here, its status
    written back; a Job deleted while its pod runs has the pod stopped (SIGTERM)."""

    def __init__(self, client):
        super().__init__(daemon=True)
        self.c, self.stopping = client, threading.Event()
        self.cv = threading.Condition()
        self.running, self.most, self.ran, self.stopped = {}, 0, [], []
        self.seen = set()

    def status(self, name, st):
        try:
            self.c.call("PATCH", "%s/%s/status" % (JOBS, name), {"status": st},
                        "application/merge-patch+json")
        except kube.KubeError as e:
            if e.status != 404:
                raise

    def pod(self, job):
        name = job["metadata"]["name"]
        spec = job["spec"]
        ctr = spec["template"]["spec"]["containers"][0]
        failed = 0
        while True:
            self.status(name, {"active": 1, "startTime": now()})
            p = subprocess.Popen(ctr["command"], cwd=ctr.get("workingDir"),
                                 stderr=subprocess.DEVNULL)
            with self.cv:
                self.running[name] = p
                self.most = max(self.most, len(self.running))
                self.ran.append(ctr["command"])
                self.cv.notify_all()
            rc = p.wait()
            with self.cv:
                del self.running[name]
                self.cv.notify_all()
            if name in self.stopped:
                return
            if rc == 0:
                self.status(name, {"active": 0, "succeeded": 1, "completionTime": now(),
                                   "conditions": [
                                       {"type": "SuccessCriteriaMet", "status": "True"},
                                       {"type": "Complete", "status": "True"}]})
                return
            failed += 1
            if failed > spec.get("backoffLimit", 6):
                self.status(name, {"active": 0, "failed": failed, "conditions": [
                    {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit"}]})
                return
            self.status(name, {"failed": failed})

    def run(self):
        while not self.stopping.is_set():
            try:
                listed = self.c.list(JOBS)
            except kube.KubeError:
                continue
            names = {j["metadata"]["name"] for j in listed}
            for j in listed:
                n, uid = j["metadata"]["name"], j["metadata"].get("uid", j["metadata"]["name"])
                terminal = jobs.condition(j)[0]
                no_pod = "test.invalid/no-pod" in (j["metadata"].get("annotations") or {})
                if uid not in self.seen and not terminal and not no_pod:
                    self.seen.add(uid)
                    threading.Thread(target=self.pod, args=(j,), daemon=True).start()
            with self.cv:
                for n, p in list(self.running.items()):
                    if n not in names and n not in self.stopped:
                        self.stopped.append(n)
                        p.terminate()
            self.stopping.wait(0.05)

    def wait_running(self, n, timeout=600):
        with self.cv:
            return self.cv.wait_for(lambda: len(self.running) >= n, timeout)


def journal_active(requests):
    """The most Jobs that existed at once by the journal: created minus deleted."""
    n = most = 0
    for r in requests:
        if r["user_agent"] != kube.USER_AGENT or not r["path"].startswith(JOBS):
            continue
        if r["method"] == "POST" and r["status"] == 201:
            n += 1
        elif r["method"] == "DELETE" and r["status"] == 200:
            n -= 1
        most = max(most, n)
    return most


def node_modules():
    """tests/k8s's node modules, installed as tests/integration/lib.sh's k8s_node_modules."""
    d = os.path.join(TOP, "tests", "k8s")
    subprocess.run(["flock", os.path.join(d, "package-lock.json"), "sh", "-c",
                    'cd "$1" && { [ -f node_modules/.ndi-complete ] && '
                    '[ ! package-lock.json -nt node_modules/.ndi-complete ] || '
                    '{ npm ci --no-audit --no-fund --silent && '
                    'touch node_modules/.ndi-complete; }; }', "sh", d], check=True)


# Bounds on waits for events are minutes: make check runs these tests at nice 19 beside the
# integration suite, where a process of theirs may get a few percent of a core for a while
# (seen: a pass that took 60 s to act on SIGTERM and delete two Jobs there).
class JobsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stub = Stub({}, lifetime=900)
        cls.cluster = Cluster(cls.stub.client(user_agent=HARNESS))
        cls.cluster.start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stopping.set()
        cls.cluster.join()
        with cls.cluster.cv:
            for p in cls.cluster.running.values():
                p.kill()
        cls.stub.stop()

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="work-", dir=self.stub.dir)
        self.bdp = os.path.join(self.work, "build-driver-package")
        with open(self.bdp, "w") as f:
            f.write(FAKE_BDP)
        os.chmod(self.bdp, 0o755)

    def conf(self, **kw):
        c = {"namespace": NS, "image": "registry.example/nvidia-driver-builder:1",
             "cache_pvc": "nvidia-supply-work", "backoff_limit": 1, "poll_seconds": 0.1,
             "node_selector": {"nvidia.com/supply-builder": "true"},
             "tolerations": [{"key": "nvidia.com/supply-builder", "operator": "Exists",
                              "effect": "NoSchedule"}],
             "resources": {"requests": {"memory": "8Gi"}, "limits": {"memory": "16Gi"}}}
        c.update(kw)
        return c

    def build(self, kernel):
        bid = "debian-%s-535-261-03-prop-0123456789" % kernel.replace(".", "-")
        stage = os.path.join(self.work, "stage", bid)
        work = os.path.join(self.work, "build", bid)
        argv = [self.bdp, "--kernel", kernel, "--os", "debian", "--arch", "x86_64",
                "--flavour", "proprietary", "--stage-to", stage, "--work", work, "--quiet",
                "--jobs", "4"]
        return Build(bid, Target(kernel), argv, work, stage,
                     os.path.join(self.work, "log", bid + ".log"), 4)

    def executor(self, **kw):
        return jobs.Executor(self.stub.client(), self.conf(**kw), pass_name="pass-1")

    def mine(self, method, since=0):
        return [r for r in self.stub.requests()[since:] if r["user_agent"] == kube.USER_AGENT
                and r["method"] == method and r["path"].startswith(JOBS)]

    def test_one_job_per_build_at_most_parallel(self):
        builds = [self.build(k) for k in ("6.1.0-58-amd64", "6.1.0-59-amd64",
                                          "6.1.0-60-flaky", "6.1.0-61-broken", "6.1.0-62-amd64")]
        since = len(self.stub.requests())
        results = self.executor().run(builds, 2)
        self.assertEqual([r.id for r in results], [b.id for b in builds])
        self.assertEqual([r.ok for r in results], [True, True, True, False, True])
        bad = results[3]
        self.assertEqual(bad.exit_code, 3)
        self.assertIn("BackoffLimitExceeded", bad.last)
        self.assertIn("after 2 tries", bad.last)
        self.assertIn("the kernel's headers are missing", bad.last)
        # The journal: one Job made per build, never more than 2 at once, each deleted with
        # its pods, none left.
        posts = [r for r in self.mine("POST", since) if r["status"] == 201]
        self.assertEqual(sorted(json.loads(r["body"])["metadata"]["name"] for r in posts),
                         sorted(jobs.job_name(b.id) for b in builds))
        self.assertEqual(journal_active(self.stub.requests()[since:]), 2)
        deletes = self.mine("DELETE", since)
        self.assertEqual(len(deletes), 5)
        for d in deletes:
            self.assertEqual(json.loads(d["body"])["propagationPolicy"], "Background")
        with open(os.path.join(self.stub.dir, "state.json")) as f:
            state = json.load(f)
        self.assertEqual((state["jobs"], state["orphaned_pods_of"]), ([], []))
        # The pods ran the local executor's command line, whole, at the same paths.
        with open(os.path.join(self.work, "argv.log")) as f:
            ran = [json.loads(l) for l in f]
        self.assertEqual(sorted(map(json.dumps, ran)),
                         sorted(map(json.dumps, [b.argv for b in builds] +
                                    [builds[2].argv, builds[3].argv])))
        for b, r in zip(builds, results):
            if r.ok:
                self.assertTrue(os.path.isfile(os.path.join(b.stage, "stage.json")))
                self.assertEqual(r.exit_code, 0)

    def test_job_object(self):
        b = self.build("6.1.0-58-amd64")
        job = self.executor().manifest(b, self.work)
        pod = job["spec"]["template"]["spec"]
        ctr = pod["containers"][0]
        self.assertEqual(ctr["command"][5:], b.argv)
        self.assertEqual(pod["restartPolicy"], "Never")
        self.assertIs(pod["automountServiceAccountToken"], False)
        self.assertEqual(ctr["resources"], {"requests": {"cpu": "4", "memory": "8Gi"},
                                            "limits": {"memory": "16Gi"}})
        mounts = {m["mountPath"]: m for m in ctr["volumeMounts"]}
        self.assertEqual(mounts[self.work]["name"], "work")
        self.assertIs(mounts["/etc/nvidia-supply/keys"]["readOnly"], True)
        vols = {v["name"]: v for v in pod["volumes"]}
        self.assertEqual(vols["work"]["persistentVolumeClaim"]["claimName"], "nvidia-supply-work")
        self.assertEqual(vols["keys"]["secret"]["secretName"], "nvidia-supply-keys")
        # The module keys only: the index key stays with the pass.
        self.assertEqual([i["key"] for i in vols["keys"]["secret"]["items"]],
                         ["mod.key", "mod.crt"])
        self.assertEqual(pod["nodeSelector"], {"nvidia.com/supply-builder": "true"})
        self.assertEqual((job["spec"]["backoffLimit"], job["spec"]["activeDeadlineSeconds"],
                          job["spec"]["ttlSecondsAfterFinished"]), (1, 14400, 3600))
        self.assertEqual(job["metadata"]["labels"]["nvidia.com/supply-pass"], "pass-1")
        self.assertNotIn("selector", job["spec"])
        for bid in ("x" * 52, "y" * 200, "Debian_6.1+deb12"):
            n = jobs.job_name(bid)
            self.assertLessEqual(len(n), 63)
            self.assertRegex(n, r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
        self.assertNotEqual(jobs.job_name("y" * 200), jobs.job_name("y" * 199))

    def test_dead_pass_job_adopted_failed_one_made_anew(self):
        alive, failed = self.build("6.1.0-70-amd64"), self.build("6.1.0-71-amd64")
        harness = self.stub.client(user_agent=HARNESS)
        dead = jobs.Executor(harness, self.conf(), pass_name="dead-pass")
        # The dead pass's: one still building (its stage prepared, as that pass did), one
        # that failed after the pass was gone.
        for b in (alive, failed):
            dead._prepare(b)
        harness.create(JOBS, dead.manifest(alive, self.work))
        j = dead.manifest(failed, self.work)
        j["metadata"]["annotations"]["test.invalid/no-pod"] = "it failed before"
        harness.create(JOBS, j)
        self.cluster.status(j["metadata"]["name"], {"failed": 2, "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]})
        since = len(self.stub.requests())
        results = self.executor().run([alive, failed], 2)
        self.assertEqual([r.ok for r in results], [True, True])
        posts = [json.loads(r["body"])["metadata"]["name"] for r in self.mine("POST", since)]
        self.assertEqual(posts, [jobs.job_name(failed.id)])
        self.assertEqual(len(self.mine("DELETE", since)), 3)

    def test_killed_pass_deletes_its_jobs(self):
        builds = [self.build("6.1.0-8%d-slow" % i) for i in range(3)]
        driver = os.path.join(self.work, "pass.py")
        with open(driver, "w") as f:
            f.write("import json, signal, sys\nsys.path[:0] = %r\n" % [
                os.path.join(TOP, "scripts"), HERE] +
                "from supplylib import jobs, kube\nfrom supplylib.executor import Build\n"
                "from test_supply_jobs import Target\n"
                "signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))\n"
                "c = kube.Client(*sys.argv[1:4], namespace=%r)\n" % NS +
                "bs = [Build(d['id'], Target(d['kernel']), d['argv'], d['work'], d['stage'], "
                "d['log'], 4) for d in json.loads(sys.argv[4])]\n"
                "jobs.Executor(c, json.loads(sys.argv[5]), 'pass-2').run(bs, 2)\n")
        spec = [dict(id=b.id, kernel=b.target.kernel, argv=b.argv, work=b.work, stage=b.stage,
                     log=b.log) for b in builds]
        since = len(self.stub.requests())
        p = subprocess.Popen([sys.executable, driver, self.stub.server,
                              os.path.join(self.stub.dir, "sa/token"),
                              os.path.join(self.stub.dir, "sa/ca.crt"), json.dumps(spec),
                              json.dumps(self.conf())])
        try:
            self.assertTrue(self.cluster.wait_running(2), "two builds running")
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(600), 143)
            deletes = self.mine("DELETE", since)
            self.assertEqual(sorted(r["path"].rsplit("/", 1)[1] for r in deletes),
                             sorted(jobs.job_name(b.id) for b in builds[:2]))
            self.assertTrue(all(json.loads(r["body"])["propagationPolicy"] == "Background"
                                for r in deletes))
            self.assertEqual(len(self.mine("POST", since)), 2)
            # The pods stop because their Jobs went, not because the builds finished: the
            # builds are released only after this (a release before the stand-in kubelet has
            # seen the deletions lets a build finish and stage, as CI once saw).
            with self.cluster.cv:
                self.assertTrue(self.cluster.cv.wait_for(lambda: not any(
                    n in self.cluster.running
                    for n in map(jobs.job_name, (b.id for b in builds))), 600),
                    "the pods stopped")
            self.assertFalse(os.path.exists(os.path.join(builds[0].stage, "stage.json")))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for b in builds:
                os.makedirs(b.work, exist_ok=True)
                open(os.path.join(b.work, "release"), "w").close()
        self.assertEqual(self.stub.client().list(JOBS), [])

    def test_api_server_refuses_a_bad_job(self):
        c = self.stub.client(user_agent=HARNESS)
        good = self.executor().manifest(self.build("6.1.0-90-amd64"), self.work)
        cases = [
            ("metadata.name", "x" * 64,
             'spec.template.labels: Invalid value: "%s": must be no more than 63 characters'
             % ("x" * 64)),
            ("metadata.name", "Bad_Name", 'metadata.name: Invalid value: "Bad_Name": a '
             "lowercase RFC 1123 subdomain"),
            ("restartPolicy", "Always", 'spec.template.spec.restartPolicy: Required value: '
             'valid values: "OnFailure", "Never"'),
            ("restartPolicy", "Sometimes", 'spec.template.spec.restartPolicy: Unsupported '
             'value: "Sometimes"'),
            ("selector", {"matchLabels": {"app": "x"}}, "`selector` not auto-generated"),
            ("backoffLimit", -1, "spec.backoffLimit: Invalid value: -1: must be greater than "
             "or equal to 0"),
            ("mount", "nowhere", 'volumeMounts[0].name: Not found: "nowhere"'),
        ]
        for what, value, words in cases:
            job = json.loads(json.dumps(good))
            if what == "metadata.name":
                job["metadata"]["name"] = value
            elif what == "restartPolicy":
                job["spec"]["template"]["spec"]["restartPolicy"] = value
            elif what == "mount":
                job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["name"] = \
                    value
            else:
                job["spec"][what] = value
            with self.assertRaises(kube.KubeError) as cm:
                c.create(JOBS, job)
            self.assertEqual((cm.exception.status, cm.exception.reason), (422, "Invalid"))
            self.assertIn(words, str(cm.exception))
        # The executor's own: a refused Job is the executor's error, one line.
        with self.assertRaises(ExecutorError) as cm:
            self.executor(node_selector={"nvidia.com/supply builder": "true"}).run(
                [self.build("6.1.0-91-amd64")], 1)
        self.assertIn("422 Invalid", str(cm.exception))
        self.assertNotIn("\n", str(cm.exception))
        with self.assertRaises(ExecutorError) as cm:
            jobs.Executor(c, {"image": "x"})
        self.assertIn("kubernetes.cache_pvc", str(cm.exception))

    def test_zz_bodies_and_rbac(self):
        """Every body the pass sent in this class's tests against the schemas, and its calls
        against deploy/supply.yaml's rules both ways. The pass's other calls are made here as
        it makes them: its Nodes listed (supplylib/nodes.py from_api and list_versioned) and
        watched from the list's version (nodes.watch, --watch's: GET ?watch=1, nothing
        changed meanwhile, so an empty stream), and its publish Lease."""
        c = self.stub.client()
        c.list("/api/v1/nodes")
        rv = c.call("GET", "/api/v1/nodes", query={"limit": "500"})["metadata"]["resourceVersion"]
        c.call("GET", "/api/v1/nodes", query={"watch": "1", "resourceVersion": rv,
                                              "timeoutSeconds": "1"})
        with lease.Lease(c, NS, "nvidia-supply-publish", "pass-1", duration=30, retry=0.05):
            pass
        log = self.stub.log
        node_modules()
        out = subprocess.run(["node", os.path.join(TOP, "tests/k8s/check-requests.mjs"), log],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        for kind in ("Job", "DeleteOptions", "Lease"):
            self.assertRegex(out.stdout, r"\b%s [0-9]" % kind)
        out = subprocess.run([sys.executable, os.path.join(TOP, "tests/tools/rbac-check.py"),
                              "--user-agent", kube.USER_AGENT,
                              os.path.join(TOP, "deploy/supply.yaml"), "nvidia-supply", log],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


if __name__ == "__main__":
    unittest.main()
