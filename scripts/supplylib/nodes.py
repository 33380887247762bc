# SPDX-License-Identifier: Apache-2.0
"""What the cluster's Nodes run and ask for: targets learnt from Node objects, read from the
API (kube.Client) or from a NodeList file as `kubectl get nodes -o json` writes it.

From each Node (k8s.io/api, core/v1/types.go, `type NodeSystemInfo`:
https://github.com/kubernetes/api/blob/master/core/v1/types.go):
  status.nodeInfo.kernelVersion   "Kernel Version reported by the node from 'uname -r'"
  status.nodeInfo.osImage         "OS Image reported by the node from /etc/os-release": the
                                  kubelet takes os-release's PRETTY_NAME ("Ubuntu 22.04.4 LTS")
  status.nodeInfo.architecture    the kubelet's GOARCH: amd64, arm64 (made x86_64, aarch64,
                                  uname -m's words, as packages name them)
and our own annotations, written by the installer in the node's pod (SPEC47 §1,
docs/design.md), which win when present because they say what install selects by:
  nvidia.com/gpu.driver-installer.node-image  {"os", "os_build", "kernel", "arch"}
  nvidia.com/gpu.driver-installer.wants       {"kernel", "arch", "os", "os_build",
                                               "driver_version", "flavour", "since"}

Without the node-image annotation the os-release ID is guessed from PRETTY_NAME's words
(OS_IMAGES); a PRETTY_NAME none of them starts is reported and the node's image skipped. A
guessed image has no os_build: PRETTY_NAME of COS does not carry BUILD_ID, so a COS node seen
only through nodeInfo gives a target not limited to one COS build.
"""
import json

from supplylib import config
from supplylib.targets import Origin, Target

ANN_IMAGE = "nvidia.com/gpu.driver-installer.node-image"
ANN_WANTS = "nvidia.com/gpu.driver-installer.wants"
GOARCH = {"amd64": "x86_64", "arm64": "aarch64", "x86_64": "x86_64", "aarch64": "aarch64"}
# PRETTY_NAME's start -> os-release ID: each distribution's /etc/os-release (COS:
# "Container-Optimized OS from Google"; Debian "Debian GNU/Linux 12 (bookworm)"; Ubuntu
# "Ubuntu 22.04.4 LTS"; RHEL "Red Hat Enterprise Linux 9.4 (Plow)"; Rocky "Rocky Linux 9.4
# (Blue Onyx)").
OS_IMAGES = (("Container-Optimized OS", "cos"), ("Debian GNU/Linux", "debian"),
             ("Ubuntu", "ubuntu"), ("Red Hat Enterprise Linux CoreOS", "rhcos"),
             ("Red Hat Enterprise Linux", "rhel"), ("Rocky Linux", "rocky"),
             ("AlmaLinux", "almalinux"), ("CentOS Stream", "centos"),
             ("Amazon Linux", "amzn"), ("Fedora", "fedora"))


class NodesError(Exception):
    """The Nodes cannot be read (one line)."""


def os_id(pretty):
    for start, ident in OS_IMAGES:
        if pretty.startswith(start):
            return ident
    return None


def _annotation(node, key, notes):
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(key)
    if raw is None:
        return None
    try:
        v = json.loads(raw)
        if not isinstance(v, dict):
            raise ValueError("not an object")
    except ValueError as e:
        notes.append("node %s: annotation %s is not a JSON object (%s): ignored" % (
            node["metadata"].get("name"), key, e))
        return None
    return v


def image(node, notes):
    """(os, os_build, kernel, arch) the node runs, or None with the reason in NOTES."""
    name = (node.get("metadata") or {}).get("name", "?")
    a = _annotation(node, ANN_IMAGE, notes)
    if a and all(isinstance(a.get(k), str) and a[k] for k in ("os", "kernel", "arch")):
        return a["os"], a.get("os_build") or None, a["kernel"], GOARCH.get(a["arch"], a["arch"])
    info = (node.get("status") or {}).get("nodeInfo") or {}
    kernel, pretty = info.get("kernelVersion", ""), info.get("osImage", "")
    arch = GOARCH.get(info.get("architecture", ""))
    ident = os_id(pretty)
    if not kernel or not arch:
        notes.append("node %s: status.nodeInfo has no kernelVersion or a known architecture "
                     "('%s'): skipped" % (name, info.get("architecture", "")))
        return None
    if not ident:
        notes.append("node %s: osImage '%s' names no os-release ID this pass knows, and the "
                     "node has no %s annotation (the installer writes it): skipped" % (
                         name, pretty, ANN_IMAGE))
        return None
    return ident, None, kernel, arch


