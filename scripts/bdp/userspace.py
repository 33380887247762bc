# SPDX-License-Identifier: Apache-2.0
"""The package's user space: the libraries and tools the compute and utility capabilities
need, the GSP firmware, and NVIDIA's daemons shipped apart from the driver (Fabric
Manager, NVLSM), each checked against --arch and the driver's version."""
import glob
import os
import re
import shutil
import subprocess

from bdp.common import (ARCHES, LIBRARIES, REQUIRED_LIBRARIES, TOOLS, check_bundle_members,
                        check_machine, die, elf_machine, inside, run, say, unpack_confined,
                        unpack_given)


def dynamic(path):
    """(SONAME or None, [DT_NEEDED...]) of the ELF library PATH, as readelf -d reads them."""
    out = run(["readelf", "-d", path])
    so = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    return (so.group(1) if so else None,
            re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))


def soname(path):
    """The SONAME of the ELF library PATH, or None."""
    return dynamic(path)[0]


def take_library(b, src, real, stem, lib64):
    """SRC/REAL, checked for --arch, into LIB64 with its soname's link and its linker
    name's (STEM.so). Returns the soname (REAL where it has none)."""
    p = os.path.join(src, real)
    check_machine(b, p, real)
    unpack_confined.copy_out(src, p, os.path.join(lib64, real))
    so = soname(p)
    if so and so != real:
        os.symlink(real, os.path.join(lib64, so))
        # The linker name, which some programs dlopen (libcuda.so, libnvidia-ml.so).
        if not os.path.lexists(os.path.join(lib64, stem + ".so")):
            os.symlink(so, os.path.join(lib64, stem + ".so"))
    return so or real


def collect_userspace(b, src, version, tree):
    lib64 = os.path.join(tree, "lib64")
    os.makedirs(lib64)
    taken = []
    for stem in LIBRARIES:
        real = "%s.so.%s" % (stem, version)
        p = os.path.join(src, real)
        if not os.path.isfile(p):
            if stem in REQUIRED_LIBRARIES:
                die("%s has no %s" % (src, real))
            continue
        taken.append(take_library(b, src, real, stem, lib64))
    bin_ = os.path.join(tree, "bin")
    os.makedirs(bin_)
    tools = []
    for t in TOOLS:
        p = os.path.join(src, t)
        if os.path.isfile(p):
            check_machine(b, p, t)
            unpack_confined.copy_out(src, p, os.path.join(bin_, t))
            os.chmod(os.path.join(bin_, t), 0o755)
            tools.append(t)
    if "nvidia-smi" not in tools:
        die("%s has no nvidia-smi" % src)
    fw = sorted(glob.glob(os.path.join(src, "firmware", "*.bin")))
    if fw:
        d = os.path.join(tree, "firmware/nvidia", version)
        os.makedirs(d)
        for f in fw:
            unpack_confined.copy_out(src, f, os.path.join(d, os.path.basename(f)))
            # COS ships each GSP firmware's raw security.ima value as FILE.sig beside it:
            # make-repo pack turns it into the file's pax xattr (the installer sets it).
            if os.path.isfile(f + ".sig"):
                unpack_confined.copy_out(src, f + ".sig",
                                         os.path.join(d, os.path.basename(f) + ".sig"))
    return taken, tools, [os.path.basename(f) for f in fw]


