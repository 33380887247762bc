#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The runbook test's (t_runbooks) reading of docs/operations.md and its stand-in cluster of
# one node, whose host is a fake root:
#   runbook.py blocks DOC               the test=NAME block names, in order
#   runbook.py block DOC NAME           that block's text (exactly one)
#   runbook.py exclusive FILE...        no node label set is selected by two DaemonSets
#   runbook.py covers OLD FILE...       ... and each node OLD selected is selected by one
#   runbook.py kubectl ARGS...          a kubectl command of the runbooks, on the stand-in
#   runbook.py emulation-check DS       what stands in for a feature an older kubectl lacks
#                                       gives what kubectl 1.30+ gives (when it is at hand)
# The cluster's state is in $CLUSTER: ds/*.yaml (applied objects), the node ($NODE, labels
# $NODE_LABELS as JSON, kernel $NODE_KERNEL), pods/*.rc and *.log (the init containers'
# runs). kubectl runs for real where it can offline: `apply --dry-run=client` and `debug`
# against tests/tools/kube-stub.py (port $KUBE_PORT, pods in $KUBE_PODS), `set env` and
# `patch` with --local on the applied DaemonSet; `wait` and `rollout status` answer from the
# pods' runs what kubectl would read in the objects' status. The kubectl is $KUBECTL, else
# PATH's; where
# it is older than the runbooks' 1.30 and lacks debug's sysadmin profile or set env on init
# containers (kubectl is asked), that verb is carried out as kubectl 1.30+ does (the source
# is cited below), and said on stderr. A verb the runbooks use that this file does not know
# fails the test: the document cannot grow a step the test skips.
import copy
import glob
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.error
import urllib.request

import yaml

# ---- the document ----


def fences(doc):
    """(name, text) of each ```sh test=NAME fence, indentation removed."""
    out, lines, i = [], open(doc).read().split("\n"), 0
    while i < len(lines):
        m = re.match(r"^( *)```sh test=([a-z0-9-]+)\s*$", lines[i])
        i += 1
        if not m:
            continue
        ind, body = len(m.group(1)), []
        while not re.match(r"^ *```\s*$", lines[i]):
            body.append(lines[i][ind:] if lines[i][:ind].strip() == "" else lines[i])
            i += 1
        i += 1
        out.append((m.group(2), "\n".join(body) + "\n"))
    return out


# ---- node affinity (k8s.io/component-helpers/scheduling/corev1/nodeaffinity semantics) ----


def expr_matches(e, labels):
    k, op, vals = e["key"], e["operator"], e.get("values", [])
    if op == "In":
        return k in labels and labels[k] in vals
    if op == "NotIn":
        return k not in labels or labels[k] not in vals
    if op == "Exists":
        return k in labels
    if op == "DoesNotExist":
        return k not in labels
    if op in ("Gt", "Lt"):
        if k not in labels or not labels[k].lstrip("-").isdigit():
            return False
        return int(labels[k]) > int(vals[0]) if op == "Gt" else int(labels[k]) < int(vals[0])
    raise ValueError("operator " + op)


def selects(ds, labels):
    """Terms are ORed, a term's expressions ANDed; nodeSelector ANDed with them."""
    spec = ds["spec"]["template"]["spec"]
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not req:
        return True
    return any(all(expr_matches(e, labels) for e in t.get("matchExpressions", []))
               for t in req["nodeSelectorTerms"])


def daemonsets(paths):
    out = []
    for p in paths:
        files = sorted(glob.glob(os.path.join(p, "*.yaml"))) if os.path.isdir(p) else [p]
        for f in files:
            out += [(f, d) for d in yaml.safe_load_all(open(f)) if d and d["kind"] == "DaemonSet"]
    return out


def label_sets(sets):
    """Every combination, per key the expressions name, of: absent, each value named, one
    value none names."""
    keys = {}
    for _, ds in sets:
        req = (ds["spec"]["template"]["spec"].get("affinity", {}).get("nodeAffinity", {})
               .get("requiredDuringSchedulingIgnoredDuringExecution", {}))
        for t in req.get("nodeSelectorTerms", []):
            for e in t.get("matchExpressions", []):
                keys.setdefault(e["key"], set()).update(e.get("values", []))
    names = sorted(keys)
    choices = [[None, "x-other"] + sorted(keys[k]) for k in names]
    for combo in itertools.product(*choices):
        yield {k: v for k, v in zip(names, combo) if v is not None}


