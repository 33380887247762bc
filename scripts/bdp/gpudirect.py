# SPDX-License-Identifier: Apache-2.0
"""--gdrcopy and --gds: GDRCopy's gdrdrv.ko and GPUDirect Storage's nvidia-fs.ko, compiled
from their sources (NVIDIA/gdrcopy, NVIDIA/gds-nvidia-fs; a directory or a .tar.gz/.tar.xz
as GitHub's release archives unpack) for the package's kernel against the nvidia.ko this
build just compiled, signed with the package's key like nvidia.ko and packed as
kernel/gdrdrv.ko and kernel/nvidia-fs.ko; gdrcopy's user library libgdrapi built for --arch
and packed in lib64/ with its soname link. Everything that can be refused is refused in
check() and prepare(), before anything is built.

How upstream builds them, and where we differ:
- gdrdrv: gdrcopy's Makefile `driver` target runs src/gdrdrv/Makefile's `build` (gdrcopy
  Makefile:58-60), which runs kbuild with $(MAKE_PARAMS) M=$(PWD) (src/gdrdrv/Makefile:65-70)
  and takes NVIDIA's nv-p2p.h from NVIDIA_SRC_DIR (:28, :51). Its kbuild part builds
  nv-p2p-dummy.ko beside gdrdrv.ko (:25-26) only for the nvidia_p2p_* symbols' versions
  (nv-p2p-dummy.c:23-30): built so, gdrdrv records depends=nv-p2p-dummy, and the installer
  orders modules by that field (installer/kernel/kmods_set.c). We give kbuild a Kbuild file
  (kbuild reads it before the Makefile) with the same flags as :28-40 and gdrdrv.o alone,
  and nvidia.ko's own Module.symvers through KBUILD_EXTRA_SYMBOLS: gdrdrv then depends on
  nvidia with the CRCs of the nvidia.ko it ships with.
- libgdrapi: the `lib` target (gdrcopy Makefile:62-64; src/Makefile:34-38, 76-80:
  libgdrapi.so.MAJOR.MINOR, soname libgdrapi.so.MAJOR), with --arch's compiler and
  GDRAPI_ARCH (src/Makefile:24; its default runs config_arch, a program of the build host).
- nvidia-fs: src/Makefile's `module` target as it is (nvidia-fs Makefile:103-115: the
  nv_symbols and nv_configure steps, then kbuild with its KCPPFLAGS), with KVER, KDIR,
  NVIDIA_SRC_DIR given and KBUILD_EXTRA_SYMBOLS in MAKE_PARAMS. Its nv_symbols step looks
  for an installed nvidia.ko with modinfo on the build machine (create_nv.symvers.sh:73-126)
  and appends what it finds to the tree's Module.symvers (src/Makefile:108-111), which
  modpost reads on some kernels and not others; in our copy of the tree that script writes
  an empty nv.symvers, so whatever the kernel, the symbols come from KBUILD_EXTRA_SYMBOLS
  alone (this build's nvidia.ko), never from a driver installed on the build machine.
- gdrdrv's HAVE_VM_FLAGS_SET and HAVE_PROC_OPS: src/gdrdrv/Makefile:57-61 sets them by
  compiling probes against /lib/modules/KVER/build whatever KDIR says
  (scripts/test_gdrdrv_HAVE_*.sh); we compile the same probes against the kernel tree
  this build uses, before the driver is built, and pass the answers on make's command
  line, which overrides the Makefile's.
  Its configure probes the kernel at /lib/modules/KVER/build and nowhere else
  (configure:89-97), so --gds needs the kernel's headers there.
libcufile, GDS's user library, is no part of either: it ships with CUDA (the
cuda-toolkit's libcufile-X-Y packages, /usr/local/cuda/targets/*/lib/libcufile.so), so the
workload image carries it (docs/design.md, "GDRCopy and GPUDirect Storage")."""
import os
import re
import shutil
import subprocess
import tarfile
import tempfile

from bdp import signing
from bdp.common import (HOST_ARCH, Failure, check_machine, die, modinfo, progress, run,
                        run_watched, say, unpack_given)
from bdp.userspace import soname

