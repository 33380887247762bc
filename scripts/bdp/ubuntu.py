# SPDX-License-Identifier: Apache-2.0
"""Ubuntu (docs/platforms/ubuntu.md): Canonical's signed modules as shipped
(--ubuntu-modules-deb: linux-modules-nvidia-*, or the objects of linux-objects-nvidia-*
linked here as the package links them at install and the detached signatures of
linux-signatures-nvidia-* attached), their signatures kept, and the user space from
Ubuntu's packages (--userspace-debs). Without them, an Ubuntu kernel's package is built as
any other (base.Platform)."""
import glob
import hashlib
import lzma
import os
import re
import shlex
import shutil
import subprocess

from bdp import signing
from bdp.base import Platform
from bdp.common import (MODULES, SIG_MAGIC, copy_tools_and_firmware, die, inside, run, say,
                        unpack_confined)

CANONICAL_UNSIGNED = ("Canonical signs the modules of linux-modules-nvidia packages; take "
                      "the package for this kernel")
# Canonical's package names (packages.ubuntu.com, source linux-restricted-modules and
# linux-restricted-signatures): linux-modules-nvidia-BRANCH-R and linux-objects-nvidia-BRANCH-R
# for the proprietary flavour, the same with BRANCH-open for the open one (BRANCH: 535,
# 535-server, ...; R: the kernel release), linux-signatures-nvidia-R for every branch.
NVIDIA_PACKAGE = re.compile(r"^linux-(modules|objects)-nvidia-([0-9]+(?:-server)?)(-open)?-(.+)$")
# The packages the modules package pins to its own version in Depends (Debian Policy 7.1:
# "name (= version)"): the objects it links from and the signatures attached to them.
PINNED = re.compile(r"^linux-(objects|signatures)-nvidia-")
DEPENDS_ITEM = re.compile(r"^([a-z0-9][a-z0-9+.-]+)(?::[a-z0-9-]+)?\s*(?:\(\s*(<<|<=|=|>=|>>)"
                          r"\s*([^\s)]+)\s*\))?\s*(?:\[[^]]*\])?$")


