# SPDX-License-Identifier: Apache-2.0
"""The build record: what one run of build-driver-package builds, made once from the parsed
command line (cli.parse) and read by every step after; nothing is added to the parsed
arguments. A Flavour is one flavour's part of it (the [F=]VALUE options that apply)."""
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import List, Optional

from bdp import media, signing
from bdp.common import (ARCH_ALIASES, ARCHES, FLAVOURS, HERE, HOST_ARCH, MODULE_PARAM_RE,
                        MODULES, PROGRESS, die, usage)


@dataclass
class Flavour:
    """One flavour's package: its name (proprietary, open) and its own values of
    --prebuilt-modules, --patch, --module-param and --pci-ids."""
    name: str
    prebuilt: Optional[str] = None
    patches: List[str] = field(default_factory=list)
    params: List[str] = field(default_factory=list)
    pci_ids: Optional[str] = None


@dataclass
class Build:
    """One run: the kernel and architecture it builds for, the platform (base.Platform,
    chosen by --os), the driver's source, the flavours, how the modules are signed, and
    the repository the packages go into."""
    kernel: str
    arch: str                   # uname -m of the node: x86_64, aarch64
    cross: str                  # Debian's cross toolchain prefix, "" on the node's arch
    strip: str                  # the strip for --arch's objects
    platform: object            # its options, headers, modules, signatures, build-info
    flavours: List[Flavour]
    flavour_arg: str            # the flavours built, for the progress line
    modules: List[str]          # the module names taken (--modules)
    source: Optional[str]       # the driver: a directory in the .run layout, or
    debian: Optional[str]       # Debian's packages of VERSION, fetched,
    debs: Optional[str]         # or already fetched (--userspace-debs: the platform's)
    debian_mirror: str
    debian_suite: str
    headers: Optional[str]      # the kernel's build tree (--headers)
    cc: Optional[str]
    llvm: Optional[str]
    sign_key: Optional[str]
    sign_cert: Optional[str]
    sign_file: Optional[str]
    keep_signatures: bool
    vendor_cert: List[str]
    fabricmanager: Optional[str]
    nvlsm: Optional[str]
    imex: Optional[str]
    nvsdm: Optional[str]        # --nvsdm: NVIDIA's libnvsdm package (bdp/nvsdm.py)
    capabilities: List[str]     # --capabilities, in CAPABILITIES' order (bdp/media.py)
    pci_names: Optional[str]
    no_platform_params: bool
    repo: Optional[str]         # the repository the packages are published to,
    repo_key: Optional[str]
    stage_to: Optional[str]     # or the directory they are staged in (make-repo publish)
    tags: List[str]
    repository: Optional[str]
    os: Optional[str]           # the index's os and os_build of the packages
    os_build: Optional[str]
    work: str
    jobs: int
    installer: str
    gdrcopy: Optional[str] = None   # --gdrcopy, --gds: their sources (bdp/gpudirect.py)
    gds: Optional[str] = None

    @property
    def prebuilt(self):
        """Whether the modules are taken, not compiled (all flavours or none)."""
        return any(f.prebuilt for f in self.flavours)

    @property
    def patched(self):
        return any(f.patches for f in self.flavours)


def parse_flavours(args, platform):
    """--flavour LIST (the platform's default where not given) -> the flavours, in
    FLAVOURS' order, each with its [F=]VALUE options."""
    value = args.flavour if args.flavour is not None else platform.default_flavour()
    names = [f for f in re.split(r"[,\s]+", value.strip()) if f]
    if names == ["both"]:
        names = list(FLAVOURS)
    bad = [f for f in names if f not in FLAVOURS]
    if not names or bad:
        die("--flavour %r: proprietary, open, proprietary,open or both" % value)
    chosen = [f for f in FLAVOURS if f in names]
    if len(chosen) > 1 and platform.brings_signatures():
        die("--ubuntu-modules-deb and --detached-signatures bring one flavour's modules: "
            "build one flavour per call (--flavour proprietary or open)")

    def per_flavour(values, option, single):
        out = {}
        for v in values:
            m = re.match(r"^(proprietary|open)=(.+)$", v)
            if m and m.group(1) not in chosen:
                die("%s %s: the %s flavour is not built (--flavour %s)" % (
                    option, v, m.group(1), ",".join(chosen)))
            if not m and single and len(chosen) > 1:
                die("%s %s: two flavours are built; say whose (%s=%s)" % (
                    option, v, chosen[-1], v))
            # One-per-flavour options given again: the last one counts, as for any option.
            for f, val in [(m.group(1), m.group(2))] if m else [(f, v) for f in chosen]:
                out[f] = val if single else out.get(f, []) + [val]
        return out

    prebuilt = per_flavour(args.prebuilt_modules, "--prebuilt-modules", True)
    if prebuilt and len(prebuilt) != len(chosen):
        missing = [f for f in chosen if f not in prebuilt]
        die("--prebuilt-modules gives no modules for the %s flavour: add %s=DIR" % (
            missing[0], missing[0]))
    patches = per_flavour(args.patch, "--patch", False)
    params = per_flavour(args.module_param, "--module-param", False)
    for values in params.values():
        for v in values:
            if not MODULE_PARAM_RE.match(v):
                die("--module-param %s: give MODULE.KEY=VALUE (a module name, a key of letters, "
                    "digits and '_', a value without spaces or quotes), as --module-arg takes "
                    "it" % v)
    pci = per_flavour(args.pci_ids, "--pci-ids", True)
    return [Flavour(f, prebuilt.get(f), patches.get(f, []), params.get(f, []), pci.get(f))
            for f in chosen]


