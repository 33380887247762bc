# SPDX-License-Identifier: Apache-2.0
"""Debian: the platform that says nothing otherwise (base.Platform's ways: the kernel's
build tree from --headers or linux-headers-R, the modules compiled and signed with the
operator's key; or, --headers-debs, from Debian's split headers packages of a kernel this
machine never installed, unpacked), and Debian's non-free packages of NVIDIA's driver,
which any platform's build may take as the driver (--debian VERSION fetched with an apt
state of its own, --debs DIR already fetched), staged into the layout of NVIDIA's .run."""
import glob
import os
import re
import shutil

from bdp.base import Platform
from bdp.common import (ARCHES, HOST_ARCH, copy_tools_and_firmware, die, file_sha256, inside,
                        progress, run, say, unpack_confined)

# Debian's non-free packages of one driver version, and where their files go in SRC.
DEBIAN_KERNEL = {"proprietary": ("nvidia-kernel-source", "usr/src/nvidia-kernel.tar.xz",
                                 "modules/nvidia-kernel", "kernel"),
                 "open": ("nvidia-open-kernel-source", "usr/src/nvidia-open-kernel.tar.xz",
                          "modules/nvidia-open-kernel", "kernel-open")}
DEBIAN_REQUIRED = ["libcuda1", "libnvidia-ml1", "nvidia-smi"]
DEBIAN_OPTIONAL = ["libcudadebugger1", "libnvidia-ptxjitcompiler1", "libnvidia-nvvm4",
                   "libnvidia-pkcs11-openssl3", "libnvidia-cfg1", "nvidia-driver-bin",
                   "nvidia-cuda-mps", "firmware-nvidia-gsp", "nvidia-detect"]
# --capabilities video, graphics: Debian's non-free packages of the same driver version
# holding common.CAPABILITY_LIBRARIES and graphics' loader files (all in bookworm non-free
# at 535.261.03, checked with apt-cache madison), fetched only when the capability is
# asked. The first of each are required. Debian's libnvidia-egl-wayland1 and
# libnvidia-egl-gbm1 are versioned on their own (1:1.1.10, 1.1.0), not as the driver: left
# out. There is no libnvidia-ifr, libnvidia-cbl or libnvidia-tls package of 535 (tls is in
# libnvidia-glcore, glsi in libnvidia-eglcore).
DEBIAN_CAPABILITY = {
    "video": ["libnvcuvid1", "libnvidia-encode1", "libnvidia-opticalflow1",
              "nvidia-vdpau-driver"],
    "graphics": ["libglx-nvidia0", "libegl-nvidia0", "libnvidia-glcore", "libnvidia-eglcore",
                 "nvidia-vulkan-common", "nvidia-egl-common",
                 "libgles-nvidia1", "libgles-nvidia2", "libnvidia-glvkspirv",
                 "libnvidia-rtcore", "libnvidia-allocator1", "libnvidia-fbc1", "libnvoptix1"]}
DEBIAN_CAPABILITY_REQUIRED = {"video": 2, "graphics": 6}
# Where those packages keep graphics' loader files, and their names in the .run layout
# (common.GRAPHICS_FILES).
DEBIAN_SHARE = [("usr/share/vulkan/icd.d/nvidia_icd.json", "nvidia_icd.json"),
                ("usr/share/vulkan/implicit_layer.d/nvidia_layers.json", "nvidia_layers.json"),
                ("usr/share/glvnd/egl_vendor.d/10_nvidia.json", "10_nvidia.json")]
DEBIAN_ANY_VERSION = ["nvidia-persistenced"]  # versioned on its own, not with the driver
# nvidia-detect's lists of the GPUs each flavour supports (10DE2330 per line), staged as
# the SRC layout's supported-pci-ids files.
DEBIAN_IDS = {"proprietary": ("usr/share/nvidia/nvidia.ids", "supported-pci-ids"),
              "open": ("usr/share/nvidia/nvidia-open.ids", "supported-pci-ids-open")}


class Debian(Platform):
    name = "debian"
    title = "Debian (the default: also any other --os)"

    # The driver from Debian's archive serves every platform: its options mark none.
    @classmethod
    def add_sources(cls, sources):
        sources.add_argument("--debian", metavar="VERSION",
                             help="fetch Debian's packages of VERSION")
        sources.add_argument("--debs", metavar="DIR", help="Debian's packages, already fetched")
        return []

    @classmethod
    def add_options(cls, group):
        group.add_argument("--debian-mirror", default="http://deb.debian.org/debian")
        group.add_argument("--debian-suite", default="bookworm")
        return [group.add_argument("--headers-debs", action="append", default=[],
                                   metavar="DEB_OR_DIR", help="Debian: the kernel's "
                                   "linux-headers-R, linux-headers-*-common and linux-kbuild-V "
                                   ".debs (files, or a directory of them; repeatable), "
                                   "unpacked here as the build tree, instead of --headers")]

    def __init__(self, args):
        self.headers_debs = getattr(args, "headers_debs", [])

    def check(self, b):
        if self.headers_debs and b.headers:
            die("--headers-debs is the build tree: leave out --headers")

    def headers(self, b):
        return headers_from_debs(b, self.headers_debs) if self.headers_debs else b.headers


