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

Every value a Node gives is checked here (check) before it becomes a target: any account
that may patch Nodes writes these annotations, and their values reach the command line of
a pass that holds the signing keys (as --kernel, --os-build, build paths, packages/KERNEL/).
A kernel is a release name (no '..', no leading '-'), os an os-release ID, os_build a
BUILD_ID or null, arch a known one, flavour one of config.FLAVOURS, driver_version an exact
version and, when the pass is given versions, one of them (a node may not make the pass
build a version the DaemonSets do not pin), since an RFC 3339 time. An ask must name the
kernel its Node runs (status.nodeInfo.kernelVersion, when given): the installer asks for
`uname -r`, so another kernel is a stale ask (left by a wait ended before a reboot) or not
the installer's. A value refused drops that annotation with one note naming the node and
the field; the pass goes on.
"""
import json
import re

from supplylib import config
from supplylib.targets import Origin, Target, since_time

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


# A kernel release (uname -r: "6.1.0-58-amd64", "6.1.100+", "5.14.0-427.13.1.el9_4.x86_64")
# and an os-release BUILD_ID (os-release(5): "a lower-case string ... no spaces", COS
# "18244.151.14"): a letter or digit first, so never an option, and no '/'.
RELEASE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+~-]{0,63}$")
# os-release(5) ID: "lower-case letters (a-z), digits (0-9), '.', '_' and '-'".
OS_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# Nodes a page: a real Node is 10 to 30 KiB (status.images lists the node's images), so 100
# of them stay well under kube.BODY_MAX where kube.PAGE_LIMIT's 500 would not.
NODE_PAGE = 100


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


def _release(v):
    return isinstance(v, str) and bool(RELEASE_RE.match(v)) and ".." not in v


def check(fields, values, versions=()):
    """The first of FIELDS whose value in VALUES is refused, as "FIELD 'VALUE'", or None.
    VERSIONS: the versions the pass builds (driver_version must be one when given)."""
    ok = {"kernel": _release, "os": lambda v: isinstance(v, str) and bool(OS_RE.match(v)),
          "os_build": lambda v: v is None or _release(v),
          "arch": lambda v: GOARCH.get(v) if isinstance(v, str) else None,
          "flavour": lambda v: v in config.FLAVOURS,
          "driver_version": lambda v: isinstance(v, str) and bool(config.VERSION_RE.match(v))
          and (not versions or v in versions),
          "since": lambda v: since_time(v) is not None}
    for f in fields:
        if not ok[f](values.get(f)):
            return "%s %s" % (f, json.dumps(values.get(f))[:80])
    return None


def image(node, notes):
    """(os, os_build, kernel, arch) the node runs, or None with the reason in NOTES."""
    name = (node.get("metadata") or {}).get("name", "?")
    a = _annotation(node, ANN_IMAGE, notes)
    if a:
        a.setdefault("os_build", None)
        a["os_build"] = a["os_build"] or None
        bad = check(("os", "os_build", "kernel", "arch"), a)
        if not bad:
            return a["os"], a["os_build"], a["kernel"], GOARCH[a["arch"]]
        notes.append("node %s: annotation %s: %s refused: ignored" % (name, ANN_IMAGE, bad))
    info = (node.get("status") or {}).get("nodeInfo") or {}
    kernel, pretty = info.get("kernelVersion", ""), info.get("osImage", "")
    arch = GOARCH.get(info.get("architecture", ""))
    ident = os_id(pretty)
    if not kernel or not arch:
        notes.append("node %s: status.nodeInfo has no kernelVersion or a known architecture "
                     "('%s'): skipped" % (name, info.get("architecture", "")))
        return None
    if not _release(kernel):
        notes.append("node %s: status.nodeInfo.kernelVersion %s refused: skipped" % (
            name, json.dumps(kernel)[:80]))
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
            out += _ask(n, name, w, versions, notes)
        img = image(n, notes)
        if img:
            for v in versions:
                for fl in flavours:
                    out.append(Target(*img, v, fl,
                                      [Origin("running", "node %s runs it" % name)]))
    return out


def _ask(node, name, w, versions, notes):
    """[the Target node NAME asks for in W, its wants annotation], or [] with a note."""
    w["os_build"] = w.get("os_build") or None
    bad = check(("kernel", "arch", "os", "os_build", "driver_version", "flavour", "since"),
                w, versions)
    if bad:
        pinned = (" (not one of the versions this pass builds: %s)" % ", ".join(versions)
                  if bad.startswith("driver_version") and versions else "")
        notes.append("node %s: annotation %s: %s refused%s: ignored" % (
            name, ANN_WANTS, bad, pinned))
        return []
    running = ((node.get("status") or {}).get("nodeInfo") or {}).get("kernelVersion")
    if running and running != w["kernel"]:
        notes.append("node %s: annotation %s: kernel %s refused: the node runs %s (the "
                     "installer asks for uname -r; a stale ask or not its own): ignored" % (
                         name, ANN_WANTS, json.dumps(w["kernel"]), running[:80]))
        return []
    since = w["since"]
    return [Target(w["os"], w["os_build"], w["kernel"], GOARCH[w["arch"]], w["driver_version"],
                   w["flavour"], [Origin("asked", "node %s asked since %s" % (name, since),
                                         since=since)])]


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
        return client.list("/api/v1/nodes", limit=NODE_PAGE)
    except kube.KubeError as e:
        raise NodesError("%s (the pass's account needs nodes: list)" % e) from None


def list_versioned(client):
    """(the Nodes, the list's resourceVersion) through CLIENT, read in pages: a watch from
    that version misses no change made after the list."""
    from supplylib import kube
    items, query, rv = [], {"limit": NODE_PAGE}, None
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
    req.add_header("User-Agent", client.user_agent)
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