def module_names(value):
    """--modules LIST: MODULES itself when it names NVIDIA's set."""
    names = [m for m in value.split(",") if m]
    if not names or not all(re.match(r"^[A-Za-z0-9_-]{1,55}$", m) for m in names):
        die("--modules %r: a comma-separated list of module names" % value)
    return MODULES if names == MODULES else names


def installer_of(given):
    if given is not None:
        return given
    built = os.path.join(HERE, "..", "build", "nvidia-driver-installer")
    found = built if os.access(built, os.X_OK) else shutil.which("nvidia-driver-installer")
    if not found:
        die("no nvidia-driver-installer binary (run make, or pass --installer)")
    return found


def check_destination(b):
    """--repo with --repo-key (the packages published), or --stage-to (left for make-repo
    publish): one of them."""
    if b.stage_to and (b.repo or b.repo_key):
        usage("--stage-to leaves the index alone: leave out --repo and --repo-key, or "
              "--stage-to")
    if not b.stage_to and not (b.repo and b.repo_key):
        usage("give --repo DIR and --repo-key KEY.pem (publish), or --stage-to DIR (stage "
              "for make-repo publish)")


def from_args(args, platform):
    """The record of the run ARGS (argparse's) asks for on PLATFORM; refuses, one cause at a
    time, a command line that cannot build."""
    PROGRESS["quiet"] = args.quiet
    if not args.progress_every > 0:
        die("--progress-every %s: give a number of seconds above 0" % args.progress_every)
    PROGRESS["every"] = args.progress_every
    if not re.match(r"^[A-Za-z0-9._+~-]+$", args.kernel):
        die("kernel release %r has characters a release cannot have" % args.kernel)
    arch = ARCH_ALIASES.get(args.arch or HOST_ARCH, args.arch or HOST_ARCH)
    if arch not in ARCHES:
        die("--arch %s: give the node's uname -m, %s (or %s)" % (
            arch, " or ".join(ARCHES), " or ".join(ARCH_ALIASES)))
    cross = ARCHES[arch]["cross"] if arch != HOST_ARCH else ""
    if not shutil.which(cross + "strip"):
        die("no %s to strip %s modules: apt-get install binutils-%s (Debian)" % (
            cross + "strip", arch, cross.rstrip("-")))
    flavours = parse_flavours(args, platform)
    b = Build(
        kernel=args.kernel, arch=arch, cross=cross, strip=cross + "strip", platform=platform,
        flavours=flavours, flavour_arg=",".join(f.name for f in flavours),
        modules=module_names(args.modules),
        source=args.source, debian=args.debian, debs=args.debs,
        debian_mirror=args.debian_mirror, debian_suite=args.debian_suite, headers=args.headers,
        cc=args.cc, llvm=args.llvm,
        sign_key=args.sign_key, sign_cert=args.sign_cert, sign_file=args.sign_file,
        keep_signatures=args.keep_signatures, vendor_cert=args.vendor_cert,
        fabricmanager=args.fabricmanager, nvlsm=args.nvlsm, pci_names=args.pci_names,
        imex=args.imex, nvsdm=args.nvsdm, gdrcopy=args.gdrcopy, gds=args.gds,
        capabilities=media.parse_capabilities(args.capabilities),
        no_platform_params=args.no_platform_params, repo=args.repo, repo_key=args.repo_key,
        stage_to=args.stage_to,
        tags=args.tag, repository=args.repository, os=args.os, os_build=args.os_build,
        work="", jobs=args.jobs, installer="")
    check_destination(b)
    signing.check_arguments(b)
    for f in [b.sign_cert] + b.vendor_cert:
        if f and not os.path.isfile(f):
            die("%s does not exist" % f)
    signing.check_keys(b)   # --sign-key, --repo-key: files or pkcs11: URIs (privkey.py)
    b.installer = installer_of(args.installer)
    b.work = os.path.realpath(args.work or tempfile.mkdtemp(prefix="build-driver-package-"))
    os.makedirs(b.work, exist_ok=True)
    platform.check(b)
    return b
