# SPDX-License-Identifier: Apache-2.0
"""--nvsdm: NVIDIA's NVSwitch Device Monitoring library (libnvsdm), through which DCGM reads
the NVSwitches of NVLink 5 systems (HGX B200/B300), whose switches sit behind the GPU
baseboard's ConnectX management ports instead of the PCI bus. DCGM's NvSwitch module tries
NVSDM first and NSCQ (libnvidia-nscq, NVLink 4 and older) second (NVIDIA/DCGM
modules/nvswitch/DcgmModuleNvSwitch.cpp:26-47), and loads it by one name, dlopen
("libnvsdm.so.1", RTLD_LAZY), no path (sdk/nvidia/nvsdm/loader/nvsdm_loader.cpp:57,90,181):
without it dcgm-exporter logs "Could not load NVSDM" and AttachToNvsdm() returned -25
(DCGM_ST_LIBRARY_NOT_FOUND; NVIDIA/gpu-operator issue 1405).

The driver's .run does not carry it: NVIDIA ships it as a package of its CUDA repository,
libnvsdm-BRANCH for the 560 to 575 branches and libnvsdm from 580, of the driver's own
version, for amd64 only (NVIDIA/gpu-driver-container ubuntu24.04/precompiled/nvidia-driver:
63-77, apt-get install NAME=${DRIVER_VERSION}* and apt-mark hold; ubuntu24.04/install.sh:
59-65; rhel9/install.sh:111-117). Its library is usr/lib/x86_64-linux-gnu/libnvsdm.so.1
(NVIDIA's NVSDM docs, installation.html). Checked before anything is built, then packed into
lib64/ with its soname link, where the CDI spec, GKE's /usr/local/nvidia/lib64 and the ld
cache serve the driver's other libraries (docs/design.md, "NVLink 5 telemetry (DCGM)")."""
import os
import re

from bdp.common import check_machine, die, inside, say, unpack_confined, unpack_given
from bdp.imex import branch_of, check_version, name_version, package_version
from bdp.userspace import dynamic

# The first branch NVIDIA ships libnvsdm for (the driver container installs none before it);
# the installer's HOST_NVSDM_FIRST_BRANCH (installer/host/host.h), which test_bdp_nvsdm holds
# to this, names it in coverage's and doctor's fix.
FIRST_BRANCH = 560
# The name DCGM dlopens (nvsdm_loader.cpp:90 and :181), which the library's SONAME must be.
SONAME = "libnvsdm.so.1"
LINKER_NAME = "libnvsdm.so"
# Where NVIDIA's packages put it (Debian's multiarch directory, RHEL's lib64), and where it
# sits in a tree laid out as ours.
LIB_DIRS = ("usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib",
            "lib64", "lib")
# NVIDIA's file names: libnvsdm[-BRANCH]_VERSION-REVISION_ARCH.deb (or a tar of it, or the
# directory it unpacks to), libnvsdm[-BRANCH]-VERSION-REVISION.ARCH.rpm's tree.
NAME_RE = re.compile(r"^libnvsdm(?:-(\d+))?[_-](?:\d+:)?(\d+\.\d+(?:\.\d+)?)(?:-[\w.~+]+?)?"
                     r"(?:[_.](?:amd64|arm64|x86_64|aarch64))?(?:\.deb|\.tar(?:\.\w+)?|\.tgz)?$")
# The C library's own, which every node has: not named as what libnvsdm needs from the
# consumer's image.
LIBC = re.compile(r"^(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[\w.-]*)"
                  r"\.so")


def version_of_name(name):
    """The version NVIDIA's file name NAME says, or None: 570.172.08 of
    libnvsdm-570_570.172.08-1_amd64.deb and of libnvsdm_580.65.06-1_amd64.deb. A branch in the
    name that is not its version's is no package of NVIDIA's."""
    return name_version(NAME_RE, name)


def find_library(root):
    """The real file (not a link) of libnvsdm in ROOT's library directories, relative to ROOT,
    or None."""
    for d in LIB_DIRS:
        try:
            names = sorted(os.listdir(os.path.join(root, d)))
        except OSError:
            continue
        for n in names:
            p = os.path.join(root, d, n)
            if n.startswith(LINKER_NAME) and not os.path.islink(p) and os.path.isfile(p):
                return "%s/%s" % (d, n)
    return None


def nvsdm_source(b, version):
    """--nvsdm, checked before anything is built: the driver's branch has libnvsdm, the
    package is of the driver's own version, it holds the library with the soname DCGM
    dlopens, built for --arch. Returns (the library's path, its version, what it needs)."""
    branch = branch_of(version)
    if branch is None or branch < FIRST_BRANCH:
        die("--nvsdm: driver %s is of the %s branch, for which NVIDIA ships no libnvsdm (it "
            "comes with the %d branch): leave out --nvsdm, or build a %d or later driver" % (
                version, branch, FIRST_BRANCH, FIRST_BRANCH))
    given, root = unpack_given(b.nvsdm, "--nvsdm", os.path.join(b.work, "nvsdm"),
                               "NVIDIA's libnvsdm package", find_library)
    nvsdm_version = package_version(given, root, NAME_RE)
    check_version(b.nvsdm, "libnvsdm", "libnvsdm", nvsdm_version, version, b.arch)
    rel = find_library(root)
    if not rel:
        die("%s has no %s (looked in %s): not NVIDIA's libnvsdm package" % (
            b.nvsdm, SONAME, ", ".join(LIB_DIRS)))
    path = inside(root, rel, b.nvsdm)
    check_machine(b, path, "%s: %s" % (b.nvsdm, rel))
    so, needed = dynamic(path)
    if so != SONAME:
        die("%s: %s has the soname %s, but DCGM loads %s: not NVIDIA's libnvsdm package" % (
            b.nvsdm, rel, so or "(none)", SONAME))
    return path, nvsdm_version, [n for n in needed if not LIBC.match(n)]


def stage_nvsdm(nvsdm, tree):
    """libnvsdm (nvsdm_source's) into the package's lib64/ (collect_userspace made it): the
    file as NVIDIA names it, its soname link libnvsdm.so.1 where the name differs, and the
    linker name libnvsdm.so. Returns what build-info.json records."""
    path, version, needs = nvsdm
    lib64 = os.path.join(tree, "lib64")
    os.makedirs(lib64, exist_ok=True)
    name = os.path.basename(path)
    unpack_confined.copy_out(os.path.dirname(path), path, os.path.join(lib64, name))
    os.chmod(os.path.join(lib64, name), 0o755)
    if name != SONAME:
        os.symlink(name, os.path.join(lib64, SONAME))
    if name != LINKER_NAME and not os.path.lexists(os.path.join(lib64, LINKER_NAME)):
        os.symlink(SONAME, os.path.join(lib64, LINKER_NAME))
    say("libnvsdm %s packed: lib64/%s%s" % (
        version, SONAME, " -> " + name if name != SONAME else "") +
        (" (it needs %s from the consumer's image or the host)" % ", ".join(needs)
         if needs else ""))
    return {"version": version, "library": SONAME, "file": name, "needs": needs}
