#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A Kubernetes API server stand-in for the node agent's API client (installer/kube/):
TLS on 127.0.0.1, a bearer token, and the objects and calls the client makes, with the
API server's own answers to them:

  GET    /api/v1/nodes/NAME[/status]                     a Node
  PATCH  /api/v1/nodes/NAME[/status]   application/merge-patch+json (RFC 7386) or
         application/strategic-merge-patch+json (status.conditions and status.addresses
         merged by type, other lists replaced; the $-directives answered 415), carried out
         as kube-apiserver does (kubenode.py, which cites each step): 409 Conflict when the
         patch's metadata.resourceVersion is not the stored one, 422 Invalid for what
         validateNodeTaints refuses in spec.taints (and for labels, annotations, and times
         that are not RFC 3339); a status write changes no spec, a write of the Node itself
         no status (nodeStatusStrategy and nodeStrategy PrepareForUpdate,
         pkg/registry/core/node/strategy.go); a write that changes nothing keeps the
         resourceVersion. Conditions are taken as sent (types and times decoded): the
         server validates nothing else of them (ValidateNodeUpdate never looks at them)
  GET    /api/v1/pods?fieldSelector=spec.nodeName=NAME   a PodList of that node's pods,
         paged as the API server pages from etcd with limit and continue (page()); a pod
         annotated "test.invalid/env-entries": "N" is served with N environment entries
  POST   /api/v1/namespaces/NS/pods/NAME/eviction        policy/v1 Eviction: 201 and the
         pod gone (or, with spec.terminationGracePeriodSeconds, marked deleting and left
         until the test deletes it, as a kubelet would), or 429 when its disruption budget
         forbids (annotation "test.invalid/pdb-blocks": "true"), as the eviction
         subresource answers
  GET    /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME
  POST   /apis/coordination.k8s.io/v1/namespaces/NS/leases          409 AlreadyExists
  DELETE /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME     gone (a holder's lease
         released by a person or another node)
  PUT    /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME     409 Conflict unless
         metadata.resourceVersion is the stored one (optimistic concurrency)
  POST   /api/v1/namespaces/NS/events                   422 Invalid where kube-apiserver's
         validation refuses the Event (event_errors: the namespace, eventTime and the
         reporting fields, as pkg/apis/core/validation/events.go has them)
  DELETE /api/v1/namespaces/NS/pods/NAME                 the pod gone (a job that ended)
  POST   /api/v1/namespaces/NS/pods                      a pod made (a tenant's, by a test)
  GET    /apis/apps/v1/namespaces/NS/daemonsets/NAME     a DaemonSet (its status)
  GET    /apis/resource.k8s.io/V/namespaces/NS/resourceclaims/NAME  a ResourceClaim in a
         version V the state's "resource_versions" serves (default v1, v1beta2, v1beta1), or
         its Status NotFound (details.kind resourceclaims, as the registry answers), its
         requests in that version's shape (claim_as); another
         version answers kube-apiserver's unserved path: 404 "404 page not found", text
         (apiserver pkg/util/notfoundhandler/not_found_handler.go:64)
  POST   /apis/batch/v1/namespaces/NS/jobs               a batch/v1 Job, 422 Invalid where
         kube-apiserver's validation refuses it (job_errors), defaulted as the Job registry
         does (a uid, the generated selector and the template's labels, backoffLimit 6)
  GET    /apis/batch/v1/namespaces/NS/jobs[/NAME]        a Job, or the list (labelSelector)
  DELETE /apis/batch/v1/namespaces/NS/jobs/NAME          gone at once; its pods would be
         orphaned unless DeleteOptions.propagationPolicy says Background or Foreground, as
         batch/v1's default is (the orphan recorded in the state's "orphaned_pods_of")
  PATCH  /apis/batch/v1/namespaces/NS/jobs/NAME/status   the Job controller's own write
         (a merge patch), made by a test that acts as the controller and the kubelet

and, for kubectl reading what the agent wrote (`get`, as docs/operations.md's commands do),
legacy discovery (/api, /apis, each group version's APIResourceList: kubectl 1.32 asks for
the aggregated form first and takes this one when it is answered) and the lists of nodes,
pods, leases and events, filtered by labelSelector (key, !key, key=value, key!=value,
key in (a,b), key notin (a,b)) and fieldSelector
(dotted.path=value, joined by commas), as the API server does for the fields named.

A watch of the Nodes, GET /api/v1/nodes?watch=1&resourceVersion=RV[&timeoutSeconds=S], is
answered as the API server streams one (apiserver's endpoints/handlers/watch.go): a chunked
200 of WatchEvent JSON objects, one a line ({"type": "ADDED"|"MODIFIED"|"DELETED", "object":
the Node}), every change after RV (without RV, or "0": an ADDED for each Node first), until
S seconds have passed (default: the stand-in's lifetime); a change made through PATCH,
POST or DELETE is sent to each watch at once.

Every object carries metadata.resourceVersion, one counter for the store, as etcd's
revision. Errors are metav1.Status objects with the API server's reason and code. The
token is read from TOKEN_FILE on each request: a client that keeps an old one after the
file changed gets 401. FAULTS (a JSON file, read on each request, may be absent) makes the
next requests fail: {"faults": [{"method": "GET", "path": "/api/v1/nodes/n1", "status":
503, "times": 2, "retry_after": 1}]}; or, with "delay": SECONDS instead of a status, be
carried out and answered that much later (a client killed meanwhile has done the write
and not learnt it). "body": REGEX narrows a fault to the requests whose body it matches
(a PATCH that records one state). Each use counts down "times" in the file. Another
writer's change to a Node, on a PATCH of it, is "race": {"taints": [...]} (spec.taints
replaced) or "race": {"labels": {...}} (merged; null deletes): made and stored (a new
resourceVersion, a watch event) just before the PATCH is carried out, so that a PATCH
carrying the resourceVersion its client read meets the 409 a real concurrent write gives.
Each request is appended to LOG as a JSON line (method, path, query, content type, user
agent, body, status, and "at": when it was answered, time.monotonic() seconds); a PATCH
of a Node adds "node_before" and "node_after", the stored Node before it was carried out
(after any race) and after (the same when refused).

A slow peer, as a stalled API server or a congested path to it is: "stall": SECONDS reads
the request, answers nothing for that long and drops the connection (the request not
carried out); "trickle": SECONDS carries it out and sends the answer one byte each SECONDS.
Either is logged before it begins, with "status": "stall" or "trickle", so a test waits for
the client to be in the slow call, not for time.

  kube-api.py PORT_FILE CERT KEY TOKEN_FILE STATE FAULTS LOG [LIFETIME]

STATE is a JSON file of the initial objects ({"nodes": [...], "pods": [...], "leases":
[...], "daemonsets": [...], "jobs": [...], "resourceclaims": [...]}, a claim without its
apiVersion: it is served in each, its requests converted to the version asked), rewritten
after each change, so a test can read what the client did (and "orphaned_pods_of": the Jobs
deleted without their pods).
"""
import base64
import json
import os
import re
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubenode  # noqa: E402
import serverutil  # noqa: E402
from kubenode import DNS1123_SUBDOMAIN, LABEL_VALUE, qualified_name  # noqa: E402

PORT_FILE, CERT, KEY, TOKEN_FILE, STATE, FAULTS, LOG = sys.argv[1:8]
LIFETIME = float(sys.argv[8]) if len(sys.argv) > 8 else 120
LOCK = threading.Lock()
with open(STATE) as f:
    DB = json.load(f)
for kind in ("nodes", "pods", "leases", "events", "daemonsets", "jobs", "orphaned_pods_of",
             "resourceclaims"):
    DB.setdefault(kind, [])
CLAIM_VERSIONS = DB.get("resource_versions", ["v1", "v1beta2", "v1beta1"])
REV = [1]


def bump(obj):
    REV[0] += 1
    obj.setdefault("metadata", {})["resourceVersion"] = str(REV[0])


for kind in ("nodes", "pods", "leases", "daemonsets", "jobs", "resourceclaims"):
    for o in DB[kind]:
        bump(o)


def save():
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(DB, f, indent=1, sort_keys=True)
    os.replace(tmp, STATE)


def status(code, reason, message):
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


def find(kind, name, ns=None):
    for o in DB[kind]:
        m = o["metadata"]
        if m["name"] == name and (ns is None or m.get("namespace") == ns):
            return o
    return None


def delete_pod(pod):
    """An eviction's delete. A pod with spec.terminationGracePeriodSeconds above 0 is deleted
    gracefully, as the pod registry does (k8s.io/apiserver pkg/registry/rest/delete.go,
    BeforeDelete): metadata.deletionTimestamp and deletionGracePeriodSeconds set, the pod
    still listed until its kubelet has stopped it (here, the test's DELETE); asked again, it
    stays as it is. Without a grace period it is gone at once."""
    grace = pod.get("spec", {}).get("terminationGracePeriodSeconds", 0)
    if not grace:
        DB["pods"].remove(pod)
        return
    meta = pod["metadata"]
    if "deletionTimestamp" not in meta:
        meta["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                  time.gmtime(time.time() + grace))
        meta["deletionGracePeriodSeconds"] = grace
        bump(pod)


def fault(method, path, raw):
    """The first fault that matches, counted down in FAULTS; or None."""
    try:
        with open(FAULTS) as f:
            spec = json.load(f)
    except (OSError, ValueError):
        return None
    for fl in spec.get("faults", []):
        if fl.get("times", 0) > 0 and fl.get("method", method) == method and \
                re.fullmatch(fl["path"], path) and \
                re.search(fl.get("body", ""), raw.decode(errors="replace")):
            fl["times"] -= 1
            with open(FAULTS + ".tmp", "w") as f:
                json.dump(spec, f)
            os.replace(FAULTS + ".tmp", FAULTS)
            return fl
    return None


# Discovery: (resource, kind, namespaced) per group version.
RESOURCES = {
    "v1": [("nodes", "Node", False), ("pods", "Pod", True), ("events", "Event", True)],
    "coordination.k8s.io/v1": [("leases", "Lease", True)],
    "apps/v1": [("daemonsets", "DaemonSet", True)],
    "batch/v1": [("jobs", "Job", True)],
}
RESOURCES.update({"resource.k8s.io/" + v: [("resourceclaims", "ResourceClaim", True)]
                  for v in CLAIM_VERSIONS})


def resource_list(gv):
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [{"name": r, "singularName": k.lower(), "namespaced": ns, "kind": k,
                           "verbs": ["get", "list"]} for r, k, ns in RESOURCES[gv]]}


DISCOVERY = {
    "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0-kube-api.py"},
    "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
}
for _gv in RESOURCES:  # a group once, its versions in RESOURCES' order (the first preferred)
    if "/" in _gv:
        _v = {"groupVersion": _gv, "version": _gv.split("/")[1]}
        _gs = [g for g in DISCOVERY["/apis"]["groups"] if g["name"] == _gv.split("/")[0]]
        if _gs:
            _gs[0]["versions"].append(_v)
        else:
            DISCOVERY["/apis"]["groups"].append(
                {"name": _gv.split("/")[0], "versions": [_v], "preferredVersion": _v})
for _gv in RESOURCES:
    DISCOVERY[("/api/" if _gv == "v1" else "/apis/") + _gv] = resource_list(_gv)


def field(obj, dotted):
    for k in dotted.split("."):
        obj = obj.get(k) if isinstance(obj, dict) else None
    return "" if obj is None else str(obj).lower() if isinstance(obj, bool) else str(obj)


def label_terms(text):
    """A labelSelector's terms: split at the commas outside parentheses."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [t for t in terms + [cur.strip()] if t]


SET_TERM = re.compile(r"(\S+)\s+(in|notin)\s+\((.*)\)")


def label_term_matches(term, labels):
    """One term of apimachinery's labels.Parse grammar: key, !key, key=v, key==v, key!=v,
    key in (a,b), key notin (a,b)."""
    m = SET_TERM.fullmatch(term)
    if m:
        vals = {v.strip() for v in m.group(3).split(",")}
        return (labels.get(m.group(1)) in vals) == (m.group(2) == "in") and \
            (m.group(2) == "notin" or m.group(1) in labels)
    if term.startswith("!"):
        return term[1:].strip() not in labels
    if "!=" in term:
        k, _, v = term.partition("!=")
        return labels.get(k.strip()) != v.strip()
    k, eq, v = term.partition("=")
    return k.strip() in labels and (not eq or labels[k.strip()] == v.lstrip("=").strip())


def selected(obj, query):
    """Whether OBJ matches the query's labelSelector (label_term_matches) and fieldSelector
    (equality only)."""
    labels = obj.get("metadata", {}).get("labels", {})
    for term in label_terms(query.get("labelSelector", [""])[0]):
        if not label_term_matches(term, labels):
            return False
    for term in filter(None, query.get("fieldSelector", [""])[0].split(",")):
        k, _, v = term.partition("=")
        if field(obj, k.rstrip("=")) != v.lstrip("="):
            return False
    return True


LISTS = re.compile(r"/api/v1/(nodes|pods|events)|/api/v1/namespaces/([^/]+)/(pods|events)|"
                   r"/apis/(?:coordination\.k8s\.io|batch)/v1/namespaces/([^/]+)/(leases|jobs)")
LIST_KIND = {"nodes": "NodeList", "pods": "PodList", "events": "EventList", "leases": "LeaseList",
             "jobs": "JobList"}
LIST_VERSION = {"leases": "coordination.k8s.io/v1", "jobs": "batch/v1"}
LEASES = re.compile(r"/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?")
EVICTION = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction")
EVENTS = re.compile(r"/api/v1/namespaces/([^/]+)/events")
PODS = re.compile(r"/api/v1/namespaces/([^/]+)/pods")
POD = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)")
DAEMONSET = re.compile(r"/apis/apps/v1/namespaces/([^/]+)/daemonsets/([^/]+)")
CLAIM = re.compile(r"/apis/resource\.k8s\.io/([^/]+)/namespaces/([^/]+)/resourceclaims/([^/]+)")
# What kube-apiserver answers for a path no group version serves (net/http's NotFound).
NOT_SERVED = (404, "404 page not found\n")
NODE = re.compile(r"/api/v1/nodes/([^/]+)(/status)?")


# metav1.MicroTime's JSON (RFC3339Micro): six digits of fraction, exactly.
MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)")


def event_errors(ev):
    """What kube-apiserver refuses in a core/v1 Event it is asked to create: kubernetes
    pkg/apis/core/validation/events.go, ValidateEventCreate, which for a core/v1 request
    applies legacyValidateEvent only. An Event without eventTime about a cluster-scoped
    object (a Node: no involvedObject.namespace) is taken only in namespace "" or
    "default"; with eventTime, in "default" or "kube-system", and then reportingComponent
    (a qualified name), reportingInstance (<= 128), action (<= 128), reason (<= 128) are
    required and message is at most 1024 characters. A list of field errors (422), or a
    (status, Status) pair for a body that does not decode (400)."""
    ns = ev["metadata"].get("namespace", "")
    inv = ev.get("involvedObject") or {}
    t = ev.get("eventTime")
    if t is not None and not (isinstance(t, str) and MICRO_TIME.fullmatch(t)):
        return status(400, "BadRequest", 'Event in version "v1" cannot be handled as a Event: '
                      'parsing time "%s" as "2006-01-02T15:04:05.000000Z07:00": cannot parse' % t)
    errs = []

    def invalid(path, value, why):
        errs.append('%s: Invalid value: "%s": %s' % (path, value, why))

    def required(path):
        errs.append("%s: Required value" % path)
    if t is None:
        if not inv.get("namespace"):
            if ns not in ("", "default"):
                invalid("involvedObject.namespace", "", "does not match event.namespace")
        elif ns != inv["namespace"]:
            invalid("involvedObject.namespace", inv["namespace"], "does not match event.namespace")
    else:
        if not inv.get("namespace") and ns not in ("default", "kube-system"):
            invalid("involvedObject.namespace", "", "does not match event.namespace")
        rc = ev.get("reportingComponent", "")
        if not rc:
            required("reportingComponent")
        if not qualified_name(rc):
            invalid("reportingComponent", rc, "must be a qualified name")
        for f, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            if not ev.get(f):
                required(f)
            if len(ev.get(f, "")) > limit:
                invalid(f, "", "can have at most %d characters" % limit)
        if len(ev.get("message", "")) > 1024:
            invalid("message", "", "can have at most 1024 characters")
    if len(ns) > 253 or not DNS1123_SUBDOMAIN.fullmatch(ns):
        invalid("namespace", ns, "a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.'")
    return errs


JOBS = re.compile(r"/apis/batch/v1/namespaces/([^/]+)/jobs(?:/([^/]+)(/status)?)?")
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
SUBDOMAIN_WHY = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character")
LABEL_WHY = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character")


def label_errors(labels, path, errs):
    """k8s.io/apimachinery pkg/api/validation ValidateLabels: each key a qualified name,
    each value at most 63 characters of LABEL_VALUE."""
    for k, v in (labels or {}).items():
        if not qualified_name(k):
            errs.append('%s: Invalid value: "%s": name part must consist of alphanumeric '
                        "characters, '-', '_' or '.'" % (path, k))
        if not isinstance(v, str) or len(v) > 63:
            errs.append('%s: Invalid value: "%s": must be no more than 63 characters' % (path, v))
        elif not LABEL_VALUE.fullmatch(v):
            errs.append('%s: Invalid value: "%s": a valid label must be an empty string or '
                        "consist of alphanumeric characters, '-', '_' or '.'" % (path, v))


def selector_matches(sel, labels):
    """metav1.LabelSelectorAsSelector(sel).Matches(labels), for matchLabels and the
    In/NotIn/Exists/DoesNotExist expressions."""
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if (op == "In" and labels.get(k) not in vals) or (op == "NotIn" and labels.get(k) in vals) \
                or (op == "Exists" and k not in labels) or (op == "DoesNotExist" and k in labels):
            return False
    return True


def pod_spec_errors(spec, path, errs):
    """The parts of pkg/apis/core/validation ValidatePodSpec a builder's pod can get wrong:
    containers required, each named by a DNS-1123 label (unique) with an image; volumes
    named by DNS-1123 labels, unique; each volumeMount naming a volume, with a mountPath,
    unique per container; nodeSelector's labels; a toleration's operator Exists or Equal."""
    names = set()
    for i, v in enumerate(spec.get("volumes") or []):
        n = v.get("name", "")
        if not DNS1123_LABEL.fullmatch(n) or len(n) > 63:
            errs.append('%s.volumes[%d].name: Invalid value: "%s": %s' % (path, i, n, LABEL_WHY))
        elif n in names:
            errs.append('%s.volumes[%d].name: Duplicate value: "%s"' % (path, i, n))
        names.add(n)
    containers = spec.get("containers") or []
    if not containers:
        errs.append("%s.containers: Required value" % path)
    seen = set()
    for i, c in enumerate(containers):
        cp = "%s.containers[%d]" % (path, i)
        n = c.get("name", "")
        if not DNS1123_LABEL.fullmatch(n) or len(n) > 63:
            errs.append('%s.name: Invalid value: "%s": %s' % (cp, n, LABEL_WHY))
        elif n in seen:
            errs.append('%s.name: Duplicate value: "%s"' % (cp, n))
        seen.add(n)
        if not c.get("image"):
            errs.append("%s.image: Required value" % cp)
        mounts = set()
        for j, m in enumerate(c.get("volumeMounts") or []):
            if m.get("name") not in names:
                errs.append('%s.volumeMounts[%d].name: Not found: "%s"' % (cp, j, m.get("name")))
            if not m.get("mountPath"):
                errs.append("%s.volumeMounts[%d].mountPath: Required value" % (cp, j))
            elif m["mountPath"] in mounts:
                errs.append('%s.volumeMounts[%d].mountPath: Invalid value: "%s": must be unique'
                            % (cp, j, m["mountPath"]))
            mounts.add(m.get("mountPath"))
    label_errors(spec.get("nodeSelector"), path + ".nodeSelector", errs)
    for i, t in enumerate(spec.get("tolerations") or []):
        if t.get("operator", "Equal") not in ("Equal", "Exists"):
            errs.append('%s.tolerations[%d].operator: Unsupported value: "%s": supported values: '
                        '"Equal", "Exists"' % (path, i, t.get("operator")))


def job_errors(job):
    """What kube-apiserver refuses in a batch/v1 Job it is asked to create, after the Job
    registry's defaults (pkg/registry/batch/job/strategy.go, PrepareForCreate and
    generateSelector: without spec.manualSelector the selector is controller-uid=UID and
    the template gets the job-name and controller-uid labels, batch.kubernetes.io/ and
    legacy). kubernetes pkg/apis/batch/validation/validation.go: ValidateJob's
    ValidateObjectMeta (name a DNS-1123 subdomain), validateGeneratedSelector ("`selector`
    not auto-generated"), ValidateJobSpec ("`selector` does not match template `labels`")
    and validateJobSpec (parallelism, completions, activeDeadlineSeconds, backoffLimit,
    ttlSecondsAfterFinished non-negative; restartPolicy OnFailure or Never, "Required
    value" when empty or Always, which SetDefaults_PodSpec makes of empty); the template's
    labels are label values, so a name past 63 characters is refused there."""
    errs = []
    meta, spec = job.get("metadata") or {}, job.get("spec") or {}
    name = meta.get("name", "")
    if not name:
        errs.append("metadata.name: Required value: name or generateName is required")
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.fullmatch(name):
        errs.append('metadata.name: Invalid value: "%s": %s' % (name, SUBDOMAIN_WHY))
    label_errors(meta.get("labels"), "metadata.labels", errs)
    for f in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
              "ttlSecondsAfterFinished"):
        if f in spec and (not isinstance(spec[f], int) or spec[f] < 0):
            errs.append("spec.%s: Invalid value: %s: must be greater than or equal to 0"
                        % (f, json.dumps(spec[f])))
    tmpl = spec.get("template") or {}
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    label_errors(labels, "spec.template.labels", errs)
    sel = spec.get("selector")
    if spec.get("manualSelector") is True:
        if not sel:
            errs.append("spec.selector: Required value")
        elif not selector_matches(sel, labels):
            errs.append("spec.template.metadata.labels: Invalid value: %s: `selector` does not "
                        "match template `labels`" % json.dumps(labels, sort_keys=True))
    elif sel is not None and not selector_matches(sel, {"controller-uid": meta.get("uid", ""),
                                                        "job-name": name}):
        errs.append("spec.selector: Invalid value: %s: `selector` not auto-generated"
                    % json.dumps(sel, sort_keys=True))
    pod = tmpl.get("spec") or {}
    pod_spec_errors(pod, "spec.template.spec", errs)
    rp = pod.get("restartPolicy", "")
    if rp in ("", "Always"):
        errs.append('spec.template.spec.restartPolicy: Required value: valid values: '
                    '"OnFailure", "Never"')
    elif rp not in ("OnFailure", "Never"):
        errs.append('spec.template.spec.restartPolicy: Unsupported value: "%s": supported '
                    'values: "OnFailure", "Never"' % rp)
    return errs


def job_create(ns, job):
    """(status, object) of POST jobs: validated, then defaulted and stored."""
    meta = job.setdefault("metadata", {})
    if meta.get("namespace", ns) != ns:
        return status(400, "BadRequest", "the namespace of the provided object does not match "
                      "the namespace sent on the request")
    if job.get("apiVersion") != "batch/v1" or job.get("kind") != "Job":
        return status(400, "BadRequest", "not a batch/v1 Job")
    if "generateName" in meta and "name" not in meta:
        meta["name"] = meta["generateName"] + "%05d" % REV[0]
    uid = "00000000-0000-4000-8000-%012d" % (REV[0] + 1)
    spec = job.setdefault("spec", {})
    labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
    if spec.get("manualSelector") is not True:
        for k in ("controller-uid", "batch.kubernetes.io/controller-uid"):
            labels.setdefault(k, uid)
        for k in ("job-name", "batch.kubernetes.io/job-name"):
            labels.setdefault(k, meta.get("name", ""))
    meta["uid"] = uid
    bad = job_errors(job)
    if bad:
        return status(422, "Invalid", 'Job.batch "%s" is invalid: %s' % (
            meta.get("name", ""), bad[0] if len(bad) == 1 else "[%s]" % ", ".join(bad)))
    if find("jobs", meta["name"], ns):
        return status(409, "AlreadyExists", 'jobs.batch "%s" already exists' % meta["name"])
    if spec.get("manualSelector") is not True:
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    for k, v in (("backoffLimit", 6), ("completions", 1), ("parallelism", 1),
                 ("completionMode", "NonIndexed"), ("suspend", False)):
        spec.setdefault(k, v)
    meta["namespace"] = ns
    meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta["generation"] = 1
    job["status"] = {}
    bump(job)
    DB["jobs"].append(job)
    return 201, job


def jobs(method, ns, name, sub, body):
    """(status, object) of a Job call, or None for one this stand-in does not serve."""
    if method == "POST" and not name:
        return job_create(ns, body)
    job = find("jobs", name, ns) if name else None
    if name and not job:
        return status(404, "NotFound", 'jobs.batch "%s" not found' % name)
    if method == "GET" and name and not sub:
        return 200, job
    if method == "DELETE" and name and not sub:
        # batch/v1's default is to orphan the pods (pkg/registry/batch/job/strategy.go,
        # DefaultGarbageCollectionPolicy: OrphanDependents for batch/v1): a client that
        # means to stop the build must ask for Background or Foreground.
        if body.get("propagationPolicy") not in ("Background", "Foreground"):
            DB["orphaned_pods_of"].append(name)
        DB["jobs"].remove(job)
        return 200, job
    if method == "PATCH" and sub:
        job["status"] = merge_patch(job.get("status") or {}, body.get("status") or {})
        bump(job)
        return 200, job
    return None


def page(items, query, meta):
    """A list's page as the API server serves one from etcd (apiserver's storage/etcd3
    store.go, GetList): items in key order (namespace/name), at most `limit` of them
    matching, and metadata.continue, an opaque token (base64 of the last key served),
    while more remain; remainingItemCount only without selectors. (None, Status) for a
    token that is not one (410 Expired is what a compacted one gets)."""
    def key(o):
        return "%s/%s" % (o["metadata"].get("namespace", ""), o["metadata"]["name"])
    items = sorted(items, key=key)
    token = query.get("continue", [""])[0]
    if token:
        try:
            start = json.loads(base64.b64decode(token, validate=True))["start"]
        except (ValueError, KeyError, TypeError):
            return None, status(400, "BadRequest", "continue key is not valid: illegal base64 "
                                "data")
        items = [o for o in items if key(o) > start]
    try:
        limit = int(query.get("limit", ["0"])[0])
    except ValueError:
        limit = 0
    if 0 < limit < len(items):
        rest = len(items) - limit
        items = items[:limit]
        meta["continue"] = base64.b64encode(json.dumps(
            {"v": "meta.k8s.io/v1", "rv": int(meta["resourceVersion"]),
             "start": key(items[-1])}).encode()).decode()
        if "labelSelector" not in query and "fieldSelector" not in query:
            meta["remainingItemCount"] = rest
    return items, meta


# The Nodes' changes as a watch sees them: (resourceVersion, type, Node), every one since the
# start (no compaction: a watch from any resourceVersion is answered, never 410 Gone).
NODE_EVENTS = []
CHANGED = threading.Condition(LOCK)


def node_versions():
    return {n["metadata"]["name"]: n["metadata"].get("resourceVersion") for n in DB["nodes"]}


def node_events(before):
    """The Nodes' changes since BEFORE (node_versions()) recorded, the watches woken; under
    LOCK."""
    after = {n["metadata"]["name"]: n for n in DB["nodes"]}
    for name, n in after.items():
        if before.get(name) != n["metadata"].get("resourceVersion"):
            NODE_EVENTS.append((int(n["metadata"]["resourceVersion"]),
                                "ADDED" if name not in before else "MODIFIED",
                                json.loads(json.dumps(n))))
    for name in set(before) - set(after):
        REV[0] += 1
        NODE_EVENTS.append((REV[0], "DELETED", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "resourceVersion": str(REV[0])}}))
    CHANGED.notify_all()


