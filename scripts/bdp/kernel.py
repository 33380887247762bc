# SPDX-License-Identifier: Apache-2.0
"""The target kernel's side of a build: its build tree (headers) and the architecture it is
for, the toolchain its modules are compiled with, the kernel's sign-file, and the modules,
compiled from the driver's sources or taken from --prebuilt-modules. Where each platform
finds the build tree is its module's (base.Platform.headers)."""
import glob
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
from dataclasses import dataclass, field
from typing import Optional

from bdp.common import (ARCHES, HOST_ARCH, MODULES, Failure, clock, die, file_sha256, inside,
                        progress, run, run_watched, say)


@dataclass
class KernelTree:
    """What the platform step found: the build tree (SYSSRC, SYSOUT; None where no module is
    compiled), the make variables, environment and build-info record of the toolchain, and
    the kernel's sign-file (None where no module is signed here)."""
    sysroot: Optional[tuple] = None
    make_vars: list = field(default_factory=list)
    env: Optional[dict] = None
    toolchain: dict = field(default_factory=dict)
    sign_file: Optional[str] = None


def find_headers(kernel, headers, arch):
    """(SYSSRC, SYSOUT) for KERNEL: Debian splits headers into -common and -ARCH trees."""
    out = headers or "/lib/modules/%s/build" % kernel
    if not os.path.isfile(os.path.join(out, "Makefile")):
        die("no kernel headers for %s at %s: install linux-headers-%s (Debian, Ubuntu) or "
            "kernel-devel-%s (RHEL), pass --kernel-headers kernel-headers.tgz (COS: from the "
            "COS build's artifacts, docs/platforms/cos.md), or pass --headers DIR" % (
                kernel, out, kernel, kernel))
    src = None
    link = "/lib/modules/%s/source" % kernel
    if not headers and os.path.isdir(link):
        src = os.path.realpath(link)
    if src is None:
        # A split tree's Makefile includes the common one: "include /usr/src/.../Makefile".
        with open(os.path.join(out, "Makefile")) as f:
            m = re.search(r"^include\s+(\S+)/Makefile\s*$", f.read(), re.M)
        src = m.group(1) if m and os.path.isdir(m.group(1)) else out
    check_headers_arch(arch, out)
    # The release the modules' vermagic will carry (Debian's include/config/kernel.release
    # holds the upstream version instead).
    uts = os.path.join(out, "include/generated/utsrelease.h")
    if os.path.isfile(uts):
        with open(uts) as f:
            m = re.search(r'UTS_RELEASE\s+"([^"]+)"', f.read())
        if m and m.group(1) != kernel:
            die("the headers at %s are for kernel %s, not %s" % (out, m.group(1), kernel))
    return os.path.realpath(src), os.path.realpath(out)


def check_headers_arch(arch, sysout):
    """The headers must be of --arch's kernel: modules built against another
    architecture's would not load (vermagic names the architecture too)."""
    try:
        with open(os.path.join(sysout, ".config")) as f:
            config = f.read()
    except OSError:
        return
    for name, a in ARCHES.items():
        if re.search(r"^%s=y$" % a["config"], config, re.M) and name != arch:
            die("the headers at %s are an %s kernel's (%s=y), not an %s one's (--arch %s): "
                "pass that kernel's headers with --headers (scripts/fetch-debian-kernel %s "
                "DIR fetches Debian's), or --arch %s" % (
                    sysout, name, a["config"], arch, arch, ARCHES[arch]["deb"], name))


def find_sign_file(sysout, given):
    for c in [given] if given else [os.path.join(sysout, "scripts/sign-file")] + sorted(
            glob.glob("/usr/lib/linux-kbuild-*/scripts/sign-file"), reverse=True):
        if c and os.access(c, os.X_OK):
            return c
    die("no sign-file: install linux-kbuild-<version> (Debian), or pass --sign-file")