class Ubuntu(Platform):
    name = "ubuntu"
    title = "Ubuntu (docs/platforms/ubuntu.md)"

    @classmethod
    def add_sources(cls, sources):
        return [sources.add_argument("--userspace-debs", metavar="DIR", help="Ubuntu's "
                                     "libnvidia-compute-BRANCH, nvidia-utils-BRANCH "
                                     "(nvidia-firmware-BRANCH-VERSION) .debs")]

    @classmethod
    def add_options(cls, group):
        # One option with every package (a fleet row lists no argument twice, so it cannot
        # repeat the option), or the option repeated: the files of all of them.
        return [group.add_argument("--ubuntu-modules-deb", action="extend", nargs="+",
                                   default=[], metavar="FILE.deb", help="Ubuntu: Canonical's "
                                   "linux-modules-nvidia-BRANCH-RELEASE and, where it links at "
                                   "install, linux-objects-nvidia-BRANCH-RELEASE and "
                                   "linux-signatures-nvidia-RELEASE (several files after one "
                                   "option, or the option repeated)")]

    def __init__(self, args):
        self.modules_debs = args.ubuntu_modules_deb
        self.userspace_debs = args.userspace_debs
        self.layout = None      # which of Canonical's layouts the modules came in
        self.controls = None    # {deb: its control fields}, read once

    def control(self):
        if self.controls is None:
            self.controls = {d: deb_control(d) for d in self.modules_debs}
        return self.controls

    def package_flavours(self):
        """{package name: flavour} of the --ubuntu-modules-deb packages that are one
        flavour's (the signatures package is every branch's, so neither's)."""
        out = {}
        for fields in self.control().values():
            m = NVIDIA_PACKAGE.match(fields.get("Package", ""))
            if m:
                out[m.group(0)] = "open" if m.group(3) else "proprietary"
        return out

    def default_flavour(self):
        """The flavour of the --ubuntu-modules-deb packages: the open one for
        linux-modules-nvidia-BRANCH-open-R, as docs/platforms/ubuntu.md's command gives it."""
        found = set(self.package_flavours().values())
        return found.pop() if len(found) == 1 else super().default_flavour()

    def brings_signatures(self):
        return bool(self.modules_debs)

    def check_signatures(self, b):
        if not b.vendor_cert:
            die("--ubuntu-modules-deb needs --vendor-cert FILE: the certificate Canonical signs "
                "the modules with, which the node's kernel trusts (docs/platforms/ubuntu.md)")
        if b.patched:
            die("--ubuntu-modules-deb keeps Canonical's modules as signed: drop --patch")
        if b.sign_key or b.sign_cert:
            # A fleet gives one key to every build (build-fleet's arguments after --); the
            # rows that keep Canonical's signatures have nothing to sign with it.
            say("note: --sign-key and --sign-cert are not used: --ubuntu-modules-deb keeps "
                "Canonical's signatures (checked with --vendor-cert)")

    def check(self, b):
        if self.modules_debs and b.prebuilt:
            die("--ubuntu-modules-deb brings its own modules: leave out --prebuilt-modules and "
                "--detached-signatures")
        if not self.modules_debs:
            return
        pkgs = self.package_flavours()
        both = [sorted(p for p, f in pkgs.items() if f == fl) for fl in ("proprietary", "open")]
        if all(both):
            die("%s and %s are the packages of two flavours: give one flavour's packages (the "
                "open flavour: linux-modules-nvidia-BRANCH-open-R alone)" % (
                    both[0][0], both[1][0]))
        for p, f in sorted(pkgs.items()):
            if f != b.flavours[0].name:
                die("%s is the %s flavour's package: build it with --flavour %s (or leave "
                    "--flavour out)" % (p, f, f))
        if b.arch == "aarch64":
            check_arm64(self.control(), pkgs)
        check_pins(self.control())

    def needs_headers(self, b):
        return not self.modules_debs and super().needs_headers(b)

    def needs_sign_file(self, b):
        return not self.modules_debs and super().needs_sign_file(b)

    def userspace_from(self):
        return self.userspace_debs

    def userspace(self, b, stage):
        return stage_userspace(b, self.userspace_debs, stage)

    def modules(self, b, fl, src, version, tree):
        if not self.modules_debs:
            return super().modules(b, fl, src, version, tree)
        found, self.layout = canonical_modules(b, self.modules_debs)
        return found

    def sign(self, b, fl, mods, version, tree, outdir):
        if not self.modules_debs:
            return super().sign(b, fl, mods, version, tree, outdir)
        say("checking %d modules with their own signatures (%s)" % (
            len(mods), ", ".join(sorted(mods))))
        names = ", ".join(os.path.basename(d) for d in self.modules_debs)
        return signing.keep_modules(b, fl, mods, version, outdir, names, CANONICAL_UNSIGNED)

    def build_info(self, b):
        if not self.modules_debs:
            return {}
        return {"module_signatures": "Canonical's: " + self.layout,
                "ubuntu_packages": [os.path.basename(d) for d in self.modules_debs]}

    def source_kind(self, b):
        return "ubuntu" if self.userspace_debs else super().source_kind(b)


