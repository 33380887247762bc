# SPDX-License-Identifier: Apache-2.0
"""The driver's files: its source in the layout of NVIDIA's .run (--source), Debian's
packages of it (--debian, --debs: debian.py) or the platform's own (Ubuntu's
--userspace-debs), staged into that layout; and the GPUs each flavour supports."""
import json
import os
import re

from bdp import debian
from bdp.common import PCI_IDS_DBS, VERSION_RE, die, progress, say


def stage(b):
    """The driver's files for record B in the .run layout: (directory, version, where
    Debian's GPU lists come from or None)."""
    progress("driver %s for kernel %s, %s modules" % (
        b.source or b.debian or b.debs or b.platform.userspace_from(), b.kernel,
        b.flavour_arg))
    ids_origin = None
    if b.source:
        src = os.path.realpath(b.source)
        version = source_version(src)
    elif b.platform.userspace_from():
        src = os.path.join(b.work, "src-" + b.platform.name)
        version = b.platform.userspace(b, src)
    else:
        debs = b.debs or debian.fetch(b, b.debian)
        src = os.path.join(b.work, "src-debian")
        version, ids_origin = debian.stage_debs(b, debs, src)
        if b.debian and version != b.debian.split("-")[0]:
            die("the fetched packages are %s, not %s" % (version, b.debian))
    if not VERSION_RE.match(version):
        die("driver version %r is not dotted numbers" % version)
    return src, version, ids_origin


def source_version(src):
    for f in os.listdir(src):
        m = re.match(r"^libnvidia-ml\.so\.([0-9.]+)$", f)
        if m:
            return m.group(1)
    die("%s has no libnvidia-ml.so.VERSION: not a driver source laid out as documented" % src)


PCI_ID_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{4}$")


def pci_names(given):
    """{"10de:2330": "GH100 [H100 SXM5 80GB]", ...} from a pci.ids database (GIVEN, else
    the host's), or {} when there is none. Only names: which GPUs a driver supports comes
    from the driver's data, never from here."""
    path = given or next((p for p in PCI_IDS_DBS if os.path.isfile(p)), None)
    if not path:
        return {}
    if not os.path.isfile(path):
        die("--pci-names %s does not exist" % path)
    names, vendor = {}, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("C "):  # device classes follow the vendors
                break
            m = re.match(r"^([0-9a-fA-F]{4})  (.+)$", line)
            if m:
                vendor = m.group(1).lower()
                continue
            m = re.match(r"^\t([0-9a-fA-F]{4})  (.+)$", line)
            if m and vendor:
                names["%s:%s" % (vendor, m.group(1).lower())] = m.group(2).strip()
    return names


def read_pci_ids(value, what):
    """{id: name or None} from a file of "vvvv:dddd [name]" lines or a list "a,b c"."""
    if os.path.isfile(value):
        with open(value) as f:
            lines = [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]
        pairs = [(l.split(None, 1) + [None])[:2] for l in lines]
    elif os.sep in value or not re.match(r"^[0-9A-Fa-f:, ]+$", value):
        die("%s %s does not exist" % (what, value))
    else:
        pairs = [(t, None) for t in re.split(r"[\s,]+", value) if t]
    ids = {}
    for i, name in pairs:
        if not PCI_ID_RE.match(i.lower()):
            die("%s: %r is not a PCI id like 10de:2330" % (what, i))
        ids[i.lower()] = name.strip() if name else None
    return ids


def supported_gpus_json(path, flavour):
    """NVIDIA's supported-gpus.json (the .run's supported-gpus/): {id: name or None} of the
    GPUs FLAVOUR supports."""
    try:
        with open(path) as f:
            chips = json.load(f).get("chips", [])
        ids = {}
        for c in chips:
            if c.get("legacybranch"):
                continue
            # NVIDIA marks each GPU the open modules support with the feature "kernelopen".
            if flavour == "open" and "kernelopen" not in c.get("features", []):
                continue
            i = "10de:%04x" % int(c["devid"], 16)
            if not ids.get(i):
                ids[i] = c.get("name") or None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        die("%s is not NVIDIA's supported-gpus.json (%s: %s)" % (path, type(e).__name__, e))
    return ids


def supported_pci_ids(src, flavour):
    """The GPUs the source says FLAVOUR supports, {id: name or None}, and the file that
    says so; (None, None) when it does not say."""
    js = os.path.join(src, "supported-gpus/supported-gpus.json")
    if os.path.isfile(js):
        return supported_gpus_json(js, flavour), "supported-gpus.json"
    name = "supported-pci-ids" + ("-open" if flavour == "open" else "")
    path = os.path.join(src, name)
    if os.path.isfile(path):
        return read_pci_ids(path, path), name
    return None, None


def flavour_gpus(fl, src, version, names, ids_origin):
    """{"ids": {id: name or None} or None, "source": where from}: the GPUs flavour FL of
    this driver supports, from --pci-ids or the driver's own data (IDS_ORIGIN: Debian's
    package that said so). An open package without them is refused: the installer could
    not tell which GPUs the open modules drive."""
    flavour = fl.name
    if fl.pci_ids is not None and fl.pci_ids.endswith(".json"):
        ids, origin = supported_gpus_json(fl.pci_ids, flavour), "--pci-ids"
    elif fl.pci_ids is not None:
        ids, origin = read_pci_ids(fl.pci_ids, "--pci-ids"), "--pci-ids"
    else:
        ids, origin = supported_pci_ids(src, flavour)
        if origin and ids_origin:
            origin = "%s %s" % (ids_origin, os.path.basename(debian.DEBIAN_IDS[flavour][0]))
    if ids is None:
        if flavour == "open":
            die("the source does not say which GPUs the open modules of %s support (no "
                "supported-gpus/supported-gpus.json, supported-pci-ids-open or Debian's "
                "nvidia-detect of that version): pass --pci-ids open=FILE, NVIDIA's "
                "supported-gpus.json of this release or one vvvv:dddd per line" % version)
        say("note: the source does not say which GPUs the %s modules support; the index "
            "will not restrict them (pass --pci-ids to)" % flavour)
        return {"ids": None, "source": None}
    if not ids:
        die("the source lists no GPU the %s modules support" % flavour)
    for i in ids:
        ids[i] = ids[i] or names.get(i)
    say("%s flavour: %d supported GPUs (%s), %d named" % (
        flavour, len(ids), origin, sum(1 for n in ids.values() if n)))
    return {"ids": ids, "source": origin}