def kernel_compiler(sysout):
    """'clang' or 'gcc' and CONFIG_CC_VERSION_TEXT, from the headers' configuration."""
    cfg = os.path.join(sysout, ".config")
    if not os.path.isfile(cfg):
        cfg = os.path.join(sysout, "include/config/auto.conf")
    text = open(cfg).read() if os.path.isfile(cfg) else ""
    m = re.search(r'^CONFIG_CC_VERSION_TEXT="([^"]*)"', text, re.M)
    kind = "clang" if re.search(r"^CONFIG_CC_IS_CLANG=y", text, re.M) else (
        "gcc" if re.search(r"^CONFIG_CC_IS_GCC=y", text, re.M) else None)
    return kind, m.group(1) if m else "unknown"


def toolchain_make(b, sysout, cc, bindir):
    """The compiler CC (--cc, or the platform's), the platform's BINDIR first in PATH, --llvm
    (or LLVM in the environment) and --arch's cross toolchain: the make variables and
    environment the module build runs with, and what build-info records. Refuses a
    compiler of the other family than the kernel's."""
    env = dict(os.environ)
    if bindir:
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    llvm = b.llvm or os.environ.get("LLVM")
    make_vars = []
    family = None
    if b.cross:
        # Another architecture's kernel (--arch): its ARCH, Debian's cross toolchain for
        # the compiler (Debian's headers name $(CROSS_COMPILE)gcc-12) and binutils, and
        # NVIDIA's TARGET_ARCH.
        make_vars += ["ARCH=" + ARCHES[b.arch]["kbuild"], "CROSS_COMPILE=" + b.cross,
                      "TARGET_ARCH=" + b.arch]
        if not cc and not llvm and not shutil.which(b.cross + "gcc", path=env["PATH"]):
            die("no %sgcc to build %s modules on this %s machine: apt-get install gcc-%s "
                "(Debian), or pass --cc / --llvm" % (b.cross, b.arch, HOST_ARCH,
                                                   b.cross.rstrip("-")))
    if cc:
        exe = shutil.which(cc.split()[0], path=env["PATH"])
        if not exe:
            die("compiler %s not found (in --toolchain's bin/ or PATH)" % cc.split()[0])
        out = run([exe, "--version"])
        family = "clang" if "clang" in out else "gcc"
        make_vars.append("CC=" + cc)
    if llvm:
        make_vars.append("LLVM=" + llvm)
    kind, text = kernel_compiler(sysout)
    if kind == "clang" and family != "clang" and not (llvm and not cc):
        die("kernel %s was built with clang (%s): pass --llvm and the COS build's toolchain "
            "(--toolchain DIR from toolchain.tar.xz, --toolchain-env toolchain_env) or --cc "
            "clang" % (b.kernel, text))
    if kind == "gcc" and family == "clang":
        die("kernel %s was built with gcc (%s): clang refuses the gcc-only flags its "
            "configuration adds (-mfunction-return, -fconserve-stack); build with its gcc, "
            "or use --llvm alone for LLVM's binutils" % (b.kernel, text))
    if kind == "gcc" and llvm and not cc:
        say("note: kernel %s was built with gcc (%s): LLVM=%s compiles with clang unless its "
            "headers name the compiler (Debian's do: gcc-12), and links with ld.lld" % (
                b.kernel, text, llvm))
    return make_vars, env, {"cc": cc or "", "llvm": llvm or "", "kernel_cc": text,
                            "cross_compile": b.cross}


def tree_digest(top):
    """SHA-256 over every file under TOP: its path relative to TOP, a link's target, a
    file's bytes; in sorted order, so that the same tree gives the same digest."""
    h = hashlib.sha256()
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files + [x for x in dirs if os.path.islink(os.path.join(d, x))]):
            p = os.path.join(d, name)
            h.update(os.path.relpath(p, top).encode() + b"\0")
            if os.path.islink(p):
                h.update(b"link:" + os.readlink(p).encode() + b"\0")
            elif os.path.isfile(p):
                h.update(file_sha256(p).encode() + b"\0")
    return h.hexdigest()