UBUNTU_LIBDIR = "usr/lib/x86_64-linux-gnu"
# Canonical's late link (linux-restricted-modules, as the kernel packaging's
# debian/scripts/dkms-build--nvidia-N writes it): bits/BUILD holds the linker lines of the
# DKMS build's log and the steps that check and sign the result. Only these run here,
# each parsed, never handed to a shell: the linker (the same GNU ld.bfd), the sums check,
# and the signature attach. Anything else in BUILD refuses the package by its line.
BUILD_IGNORED = re.compile(r'^\[ "\$1" = "(unsigned|nocheck)" \] && \{ \w+=:; shift; \}$')
BUILD_EXPORT = re.compile(r"^export ([A-Z_][A-Z0-9_]*)='([^']*)'$")
BUILD_SUMS = re.compile(r"^\$check_only sha256sum -c SHA256SUMS \|\| exit 1$")
BUILD_CAT = re.compile(r"^\$signed_only cat '([A-Za-z0-9_-]+)\.ko' '\1\.ko\.sig' >'\.\./\1\.ko'$")
BUILD_RM = re.compile(r"^\$signed_only rm -f '([A-Za-z0-9_-]+)\.ko'$")
LD_NAMES = ("ld.bfd", "/usr/bin/ld.bfd", "ld", "/usr/bin/ld")
# The options kbuild's module links pass (cmd_link_multi-m, cmd_ld_ko_o): flags, and the
# ones that take a value, which must be a file inside bits/ where it names one.
LD_FLAGS = {"-r", "--relocatable", "--no-warn-rwx-segments", "--no-warn-execstack", "-EL"}
LD_VALUE = {"-m": False, "-z": False, "-T": True, "-o": True}
LD_VALUE_EQ = {"--build-id": False, "--package-metadata": False, "--script": True}


def deb_control(deb):
    """The control fields of the .deb DEB (dpkg-deb -f), continuation lines joined."""
    if not os.path.isfile(deb):
        die("--ubuntu-modules-deb %s does not exist" % deb)
    try:
        p = subprocess.run(["dpkg-deb", "-f", deb], capture_output=True, text=True,
                           errors="replace")
    except FileNotFoundError:
        die("dpkg-deb is not installed (apt-get install dpkg)")
    if p.returncode:
        why = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        die("--ubuntu-modules-deb %s is not a .deb dpkg-deb can read (%s)" % (deb, why))
    fields, last = {}, None
    for line in p.stdout.splitlines():
        if line[:1] in (" ", "\t") and last:
            fields[last] += " " + line.strip()
        elif ":" in line:
            last, _, value = line.partition(":")
            fields[last] = value.strip()
    return fields


def pinned(fields):
    """{package: version} of the objects and signatures packages a linux-modules-nvidia
    package's Depends pins with "(= VERSION)" (alternatives, "a | b", pin nothing)."""
    pins = {}
    for item in fields.get("Depends", "").split(","):
        m = DEPENDS_ITEM.match(item.strip())
        if m and "|" not in item and m.group(2) == "=" and PINNED.match(m.group(1)):
            pins[m.group(1)] = m.group(3)
    return pins


def check_arm64(controls, pkgs):
    """The proprietary flavour's packages on arm64 without linux-signatures-nvidia, refused
    plainly: NVIDIA's own precompiled Ubuntu build installs that package on amd64 only,
    "not available for arm64" (NVIDIA/gpu-driver-container, ubuntu24.04/precompiled at
    06a208c: local-repo.sh lines 72-75, nvidia-driver lines 435-439), while the open
    flavour's prelinked modules are Canonical-signed on arm64 too (the source
    linux-restricted-signatures builds linux-modules-nvidia-*-open-R-generic-64k)."""
    names = [f.get("Package", "") for f in controls.values()]
    if any(n.startswith("linux-signatures-nvidia-") for n in names):
        return
    prop = sorted(p for p, f in pkgs.items() if f == "proprietary")
    if prop:
        name = next((p for p in prop if p.startswith("linux-objects-")), prop[0])
        die("%s is the proprietary flavour's late link, and Canonical publishes no "
            "linux-signatures-nvidia for arm64 (NVIDIA's gpu-driver-container installs it on "
            "amd64 only): its modules would carry no Canonical signature. On arm64 take the "
            "open flavour (linux-modules-nvidia-BRANCH-open-R, Canonical-signed), or build "
            "from the driver's sources with your key (no --ubuntu-modules-deb)" % name)