# A tenant's pod of any size, made here, not stored in a test: annotation
# "test.invalid/env-entries": "N" gives its first container N environment entries when the
# pod is served in a list (spliced into the answer's text by Handler.answer).
ENV_MARK = "test.invalid/env-entries"
ENV_TEXT = {}


def tenant_env(pod):
    n = pod.get("metadata", {}).get("annotations", {}).get(ENV_MARK)
    if not n or not pod.get("spec", {}).get("containers"):
        return pod
    pod = json.loads(json.dumps(pod))
    pod["spec"]["containers"][0]["env"] = "@@env-%d@@" % int(n)
    return pod


def env_text(n):
    if n not in ENV_TEXT:
        ENV_TEXT[n] = "[" + ", ".join('{"name": "E%d"}' % i for i in range(n)) + "]"
    return ENV_TEXT[n]


# resource/v1 ExactDeviceRequest's members (types.go, k8s.io/api as k8s-dra-driver-gpu vendors
# it at 2240711): v1 and v1beta2 nest them in a request's "exactly"; v1beta1 has them in the
# request itself (its DeviceRequest), as the API server's conversion moves them.
EXACT = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
         "tolerations", "capacity")


def claim_as(version, claim):
    """CLAIM (stored in either shape) as VERSION serves it: its requests converted."""
    out = json.loads(json.dumps(claim))
    for r in out.get("spec", {}).get("devices", {}).get("requests", []):
        if version == "v1beta1" and "exactly" in r:
            r.update(r.pop("exactly"))
        elif version != "v1beta1" and "deviceClassName" in r:
            r["exactly"] = {k: r.pop(k) for k in EXACT if k in r}
    return {"apiVersion": "resource.k8s.io/" + version, "kind": "ResourceClaim", **out}