# What marks each tree as upstream's (the files build-driver-package reads or runs).
TREES = {
    "gdrcopy": {"option": "--gdrcopy", "what": "NVIDIA's gdrcopy source",
                "marks": ("Makefile", "include/gdrapi.h", "src/Makefile",
                          "src/gdrdrv/Makefile", "src/gdrdrv/gdrdrv.c")},
    "gds": {"option": "--gds", "what": "NVIDIA's gds-nvidia-fs source",
            "marks": ("src/Makefile", "src/configure", "src/nvfs-core.c", "src/nvfs-vers.h")},
}
# GDRAPI_ARCH of src/Makefile for --arch (gdrcopy config_arch prints X86, ARM64, POWER).
GDRAPI_ARCH = {"x86_64": "X86", "aarch64": "ARM64"}
# Module file names in the package, and their module names (modinfo, /sys/module).
GDRDRV_KO = "gdrdrv.ko"
NVFS_KO = "nvidia-fs.ko"


def add_arguments(ap):
    ap.add_argument("--gdrcopy", metavar="ARCHIVE_OR_DIR", help="NVIDIA's gdrcopy source "
                    "(github.com/NVIDIA/gdrcopy, a directory or its .tar.gz/.tar.xz): gdrdrv "
                    "compiled against this build's nvidia.ko, signed, packed as "
                    "kernel/gdrdrv.ko; libgdrapi in lib64/")
    ap.add_argument("--gds", metavar="ARCHIVE_OR_DIR", help="NVIDIA's gds-nvidia-fs source "
                    "(github.com/NVIDIA/gds-nvidia-fs, a directory or its archive): "
                    "nvidia-fs compiled against this build's nvidia.ko, signed, packed as "
                    "kernel/nvidia-fs.ko (its configure needs the headers in "
                    "/lib/modules/R/build)")


def check(b):
    """Refuses the command lines that cannot build these modules, before anything runs."""
    for key in ("gdrcopy", "gds"):
        if not getattr(b, key):
            continue
        opt = TREES[key]["option"]
        if b.prebuilt:
            die("%s compiles against the nvidia.ko this build compiles (its Module.symvers): "
                "--prebuilt-modules has none; build the driver's modules from source" % opt)
        if b.keep_signatures:
            die("%s builds modules that the package's key must sign: --keep-signatures "
                "keeps a vendor's signatures only; leave it out and give --sign-key and "
                "--sign-cert" % opt)
        if not b.sign_key:
            die("%s builds modules that the package's key must sign: give --sign-key and "
                "--sign-cert" % opt)


def unpack(b, key):
    """The tree of --gdrcopy or --gds: a directory as it is, an archive unpacked by
    common.unpack_given (confined, a member given twice refused) into the work directory,
    entering its one top directory (GitHub's archives: gdrcopy-2.5.1/). Refuses what is not
    upstream's tree. Returns its root."""
    t = TREES[key]
    given = getattr(b, key)
    path = os.path.realpath(given)
    if os.path.isfile(path) and not tarfile.is_tarfile(path):
        die("%s %s is neither a directory nor a tar archive: pass %s (a directory, or "
            "its .tar.gz/.tar.xz)" % (t["option"], given, t["what"]))
    if not os.path.exists(path):
        die("%s %s does not exist: pass %s (a directory, or its archive)" % (
            t["option"], given, t["what"]))
    work = os.path.join(b.work, key + "-src")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    def marked(r):
        return all(os.path.isfile(os.path.join(r, m)) for m in t["marks"])

    def stay(r):
        """Whether R is the tree to judge: its one top directory only when that is marked
        (a tree with one src/ is judged whole, naming what it lacks)."""
        tops = os.listdir(r)
        return marked(r) or len(tops) != 1 or not marked(os.path.join(r, tops[0]))
    _, root = unpack_given(given, t["option"], work, t["what"], stay)
    missing = [m for m in t["marks"] if not os.path.isfile(os.path.join(root, m))]
    if missing:
        die("%s %s is not %s: it has no %s; pass the tree as upstream ships it" % (
            t["option"], given, t["what"], missing[0]))
    return root