def check_pins(controls):
    """CONTROLS ({deb: control fields}) against the version pins of each
    linux-modules-nvidia package among them: a pinned package of another version is
    refused naming both versions, and a pinned package not given is named, with the
    version to take, as the fix."""
    given = {f.get("Package"): (f.get("Version"), deb) for deb, f in controls.items()}
    for deb, fields in sorted(controls.items()):
        m = NVIDIA_PACKAGE.match(fields.get("Package", ""))
        if not m or m.group(1) != "modules":
            continue
        pins = pinned(fields)
        who = "%s %s" % (fields["Package"], fields.get("Version", "(no Version)"))
        for name, want in sorted(pins.items()):
            if name in given and given[name][0] != want:
                die("%s is %s %s, but %s depends on %s (= %s): take that version "
                    "(apt-get download %s=%s)" % (
                        os.path.basename(given[name][1]), name, given[name][0], who, name,
                        want, name, want))
        missing = [n for n in sorted(pins) if n not in given]
        if missing:
            die("%s depends on %s: add %s to --ubuntu-modules-deb (apt-get download %s)" % (
                who, " and ".join("%s (= %s)" % (n, pins[n]) for n in missing),
                "them" if len(missing) > 1 else "it",
                " ".join("%s=%s" % (n, pins[n]) for n in missing)))


def bits_path(bits, rel, where):
    """REL as a file under BITS, refused when it would resolve outside it."""
    if not rel or rel.startswith("/") or ".." in rel.split("/"):
        die("%s names '%s', a path outside bits/: refused" % (where, rel))
    path = os.path.join(bits, rel)
    if not os.path.realpath(path).startswith(os.path.realpath(bits) + os.sep):
        die("%s names '%s', which resolves outside bits/: refused" % (where, rel))
    return path


def ld_argv(bits, words, env, where):
    """One linker line of BUILD as an argument vector for ld.bfd, every file checked."""
    def expand(w):
        def var(m):
            name = m.group(1) or m.group(2)
            if name not in env:
                die("%s uses $%s, which BUILD does not export: refused" % (where, name))
            return env[name]
        return re.sub(r"\$\{([A-Z_][A-Z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)", var, w)
    argv, i, inputs = ["ld.bfd"], 1, 0
    while i < len(words):
        w = expand(words[i])
        if "$" in w or "`" in w:
            die("%s has '%s': refused" % (where, words[i]))
        if w in LD_FLAGS:
            argv.append(w)
        elif w in LD_VALUE and i + 1 < len(words):
            v = expand(words[i + 1])
            if LD_VALUE[w]:
                bits_path(bits, v, where)
            argv += [w, v]
            i += 1
        elif w.split("=", 1)[0] in LD_VALUE_EQ and (w.startswith("--build-id") or "=" in w):
            opt, _, v = w.partition("=")
            if LD_VALUE_EQ[opt]:
                bits_path(bits, v, where)
            argv.append(w)
        elif w.startswith("@"):
            # kbuild's response file: the objects of a composite module (NAME.mod).
            rsp = bits_path(bits, w[1:], where)
            with open(rsp) as f:
                for obj in f.read().split():
                    bits_path(bits, obj, "%s (in %s)" % (where, w[1:]))
            argv.append(w)
            inputs += 1
        elif w.startswith("-"):
            die("%s passes ld the option '%s', which no module link needs: refused" % (where, w))
        else:
            bits_path(bits, w, where)
            argv.append(w)
            inputs += 1
        i += 1
    if "-o" not in argv or not inputs:
        die("%s is not a module link (no -o and inputs): refused" % where)
    return argv


def build_lines(text):
    """TEXT's lines, each with the number of the line it starts on, a line ending in a
    backslash joined with the next (a space for the backslash and the newline)."""
    start, parts = None, []
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        start = start or n
        if line.endswith("\\\n"):
            parts.append(line[:-2] + " ")
            continue
        yield start, "".join(parts) + line.rstrip("\r\n")
        start, parts = None, []
    if parts:
        yield start, "".join(parts)