def exclusive(paths):
    sets = daemonsets(paths)
    n = 0
    for labels in label_sets(sets):
        hit = [ds["metadata"]["name"] for _, ds in sets if selects(ds, labels)]
        if len(hit) > 1:
            sys.exit("two DaemonSets select one node: %s both select a node labelled %s"
                     % (" and ".join(hit), json.dumps(labels, sort_keys=True)))
        n += 1
    return sets, n


def covers(old, paths):
    sets, n = exclusive(paths)
    before = daemonsets([old])
    for labels in label_sets(sets + before):
        was = any(selects(ds, labels) for _, ds in before)
        now = any(selects(ds, labels) for _, ds in sets)
        if was != now:
            sys.exit("a node labelled %s %s" % (json.dumps(labels, sort_keys=True),
                     "lost its installer" if was else "gained one it did not have"))
    print("%d DaemonSet(s), %d node label sets: each selected by at most one, and by one "
          "exactly where %s selected it" % (len(sets), n, os.path.basename(old)))


# ---- the stand-in cluster ----

CLUSTER = os.environ.get("CLUSTER", "")
# The image's PATH (Debian's default; the manifests set none).
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def die(msg):
    sys.stderr.write("runbook: %s\n" % msg)
    sys.exit(97)


# The kubectl the test runs: $KUBECTL (run.sh puts /usr/bin first on PATH), else PATH's.
KUBECTL = os.environ.get("KUBECTL") or "kubectl"


def real_kubectl(args, **kw):
    env = dict(os.environ, HOME=os.path.join(CLUSTER, "home"))
    return subprocess.run([KUBECTL, "--server", "http://127.0.0.1:%s" % os.environ["KUBE_PORT"]]
                          + args, env=env, **kw)


def local_kubectl(args):
    """kubectl --local work: no server."""
    return subprocess.run([KUBECTL] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ, HOME=os.path.join(CLUSTER, "home")))


def emulating(verb, why):
    sys.stderr.write("runbook: emulating `kubectl %s` as kubectl 1.30+ does: %s\n" % (verb, why))


# ---- what kubectl 1.30+ does where the kubectl at hand is older (Debian 12's is 1.20.2).
# The runbooks are written for 1.30+; each feature is asked of kubectl itself, and only a
# missing one is carried out here, as the cited source does. ----


def has_sysadmin_profile():
    """debug --profile=sysadmin: kubectl 1.30 (kubernetes commit 4d6c0ba5, "kubectl debug:
    add sysadmin profile"); its help lists the profiles."""
    r = local_kubectl(["debug", "--help"])
    return "--profile=" in r.stdout and '"sysadmin"' in r.stdout


def sysadmin_node_pod(old):
    """The node debugging pod kubectl 1.30+ makes with --profile=sysadmin, from the one an
    older kubectl made without a profile (its name, container, command and node):
    kubernetes/kubectl pkg/cmd/debug/debug.go, DebugOptions.generateNodeDebugPod, then
    pkg/cmd/debug/profiles.go, sysadminProfile.Apply for the node style."""
    c = old["containers"][0]
    # generateNodeDebugPod (as of kubernetes-1.32.4): one container (name, env, image,
    # stdin, tty, and the words after `--` as its command, or args with --arguments-only),
    # the node, RestartPolicy Never, and a toleration of every taint (Operator Exists; since
    # 1.22, kubernetes commit 3ec63238). 1.20 made the host namespaces and the /host mount
    # there; 1.30+ leaves them to the profile.
    pod = {"name": old["name"], "labels": {}, "nodeName": old["nodeName"],
           "restartPolicy": "Never", "hostNetwork": False, "hostPID": False, "hostIPC": False,
           "tolerations": [{"key": "", "operator": "Exists"}], "volumes": [],
           "containers": [{"name": c["name"], "image": c["image"], "command": c["command"],
                           "args": c["args"], "volumeMounts": [], "privileged": False,
                           "stdin": c["stdin"], "tty": c["tty"]}]}
    if "namespace" in old:
        pod["namespace"] = old["namespace"]
    nc = pod["containers"][0]
    # sysadminProfile.Apply, node style: setPrivileged, useHostNamespaces, mountRootPartition
    # (a hostPath volume "host-root" of "/", mounted at /host in the debugging container).
    nc["privileged"] = True
    pod["hostNetwork"] = pod["hostPID"] = pod["hostIPC"] = True
    pod["volumes"].append({"name": "host-root", "hostPath": "/"})
    nc["volumeMounts"].append({"name": "host-root", "readOnly": False, "mountPath": "/host"})
    return pod


