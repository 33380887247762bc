# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes executor (executor.py's interface): each build a batch/v1 Job on the builder
node pool, running the local executor's command line at the same paths.

The pass's --work directory is a volume both see: the PersistentVolumeClaim the configuration
names (kubernetes.cache_pvc, ReadWriteMany where builds may land on several nodes) mounted at
the work directory's own path in the builder's pod, so the stage dirs, the feeds' inputs and
the build cache the pass prepared are where the command line says. The container runs
Build.argv under /bin/sh (WRAP), which writes the output to Build.log and the exit status to
Build.log + ".exit" on that volume, and passes SIGTERM on to the build when the pod is
stopped; the signing keys come from the Secret nvidia-supply-keys, read-only at
/etc/nvidia-supply/keys (docs/building-packages.md, "In a cluster").

At most PARALLEL Jobs of the pass exist at once: the next is created once one has finished
and been deleted. A Job is done when its Complete or Failed condition is True (the Job
controller's conditions, k8s.io/api batch/v1 types.go, JobConditionType); retries are the Job
controller's (spec.backoffLimit: a failed pod replaced until that many have failed),
activeDeadlineSeconds bounds a stuck build, ttlSecondsAfterFinished removes a Job a dead pass
left. Jobs are listed by label every poll_seconds. Each finished Job is deleted with
propagationPolicy Background: batch/v1's default for a DELETE is to orphan the pods
(pkg/registry/batch/job/strategy.go, DefaultGarbageCollectionPolicy). When the pass stops
(an exception out of run(): SIGTERM made SystemExit, SIGINT) its Jobs are deleted the same
way before the exception goes up.

A Job's name comes from the target (Build.id, already unique by a digest): "supply-ID", a
DNS-1123 label of at most 63 characters (the Job's name becomes its pods' job-name label
value, which may not be longer). A Job of that name already there (a pass that died) with the
same command line is adopted, not made again; one with another command line, or Failed, is
deleted and made anew.

The configuration's "kubernetes" object (scripts/supply --config):

  image                     the builder image (build-driver-package and its tools), required
  cache_pvc                 the PersistentVolumeClaim of the work directory, required
  namespace                 where the Jobs go (default: the client's, a pod's own namespace)
  node_selector, tolerations  the builder pool's (core/v1 PodSpec fields, as written there)
  resources                 the container's requests and limits (default: requests cpu =
                            the build's --jobs, memory 4Gi)
  keys_secret               the Secret of signing keys (default nvidia-supply-keys; "" none)
  keys_items                the Secret's keys a builder gets (default mod.key and mod.crt:
                            never repo.pem, which only the pass's publish uses; null: all);
                            one the Secret lacks is left out (the volume is optional)
  backoff_limit             retries of a failed build (default 2)
  active_deadline_seconds   a build's limit (default 14400)
  ttl_seconds_after_finished  (default 3600)
  image_pull_policy, service_account  as a PodSpec has them (the token is never mounted)
  poll_seconds              how often the Jobs are read (default 5)
"""
import hashlib
import json
import os
import re
import shutil
import time

from bdp.common import last_line
from supplylib import kube as kubelib
from supplylib.executor import ExecutorError, Result, stage_ok

KEYS_DIR = "/etc/nvidia-supply/keys"
MANAGED_BY = "nvidia-driver-supply"
PREFIX = "supply-"
# The container's command: Build.argv with its output in LOG (appended: a retry's pod adds
# its own), the exit status in LOG.exit, and SIGTERM (the pod stopped) passed on to the build.
WRAP = r'''l=$1; shift
mkdir -p "${l%/*}" || exit 1
"$@" >>"$l" 2>&1 </dev/null & c=$!
trap 'kill -TERM $c 2>/dev/null' TERM INT
wait $c; r=$?
while kill -0 $c 2>/dev/null; do wait $c; r=$?; done
echo $r >"$l.exit"
exit $r'''
DEFAULTS = {"keys_secret": "nvidia-supply-keys", "keys_items": ["mod.key", "mod.crt"],
            "backoff_limit": 2,
            "active_deadline_seconds": 14400, "ttl_seconds_after_finished": 3600,
            "poll_seconds": 5, "node_selector": {}, "tolerations": []}
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def job_name(build_id):
    """A DNS-1123 label of at most 63 characters for BUILD_ID's Job."""
    s = re.sub(r"[^a-z0-9-]+", "-", build_id.lower()).strip("-")
    name = PREFIX + s
    if s != build_id or len(name) > 63:
        digest = hashlib.sha256(build_id.encode()).hexdigest()[:10]
        name = name[:52].rstrip("-") + "-" + digest
    return name


def label_value(s):
    """S as a label value (at most 63 characters of [A-Za-z0-9_.-], alphanumeric ends)."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", s)[:63].strip("-_.")
    return s if LABEL_VALUE.fullmatch(s) else ""


def exit_code(log):
    """The status WRAP wrote beside LOG, or None."""
    try:
        with open(log + ".exit") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def condition(job):
    """'Complete' or 'Failed' when that condition is True, else None; and its words."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c["type"], ": ".join(x for x in (c.get("reason"), c.get("message")) if x)
    return None, ""


class Executor:
    """Builds as Jobs through KUBE (kube.Client) with CONF (the configuration's kubernetes
    object); PASS_NAME labels the Jobs (default: the pod's name, else this process)."""
    name = "kubernetes"

    def __init__(self, kube, conf, pass_name=None):
        self.kube = kube
        self.conf = dict(DEFAULTS, **(conf or {}))
        for key in ("image", "cache_pvc"):
            if not isinstance(self.conf.get(key), str) or not self.conf[key]:
                raise ExecutorError("the configuration's kubernetes.%s is not set: the "
                                    "Kubernetes executor needs the builder %s" % (
                                        key, "image" if key == "image" else "volume's claim"))
        self.ns = self.conf.get("namespace") or kube.namespace
        self.pass_name = label_value(pass_name or os.environ.get("HOSTNAME") or
                                     "pid-%d" % os.getpid()) or "pass"
        self.base = "/apis/batch/v1/namespaces/%s/jobs" % self.ns
        self.active = {}                      # Job name -> [Build, start time, adopted]

    def labels(self, b):
        return {"app.kubernetes.io/name": MANAGED_BY, "app.kubernetes.io/component": "build",
                "app.kubernetes.io/managed-by": MANAGED_BY,
                "nvidia.com/supply-pass": self.pass_name,
                "nvidia.com/supply-build": label_value(b.id) or "build"}

    def manifest(self, b, work):
        """The Job of Build B, its work directory WORK mounted at the same path."""
        c = self.conf
        resources = json.loads(json.dumps(c.get("resources") or {}))
        resources.setdefault("requests", {}).setdefault("cpu", str(max(1, b.jobs)))
        resources["requests"].setdefault("memory", "4Gi")
        mounts = [{"name": "work", "mountPath": work}]
        volumes = [{"name": "work", "persistentVolumeClaim": {"claimName": c["cache_pvc"]}}]
        if c.get("keys_secret"):
            mounts.append({"name": "keys", "mountPath": KEYS_DIR, "readOnly": True})
            secret = {"secretName": c["keys_secret"], "defaultMode": 0o400}
            if c["keys_items"] is not None:
                secret["items"] = [{"key": k, "path": k} for k in c["keys_items"]]
                secret["optional"] = True
            volumes.append({"name": "keys", "secret": secret})
        container = {"name": "build", "image": c["image"],
                     "command": ["/bin/sh", "-c", WRAP, "supply-build", b.log] + list(b.argv),
                     "workingDir": b.work, "resources": resources, "volumeMounts": mounts}
        if c.get("image_pull_policy"):
            container["imagePullPolicy"] = c["image_pull_policy"]
        pod = {"restartPolicy": "Never", "automountServiceAccountToken": False,
               "containers": [container], "volumes": volumes}
        if c["node_selector"]:
            pod["nodeSelector"] = c["node_selector"]
        if c["tolerations"]:
            pod["tolerations"] = c["tolerations"]
        if c.get("service_account"):
            pod["serviceAccountName"] = c["service_account"]
        target = getattr(b.target, "as_json", None)
        digest = hashlib.sha256(json.dumps(container["command"]).encode()).hexdigest()
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": job_name(b.id), "namespace": self.ns,
                             "labels": self.labels(b),
                             "annotations": {
                                 "nvidia.com/supply-target": json.dumps(
                                     target() if target else str(b.target), sort_keys=True),
                                 "nvidia.com/supply-command-sha256": digest}},
                "spec": {"backoffLimit": int(c["backoff_limit"]),
                         "activeDeadlineSeconds": int(c["active_deadline_seconds"]),
                         "ttlSecondsAfterFinished": int(c["ttl_seconds_after_finished"]),
                         "completions": 1, "parallelism": 1,
                         "template": {"metadata": {"labels": self.labels(b)}, "spec": pod}}}

    def _prepare(self, b):
        """What the local executor does before a build: the stage emptied, the dirs made."""
        shutil.rmtree(b.stage, ignore_errors=True)
        os.makedirs(b.stage)
        os.makedirs(b.work, exist_ok=True)
        os.makedirs(os.path.dirname(b.log), exist_ok=True)
        open(b.log, "wb").close()
        try:
            os.unlink(b.log + ".exit")
        except FileNotFoundError:
            pass

    def _start(self, b, work):
        body = self.manifest(b, work)
        name = body["metadata"]["name"]
        path = self.base + "/" + name
        for _ in range(2):
            old = self.kube.get(path, missing_ok=True)
            if old is not None:
                same = (old["metadata"].get("annotations") or {}).get(
                    "nvidia.com/supply-command-sha256") == \
                    body["metadata"]["annotations"]["nvidia.com/supply-command-sha256"]
                if same and condition(old)[0] != "Failed":
                    self.active[name] = [b, time.monotonic(), True]
                    return
                self._delete(name)
                continue
            self._prepare(b)
            try:
                self.kube.create(self.base, body)
            except kubelib.KubeError as e:
                if e.status == 409:      # made meanwhile (another pass): decide again
                    continue
                raise
            self.active[name] = [b, time.monotonic(), False]
            return
        raise ExecutorError("Job %s/%s: still there after it was deleted; delete it (kubectl "
                            "-n %s delete job %s) and run the pass again" % (
                                self.ns, name, self.ns, name))

    def _delete(self, name):
        self.kube.delete(self.base + "/" + name, "Background")

    def _finish(self, name, job):
        b, t0, adopted = self.active.pop(name)
        self._delete(name)
        kind, words = condition(job) if job else (None, "the Job was deleted by someone else")
        secs = time.monotonic() - t0
        code = exit_code(b.log)
        last = last_line(b.log)
        ok = kind == "Complete" and stage_ok(b.stage)
        if kind == "Complete" and not ok:
            last = "Job %s complete but no %s/stage.json: %s" % (name, b.stage, last)
        elif kind != "Complete":
            st = (job or {}).get("status") or {}
            tries = (st.get("failed") or 0) + (st.get("succeeded") or 0)
            last = "Job %s failed (%s) after %d tr%s: %s" % (
                name, words or "no reason given", tries, "y" if tries == 1 else "ies",
                last or "no output")
        return Result(b.id, ok, 0 if kind == "Complete" and code is None else code, secs,
                      last, b.stage)

    def stop(self):
        """Deletes every Job this pass made or adopted (their pods with them)."""
        for name in list(self.active):
            try:
                self._delete(name)
            except (kubelib.KubeError, OSError):
                pass  # the Job's ttlSecondsAfterFinished and activeDeadlineSeconds remain
            self.active.pop(name, None)

    def _workdir(self, builds):
        work = os.path.dirname(os.path.dirname(builds[0].work)) if builds else ""
        for b in builds:
            for p in (b.work, b.stage, b.log):
                if not os.path.isabs(p) or os.path.commonpath([work, p]) != work or p == work:
                    raise ExecutorError("build %s: %s is not under the work directory %s, "
                                        "the volume the Jobs see" % (b.id, p, work))
        return work

    def run(self, builds, parallel):
        parallel = max(1, int(parallel))
        work = self._workdir(builds)
        results, waiting = {}, list(builds)
        selector = "app.kubernetes.io/managed-by=" + MANAGED_BY
        try:
            while len(results) < len(builds):
                while waiting and len(self.active) < parallel:
                    self._start(waiting.pop(0), work)
                seen = {j["metadata"]["name"]: j
                        for j in self.kube.list(self.base, labelSelector=selector)}
                done = [n for n in self.active if n not in seen or condition(seen[n])[0]]
                for n in done:
                    r = self._finish(n, seen.get(n))
                    results[r.id] = r
                if not done:
                    time.sleep(float(self.conf["poll_seconds"]))
        except kubelib.KubeError as e:
            self.stop()
            raise ExecutorError("the Kubernetes executor: %s" % e) from None
        except BaseException:
            self.stop()
            raise
        return [results[b.id] for b in builds]