def parse_build(bits):
    """Canonical's bits/BUILD: (environment, linker argument vectors, modules to attach
    signatures to), or a refusal naming the line that is not one of those steps."""
    path = os.path.join(bits, "BUILD")
    with open(path, errors="replace") as f:
        text = f.read()
    env, links, kos = {}, [], []
    for n, line in build_lines(text):
        line = line.strip()
        where = "BUILD line %d" % n
        if not line or line.startswith("#") or BUILD_IGNORED.match(line) or BUILD_RM.match(line):
            continue
        m = BUILD_EXPORT.match(line)
        if m:
            env[m.group(1)] = m.group(2)
            continue
        if BUILD_SUMS.match(line):
            continue
        m = BUILD_CAT.match(line)
        if m:
            kos.append(m.group(1))
            continue
        # kbuild's final link ends in its BTF step, "; true" where there is none.
        line = re.sub(r";\s*true$", "", line).rstrip()
        try:
            words = shlex.split(line)
        except ValueError:
            die("%s of %s does not parse: refused" % (where, path))
        if not words or words[0] not in LD_NAMES or any(c in line for c in ";|&<>"):
            die("%s of %s runs '%s': only its ld.bfd links, the SHA256SUMS check and the "
                "signature attach are carried out here, so the package is refused" % (
                    where, path, line[:80]))
        links.append(ld_argv(bits, words, env, where))
    if not links or not kos:
        die("%s has no %s: not the BUILD of a linux-objects-nvidia package" % (
            path, "linker lines" if not links else "signature attach lines"))
    # Older BUILDs (focal's) do not check SHA256SUMS themselves: it is checked here anyway.
    return env, links, kos


def read_sums(path):
    """sha256sum's output (HEX *NAME or HEX  NAME) as {NAME: HEX}."""
    sums = {}
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"^([0-9a-f]{64}) [ *](\S+)$", line.rstrip("\n"))
                if not m:
                    die("%s has a line that is not sha256sum's: %r" % (path, line[:80]))
                sums[m.group(2)] = m.group(1)
    except FileNotFoundError:
        die("no %s: the linux-objects-nvidia package is incomplete" % path)
    return sums


def check_sig_file(name, sig, where):
    """A .ko.sig of linux-signatures-nvidia: exactly what sign-file appended (the PKCS#7
    message, struct module_signature, the magic), no more and no less."""
    if not sig.endswith(SIG_MAGIC) or len(sig) < len(SIG_MAGIC) + 12:
        die("%s.ko.sig in %s is not a module signature (no '~Module signature appended~' "
            "trailer): take Canonical's linux-signatures-nvidia package again" % (name, where))
    info = sig[-len(SIG_MAGIC) - 12:-len(SIG_MAGIC)]
    sig_len = int.from_bytes(info[8:12], "big")
    if info[2] != 2 or sig_len + 12 + len(SIG_MAGIC) != len(sig):
        die("%s.ko.sig in %s is %d bytes but announces a %d-byte PKCS#7 signature: not one "
            "appended signature" % (name, where, len(sig), sig_len))