def targets(nodes, versions, flavours, notes):
    """The targets NODES give: each one's ask (its wants annotation) and its running image
    times VERSIONS and FLAVOURS (what the DaemonSets pin); reasons to skip go to NOTES."""
    out = []
    for n in nodes:
        name = (n.get("metadata") or {}).get("name", "?")
        w = _annotation(n, ANN_WANTS, notes)
        if w:
            need = ("kernel", "arch", "os", "driver_version", "flavour")
            if all(isinstance(w.get(k), str) and w[k] for k in need):
                since = w.get("since") if isinstance(w.get("since"), str) else ""
                out.append(Target(w["os"], w.get("os_build") or None, w["kernel"],
                                  GOARCH.get(w["arch"], w["arch"]), w["driver_version"],
                                  w["flavour"], [Origin("asked", "node %s asked since %s" % (
                                      name, since or "(no time)"), since=since or None)]))
            else:
                notes.append("node %s: annotation %s lacks one of %s: ignored" % (
                    name, ANN_WANTS, ", ".join(need)))
        img = image(n, notes)
        if img:
            for v in versions:
                for fl in flavours:
                    out.append(Target(*img, v, fl,
                                      [Origin("running", "node %s runs it" % name)]))
    return out


def from_file(path):
    """The Nodes of a NodeList file (kubectl get nodes -o json), or of a single Node."""
    obj = config.read_json(path, NodesError)
    if isinstance(obj, dict) and obj.get("kind") == "Node":
        return [obj]
    if not isinstance(obj, dict) or not isinstance(obj.get("items"), list):
        raise NodesError("%s: not a NodeList (kubectl get nodes -o json writes one)" % path)
    return obj["items"]


def from_api(client):
    """The cluster's Nodes through CLIENT (kube.Client), read in pages."""
    from supplylib import kube
    try:
        return client.list("/api/v1/nodes")
    except kube.KubeError as e:
        raise NodesError("%s (the pass's account needs nodes: list)" % e) from None


def list_versioned(client):
    """(the Nodes, the list's resourceVersion) through CLIENT, read in pages: a watch from
    that version misses no change made after the list."""
    from supplylib import kube
    items, query, rv = [], {"limit": kube.PAGE_LIMIT}, None
    try:
        while True:
            page = client.call("GET", "/api/v1/nodes", query=query)
            items += page.get("items") or []
            meta = page.get("metadata") or {}
            rv = rv or meta.get("resourceVersion")
            if not meta.get("continue"):
                return items, rv
            query["continue"] = meta["continue"]
    except kube.KubeError as e:
        raise NodesError("%s (the pass's account needs nodes: list)" % e) from None


def watch(client, rv, seconds):
    """The Nodes' WatchEvents after RV, for at most SECONDS: (type, Node) as the API server
    streams them, one JSON object a line (GET /api/v1/nodes?watch=1, apiserver's
    endpoints/handlers/watch.go). Ends when the server ends the stream; NodesError when it
    cannot be read, or on an ERROR event (410 Gone: RV too old; list again)."""
    import ssl
    import urllib.error
    import urllib.parse
    import urllib.request
    query = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv,
                                    "timeoutSeconds": max(1, int(seconds))})
    req = urllib.request.Request(client.server + "/api/v1/nodes?" + query)
    req.add_header("Authorization", "Bearer " + client._bearer())
    req.add_header("Accept", "application/json")
    try:
        with urllib.request.urlopen(req, context=client.ctx, timeout=seconds + 30) as r:
            while True:
                line = r.readline(1 << 22)
                if not line:
                    return
                ev = json.loads(line)
                if ev.get("type") == "ERROR":
                    st = ev.get("object") or {}
                    raise NodesError("the Nodes' watch: %s %s" % (st.get("code", ""),
                                                                  st.get("message", "")))
                yield ev.get("type"), ev.get("object") or {}
    except (urllib.error.URLError, OSError, ssl.SSLError, ValueError) as e:
        raise NodesError("the Nodes' watch: %s" % getattr(e, "reason", e)) from None


def asks(nodes):
    """The set of (node name, wants annotation) NODES carry: a new member is a new ask."""
    out = set()
    for n in nodes:
        raw = ((n.get("metadata") or {}).get("annotations") or {}).get(ANN_WANTS)
        if raw:
            out.add((n["metadata"].get("name"), raw))
    return out