def deb_files(given):
    """--headers-debs: each a .deb, or a directory whose *.deb are taken."""
    debs = []
    for g in given:
        if os.path.isdir(g):
            found = sorted(glob.glob(os.path.join(g, "*.deb")))
            if not found:
                die("--headers-debs %s holds no .deb" % g)
            debs += found
        elif os.path.isfile(g) and g.endswith(".deb"):
            debs.append(g)
        else:
            die("--headers-debs %s is neither a .deb nor a directory of them" % g)
    return debs


def headers_from_debs(b, given):
    """--headers-debs: Debian's linux-headers-R, the linux-headers-*-common its Makefile
    includes and the linux-kbuild-V its scripts/ and tools/ link to, unpacked into one root
    confined (unpack_confined.py), as scripts/fetch-debian-kernel makes them usable: the
    Makefile's "include /usr/src/linux-headers-*-common/Makefile" pointed at the unpacked
    -common tree, the links resolved inside the root. Returns the tree of R; reused while
    the same packages are given."""
    debs = deb_files(given)
    root = os.path.join(b.work, "debian-headers")
    stamp = os.path.join(root, ".debs")
    key = "".join("%s %s\n" % (file_sha256(d), os.path.basename(d)) for d in sorted(debs))
    tree = os.path.join(root, "usr/src/linux-headers-" + b.kernel)
    if os.path.isfile(stamp) and os.path.isdir(tree):
        with open(stamp) as f:
            same = f.read() == key
    else:
        same = False
    if same:
        say("Debian's headers of %s already unpacked in %s" % (b.kernel, root))
        return tree
    shutil.rmtree(root, ignore_errors=True)
    names = ", ".join(os.path.basename(d) for d in debs)
    for deb in debs:
        unpack_confined.unpack_deb_into(deb, root)
    if not os.path.isfile(os.path.join(tree, "Makefile")):
        have = [os.path.basename(p) for p in glob.glob(os.path.join(root, "usr/src/*"))]
        die("%s hold no usr/src/linux-headers-%s/Makefile (they have: %s): give the "
            "linux-headers-%s package" % (names, b.kernel, ", ".join(have) or "nothing",
                                          b.kernel))
    point_at_common(tree, root, names)
    for link in ("scripts", "tools"):
        path = os.path.join(tree, link)
        if os.path.lexists(path):
            target = os.path.realpath(path)
            if not os.path.isdir(target):
                rel = os.path.relpath(target, os.path.realpath(root))
                die("%s: linux-headers-%s/%s leads to %s, which they do not hold: give the "
                    "linux-kbuild package it names" % (names, b.kernel, link, rel))
            inside(root, path, names)   # and never out of ROOT
    check_kbuild_runs(tree, names)
    with open(stamp, "w") as f:
        f.write(key)
    say("Debian's headers of %s unpacked from %s" % (b.kernel, names))
    return tree


def point_at_common(tree, root, names):
    """The split tree's "include /usr/src/linux-headers-X-common/Makefile" (Debian's
    linux-headers-R) pointed at the -common tree unpacked under ROOT."""
    mk = os.path.join(tree, "Makefile")
    with open(mk) as f:
        text = f.read()
    m = re.search(r"^include[ \t]+/usr/src/(linux-headers-[^/\s]+)/Makefile[ \t]*$", text,
                  re.M)
    if not m:
        return      # not split: the tree is whole
    common = inside(root, os.path.join("usr/src", m.group(1)), names) \
        if os.path.lexists(os.path.join(root, "usr/src", m.group(1))) else None
    if not common or not os.path.isfile(os.path.join(common, "Makefile")):
        die("%s: linux-headers-%s includes /usr/src/%s/Makefile, which they do not hold: give "
            "the %s package" % (names, os.path.basename(tree)[len("linux-headers-"):],
                                m.group(1), m.group(1)))
    tmp = mk + ".tmp"
    with open(tmp, "w") as f:
        f.write(text[:m.start()] + "include %s/Makefile" % common + text[m.end():])
    os.replace(tmp, mk)