def canonical_link(b, moddir):
    """Performs Canonical's late link in MODDIR/bits as the package's BUILD describes it:
    ld.bfd relinks each module from the shipped objects, its bytes must be the ones
    Canonical signed (SHA256SUMS, the unsigned .ko's digest), and the detached signature of
    linux-signatures-nvidia is appended, giving MODDIR/NAME.ko as an installed system has
    it. Returns {name: path}."""
    bits = os.path.join(moddir, "bits")
    env, links, kos = parse_build(bits)
    sums = read_sums(os.path.join(bits, "SHA256SUMS"))
    ld = shutil.which("ld.bfd")
    if not ld:
        die("no ld.bfd: Canonical links its modules with GNU ld (apt-get install binutils)")
    version = run([ld, "--version"]).splitlines()[0]
    say("linking %s in %s as its BUILD does (%s)" % (", ".join(kos), moddir, version))
    log = os.path.join(b.work, "canonical-link.log")
    with open(log, "w") as logf:
        for argv in links:
            logf.write(" ".join(argv) + "\n")
            logf.flush()
            p = subprocess.run([ld] + argv[1:], cwd=bits, stdout=logf, stderr=subprocess.STDOUT,
                               env=dict(os.environ, **env))
            if p.returncode:
                die("ld.bfd failed (exit %d) on %s - full log: %s" % (
                    p.returncode, " ".join(argv[:8]), log))
    found = {}
    for name in kos:
        if name not in MODULES:
            continue
        ko = os.path.join(bits, name + ".ko")
        if not os.path.isfile(ko):
            die("BUILD links no %s.ko in %s" % (name, bits))
        with open(ko, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        if name + ".ko" not in sums:
            die("%s/SHA256SUMS has no %s.ko: the package is incomplete" % (bits, name))
        if digest != sums[name + ".ko"]:
            die("%s.ko as linked here (sha256 %s) is not the module Canonical signed "
                "(SHA256SUMS: %s): the link differs; link with the ld.bfd of the kernel's "
                "Ubuntu series (%s here), from unmodified objects" % (
                    name, digest[:16], sums[name + ".ko"][:16], version))
        sigpath = os.path.join(bits, name + ".ko.sig")
        if not os.path.isfile(sigpath):
            die("no %s.ko.sig in %s: add linux-signatures-nvidia-%s.deb (Canonical's detached "
                "signatures) to --ubuntu-modules-deb" % (name, bits, b.kernel))
        with open(sigpath, "rb") as f:
            sig = f.read()
        check_sig_file(name, sig, bits)
        out = os.path.join(moddir, name + ".ko")
        with open(out, "wb") as f:
            f.write(data + sig)
        found[name] = out
        say("  %s: linked (sha256 %s, as SHA256SUMS says), Canonical's signature appended" % (
            name, digest[:16]))
    return found


def canonical_modules(b, debs):
    """--ubuntu-modules-deb: Canonical's packages of NVIDIA's modules for one kernel, unpacked
    together as dpkg installs them. Where linux-modules-nvidia-* carries signed .ko files
    under lib/modules/RELEASE/kernel/nvidia-BRANCH/, they are taken byte for byte
    (decompressed where packed); where linux-objects-nvidia-* carries the objects and
    bits/BUILD instead, the modules are linked as the package links them at install
    (canonical_link) and get the detached signatures of linux-signatures-nvidia-*.
    Returns ({name: path}, which layout it was)."""
    root = os.path.join(b.work, "ubuntu-modules")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    # Each package unpacked on its own, then merged: two that ship one path with different
    # bytes (linux-objects-nvidia-*-open's unsigned .ko and linux-modules-nvidia-*-open's
    # signed ones) would otherwise leave whichever came last.
    owner = {}
    for i, deb in enumerate(debs):
        one = os.path.join(b.work, "ubuntu-deb-%d" % i)
        unpack_confined.unpack_deb(deb, one)
        for dirpath, _, files in os.walk(one):
            for f in files:
                src = os.path.join(dirpath, f)
                rel = os.path.relpath(src, one)
                dst = os.path.join(root, rel)
                if rel in owner:
                    with open(src, "rb") as new, open(dst, "rb") as old:
                        if new.read() != old.read():
                            die("%s and %s both ship /%s, with different bytes: give one of "
                                "them (for the open flavour, linux-modules-nvidia-*-open alone: "
                                "its modules are the signed ones)" % (
                                    os.path.basename(owner[rel]), os.path.basename(deb), rel))
                    continue
                owner[rel] = deb
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst, follow_symlinks=False)
        shutil.rmtree(one)
    names = ", ".join(os.path.basename(d) for d in debs)
    # Links of one package may lead through another's: all resolved once more, together.
    unpack_confined.check_links(root, names)
    rels = sorted(r for d in ("lib/modules", "usr/lib/modules")
                  if os.path.isdir(os.path.join(root, d))
                  for r in os.listdir(os.path.join(root, d)))
    if b.kernel not in rels:
        die("%s carries modules for kernel %s, not %s: take linux-modules-nvidia-BRANCH-%s" % (
            names, ", ".join(rels) or "none", b.kernel, b.kernel))
    dirs = {}
    for d in ("lib/modules", "usr/lib/modules"):
        for moddir in sorted(glob.glob(os.path.join(root, d, b.kernel, "kernel/nvidia-*"))):
            branch = os.path.basename(moddir)
            kos = [p for p in glob.glob(os.path.join(moddir, "*.ko*"))
                   if os.path.basename(p).split(".ko")[0] in MODULES and
                   os.path.getsize(inside(root, p, names))]
            if kos:
                dirs[branch] = ("ready", moddir, kos)
            elif os.path.isfile(os.path.join(moddir, "bits", "BUILD")):
                dirs[branch] = ("link", moddir, [])
    if not dirs:
        die("%s has no nvidia*.ko and no bits/BUILD under lib/modules/%s/kernel/nvidia-*/: "
            "not Canonical's linux-modules-nvidia (or linux-objects-nvidia) packages" % (
                names, b.kernel))
    if len(dirs) > 1:
        die("%s hold the modules of %d branches (%s): give one branch's packages" % (
            names, len(dirs), ", ".join(sorted(dirs))))
    branch, (kind, moddir, kos) = next(iter(dirs.items()))
    if kind == "link":
        found = canonical_link(b, moddir)
        layout = "linked from linux-objects-nvidia (%s), signatures attached" % branch
    else:
        found = {}
        stage = os.path.join(b.work, "ubuntu-modules-ko")
        shutil.rmtree(stage, ignore_errors=True)
        os.makedirs(stage)
        for p in sorted(kos):
            base = os.path.basename(p)
            name = base.split(".ko")[0]
            dst = os.path.join(stage, name + ".ko")
            p = inside(root, p, names)
            if base.endswith(".ko.zst"):
                run(["zstd", "-q", "-d", "-f", p, "-o", dst])
            elif base.endswith(".ko.xz"):
                with lzma.open(p, "rb") as fi, open(dst, "wb") as fo:
                    shutil.copyfileobj(fi, fo)
            elif base.endswith(".ko"):
                shutil.copyfile(p, dst)
            else:
                continue
            found[name] = dst
        layout = "signed modules as shipped (%s)" % branch
    say("took %s from %s (%s)" % (", ".join(sorted(found)), names, layout))
    return found, layout


