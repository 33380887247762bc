# SPDX-License-Identifier: Apache-2.0
"""What every part of build-driver-package shares: the tables of what a driver package
holds, the architectures, the errors and progress lines, and running a command."""
import hashlib
import os
import re
import subprocess
import sys
import tarfile
import time

# scripts/, where the other tools are (make-repo) and unpack_confined.py: every archive
# this tool takes is unpacked confined to its directory.
HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
sys.path.insert(0, HERE)
import unpack_confined  # noqa: E402,F401
from unpack_confined import inside  # noqa: E402,F401

VERSION_RE = re.compile(r"^[0-9]{1,9}(\.[0-9]{1,9}){1,5}$")
SIG_MAGIC = b"~Module signature appended~\n"

# User space the compute and utility capabilities need (the libnvidia-container split),
# by library stem. The first two are required; the rest are taken when the source has them.
LIBRARIES = [
    "libcuda", "libnvidia-ml",                                   # required
    "libcudadebugger", "libnvidia-ptxjitcompiler", "libnvidia-nvvm",
    "libnvidia-pkcs11-openssl3", "libnvidia-pkcs11", "libnvidia-opencl",
    "libnvidia-gpucomp", "libnvidia-fatbinaryloader", "libnvidia-compiler",
    "libnvidia-allocator",                                        # compute
    "libnvidia-cfg", "libnvidia-nscq",                            # utility
]
REQUIRED_LIBRARIES = ("libcuda", "libnvidia-ml")
# --capabilities: NVIDIA's driver capabilities (the NVIDIA_DRIVER_CAPABILITIES words);
# compute and utility are LIBRARIES above, always packed.
CAPABILITIES = ("compute", "utility", "video", "graphics")
DEFAULT_CAPABILITIES = ("compute", "utility")
# The user space of video and graphics, by library stem, exactly as libnvidia-container
# lists what each capability mounts (NVIDIA/libnvidia-container src/nvc_info.c at 00b4b47:
# video_libs 97-102; graphics_libs 104-114; graphics_libs_glvnd 116-126, the GLVND vendor
# libraries, its default), plus libnvidia-vulkan-producer that nvidia-container-toolkit
# mounts for graphics (internal/discover/graphics.go:178-182 at d34b304; Debian ships it in
# libegl-nvidia0). libnvidia-allocator (graphics.go:181) is compute's already. The first
# stems of each are required of a source that is asked for the capability.
CAPABILITY_LIBRARIES = {
    "video": ["libnvcuvid", "libnvidia-encode",                  # required
              "libnvidia-opticalflow", "libvdpau_nvidia"],
    "graphics": ["libGLX_nvidia", "libEGL_nvidia", "libnvidia-glcore",
                 "libnvidia-eglcore",                            # required
                 "libnvidia-tls", "libnvidia-glsi", "libnvidia-fbc", "libnvidia-ifr",
                 "libnvidia-rtcore", "libnvoptix", "libGLESv2_nvidia", "libGLESv1_CM_nvidia",
                 "libnvidia-glvkspirv", "libnvidia-cbl", "libnvidia-vulkan-producer"],
}
CAPABILITY_REQUIRED = {"video": ("libnvcuvid", "libnvidia-encode"),
                       "graphics": ("libGLX_nvidia", "libEGL_nvidia", "libnvidia-glcore",
                                    "libnvidia-eglcore")}
# The EGL external platform libraries, versioned on their own (libnvidia-egl-wayland.so.
# 1.1.11), taken as the toolkit takes them, any "*.*" version (graphics.go:167-174), where
# the driver's source ships them (NVIDIA's .run does; Debian packages them apart, with
# versions of their own, so a --debian build has none).
GRAPHICS_PLATFORM_LIBRARIES = ["libnvidia-egl-gbm", "libnvidia-egl-wayland",
                               "libnvidia-egl-wayland2", "libnvidia-egl-xcb",
                               "libnvidia-egl-xlib"]