def fabricmanager_version(root, given):
    """The version of a Fabric Manager archive or directory: its name, as NVIDIA names it
    (fabricmanager-linux-ARCH-VERSION-archive), else what its nv-fabricmanager --version
    prints ("Fabric Manager version is : VERSION"), where it runs here."""
    for name in (os.path.basename(root), os.path.basename(given)):
        m = re.search(r"fabricmanager-linux-[a-z0-9_]+-(\d+\.\d+(?:\.\d+)?)", name)
        if m:
            return m.group(1)
    try:
        out = subprocess.run([os.path.join(root, "bin/nv-fabricmanager"), "--version"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    m = re.search(r"(?<![\w.])(\d+\.\d+(?:\.\d+)?)(?![\w.])", out)
    return m.group(1) if m else None


def fabricmanager_source(b, version):
    """--fabricmanager: NVIDIA's Fabric Manager for NVSwitch systems, shipped apart from the
    driver (fabricmanager-linux-ARCH-VERSION-archive.tar.xz, or its directory), unpacked
    and checked before anything is built: it has bin/nv-fabricmanager, and its version is
    the driver's (Fabric Manager refuses to train the fabric otherwise). Returns (its
    directory, its version)."""
    given = os.path.realpath(b.fabricmanager)
    if os.path.isfile(given):
        d = os.path.join(b.work, "fabricmanager")
        check_bundle_members("--fabricmanager", given)
        unpack_confined.unpack_tar(given, d, b.fabricmanager)
        tops = [os.path.join(d, n) for n in os.listdir(d)]
        root = tops[0] if len(tops) == 1 and os.path.isdir(tops[0]) else d
    elif os.path.isdir(given):
        root = given
    else:
        die("%s does not exist: pass NVIDIA's fabricmanager-linux-ARCH-%s-archive.tar.xz or "
            "the directory it unpacks to" % (b.fabricmanager, version))
    fm = os.path.join(root, "bin/nv-fabricmanager")
    if not os.path.isfile(fm):
        die("%s has no bin/nv-fabricmanager: not a Fabric Manager archive" % b.fabricmanager)
    fm_version = fabricmanager_version(root, given)
    if not fm_version:
        die("the version of %s cannot be told (neither its name nor bin/nv-fabricmanager "
            "--version): pass the archive as NVIDIA names it" % b.fabricmanager)
    if fm_version != version:
        die("%s is Fabric Manager %s, the driver is %s: Fabric Manager must be the driver's "
            "own version; take fabricmanager-linux-%s-%s-archive" % (
                b.fabricmanager, fm_version, version, b.arch, version))
    return root, fm_version


# Where NVIDIA's nvlsm package (a .deb or .rpm of its own, date-versioned, not the
# driver's version) installs the subnet manager and its config, and where the same files
# sit in a tree laid out as ours.
NVLSM_BINARIES = ("opt/nvidia/nvlsm/sbin/nvlsm", "usr/sbin/nvlsm", "usr/bin/nvlsm",
                  "sbin/nvlsm", "bin/nvlsm")
NVLSM_CONFIGS = ("usr/share/nvidia/nvlsm/nvlsm.conf", "share/nvidia/nvlsm/nvlsm.conf",
                 "etc/nvlsm.conf")


def nvlsm_source(b):
    """--nvlsm: NVIDIA's NVLink Subnet Manager for NVLink 5 systems (HGX B200/B300), shipped
    apart from the driver and from Fabric Manager: its .deb, a tar archive, or the directory
    either unpacks to. Checked before anything is built: it has the nvlsm executable where
    NVIDIA's package puts it, built for --arch. Returns (binary, config or None, version or
    None)."""
    if not b.fabricmanager:
        die("--nvlsm without --fabricmanager: NVLSM only serves Fabric Manager; pass both")
    given, root = unpack_given(b.nvlsm, "--nvlsm", os.path.join(b.work, "nvlsm"),
                               "NVIDIA's nvlsm package", lambda r: any(
                                   os.path.isfile(os.path.join(r, rel)) for rel in NVLSM_BINARIES))
    binary = next((inside(root, rel, b.nvlsm) for rel in NVLSM_BINARIES
                   if os.path.isfile(os.path.join(root, rel))), None)
    if not binary:
        die("%s has no nvlsm executable (looked for %s): not NVIDIA's nvlsm package" % (
            b.nvlsm, ", ".join(NVLSM_BINARIES)))
    # NVLSM runs on the node, so it must be the node's architecture.
    if elf_machine(binary) != ARCHES[b.arch]["elf"]:
        die("%s: %s is not an ELF executable for %s: take the nvlsm package of the node's "
            "architecture" % (b.nvlsm, os.path.relpath(binary, root), b.arch))
    config = next((inside(root, c, b.nvlsm) for c in NVLSM_CONFIGS
                   if os.path.isfile(os.path.join(root, c))), None)
    m = re.search(r"nvlsm[_-](\d{4}\.\d+\.\d+[\w.~+-]*?)(?:[_-](?:amd64|arm64|x86_64|aarch64))?"
                  r"(?:\.deb|\.rpm|\.tar\.\w+|$)", os.path.basename(given))
    return binary, config, m.group(1) if m else None


def stage_nvlsm(nvlsm, tree):
    """NVLSM (nvlsm_source's) into the package: bin/nvlsm and share/nvidia/nvlsm/nvlsm.conf,
    where the node agent starts it from. Returns what build-info.json records."""
    binary, config, version = nvlsm
    os.makedirs(os.path.join(tree, "bin"), exist_ok=True)
    shutil.copy2(binary, os.path.join(tree, "bin/nvlsm"))
    os.chmod(os.path.join(tree, "bin/nvlsm"), 0o755)
    if config:
        share = os.path.join(tree, "share/nvidia/nvlsm")
        os.makedirs(share, exist_ok=True)
        shutil.copy2(config, os.path.join(share, "nvlsm.conf"))
    say("NVLSM %s packed: bin/nvlsm%s" % (
        version or "(version not in its name)",
        ", share/nvidia/nvlsm/nvlsm.conf" if config else " (no nvlsm.conf: its defaults)"))
    return {"version": version, "config": bool(config)}


def stage_fabricmanager(fabric, tree):
    """Fabric Manager (fabricmanager_source's) into the package: bin/nv-fabricmanager,
    share/nvidia/nvswitch/fabricmanager.cfg and the topology files. Returns what
    build-info.json records."""
    root, fm_version = fabric
    os.makedirs(os.path.join(tree, "bin"), exist_ok=True)
    unpack_confined.copy_out(root, "bin/nv-fabricmanager",
                             os.path.join(tree, "bin/nv-fabricmanager"))
    os.chmod(os.path.join(tree, "bin/nv-fabricmanager"), 0o755)
    share = os.path.join(tree, "share/nvidia/nvswitch")
    os.makedirs(share, exist_ok=True)
    copied = []
    for rel in ("etc/fabricmanager.cfg", "share/nvidia/nvswitch/fabricmanager.cfg"):
        if os.path.isfile(os.path.join(root, rel)):
            unpack_confined.copy_out(root, rel, os.path.join(share, "fabricmanager.cfg"))
            copied.append("fabricmanager.cfg")
            break
    for f in sorted(glob.glob(os.path.join(root, "share/nvidia/nvswitch/*"))):
        name = os.path.basename(f)
        if os.path.isfile(f) and name != "fabricmanager.cfg":
            unpack_confined.copy_out(root, f, os.path.join(share, name))
            copied.append(name)
    say("Fabric Manager %s packed: bin/nv-fabricmanager, share/nvidia/nvswitch/ (%s)" % (
        fm_version, ", ".join(copied) or "nothing else"))
    return {"version": fm_version, "files": copied}