def set_env_reaches_init_containers():
    """set env -c NAME on an init container: kubectl 1.22 and later (pkg/cmd/set/set_env.go,
    EnvOptions.RunEnv, kubernetes commit fb2fe697); 1.20 selects among spec.containers only.
    Asked of kubectl with a DaemonSet whose only container named "probe" is an init one."""
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "probe"},
          "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
              "metadata": {"labels": {"a": "b"}},
              "spec": {"initContainers": [{"name": "probe", "image": "i"}],
                       "containers": [{"name": "main", "image": "i"}]}}}}
    f = os.path.join(CLUSTER, "home", "set-env-probe.yaml")
    os.makedirs(os.path.dirname(f), exist_ok=True)
    yaml.safe_dump(ds, open(f, "w"))
    r = local_kubectl(["set", "env", "--local", "-f", f, "-c", "probe", "PROBE=1", "-o", "yaml"])
    if r.returncode != 0:
        die("kubectl set env (probe): %s" % r.stderr.strip())
    out = yaml.safe_load(r.stdout) if r.stdout.strip() else None
    return bool(out) and {"name": "PROBE", "value": "1"} in \
        out["spec"]["template"]["spec"]["initContainers"][0].get("env", [])


def state_objects():
    out = []
    for f in sorted(glob.glob(os.path.join(CLUSTER, "ds", "*.yaml"))):
        out.append((f, yaml.safe_load(open(f))))
    return out


def state_file(kind, name):
    return os.path.join(CLUSTER, "ds", "%s-%s.yaml" % (kind, name))


def parse(args):
    """kubectl's options the runbooks use, and the positional words."""
    opts, pos, rest, i = {}, [], None, 0
    takes = {"-n", "--namespace", "-l", "--selector", "--field-selector", "-f", "-p", "-c",
             "-o", "--type", "--for", "--timeout", "--image", "--profile", "--container"}
    while i < len(args):
        a = args[i]
        if a == "--":
            rest = args[i + 1:]
            break
        if "=" in a and a.startswith("--") and a.split("=", 1)[0] in takes:
            k, v = a.split("=", 1)
            opts[k] = v
        elif a in takes:
            opts[a] = args[i + 1]
            i += 1
        elif a.startswith("-"):
            opts[a] = True
        else:
            pos.append(a)
        i += 1
    return opts, pos, rest


def node_labels():
    return json.loads(os.environ["NODE_LABELS"])


def label_selector(sel, labels):
    """k=v, k!=v, k, and k in (a,b), comma-separated."""
    for part in re.findall(r"[^,()]+(?:\([^)]*\))?", sel):
        part = part.strip()
        m = re.match(r"^(\S+)\s+(in|notin)\s+\(([^)]*)\)$", part)
        if m:
            vals = [v.strip() for v in m.group(3).split(",")]
            ok = labels.get(m.group(1)) in vals
            if (m.group(2) == "in") != ok:
                return False
        elif "!=" in part:
            k, v = part.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in part:
            k, v = part.split("=", 1)
            if labels.get(k) != v.lstrip("="):
                return False
        elif part not in labels:
            return False
    return True


def node_of(field_selector):
    m = re.fullmatch(r"spec\.nodeName=(\S+)", field_selector or "")
    if not m:
        die("a pod command without --field-selector spec.nodeName=NODE")
    if m.group(1) != os.environ["NODE"]:
        die("no node %s (the stand-in cluster has %s)" % (m.group(1), os.environ["NODE"]))
    return m.group(1)


def pods_on_node(selector):
    """The DaemonSets whose pod would run on the node and whose pod labels match."""
    out = []
    for f, o in state_objects():
        if o["kind"] != "DaemonSet" or not selects(o, node_labels()):
            continue
        if label_selector(selector, o["spec"]["template"]["metadata"]["labels"]):
            out.append(o)
    return out


def mount_map(o, container):
    """Container path -> where the stand-in has it: hostPath volumes under the fake root,
    ConfigMap volumes as files from the applied ConfigMap."""
    spec, root, m = o["spec"]["template"]["spec"], os.environ["HOST_ROOT"], {}
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for vm in container.get("volumeMounts", []):
        v = vols[vm["name"]]
        if "hostPath" in v:
            m[vm["mountPath"]] = os.path.normpath(root + "/" + v["hostPath"]["path"])
        elif "configMap" in v:
            d = os.path.join(CLUSTER, "configmaps", v["configMap"]["name"])
            cm = state_file("ConfigMap", v["configMap"]["name"])
            if not os.path.exists(cm):
                die("ConfigMap %s is not applied" % v["configMap"]["name"])
            os.makedirs(d, exist_ok=True)
            for k, val in yaml.safe_load(open(cm))["data"].items():
                open(os.path.join(d, k), "w").write(val)
            m[vm["mountPath"]] = d
    return m