def stage_userspace(b, debs, stage):
    """--userspace-debs DIR: Ubuntu's libnvidia-compute-BRANCH, nvidia-utils-BRANCH (and
    nvidia-firmware-BRANCH-VERSION) -> the SRC layout. Returns the driver version."""
    root = os.path.join(b.work, "ubuntu-userspace")
    what = "the packages of " + debs
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    pkgs = sorted(glob.glob(os.path.join(debs, "*.deb")))
    if not pkgs:
        die("%s has no .deb files (libnvidia-compute-BRANCH, nvidia-utils-BRANCH)" % debs)
    for deb in pkgs:
        unpack_confined.unpack_deb_into(deb, root)
    libdir = os.path.join(root, UBUNTU_LIBDIR)
    version = None
    for f in (os.listdir(libdir) if os.path.isdir(libdir) else []):
        m = re.match(r"^libnvidia-ml\.so\.([0-9.]+)$", f)
        if m:
            version = m.group(1)
    if not version:
        die("%s has no %s/libnvidia-ml.so.VERSION: add libnvidia-compute-BRANCH" % (
            debs, UBUNTU_LIBDIR))
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)
    for f in os.listdir(libdir):
        p = os.path.join(libdir, f)
        if f.endswith(".so." + version) and os.path.isfile(p) and not os.path.islink(p):
            unpack_confined.copy_out(root, p, os.path.join(stage, f), what)
    copy_tools_and_firmware(root, stage, version, ("usr/bin", "usr/sbin"), what)
    shutil.rmtree(root)
    return version