def check_kbuild_runs(tree, names):
    """The kbuild helpers (fixdep, modpost) run on this machine: a linux-kbuild .deb of
    another architecture than this machine's is refused, naming the one to give."""
    fixdep = os.path.join(tree, "scripts/basic/fixdep")
    if not os.path.isfile(fixdep):
        return
    with open(fixdep, "rb") as f:
        head = f.read(20)
    machine = int.from_bytes(head[18:20], "little") if head[:4] == b"\x7fELF" else None
    if machine is not None and machine != ARCHES[HOST_ARCH]["elf"]:
        other = next((a for a, v in ARCHES.items() if v["elf"] == machine), "machine %d" %
                     machine)
        die("%s: the linux-kbuild package is %s's, its helpers (scripts/basic/fixdep) do not "
            "run on this %s machine: give this machine's linux-kbuild of the same version "
            "(apt-get download linux-kbuild-V:%s)" % (names, other, HOST_ARCH,
                                                        ARCHES[HOST_ARCH]["deb"]))


class Apt:
    """apt-get with a state of its own: the machine's sources and lists stay as they are."""

    def __init__(self, work, mirror, suite, arch):
        self.dir = os.path.join(work, "apt")
        for d in ("lists/partial", "cache/archives/partial", "parts"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
        if not os.path.exists(keyring):
            die("%s is missing: install debian-archive-keyring" % keyring)
        comps = "main contrib non-free non-free-firmware"
        lines = ["deb [signed-by=%s] %s %s %s" % (keyring, mirror, s, comps)
                 for s in (suite, suite + "-updates")]
        if mirror.rstrip("/").endswith("/debian"):
            lines.append("deb [signed-by=%s] %s-security %s-security %s" % (
                keyring, mirror.rstrip("/"), suite, comps))
        with open(os.path.join(self.dir, "sources.list"), "w") as f:
            f.write("\n".join(lines) + "\n")
        status = os.path.join(self.dir, "status")
        open(status, "a").close()
        self.opts = ["-o", "Dir::Etc::SourceList=" + os.path.join(self.dir, "sources.list"),
                     "-o", "Dir::Etc::SourceParts=" + os.path.join(self.dir, "parts"),
                     "-o", "Dir::State::Lists=" + os.path.join(self.dir, "lists"),
                     "-o", "Dir::Cache=" + os.path.join(self.dir, "cache"),
                     "-o", "Dir::State::status=" + status,
                     "-o", "APT::Sandbox::User=root",
                     # The node's architecture is the only one: names mean its packages.
                     "-o", "APT::Architecture=" + arch, "-o", "APT::Architectures::=" + arch]

    def update(self):
        run(["apt-get"] + self.opts + ["-q", "update"])

    def versions(self, pkg):
        out = run(["apt-cache"] + self.opts + ["madison", pkg])
        return [line.split("|")[1].strip() for line in out.splitlines() if "|" in line]

    def download(self, spec, dest):
        run(["apt-get"] + self.opts + ["-q", "download", spec], cwd=dest)


def fetch(b, version):
    """--debian VERSION: Debian's packages of it (each flavour's module sources, the user
    space) into the work directory, unless already there. Returns that directory."""
    dest = os.path.join(b.work, "debs" if b.arch == "x86_64" else "debs-" + b.arch)
    os.makedirs(dest, exist_ok=True)
    upstream = version.split("-")[0]
    extra = capability_packages(b.capabilities)
    wanted = [DEBIAN_KERNEL[f.name][0] for f in b.flavours] + DEBIAN_REQUIRED + \
        DEBIAN_OPTIONAL + [p for p, _ in extra]
    optional = DEBIAN_OPTIONAL + [p for p, required in extra if not required]
    have = {os.path.basename(p).split("_")[0]: p for p in glob.glob(os.path.join(dest, "*.deb"))
            if "_%s" % upstream in p}
    missing = [p for p in wanted if p not in have]
    if not missing and all(p in have or glob.glob(os.path.join(dest, p + "_*.deb"))
                           for p in DEBIAN_ANY_VERSION):
        say("Debian packages of %s already in %s" % (upstream, dest))
        return dest
    progress("fetching Debian's packages of %s from %s" % (upstream, b.debian_mirror))
    apt = Apt(b.work, b.debian_mirror, b.debian_suite, ARCHES[b.arch]["deb"])
    say("fetching Debian's packages of driver %s (%s, %s, %s)" % (
        upstream, b.debian_mirror, b.debian_suite, ARCHES[b.arch]["deb"]))
    apt.update()
    for pkg in missing:
        vs = [v for v in apt.versions(pkg) if v == version or v.split("-")[0] == upstream]
        if not vs:
            if pkg in optional:
                say("  %s: not packaged for %s, skipped" % (pkg, upstream))
                continue
            known = ", ".join(apt.versions(pkg)) or "none"
            die("Debian has no %s %s (versions there: %s); check the version and that "
                "non-free is reachable" % (pkg, upstream, known))
        apt.download("%s=%s" % (pkg, vs[0]), dest)
    for pkg in DEBIAN_ANY_VERSION:
        if not glob.glob(os.path.join(dest, pkg + "_*.deb")) and apt.versions(pkg):
            apt.download(pkg, dest)
    return dest


def capability_packages(caps):
    """The packages of DEBIAN_CAPABILITY that CAPS asks for: (name, required) pairs."""
    return [(p, i < DEBIAN_CAPABILITY_REQUIRED[c]) for c in caps
            for i, p in enumerate(DEBIAN_CAPABILITY.get(c, []))]


def stage_share(root, stage, what):
    """Graphics' loader files and OptiX's nvoptix.bin of Debian's packages, unpacked in
    ROOT, into STAGE under their .run names, where the packages had them."""
    found = [(rel, name) for rel, name in DEBIAN_SHARE if os.path.isfile(os.path.join(root, rel))]
    found += [(os.path.relpath(p, root), "nvoptix.bin")
              for p in glob.glob(os.path.join(root, "usr/lib/*/nvidia/current/nvoptix.bin"))]
    for rel, name in found:
        unpack_confined.copy_out(root, os.path.join(root, rel), os.path.join(stage, name), what)


def stage_debs(b, debs, stage):
    """Debian's packages -> the SRC layout. Returns the driver version they carry and the
    package that lists the GPUs each flavour supports (nvidia-detect)."""
    root = os.path.join(b.work, "debroot")
    what = "the packages of " + debs
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    pkgs = {}
    for deb in sorted(glob.glob(os.path.join(debs, "*.deb"))):
        name, ver = os.path.basename(deb).split("_")[:2]
        pkgs[name] = ver.replace("%3a", ":").split(":")[-1].split("-")[0]
        unpack_confined.unpack_deb_into(deb, root)
    for fl in b.flavours:
        f = fl.name
        if not fl.prebuilt and DEBIAN_KERNEL[f][0] not in pkgs:
            die("%s has no %s_*.deb (the %s module sources)" % (debs, DEBIAN_KERNEL[f][0], f))
    if "libnvidia-ml1" not in pkgs:
        die("%s has no libnvidia-ml1_*.deb" % debs)
    version = pkgs["libnvidia-ml1"]
    for name, ver in pkgs.items():
        if name not in DEBIAN_ANY_VERSION and ver != version:
            die("%s is version %s, the rest %s: give one driver version's packages" % (
                name, ver, version))
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)
    for f in [fl.name for fl in b.flavours]:
        kpkg, tarball, subdir, target = DEBIAN_KERNEL[f]
        if kpkg not in pkgs:
            continue
        tmp = os.path.join(b.work, "ksrc")
        unpack_confined.unpack_tar(inside(root, tarball, kpkg), tmp, os.path.basename(tarball))
        if not os.path.isdir(os.path.join(tmp, subdir)):
            die("%s's %s has no %s/: not Debian's package of NVIDIA's module sources" % (
                kpkg, tarball, subdir))
        ksrc = inside(tmp, subdir, os.path.basename(tarball))
        os.rename(ksrc, os.path.join(stage, target))
        # Moved out of its archive's tree: its links must still resolve inside it.
        unpack_confined.check_links(os.path.join(stage, target), os.path.basename(tarball))
        shutil.rmtree(tmp)
    # Debian keeps most libraries under nvidia/current (for its alternatives), some
    # (libnvidia-pkcs11-openssl3) directly in the multiarch directory.
    for libdir in glob.glob(os.path.join(root, "usr/lib/*/nvidia/current")) + glob.glob(
            os.path.join(root, "usr/lib/*-linux-gnu")):
        for f in os.listdir(libdir):
            p = os.path.join(libdir, f)
            if os.path.isfile(p) and not os.path.islink(p) and f.endswith(".so." + version):
                unpack_confined.copy_out(root, p, os.path.join(stage, f), what)
    copy_tools_and_firmware(root, stage, version,
                            ("usr/lib/nvidia/current", "usr/bin", "usr/sbin"), what)
    stage_share(root, stage, what)
    # nvidia-detect (same version, checked above): its nvidia.ids lists the GPUs the
    # driver supports, nvidia-open.ids those Debian lists for the open modules. Names come
    # from the PCI id database where there is one.
    for f in [fl.name for fl in b.flavours]:
        ids, staged = DEBIAN_IDS[f]
        if not os.path.isfile(os.path.join(root, ids)):
            continue
        with open(inside(root, ids, what)) as fh:
            pci = sorted(set("%s:%s" % (t[:4].lower(), t[4:].lower()) for t in fh.read().split()
                             if re.match(r"^[0-9A-Fa-f]{8}$", t)))
        with open(os.path.join(stage, staged), "w") as fh:
            fh.write("".join(i + "\n" for i in pci))
    shutil.rmtree(root)
    return version, "nvidia-detect %s" % pkgs.get("nvidia-detect")