def defines(path, names):
    """The integer values of NAMES' #defines in the C header PATH ({name: int})."""
    with open(path, errors="replace") as f:
        text = f.read()
    out = {}
    for n in names:
        m = re.search(r"^\s*#\s*define\s+%s\s+(\d+)\b" % n, text, re.M)
        if m:
            out[n] = int(m.group(1))
    return out


def gdrcopy_version(root):
    """gdrcopy's version as its Makefile says it (`make version`: LIB_MAJOR_VER.LIB_MINOR_VER
    from include/gdrapi.h's GDR_API_MAJOR_VERSION and _MINOR_VERSION, Makefile:34-35, 52-53),
    or None."""
    d = defines(os.path.join(root, "include/gdrapi.h"),
                ("GDR_API_MAJOR_VERSION", "GDR_API_MINOR_VERSION"))
    if len(d) != 2:
        return None
    return "%d.%d" % (d["GDR_API_MAJOR_VERSION"], d["GDR_API_MINOR_VERSION"])


def gds_version(root):
    """nvidia-fs's module version (its MODULE_VERSION, nvfs-core.c:2619, of nvfs-vers.h's
    NVFS_DRIVER_MAJOR/MINOR/PATCH_VERSION), or None."""
    names = ("NVFS_DRIVER_MAJOR_VERSION", "NVFS_DRIVER_MINOR_VERSION",
             "NVFS_DRIVER_PATCH_VERSION")
    d = defines(os.path.join(root, "src/nvfs-vers.h"), names)
    if len(d) != 3:
        return None
    return ".".join(str(d[n]) for n in names)


# What gdrcopy's probes (scripts/test_gdrdrv_HAVE_*.sh, src/gdrdrv/Makefile:57-61) ask
# of the kernel: whether a module using each compiles.
GDRDRV_PROBES = {
    "HAVE_PROC_OPS": "#include <linux/proc_fs.h>\n"
                     "static const struct proc_ops probe_ops;\n"
                     "static int __init probe_init(void) { return probe_ops.proc_open != 0; }\n",
    "HAVE_VM_FLAGS_SET": "#include <linux/mm.h>\n"
                         "static void probe(struct vm_area_struct *v) { vm_flags_set(v, 0); }\n"
                         "static int __init probe_init(void) { probe(0); return 0; }\n",
}