# Graphics' files for the loaders: (names in the .run layout, where the package keeps it
# under share/, required). The toolkit mounts each at /etc/<path> (Vulkan: graphics.go:116-
# 138) or /usr/share/<path> (EGL, OptiX: graphics.go:82-99); installer/expose/cdi.c's table
# says the same. nvidia_icd.json.template is the .run's ICD file before nvidia-installer
# writes the library's name into it.
GRAPHICS_FILES = [
    (("nvidia_icd.json", "nvidia_icd.json.template"), "share/vulkan/icd.d/nvidia_icd.json",
     True),
    (("nvidia_layers.json",), "share/vulkan/implicit_layer.d/nvidia_layers.json", False),
    (("10_nvidia.json",), "share/glvnd/egl_vendor.d/10_nvidia.json", True),
    (("15_nvidia_gbm.json",), "share/egl/egl_external_platform.d/15_nvidia_gbm.json", False),
    (("10_nvidia_wayland.json",), "share/egl/egl_external_platform.d/10_nvidia_wayland.json",
     False),
    (("09_nvidia_wayland2.json",),
     "share/egl/egl_external_platform.d/09_nvidia_wayland2.json", False),
    (("20_nvidia_xcb.json",), "share/egl/egl_external_platform.d/20_nvidia_xcb.json", False),
    (("20_nvidia_xlib.json",), "share/egl/egl_external_platform.d/20_nvidia_xlib.json", False),
    (("nvoptix.bin",), "share/nvidia/nvoptix.bin", False),
]
# What the .run's ICD template holds where the library goes, and what replaces it: the
# soname, as Debian's nvidia-vulkan-common writes it, resolved by the dynamic loader (the
# ld cache the CDI hook builds in a container; GKE's LD_LIBRARY_PATH): docs/design.md.
ICD_PLACEHOLDER = "__NV_VK_ICD__"
ICD_LIBRARY = "libGLX_nvidia.so.0"
TOOLS = ["nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
         "nvidia-cuda-mps-server"]
MODULES = ["nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-drm", "nvidia-peermem"]

FLAVOURS = ("proprietary", "open")  # the order packages are built and listed in
# Where distributions keep the PCI id database (pciutils' pci.ids; hwdata's): GPU names
# for ids the driver's own data does not name.
PCI_IDS_DBS = ["/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids", "/usr/share/pci.ids"]
# nvidia.ko's MODULE_LICENSE of each flavour, as NVIDIA's sources declare it.
NVIDIA_LICENSE = {"proprietary": "NVIDIA", "open": "Dual MIT/GPL"}
# --arch: the index's name (uname -m) -> Debian's name, the kernel's ARCH and the symbol its
# .config sets, the ELF e_machine of the node's binaries and modules, and the prefix of
# Debian's cross toolchain (gcc-aarch64-linux-gnu) for building on another architecture.
ARCHES = {"x86_64": {"deb": "amd64", "kbuild": "x86", "config": "CONFIG_X86_64", "elf": 62,
                     "cross": "x86_64-linux-gnu-"},
          "aarch64": {"deb": "arm64", "kbuild": "arm64", "config": "CONFIG_ARM64", "elf": 183,
                      "cross": "aarch64-linux-gnu-"}}
ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
# --module-param, held to the installer's --module-arg rules (kmods_parse_arg).
MODULE_PARAM_RE = re.compile(r"^[A-Za-z0-9_-]{1,63}\.[A-Za-z0-9_]{1,127}=[^\s'\"\\\x00-\x1f\x7f]+$")
HOST_ARCH = ARCH_ALIASES.get(os.uname().machine, os.uname().machine)


class Failure(Exception):
    """A refusal or a failed step: build-driver-package says it in one message, exit 1."""


class Usage(Exception):
    """A command line that cannot mean one build: one line naming the fix, exit 2."""


def die(msg):
    raise Failure(msg)


def usage(msg):
    raise Usage(msg)


def say(msg):
    print("build-driver-package: %s" % msg, flush=True)


# Progress on stderr (--quiet: none): a line per step with the time since the start, and
# while the modules compile, every --progress-every seconds, the build's latest line.
START = time.monotonic()
PROGRESS = {"quiet": False, "every": 15.0}