def claim_get(version, ns, name):
    if version not in CLAIM_VERSIONS:
        return NOT_SERVED
    claim = find("resourceclaims", name, ns)
    if not claim:
        code, obj = status(404, "NotFound", 'resourceclaims.resource.k8s.io "%s" not found'
                           % name)
        obj["details"] = {"name": name, "group": "resource.k8s.io", "kind": "resourceclaims"}
        return code, obj
    return 200, claim_as(version, claim)


def handle(method, path, query, ctype, body):
    """(status, object) for one authorised request, under LOCK."""
    m = NODE.fullmatch(path)
    if m:
        node = find("nodes", m.group(1))
        if not node:
            return status(404, "NotFound", 'nodes "%s" not found' % m.group(1))
        if method == "GET":
            return 200, node
        if method == "PATCH":
            code, obj, new = kubenode.patch(node, body, ctype, bool(m.group(2)))
            if new:
                bump(new)
                DB["nodes"][DB["nodes"].index(node)] = new
            return code, obj
    if method == "GET" and path in DISCOVERY:
        return 200, DISCOVERY[path]
    m = LISTS.fullmatch(path)
    if m and method == "GET":
        kind = m.group(1) or m.group(3) or m.group(5)
        ns = m.group(2) or m.group(4)
        items = [o for o in DB[kind] if (ns is None or o["metadata"].get("namespace") == ns)
                 and selected(o, query)]
        meta = {"resourceVersion": str(REV[0])}
        if "limit" in query or "continue" in query:
            items, meta = page(items, query, meta)
            if items is None:
                return meta
        return 200, {"kind": LIST_KIND[kind],
                     "apiVersion": LIST_VERSION.get(kind, "v1"),
                     "metadata": meta, "items": [tenant_env(o) for o in items]}
    m = EVICTION.fullmatch(path)
    if m and method == "POST":
        ns, name = m.groups()
        if body.get("apiVersion") != "policy/v1" or body.get("kind") != "Eviction" or \
                body.get("metadata", {}).get("name") != name:
            return status(400, "BadRequest", "not a policy/v1 Eviction of pod %s" % name)
        pod = find("pods", name, ns)
        if not pod:
            return status(404, "NotFound", 'pods "%s" not found' % name)
        if pod["metadata"].get("annotations", {}).get("test.invalid/pdb-blocks") == "true":
            return status(429, "TooManyRequests",
                          "Cannot evict pod as it would violate the pod's disruption budget.")
        delete_pod(pod)
        return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}
    m = LEASES.fullmatch(path)
    if m:
        ns, name = m.groups()
        if method == "GET" and name:
            lease = find("leases", name, ns)
            return (200, lease) if lease else status(
                404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name)
        if method == "POST" and not name:
            name = body.get("metadata", {}).get("name", "")
            if find("leases", name, ns):
                return status(409, "AlreadyExists",
                              'leases.coordination.k8s.io "%s" already exists' % name)
            body.setdefault("metadata", {})["namespace"] = ns
            body["metadata"].pop("resourceVersion", None)
            bump(body)
            DB["leases"].append(body)
            return 201, body
        if method == "DELETE" and name:
            lease = find("leases", name, ns)
            if not lease:
                return status(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name)
            DB["leases"].remove(lease)
            return 200, lease
        if method == "PUT" and name:
            lease = find("leases", name, ns)
            if not lease:
                return status(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name)
            version = body.get("metadata", {}).get("resourceVersion")
            if version != lease["metadata"]["resourceVersion"]:
                return status(409, "Conflict",
                              'Operation cannot be fulfilled on leases.coordination.k8s.io "%s": '
                              "the object has been modified; please apply your changes to the "
                              "latest version and try again" % name)
            body["metadata"]["namespace"] = ns
            bump(body)
            DB["leases"][DB["leases"].index(lease)] = body
            return 200, body
    m = PODS.fullmatch(path)
    if m and method == "POST":
        body.setdefault("metadata", {})["namespace"] = m.group(1)
        if find("pods", body["metadata"].get("name", ""), m.group(1)):
            return status(409, "AlreadyExists",
                          'pods "%s" already exists' % body["metadata"]["name"])
        bump(body)
        DB["pods"].append(body)
        return 201, body
    m = POD.fullmatch(path)
    if m and method == "DELETE":
        pod = find("pods", m.group(2), m.group(1))
        if not pod:
            return status(404, "NotFound", 'pods "%s" not found' % m.group(2))
        DB["pods"].remove(pod)
        return 200, pod
    m = DAEMONSET.fullmatch(path)
    if m and method == "GET":
        ds = find("daemonsets", m.group(2), m.group(1))
        return (200, ds) if ds else status(
            404, "NotFound", 'daemonsets.apps "%s" not found' % m.group(2))
    m = CLAIM.fullmatch(path)
    if m and method == "GET":
        return claim_get(*m.groups())
    m = JOBS.fullmatch(path)
    if m:
        got = jobs(method, m.group(1), m.group(2), m.group(3), body)
        if got:
            return got
    m = EVENTS.fullmatch(path)
    if m and method == "POST":
        meta = body.setdefault("metadata", {})
        if meta.get("namespace", m.group(1)) != m.group(1):
            return status(400, "BadRequest", "the namespace of the provided object does not "
                          "match the namespace sent on the request")
        meta["namespace"] = m.group(1)
        if "generateName" in meta and "name" not in meta:
            meta["name"] = meta["generateName"] + str(REV[0])
        bad = event_errors(body)
        if isinstance(bad, tuple):
            return bad
        if bad:
            return status(422, "Invalid", 'Event "%s" is invalid: %s' % (
                meta.get("name", ""), bad[0] if len(bad) == 1 else "[%s]" % ", ".join(bad)))
        bump(body)
        DB["events"].append(body)
        return 201, body
    return status(404, "NotFound", "the server could not find the requested resource")