def map_path(p, mounts):
    """A container path as the stand-in sees it: under the longest mount that holds it."""
    for mp in sorted(mounts, key=len, reverse=True):
        if p == mp or p.startswith(mp.rstrip("/") + "/"):
            return mounts[mp] + p[len(mp.rstrip("/")):]
    return p


def fake_kernel_env():
    # As lib.sh's inst: under ASan the preloaded fake kernel comes before the runtime, which
    # ASan accepts only when told not to check the order.
    asan = os.environ.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": os.environ["FAKEKERNEL"], "FAKE_KERNEL_ROOT": os.environ["HOST_ROOT"],
            "FAKE_KERNEL_FAIL": "", "NVML_STANDIN_FAIL": "",
            "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}


def run_init(o):
    """The DaemonSet's pod starts on the node: its init container runs as the manifest says."""
    spec = o["spec"]["template"]["spec"]
    init = spec["initContainers"][0]
    env = container_env(o, init)
    name = o["metadata"]["name"]
    log = os.path.join(CLUSTER, "pods", name + ".log")
    with open(log, "w") as f:
        r = subprocess.run([os.environ["BIN"]] + init.get("args", []), env=env,
                           stdout=f, stderr=subprocess.STDOUT)
    open(os.path.join(CLUSTER, "pods", name + ".rc"), "w").write("%d\n" % r.returncode)
    # The template the pod was made from: it is an updated pod while the DaemonSet's is the same.
    json.dump(o["spec"]["template"],
              open(os.path.join(CLUSTER, "pods", name + ".template.json"), "w"), sort_keys=True)
    with open(os.path.join(CLUSTER, "pods", "runs"), "a") as f:
        f.write("%s %d\n" % (name, r.returncode))
    sys.stderr.write("stand-in: pod of daemonset/%s on %s: installer exit %d\n"
                     % (name, os.environ["NODE"], r.returncode))


def container_env(o, c):
    """A container's env as the stand-in runs it: host paths under the fake root (run_init)."""
    mounts = mount_map(o, c)
    env = {"PATH": IMAGE_PATH}
    for e in c.get("env", []):
        v = e.get("value", "")
        if e["name"] == "ROOT_MOUNT_DIR" or (e["name"].endswith("_FILE") and v.startswith("/")):
            v = map_path(v, mounts)
        elif e["name"] in ("NVIDIA_DRIVER_REPO_KEY", "NVIDIA_MODULE_CERT"):
            v = ",".join(map_path(x, mounts) for x in v.split(","))
        elif e["name"] == "NVIDIA_DRIVER_REPO":
            # file:// is opened inside the container: its path is a container path.
            v = ",".join("file://" + map_path(u[len("file://"):], mounts)
                         if u.startswith("file://") else u for u in v.split(","))
        env[e["name"]] = v
    # The node's running kernel (uname -r of the fake root's host).
    env["NVIDIA_KERNEL_RELEASE"] = os.environ["NODE_KERNEL"]
    env.update(fake_kernel_env())
    return env