def clock(seconds):
    seconds = int(seconds)
    return "%d:%02d" % (seconds // 60, seconds % 60)


def progress(msg):
    if not PROGRESS["quiet"]:
        sys.stderr.write("build-driver-package: [%s] %s\n" % (clock(time.monotonic() - START), msg))
        sys.stderr.flush()


def last_line(path):
    """The last non-empty line of PATH (at most its last 4 KiB), cut to 120 characters."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            lines = [l.strip() for l in f.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [l for l in lines if l]
    return lines[-1][:120] if lines else ""


def run_watched(cmd, log, what, **kw):
    """Runs CMD with its output in LOG, as run() does, and says every --progress-every
    seconds that WHAT is still running, with the last line LOG has."""
    t0 = time.monotonic()
    try:
        with open(log, "w") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, **kw)
            while True:
                try:
                    rc = proc.wait(timeout=PROGRESS["every"])
                    break
                except subprocess.TimeoutExpired:
                    line = last_line(log)
                    progress("%s: %s so far%s" % (what, clock(time.monotonic() - t0),
                                                 ", last: " + line if line else ""))
    except FileNotFoundError:
        die("%s is not installed" % cmd[0])
    if rc != 0:
        with open(log, errors="replace") as f:
            tail = "".join(f.readlines()[-25:])
        die("%s failed (exit %d) - full log: %s\n%s" % (" ".join(cmd[:3]), rc, log,
                                                        tail.rstrip()))
    return time.monotonic() - t0


def run(cmd, log=None, **kw):
    """Runs CMD; on failure the error names it and shows the end of its output."""
    try:
        if log:
            with open(log, "w") as f:
                subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT, **kw)
            return ""
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    except FileNotFoundError:
        die("%s is not installed" % cmd[0])
    except subprocess.CalledProcessError as e:
        tail = ""
        if log:
            with open(log, errors="replace") as f:
                tail = "".join(f.readlines()[-25:])
        else:
            tail = (e.stderr or "") + (e.stdout or "")
        die("%s failed (exit %d)%s\n%s" % (" ".join(cmd[:3]), e.returncode,
                                          " - full log: " + log if log else "", tail.rstrip()))


def modinfo(path, field):
    return run(["modinfo", "-F", field, path]).strip()


def file_sha256(path):
    """PATH's SHA-256, or None when it is not there."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def elf_machine(path):
    """The e_machine of the ELF file PATH, or None when it is not one."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[5] not in (1, 2):
        return None
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def check_machine(b, path, what):
    """Refuses a binary or module built for another architecture than --arch: a package
    mixing them would load on no node."""
    want = ARCHES[b.arch]["elf"]
    got = elf_machine(path)
    if got != want:
        names = {a["elf"]: n for n, a in ARCHES.items()}
        die("%s is %s, not an ELF file for %s (--arch): give the %s build's files" % (
            what, "not an ELF file" if got is None else "built for " + names.get(
                got, "e_machine %d" % got), b.arch, b.arch))


def check_bundle_members(option, path):
    """A bundle that holds one member twice would be unpacked to the last of them, silently:
    refused, naming the member."""
    seen = set()
    try:
        with tarfile.open(path) as t:
            names = [os.path.normpath(m.name) for m in t.getmembers()]
    except (tarfile.TarError, EOFError) as e:
        die("%s is not a readable tar archive (%s): take gpu-driver-signature.tar.gz "
            "again" % (option, e))
    for n in names:
        if n in seen and n != ".":
            die("%s holds %s twice: which signature is Google's cannot be told; take "
                "gpu-driver-signature.tar.gz as Google publishes it" % (option, n))
        seen.add(n)


def unpack_given(given, option, work, what, found):
    """A package given as its .deb, a tar archive of it or the directory either unpacks to
    (--imex, --nvlsm): a file unpacked through unpack_confined into WORK, a directory taken
    as it is; a tree whose one top directory holds the package (an archive of the unpacked
    tree) is entered when FOUND(root) does not hold at the top. WHAT names the package in
    the refusals. Returns (the given path resolved, the package's root)."""
    path = os.path.realpath(given)
    if os.path.isfile(path):
        root = work
        if path.endswith(".deb"):
            unpack_confined.unpack_deb(path, root, given)
        elif not tarfile.is_tarfile(path):
            die("%s is neither a .deb nor a tar archive: pass %s (.deb), an archive of it or "
                "its directory" % (given, what))
        else:
            check_bundle_members(option, path)
            unpack_confined.unpack_tar(path, root, given)
    elif os.path.isdir(path):
        root = path
    else:
        die("%s does not exist: pass %s (.deb), an archive of it or its directory" % (
            given, what))
    tops = [os.path.join(root, n) for n in os.listdir(root)]
    if len(tops) == 1 and os.path.isdir(tops[0]) and not found(root):
        root = tops[0]
    return path, root


def copy_tools_and_firmware(root, stage, version, dirs, what):
    """The driver's programs (TOOLS) found in DIRS of the unpacked tree ROOT, a later
    directory's copy winning, and its firmware for VERSION, copied out into STAGE through
    unpack_confined (no link followed out of ROOT)."""
    for d in dirs:
        for t in TOOLS:
            p = os.path.join(root, d, t)
            if os.path.isfile(p):
                unpack_confined.copy_out(root, p, os.path.join(stage, t), what)
    fw = os.path.join(root, "lib/firmware/nvidia", version)
    if os.path.lexists(fw):
        unpack_confined.copy_dir_out(root, fw, os.path.join(stage, "firmware"), what)