def raced(name, change):
    """The fault "race": another writer's change to Node NAME, made and stored (a new
    resourceVersion, a watch event) before the request is carried out; under LOCK."""
    node = find("nodes", name)
    if node:
        before = node_versions()
        kubenode.race(node, change)
        bump(node)
        save()
        node_events(before)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, obj, headers=()):
        if isinstance(obj, str):  # a text answer: an unserved path's
            data = obj.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        data = json.dumps(obj)
        if '"@@env-' in data:
            data = re.sub(r'"@@env-(\d+)@@"', lambda m: env_text(int(m.group(1))), data)
        data = data.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (ssl.SSLError, ConnectionError):
            pass  # a client that stops reading (one past its bound on an answer)

    def answer_slowly(self, code, obj, headers, every):
        """The whole answer, head and body, one byte each EVERY seconds."""
        data = json.dumps(obj).encode()
        head = "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % (
            code, self.responses.get(code, ("",))[0], len(data))
        head += "".join("%s: %s\r\n" % kv for kv in headers) + "\r\n"
        self.close_connection = True
        try:
            for b in head.encode() + data:
                self.wfile.write(bytes([b]))
                self.wfile.flush()
                time.sleep(every)
        except OSError:
            pass  # the client gave up: what a slow answer is for

    def watch_nodes(self, query, raw_query):
        """The Nodes' changes after the query's resourceVersion, streamed as WatchEvent lines
        in chunks until timeoutSeconds, as the API server's watch handler serves them."""
        try:
            rv = int(query.get("resourceVersion", ["0"])[0] or 0)
            timeout = float(query.get("timeoutSeconds", [LIFETIME])[0])
        except ValueError:
            self.answer(*status(400, "BadRequest", "resourceVersion and timeoutSeconds are "
                                "numbers"))
            return
        with LOCK:
            with open(LOG, "a") as f:
                f.write(json.dumps({"method": "GET", "path": "/api/v1/nodes", "query": raw_query,
                                    "content_type": "", "body": "", "status": 200,
                                    "user_agent": self.headers.get("User-Agent", "")}) + "\n")
            if rv == 0:
                pending = [(int(n["metadata"]["resourceVersion"]), "ADDED",
                            json.loads(json.dumps(n))) for n in DB["nodes"]]
                rv = REV[0]
            else:
                pending = []
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        end = time.monotonic() + timeout
        try:
            while True:
                for ev_rv, typ, obj in pending:
                    line = (json.dumps({"type": typ, "object": obj}) + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    rv = max(rv, ev_rv)
                self.wfile.flush()
                with CHANGED:
                    pending = [e for e in NODE_EVENTS if e[0] > rv]
                    while not pending and time.monotonic() < end:
                        CHANGED.wait(end - time.monotonic())
                        pending = [e for e in NODE_EVENTS if e[0] > rv]
                if not pending:
                    self.wfile.write(b"0\r\n\r\n")
                    return
        except OSError:
            pass  # the client went away: what ends most watches

    def serve(self):
        url = urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        with open(TOKEN_FILE) as f:
            token = f.read().strip()
        query = parse_qs(url.query)
        if (self.command == "GET" and url.path == "/api/v1/nodes" and
                query.get("watch", [""])[0] in ("1", "true") and
                self.headers.get("Authorization") == "Bearer " + token):
            self.watch_nodes(query, url.query)
            return
        headers = ()
        node_path = NODE.fullmatch(url.path) if self.command != "GET" else None
        extra = {}
        with LOCK:
            fl = fault(self.command, url.path, raw)
            if self.headers.get("Authorization") != "Bearer " + token:
                code, obj = status(401, "Unauthorized", "Unauthorized")
            elif fl and "stall" in fl:
                code, obj = "stall", None
            elif fl and "status" in fl:
                code, obj = status(fl["status"], "InternalError" if fl["status"] >= 500 else
                                   "TooManyRequests", "injected by the test")
                if "retry_after" in fl:
                    headers = (("Retry-After", str(fl["retry_after"])),)
            else:
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = None
                if body is None:
                    code, obj = status(400, "BadRequest", "the body is not JSON")
                else:
                    if fl and "race" in fl and node_path:
                        raced(node_path.group(1), fl["race"])
                    before = node_versions()
                    if node_path:
                        extra["node_before"] = find("nodes", node_path.group(1))
                    code, obj = handle(self.command, url.path, parse_qs(url.query), ctype, body)
                    if code < 300 and self.command != "GET":
                        save()
                        node_events(before)
            if node_path:
                extra["node_after"] = find("nodes", node_path.group(1))
            if fl and "trickle" in fl:
                logged = "trickle"
            else:
                logged = code
            with open(LOG, "a") as f:
                f.write(json.dumps({"method": self.command, "path": url.path,
                                    "query": url.query, "content_type": ctype,
                                    "user_agent": self.headers.get("User-Agent", ""),
                                    "body": raw.decode(errors="replace"),
                                    "status": logged, "at": time.monotonic(),
                                    **extra}) + "\n")
        if code == "stall":
            time.sleep(fl["stall"])  # no answer: the client's own deadline must end the call
            self.close_connection = True
            return
        if fl and "delay" in fl:
            time.sleep(fl["delay"])  # done, and answered late: the client may be gone by then
        if fl and "trickle" in fl:
            self.answer_slowly(code, obj, headers, fl["trickle"])
            return
        self.answer(code, obj, headers)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = serve


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
save()
serverutil.serve(server, PORT_FILE, LIFETIME)