def gdrdrv_probes(b, ktree):
    """HAVE_PROC_OPS and HAVE_VM_FLAGS_SET ("y" or "n") of the kernel tree this build
    compiles against, as gdrcopy's probes answer them for /lib/modules/KVER/build."""
    out = {}
    for name, code in sorted(GDRDRV_PROBES.items()):
        with tempfile.TemporaryDirectory(dir=b.work, prefix="gdrdrv-probe-") as d:
            with open(os.path.join(d, "probe.c"), "w") as f:
                f.write("#include <linux/module.h>\n" + code +
                        "module_init(probe_init);\nMODULE_LICENSE(\"GPL\");\n")
            with open(os.path.join(d, "Kbuild"), "w") as f:
                f.write("obj-m := probe.o\n")
            env = dict(ktree.env or os.environ)
            rc = subprocess.run(["make", "-C", ktree.sysroot[1]] + ktree.make_vars +
                                ["M=" + d, "modules"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode
        out[name] = "y" if rc == 0 else "n"
    say("--gdrcopy: %s (probed against %s)" % (
        ", ".join("%s=%s" % kv for kv in sorted(out.items())), ktree.sysroot[1]))
    return out


def check_source(src):
    """Refuses, before the driver is built, a driver source without nv-p2p.h (the header of
    the peer-to-peer API gdrdrv and nvidia-fs compile against)."""
    for d, dirs, files in os.walk(src):
        dirs.sort()
        if "nv-p2p.h" in files:
            return
    die("--gdrcopy/--gds: the driver's source %s has no nv-p2p.h: give a driver source "
        "with its kernel modules' sources (NVIDIA's .run, or its kernel/ tree)" % src)


def prepare(b, ktree):
    """The trees of --gdrcopy and --gds, each found, identified and its version told, and
    the kernel tree checked (gdrdrv's probes run against it), before anything is compiled.
    Returns {key: {"root", "version"[, "have"]}} for those given."""
    out = {}
    for key, version_of in (("gdrcopy", gdrcopy_version), ("gds", gds_version)):
        if not getattr(b, key):
            continue
        root = unpack(b, key)
        version = version_of(root)
        if not version:
            die("%s %s: its version cannot be told (%s): pass %s as upstream ships it" % (
                TREES[key]["option"], getattr(b, key),
                "include/gdrapi.h has no GDR_API_MAJOR_VERSION and GDR_API_MINOR_VERSION"
                if key == "gdrcopy" else "src/nvfs-vers.h has no NVFS_DRIVER_MAJOR_VERSION, "
                "_MINOR_VERSION and _PATCH_VERSION", TREES[key]["what"]))
        out[key] = {"root": root, "version": version}
    if "gds" in out:
        std = os.path.realpath("/lib/modules/%s/build" % b.kernel)
        if not ktree.sysroot or os.path.realpath(ktree.sysroot[1]) != std:
            die("--gds: nvidia-fs's configure probes the kernel in /lib/modules/%s/build only "
                "(gds-nvidia-fs src/configure:96-97), not %s: install the kernel's headers "
                "there" % (b.kernel, ktree.sysroot[1] if ktree.sysroot else "none"))
        if b.cross:
            die("--gds: nvidia-fs's configure builds its probes for this machine (%s), not "
                "for --arch %s: build on an %s machine" % (HOST_ARCH, b.arch, b.arch))
    if "gdrcopy" in out:
        if not ktree.sysroot:
            die("--gdrcopy: no kernel tree to build gdrdrv against: give --headers")
        out["gdrcopy"]["have"] = gdrdrv_probes(b, ktree)
    for key, src in out.items():
        say("%s %s: %s" % (TREES[key]["option"], src["version"], src["root"]))
    return out


def nvidia_build(mods):
    """The directory nvidia.ko was built in, its Module.symvers and the directory of the
    driver's nv-p2p.h (NVIDIA's kernel/nvidia/, kernel-open/nvidia/), or refusals."""
    if "nvidia" not in mods:
        die("--gdrcopy/--gds: no nvidia.ko was built to compile against: keep nvidia in "
            "--modules")
    bdir = os.path.dirname(mods["nvidia"])
    symvers = os.path.join(bdir, "Module.symvers")
    if not os.path.isfile(symvers):
        die("--gdrcopy/--gds: %s has no Module.symvers: the nvidia_p2p_* symbols' versions "
            "cannot be known; give a driver source whose kbuild writes it (NVIDIA's .run)"
            % bdir)
    with open(symvers) as f:
        if "\tnvidia_p2p_get_pages\t" not in f.read():
            die("--gdrcopy/--gds: this nvidia.ko exports no nvidia_p2p_get_pages "
                "(%s): it has no peer-to-peer API to build against; build a driver that "
                "has it, or leave out --gdrcopy/--gds" % symvers)
    for d, dirs, files in sorted(os.walk(bdir)):
        dirs.sort()
        if "nv-p2p.h" in files:
            return bdir, symvers, d
    die("--gdrcopy/--gds: the driver's module sources (%s) have no nv-p2p.h: give a driver "
        "source with its kernel modules' sources (NVIDIA's .run)" % bdir)


def make(b, cwd, args, what, ktree, log):
    """make ARGS in CWD (PWD set: upstream's Makefiles use $(PWD) for M=), its output in
    LOG; a failure is one refusal naming the log."""
    env = dict(ktree.env or os.environ)
    env["PWD"] = cwd
    try:
        run_watched(["make", "-C", cwd] + args, log, what, env=env)
    except Failure:
        die("%s does not build for kernel %s (make %s failed): see %s for why, and give a "
            "release of it that supports this kernel" % (what, b.kernel, " ".join(args[:1]),
                                                         log))


def kbuild_params(ktree, symvers):
    return " ".join(ktree.make_vars + ["KBUILD_EXTRA_SYMBOLS=" + symvers])


def build_gdrcopy(b, fl, src, ktree, symvers, nv_src):
    """gdrdrv.ko and libgdrapi of the gdrcopy tree SRC. Returns (ko, [library files])."""
    top = os.path.join(b.work, "gdrcopy-%s-%s" % (fl.name, b.kernel))
    shutil.rmtree(top, ignore_errors=True)
    shutil.copytree(src["root"], top, symlinks=True)
    drv = os.path.join(top, "src/gdrdrv")
    # gdrdrv alone, with the flags of upstream's kbuild part (src/gdrdrv/Makefile:28-40).
    with open(os.path.join(drv, "Kbuild"), "w") as f:
        f.write("# build-driver-package: src/gdrdrv/Makefile's kbuild part, gdrdrv.o alone\n"
                "obj-m := gdrdrv.o\nccflags-y += -I$(NVIDIA_SRC_DIR)\n"
                "ifeq ($(NVIDIA_IS_OPENSOURCE),y)\nccflags-y += -DGDRDRV_OPENSOURCE_NVIDIA\n"
                "endif\nifeq ($(HAVE_VM_FLAGS_SET),y)\n"
                "ccflags-y += -DGDRDRV_HAVE_VM_FLAGS_SET\nendif\n"
                "ifeq ($(HAVE_PROC_OPS),y)\nccflags-y += -DGDRDRV_HAVE_PROC_OPS\nendif\n")
    progress("compiling gdrdrv %s for %s" % (src["version"], b.kernel))
    make(b, drv, ["build", "KVER=" + b.kernel, "KDIR=" + ktree.sysroot[1],
                  "NVIDIA_SRC_DIR=" + nv_src,
                  "NVIDIA_IS_OPENSOURCE=" + ("y" if fl.name == "open" else "n"),
                  "MAKE_PARAMS=" + kbuild_params(ktree, symvers)] +
         ["%s=%s" % kv for kv in sorted(src["have"].items())],
         "gdrcopy's gdrdrv", ktree, os.path.join(top, "gdrdrv.log"))
    ko = os.path.join(drv, GDRDRV_KO)
    progress("compiling libgdrapi %s for %s" % (src["version"], b.arch))
    lib_args = ["lib", "GDRAPI_ARCH=" + GDRAPI_ARCH[b.arch]]
    if b.cross:
        lib_args.append("CC=%sgcc" % b.cross)
    make(b, top, lib_args, "gdrcopy's libgdrapi", ktree, os.path.join(top, "lib.log"))
    return ko, os.path.join(top, "src")


def build_gds(b, fl, src, ktree, symvers, nv_src):
    """nvidia-fs.ko of the gds-nvidia-fs tree SRC for flavour FL, by its src/Makefile's
    module target; its nv_symbols step's script replaced in our copy by one that writes an
    empty nv.symvers (the module docstring says why)."""
    top = os.path.join(b.work, "gds-%s-%s" % (fl.name, b.kernel))
    shutil.rmtree(top, ignore_errors=True)
    shutil.copytree(src["root"], top, symlinks=True)
    s = os.path.join(top, "src")
    script = os.path.join(s, "create_nv.symvers.sh")
    if os.path.lexists(script):
        os.unlink(script)
    with open(script, "w") as f:
        f.write("#!/bin/sh\n# build-driver-package: the symbols come from "
                "KBUILD_EXTRA_SYMBOLS\n: > nv.symvers\n")
    os.chmod(script, 0o755)
    progress("compiling nvidia-fs %s for %s" % (src["version"], b.kernel))
    make(b, s, ["module", "KVER=" + b.kernel, "KDIR=" + ktree.sysroot[1],
                "NVIDIA_SRC_DIR=" + nv_src, "MAKE_PARAMS=" + kbuild_params(ktree, symvers)],
         "gds-nvidia-fs's nvidia-fs", ktree, os.path.join(top, "nvidia-fs.log"))
    return os.path.join(s, NVFS_KO)


def stage_library(b, libdir, tree):
    """libgdrapi.so.X.Y of LIBDIR into the package's lib64/ with its soname link and its
    linker name's (libgdrapi.so.X -> libgdrapi.so.X.Y, libgdrapi.so -> libgdrapi.so.X, as
    upstream's install makes them: gdrcopy Makefile:105-111). Returns the soname."""
    names = [n for n in os.listdir(libdir) if re.match(r"^libgdrapi\.so\.\d+\.\d+$", n)
             and os.path.isfile(os.path.join(libdir, n)) and
             not os.path.islink(os.path.join(libdir, n))]
    if len(names) != 1:
        die("--gdrcopy: the lib target made %s, not one libgdrapi.so.X.Y: give gdrcopy's "
            "tree as upstream ships it" % (", ".join(sorted(names)) or "no library"))
    real = os.path.join(libdir, names[0])
    check_machine(b, real, names[0])
    so = soname(real)
    if not so or not (so == names[0] or names[0].startswith(so + ".")):
        die("--gdrcopy: %s has soname %s, which does not name it: give gdrcopy's tree as "
            "upstream ships it (src/Makefile sets -soname libgdrapi.so.MAJOR)" % (
                names[0], so))
    dst = os.path.join(tree, "lib64")
    os.makedirs(dst, exist_ok=True)
    shutil.copyfile(real, os.path.join(dst, names[0]))
    os.chmod(os.path.join(dst, names[0]), 0o755)
    run([b.strip, "--strip-unneeded", os.path.join(dst, names[0])])
    if so != names[0]:
        os.symlink(names[0], os.path.join(dst, so))
    if so != "libgdrapi.so":
        os.symlink(so, os.path.join(dst, "libgdrapi.so"))
    return so


def check_module(b, name, path, want_name):
    """NAME's .ko: for --kernel, with modinfo's name WANT_NAME, taking nvidia's symbols."""
    vermagic = modinfo(path, "vermagic")
    if vermagic.split(" ")[0] != b.kernel:
        die("%s is built for kernel %s, not %s: its KDIR was another kernel's; give "
            "--headers of %s" % (name, vermagic.split(" ")[0], b.kernel, b.kernel))
    if modinfo(path, "name") != want_name:
        die("%s names itself %s, not %s: not upstream's module; give NVIDIA's tree as it "
            "ships" % (name, modinfo(path, "name"), want_name))
    deps = modinfo(path, "depends").split(",")
    if "nvidia" not in deps:
        die("%s does not depend on nvidia (depends: %s): it was not built against this "
            "build's nvidia.ko; give a tree whose Makefile passes MAKE_PARAMS to kbuild, as "
            "upstream's" % (name, ",".join(deps) or "none"))


def build_and_sign(b, fl, srcs, mods, ktree, kdir, tree):
    """The modules of SRCS (prepare's) built against flavour FL's MODS, stripped, signed with
    --sign-key into KDIR beside nvidia.ko, checked; libgdrapi into TREE's lib64/. Returns
    (the module files, build-info's "gdrcopy" and "gds")."""
    gdr_info = gds_info = None
    if not srcs:
        return [], gdr_info, gds_info
    _, symvers, nv_src = nvidia_build(mods)
    built = []
    if "gdrcopy" in srcs:
        ko, libdir = build_gdrcopy(b, fl, srcs["gdrcopy"], ktree, symvers, nv_src)
        built.append((GDRDRV_KO, ko, "gdrdrv"))
        so = stage_library(b, libdir, tree)
        gdr_info = {"version": srcs["gdrcopy"]["version"], "library": so}
    if "gds" in srcs:
        built.append((NVFS_KO, build_gds(b, fl, srcs["gds"], ktree, symvers, nv_src),
                      "nvidia_fs"))
        gds_info = {"version": srcs["gds"]["version"]}
    files = []
    for name, ko, modname in built:
        if not os.path.isfile(ko):
            die("%s: the build made no %s: see the make log beside it for why" % (name, ko))
        dst = os.path.join(kdir, name)
        shutil.copyfile(ko, dst)
        check_machine(b, dst, name)
        run([b.strip, "--strip-debug", dst])
        signing.sign_module(b, ktree.sign_file, dst)
        check_module(b, name, dst, modname)
        files.append(dst)
    progress("checking %s as a node will (verify-module)" % ", ".join(n for n, _, _ in built))
    signing.verified_signer(b, files, [b.sign_cert], "--sign-cert")
    say("GPUDirect: %s signed and packed%s" % (
        ", ".join("kernel/" + n for n, _, _ in built),
        ", lib64/%s" % gdr_info["library"] if gdr_info else ""))
    return files, gdr_info, gds_info

