# SPDX-License-Identifier: Apache-2.0
"""Ubuntu's kernels that are coming, for one NVIDIA branch: each kernel RELEASE with
Canonical's linux-modules-nvidia-BRANCH-RELEASE in an Ubuntu archive's Packages index
(debindex.py: the format, cited there; the packages, docs/platforms/ubuntu.md), and the
linux-objects-nvidia-BRANCH-RELEASE and linux-signatures-nvidia-RELEASE of the versions
its Depends pins, with linux-modules-nvidia-BRANCH-open-RELEASE where there is one: what
build-driver-package --ubuntu-modules-deb takes.

Config: {"type": "ubuntu", "name": N, "url": "http://archive.ubuntu.com/ubuntu" (arm64:
http://ports.ubuntu.com/ubuntu-ports), "suites": ["noble-updates", "noble-security"],
"component": "restricted", "arch": "amd64", "branch": "535-server", "kernel_flavours":
["generic"] (optional: every flavour where absent), "newest": 2 (kernels per flavour),
"keyring": "/usr/share/keyrings/ubuntu-archive-keyring.gpg" (Release's signature checked;
required for an http:// URL: conf.keyring)}."""
import re

from . import conf as C
from . import debindex
from .debian import archive, images_of, resolve
from .image import FeedError, Image, check_kernel

BRANCH_RE = re.compile(r"^[0-9]{3,4}(-server)?$")
# 6.8.0-45-generic, 5.15.0-1064-oracle: the flavour is what follows the ABI.
RELEASE_RE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+-([a-z0-9][a-z0-9-]*)$")


def read(conf, http, notes=None):
    arch = C.arch(conf)
    branch = C.text(conf, "branch")
    if not BRANCH_RE.match(branch):
        raise FeedError("feed %s: \"branch\" %r is not one of Canonical's NVIDIA branches "
                        "(535, 535-server, 570-server...)" % (C.name(conf), branch))
    flavours = C.words(conf, "kernel_flavours", []) or None
    newest = C.count(conf, "newest", 2)
    mirror, by_name = archive(http, conf, "restricted")
    prefix = "linux-modules-nvidia-%s-" % branch
    found = []
    for name, sts in by_name.items():
        release = name[len(prefix):]
        # -open-RELEASE and other branches' names do not begin with a digit here.
        if not name.startswith(prefix) or not release[:1].isdigit():
            continue
        check_kernel(release, sts[0]["_where"])
        m = RELEASE_RE.match(release)
        if not m or (flavours and m.group(1) not in flavours):
            continue
        st = debindex.newest(sts)
        found.append((m.group(1), st["version"], release, st))
    return images_of(found, newest, notes,
                     lambda release, _, st: image(conf, arch, mirror, by_name, branch, release,
                                                  st))


def image(conf, arch, mirror, by_name, branch, release, st):
    where = st["_where"]
    owner = "linux-modules-nvidia-%s-%s" % (branch, release)
    inputs = {"modules_deb": debindex.deb_input(mirror, st, where)}
    # The versions the control package pins (Depends: ... (= V)), never another build's.
    for dep in debindex.depends(st):
        for key, want in (("objects_deb", "linux-objects-nvidia-%s-%s" % (branch, release)),
                          ("signatures_deb", "linux-signatures-nvidia-%s" % release)):
            if dep[0] == want:
                inputs[key] = debindex.deb_input(mirror, resolve(by_name, dep, owner, where),
                                                 where)
    if "objects_deb" in inputs and "signatures_deb" not in inputs:
        raise FeedError("%s: %s %s depends on linux-objects-nvidia but not on "
                        "linux-signatures-nvidia-%s: not Canonical's packages" % (
                            where, owner, st["version"], release))
    opens = by_name.get("linux-modules-nvidia-%s-open-%s" % (branch, release))
    if opens:
        inputs["modules_open_deb"] = debindex.deb_input(mirror, debindex.newest(opens), where)
    return Image("ubuntu", None, release, arch, "feed %s: %s %s %s" % (
        C.name(conf), where, owner, st["version"]), inputs)