def http_probe(o, c, probe):
    """An httpGet probe of the agent: the container's command runs as the manifest gives it
    (its env, the port the probe names on 127.0.0.1, a look every second) until its first
    judgement; the probe's path is then asked, as the kubelet asks it (200 to 399: success)."""
    port = probe["port"]
    named = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    if named.get(port, port) != 9470:
        die("the probe's port %s is not the agent's default (9470)" % port)
    env = container_env(o, c)
    env.update(NVIDIA_AGENT_LISTEN="127.0.0.1:0", NVIDIA_AGENT_INTERVAL="1")
    p = subprocess.Popen([os.environ["BIN"]] + c.get("command", [])[1:] + c.get("args", []),
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        listen = None
        for line in p.stderr:
            rec = json.loads(line)
            if rec.get("msg") == "watching the node":
                listen = rec["port"]
            elif rec.get("msg", "").startswith(("node ready", "node not ready")):
                break
        if listen is None:
            die("the agent did not start")
        try:
            url = "http://127.0.0.1:%d%s" % (listen, probe["path"])
            with urllib.request.urlopen(url, timeout=5) as r:
                return 200 <= r.status < 400
        except urllib.error.HTTPError as e:
            return 200 <= e.code < 400
    finally:
        p.terminate()
        p.wait()


def ready(o):
    """The pod's readiness: its init container succeeded and the readiness probe holds."""
    name = o["metadata"]["name"]
    rc = os.path.join(CLUSTER, "pods", name + ".rc")
    if not os.path.exists(rc) or open(rc).read().strip() != "0":
        return False
    for c in o["spec"]["template"]["spec"]["containers"]:
        probe = c.get("readinessProbe") or {}
        if probe.get("httpGet") and "nvidia-driver-installer:" in c["image"]:
            return http_probe(o, c, probe["httpGet"])
        if probe:
            die("a readiness probe the stand-in cannot run: %s" % probe)
    return True


def rollout_status(opts, pos):
    """kubectl rollout status DAEMONSET: what kubectl prints and exits with, from the status
    the DaemonSet controller would give the object. Debian 12's kubectl 1.20 and 1.30+ do the
    same here (no emulation): kubectl's pkg/cmd/rollout/rollout_status.go watches the object
    until DaemonSetStatusViewer.Status (pkg/polymorphichelpers/rollout_status.go) says done,
    printing each message; that viewer refuses any strategy but RollingUpdate, then waits
    while updatedNumberScheduled, then numberAvailable, is below desiredNumberScheduled. On
    the stand-in's node of one the controller has already acted when kubectl is asked (it
    replaces the pod within the command that changed the template), so nothing changes while
    kubectl would watch: a rollout not done now ends as kubectl's does at its --timeout."""
    if len(pos) != 2:
        die("kubectl rollout status takes one DaemonSet")
    kind, name = pos[1].split("/", 1) if "/" in pos[1] else (pos[1], None)
    if kind not in ("daemonset", "ds", "daemonsets", "daemonset.apps") or not name:
        die("kubectl rollout status of %s: the runbooks watch DaemonSets" % pos[1])
    f = state_file("DaemonSet", name)
    if not os.path.exists(f):
        sys.stderr.write('Error from server (NotFound): daemonsets.apps "%s" not found\n' % name)
        return 1
    o = yaml.safe_load(open(f))
    strategy = o["spec"].get("updateStrategy", {}).get("type", "RollingUpdate")
    if strategy != "RollingUpdate":
        sys.stderr.write(
            "error: rollout status is only available for RollingUpdate strategy type\n")
        return 1
    # The status: the node is the one node; its pod is updated when made from this
    # template, available when Ready (the manifests set no minReadySeconds).
    desired = 1 if selects(o, node_labels()) else 0
    tpl = os.path.join(CLUSTER, "pods", name + ".template.json")
    updated = desired if desired and os.path.exists(tpl) and \
        json.load(open(tpl)) == json.loads(json.dumps(o["spec"]["template"], sort_keys=True)) else 0
    available = updated if updated and ready(o) else 0
    if updated < desired:
        print('Waiting for daemon set "%s" rollout to finish: %d out of %d new pods have been '
              'updated...' % (name, updated, desired))
    elif available < desired:
        print('Waiting for daemon set "%s" rollout to finish: %d of %d updated pods are '
              'available...' % (name, available, desired))
    else:
        print('daemon set "%s" successfully rolled out' % name)
        return 0
    sys.stderr.write("error: timed out waiting for the condition\n")
    return 1


def kube_debug(opts, pos, rest):
    args = ["debug"] + pos + ["--image", opts["--image"]]
    profile = opts.get("--profile")
    emulate = profile == "sysadmin" and not has_sysadmin_profile()
    if emulate:
        # The older kubectl makes its node pod without a profile (it has no --profile); the
        # pod 1.30+ would make is derived from it below.
        emulating("debug --profile=sysadmin", "%s has no sysadmin profile (it came with 1.30)"
                  % KUBECTL)
    elif profile is not None:
        args += ["--profile", profile]
    # Not attached: the stand-in records the pod kubectl makes, then runs its command.
    pods = os.environ["KUBE_PODS"]
    before = open(pods).read().count("\n") if os.path.exists(pods) else 0
    r = real_kubectl(args + ["--"] + rest, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
    if r.returncode != 0:
        die("kubectl debug: %s" % r.stderr.strip())
    made = open(pods).read().splitlines()
    if len(made) != before + 1:
        die("kubectl debug made no pod")
    pod = json.loads(made[-1])
    if emulate:
        pod = sysadmin_node_pod(pod)
        # What the API server holds is the pod 1.30+ sends.
        made[-1] = json.dumps(pod)
        open(pods, "w").write("\n".join(made) + "\n")
    c = pod["containers"][0]
    node = pos[0].split("/", 1)[1]
    if node != os.environ["NODE"] or pod["nodeName"] != node:
        die("debug pod for node %s, on %s" % (node, pod["nodeName"]))
    if not (c["privileged"] and pod["hostPID"]):
        die("the debug pod is not privileged in the host's PID namespace (--profile=sysadmin?)")
    if c["image"] != os.environ["IMAGE"]:
        die("the debug pod runs %s, not the installer's image" % c["image"])
    vols = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    mounts = {m["mountPath"]: os.path.normpath(os.environ["HOST_ROOT"] + "/" + vols[m["name"]])
              for m in c["volumeMounts"] if vols.get(m["name"])}
    cmd = [map_path(a, mounts) if a.startswith("/") else a for a in c["command"] + c["args"]]
    env = {"PATH": IMAGE_PATH}
    if cmd[0] == "nvidia-driver-installer":
        cmd[0] = os.environ["BIN"]
        env.update(fake_kernel_env())
        # uname -r on the node: the fake root's kernel (the build host's is another).
        env["NVIDIA_KERNEL_RELEASE"] = os.environ["NODE_KERNEL"]
    elif cmd[0] not in ("cat", "rm"):
        die("a command the stand-in does not run in a debug pod: %s" % cmd[0])
    for a in cmd[1:]:
        if a.startswith("/") and not a.startswith(os.environ["HOST_ROOT"]) and cmd[0] == "rm":
            die("rm outside the node's /host: %s" % a)
    return subprocess.run(cmd, env=env).returncode


def rollout(before, o):
    """What the DaemonSet controller does on the node after an object changed: a new pod
    where the DaemonSet is new, or its template changed under RollingUpdate."""
    if o["kind"] != "DaemonSet" or not selects(o, node_labels()):
        return
    if before is None:
        return run_init(o)
    strategy = o["spec"].get("updateStrategy", {}).get("type", "RollingUpdate")
    if before["spec"]["template"] != o["spec"]["template"] and strategy == "RollingUpdate":
        run_init(o)


def kube_local(verb, opts, pos, rest):
    """set env / patch: kubectl itself, --local, on the applied DaemonSet."""
    # patch TYPE NAME, patch TYPE/NAME, set env TYPE/NAME
    target = pos[1] if verb == "set" else pos[0]
    if verb == "patch" and "/" not in target:
        target = "%s/%s" % (pos[0], pos[1])
        pos = [target] + pos[2:]
    kind, name = target.split("/", 1)
    if kind not in ("daemonset", "ds", "daemonsets", "daemonset.apps"):
        die("kubectl %s of %s: the runbooks change DaemonSets" % (verb, target))
    kind = "DaemonSet"
    f = state_file(kind, name)
    if not os.path.exists(f):
        die("%s %s is not applied" % (kind, name))
    before = yaml.safe_load(open(f))
    flags = [x for k in ("-c", "-p", "--type") if k in opts for x in (k, opts[k])]
    if verb == "set":
        emulate = not set_env_reaches_init_containers()
        if emulate:
            emulating("set env", "%s matches containers in spec.containers only (init "
                      "containers came with 1.22)" % KUBECTL)
        after = set_env_local(before, flags, pos[2:], emulate)
    else:
        r = local_kubectl(["patch", "--local", "-f", f, "-o", "yaml"] + flags)
        if r.returncode != 0:
            die("kubectl patch: %s" % r.stderr.strip())
        sys.stderr.write(r.stderr)
        after = yaml.safe_load(r.stdout)
    if after is None:
        # No change: kubectl prints nothing (set_env.go, RunEnv: an empty patch is
        # skipped), as when -c matches no container; its warning is above.
        return 0
    yaml.safe_dump(after, open(f, "w"))
    print("daemonset.apps/%s %s" % (name, "patched" if verb == "patch" else "env updated"))
    rollout(before, after)
    return 0


def set_env_local(before, flags, env_args, emulate):
    """kubectl set env --local on the object BEFORE: the object kubectl prints, or None when
    it changed nothing. EMULATE: kubectl 1.22+'s container selection with an older kubectl.
    kubectl 1.22+ (pkg/cmd/set/set_env.go, EnvOptions.RunEnv) selects the matching
    containers of spec.containers, appends the matching spec.initContainers, and updates
    each; the older kubectl is given that list as spec.containers (names are unique across
    both lists of a pod), does the env work itself, and the list is split back."""
    obj, n = before, None
    if emulate:
        obj = copy.deepcopy(before)
        ps = obj["spec"]["template"]["spec"]
        n = len(ps["containers"])
        ps["containers"] = ps["containers"] + ps.pop("initContainers", [])
    src = os.path.join(CLUSTER, "home", "set-env.yaml")
    os.makedirs(os.path.dirname(src), exist_ok=True)
    yaml.safe_dump(obj, open(src, "w"))
    r = local_kubectl(["set", "env", "--local", "-f", src, "-o", "yaml"] + flags + env_args)
    if r.returncode != 0:
        die("kubectl set env: %s" % r.stderr.strip())
    sys.stderr.write(r.stderr)
    if not r.stdout.strip():
        return None
    after = yaml.safe_load(r.stdout)
    if emulate:
        ps = after["spec"]["template"]["spec"]
        merged = ps["containers"]
        ps["containers"] = merged[:n]
        if "initContainers" in before["spec"]["template"]["spec"]:
            ps["initContainers"] = merged[n:]
    return after


def kube_apply(opts):
    r = real_kubectl(["apply", "--dry-run=client", "--validate=false", "-f", opts["-f"]])
    if r.returncode != 0:
        die("kubectl apply refused %s" % opts["-f"])
    paths = sorted(glob.glob(os.path.join(opts["-f"], "*.yaml"))) \
        if os.path.isdir(opts["-f"]) else [opts["-f"]]
    # kubectl applies the files in lexical order (a directory is walked), each object in
    # turn: after each one, what the cluster runs must never select a node twice.
    for p in paths:
        for o in yaml.safe_load_all(open(p)):
            if o:
                f = state_file(o["kind"], o["metadata"]["name"])
                before = yaml.safe_load(open(f)) if os.path.exists(f) else None
                yaml.safe_dump(o, open(f, "w"))
                exclusive([os.path.join(CLUSTER, "ds")])
                rollout(before, o)
    return 0


def kube_delete(opts, pos):
    if "-f" in opts:
        for o in yaml.safe_load_all(open(opts["-f"])):
            if o:
                f = state_file(o["kind"], o["metadata"]["name"])
                if not os.path.exists(f):
                    die("%s %s is not applied" % (o["kind"], o["metadata"]["name"]))
                os.unlink(f)
                print('%s "%s" deleted' % (o["kind"].lower(), o["metadata"]["name"]))
        return 0
    if pos != ["pod"]:
        die("kubectl delete %s: the stand-in deletes pods and files only" % pos)
    node_of(opts.get("--field-selector"))
    found = pods_on_node(opts.get("-l", ""))
    if not found:
        die("no pod matches %s on the node" % opts.get("-l"))
    for o in found:
        print('pod "%s-%s" deleted' % (o["metadata"]["name"], os.environ["NODE"]))
        # The DaemonSet replaces it at once: the new pod's init container runs install.
        run_init(o)
    return 0


def kube_drain(pos):
    if pos[0] != os.environ["NODE"]:
        die("no node %s" % pos[0])
    # The node's GPU workloads are evicted: processes holding /dev/nvidia* end.
    proc = os.path.join(os.environ["HOST_ROOT"], "proc")
    for d in glob.glob(os.path.join(proc, "[0-9]*")):
        if any(os.readlink(l).startswith("/dev/nvidia") for l in glob.glob(d + "/fd/*")):
            subprocess.run(["rm", "-rf", d], check=True)
    print("node/%s drained" % pos[0])
    return 0


def kubectl(args):
    opts, pos, rest = parse(args)
    ns = opts.get("-n", opts.get("--namespace"))
    verb, pos = pos[0], pos[1:]
    if verb in ("drain", "cordon", "uncordon"):
        if pos[0] != os.environ["NODE"]:
            die("no node %s" % pos[0])
        return kube_drain(pos) if verb == "drain" else print("node/%s %sed" % (pos[0], verb)) or 0
    if verb == "debug":
        if not pos[0].startswith("node/"):
            die("kubectl debug of %s: the runbooks debug nodes" % pos[0])
        return kube_debug(opts, pos, rest)
    if verb == "apply":
        return kube_apply(opts)
    if verb in ("set", "patch"):
        if ns != "kube-system":
            die("kubectl %s outside kube-system" % verb)
        return kube_local(verb, opts, pos, rest)
    if verb == "delete":
        if "-f" not in opts and ns != "kube-system":
            die("kubectl delete pod outside kube-system")
        return kube_delete(opts, pos)
    if verb == "rollout" and pos[:1] == ["status"]:
        if ns != "kube-system":
            die("kubectl rollout status outside kube-system")
        return rollout_status(opts, pos)
    if verb == "wait":
        node_of(opts.get("--field-selector"))
        found = pods_on_node(opts.get("-l", ""))
        if not found:
            sys.stderr.write("error: no matching resources found\n")
            return 1
        bad = [o["metadata"]["name"] for o in found if not ready(o)]
        if bad:
            sys.stderr.write("error: timed out waiting for the condition on pods of %s\n" % bad)
            return 1
        for o in found:
            print("pod/%s-%s condition met" % (o["metadata"]["name"], os.environ["NODE"]))
        return 0
    if verb == "get" and pos == ["pod"] and opts.get("-o") == "name":
        node_of(opts.get("--field-selector"))
        for o in pods_on_node(opts.get("-l", "")):
            print("pod/%s-%s" % (o["metadata"]["name"], os.environ["NODE"]))
        return 0
    if verb == "get" and pos == ["daemonset"] and opts.get("-o") == "name":
        for f, o in state_objects():
            if o["kind"] == "DaemonSet" and label_selector(opts.get("-l", ""),
                                                           o["metadata"].get("labels", {})):
                print("daemonset.apps/" + o["metadata"]["name"])
        return 0
    if verb == "get" and pos == ["nodes"] and opts.get("-o") == "name":
        if label_selector(opts.get("-l", ""), node_labels()):
            print("node/" + os.environ["NODE"])
        return 0
    if verb == "logs":
        name = pos[0].split("/", 1)[1].rsplit("-" + os.environ["NODE"], 1)[0]
        if opts.get("-c") != "nvidia-driver-installer":
            die("logs of container %s" % opts.get("-c"))
        log = os.path.join(CLUSTER, "pods", name + ".log")
        if not os.path.exists(log):
            die("pod %s has not run" % pos[0])
        sys.stdout.write(open(log).read())
        return 0
    die("the stand-in cluster does not know `kubectl %s`" % " ".join(args))


def emulation_check(ds_file):
    """With a kubectl that has both features, the emulations above must give what it gives:
    the sysadmin node pod derived from its legacy-profile pod, and set env with the merged
    container list, against its own results."""
    if not (has_sysadmin_profile() and set_env_reaches_init_containers()):
        print("%s lacks what the emulations stand in for: nothing to compare them with" % KUBECTL)
        return
    pods = os.environ["KUBE_PODS"]
    made = {}
    for profile in ("legacy", "sysadmin"):
        r = real_kubectl(["debug", "node/" + os.environ["NODE"], "--image", os.environ["IMAGE"],
                          "--profile", profile, "--", "nvidia-driver-installer", "--root",
                          "/host", "doctor"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            die("kubectl debug --profile=%s: %s" % (profile, r.stderr.decode().strip()))
        made[profile] = json.loads(open(pods).read().splitlines()[-1])
        del made[profile]["name"]
    emu = sysadmin_node_pod(dict(made["legacy"], name=None))
    del emu["name"]
    if emu != made["sysadmin"]:
        die("the emulated sysadmin pod %s differs from kubectl's %s"
            % (json.dumps(emu), json.dumps(made["sysadmin"])))
    before = yaml.safe_load(open(ds_file))
    names = [c["name"] for k in ("initContainers", "containers")
             for c in before["spec"]["template"]["spec"].get(k, [])]
    for c in names + ["*", "no-such-container"]:
        real = set_env_local(before, ["-c", c], ["EMULATION_CHECK=1"], False)
        emu = set_env_local(before, ["-c", c], ["EMULATION_CHECK=1"], True)
        if real != emu:
            die("set env -c %s: the emulation gives %s, kubectl %s" % (c, emu, real))
    print("the emulations give what %s does: the sysadmin node pod, set env -c on %s"
          % (KUBECTL, ", ".join(names + ["*", "no-such-container"])))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "blocks":
        print("\n".join(n for n, _ in fences(args[0])))
    elif cmd == "block":
        hits = [t for n, t in fences(args[0]) if n == args[1]]
        if len(hits) != 1:
            die("%s has %d blocks test=%s" % (args[0], len(hits), args[1]))
        sys.stdout.write(hits[0])
    elif cmd == "exclusive":
        sets, n = exclusive(args)
        print("%d DaemonSet(s), %d node label sets, each selected by at most one" % (len(sets), n))
    elif cmd == "covers":
        covers(args[0], args[1:])
    elif cmd == "kubectl":
        sys.exit(kubectl(args))
    elif cmd == "emulation-check":
        emulation_check(args[0])
    else:
        die("unknown command " + cmd)


if __name__ == "__main__":
    main()