def build_modules(b, fl, src, version, tree):
    """Compiles flavour FL's modules against TREE (a KernelTree). Returns {name: path}."""
    sysrc, sysout = tree.sysroot
    ksrc = os.path.join(src, "kernel-open" if fl.name == "open" else "kernel")
    if not os.path.isfile(os.path.join(ksrc, "Makefile")):
        die("%s has no %s module sources (%s)" % (src, fl.name, ksrc))
    bdir = os.path.join(b.work, "build", "%s-%s-%s" % (version, fl.name, b.kernel))
    stamp = os.path.join(bdir, ".built")
    patches = [(p, hashlib.sha256(open(p, "rb").read()).hexdigest()) for p in fl.patches]
    key = json.dumps({"version": version, "kernel": b.kernel, "flavour": fl.name,
                      "sysout": sysout, "sysrc": sysrc, "patches": [h for _, h in patches],
                      # The sources themselves: a tree changed in place under the same
                      # version is built again, not taken from the earlier build.
                      "sources": tree_digest(ksrc),
                      "toolchain": tree.toolchain,
                      "headers_mtime": os.path.getmtime(os.path.join(sysout, "Makefile")),
                      # The kernel the headers describe: a tree unpacked again from another
                      # build of the same release keeps its Makefile's time, not its
                      # configuration or its symbols' versions.
                      "headers": [file_sha256(os.path.join(sysout, f))
                                  for f in (".config", "Module.symvers")]})
    if os.path.isfile(stamp) and open(stamp).read() == key:
        say("modules for %s already built in %s" % (b.kernel, bdir))
    else:
        shutil.rmtree(bdir, ignore_errors=True)
        shutil.copytree(ksrc, bdir, symlinks=True)
        for p, _ in patches:
            say("applying %s" % p)
            run(["patch", "-p1", "--forward", "--batch", "-d", bdir, "-i", os.path.realpath(p)])
        say("compiling the %s modules of %s for %s (-j%d; log %s/build.log)" % (
            fl.name, version, b.kernel, b.jobs, bdir))
        progress("compiling the %s modules of %s for %s (-j%d)" % (
            fl.name, version, b.kernel, b.jobs))
        try:
            took = run_watched(["make", "-C", bdir, "-j%d" % b.jobs, "KERNEL_UNAME=" + b.kernel,
                                "SYSSRC=" + sysrc, "SYSOUT=" + sysout] + tree.make_vars +
                               ["modules"], os.path.join(bdir, "build.log"),
                               "compiling the %s modules" % fl.name, env=tree.env)
        except Failure as e:
            die("%s\nthe %s modules of %s do not build for kernel %s: use a driver version "
                "that supports it, or adapt the sources with --patch" % (
                    e, fl.name, version, b.kernel))
        with open(stamp, "w") as f:
            f.write(key)
        progress("compiled the %s modules in %s: %s" % (
            fl.name, clock(took), ", ".join(m for m in MODULES if os.path.isfile(
                os.path.join(bdir, m + ".ko"))) or "no .ko"))
    return {m: os.path.join(bdir, m + ".ko") for m in MODULES
            if os.path.isfile(os.path.join(bdir, m + ".ko"))}


def prebuilt_modules(b, fl):
    """Flavour FL's --prebuilt-modules DIR, decompressed into the work directory."""
    found = {}
    for m in b.modules:
        for ext, opener in ((".ko", open), (".ko.xz", lzma.open), (".ko.gz", gzip.open),
                            (".ko.zst", None)):
            p = os.path.join(fl.prebuilt, m + ext)
            if not os.path.lexists(p):
                continue
            p = inside(fl.prebuilt, p, "--prebuilt-modules " + fl.prebuilt)
            if not os.path.isfile(p):
                continue
            dst = os.path.join(b.work, "prebuilt", m + ".ko")
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if opener is None:
                run(["zstd", "-q", "-d", "-f", p, "-o", dst])
            else:
                with opener(p, "rb") as fi, open(dst, "wb") as fo:
                    shutil.copyfileobj(fi, fo)
            found[m] = dst
            break
    return found
