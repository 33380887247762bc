# SPDX-License-Identifier: Apache-2.0
"""build-driver-package's command line: the options every platform shares, each platform's
own (its module's add_sources and add_options), the one place the platform is chosen
(choose_platform), and the build record made from them (record.from_args)."""
import argparse
import os

from bdp import gpudirect, record, signing
from bdp.common import PCI_IDS_DBS, usage
from bdp.platforms import DEFAULT, PLATFORMS


def parser(doc):
    """The parser, and each platform's options that mark a command line as its own."""
    ap = argparse.ArgumentParser(prog="build-driver-package", description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", required=True, help="uname -r of the target kernel")
    ap.add_argument("--headers", help="the kernel's build tree (default /lib/modules/R/build)")
    # The driver's files: one way of them (contiguous, so that --help shows them as one).
    sources = ap.add_mutually_exclusive_group(required=True)
    marks = {p: p.add_sources(sources) for p in PLATFORMS}
    sources.add_argument("--source", metavar="DIR", help="a driver source in the layout above")
    ap.add_argument("--cc", metavar="CC", help="the compiler the modules are built with (CC=)")
    ap.add_argument("--llvm", nargs="?", const="1", metavar="VALUE",
                    help="LLVM=1 (or LLVM=VALUE) for the module build: LLVM's tools")
    ap.add_argument("--flavour", "--flavours", default=None, metavar="LIST",
                    help="proprietary, open, or both (proprietary,open): one package per "
                    "flavour, all into --repo (default: proprietary; with "
                    "--ubuntu-modules-deb, the flavour of those packages)")
    ap.add_argument("--prebuilt-modules", action="append", default=[], metavar="[F=]DIR",
                    help="take these .ko, do not compile (with two flavours: one F=DIR each)")
    ap.add_argument("--patch", action="append", default=[], metavar="[F=]FILE",
                    help="apply to the module sources before compiling (patch -p1; "
                    "repeatable; F= for one flavour's sources only)")
    ap.add_argument("--module-param", action="append", default=[], metavar="[F=]MODULE.KEY=VALUE",
                    help="a default module parameter the package gives its modules (what "
                    "NVIDIA requires on a platform), written to kernel/module-params.conf; a "
                    "node's --module-arg for the same MODULE.KEY replaces it (repeatable)")
    ap.add_argument("--no-platform-params", action="store_true",
                    help="leave out the default module parameters NVIDIA requires on the "
                    "platform (arm64: NVreg_CoherentGPUMemoryMode=driver where nvidia.ko has "
                    "it, R580 and later)")
    signing.add_arguments(ap)
    ap.add_argument("--repo", help="repository directory (created if missing)")
    ap.add_argument("--repo-key", help="the private key that signs index.json: "
                    "a PEM file or a pkcs11: URI")
    ap.add_argument("--stage-to", metavar="DIR", help="leave the packages and their record "
                    "(DIR/stage.json) in DIR for make-repo publish, instead of --repo")
    ap.add_argument("--tag", action="append", default=[], help="e.g. default (repeatable)")
    ap.add_argument("--repository", help="the repository's identity, signed into its index "
                    "(anti-rollback per repository): e.g. drivers.example.com/nvidia")
    ap.add_argument("--arch", default=None, help="the node's architecture, uname -m: x86_64 "
                    "or aarch64 (amd64, arm64 too); default this machine's. Another than "
                    "this machine's builds with Debian's cross toolchain (ARCH=, CROSS_COMPILE=)")
    ap.add_argument("--fabricmanager", metavar="ARCHIVE_OR_DIR", help="NVIDIA's Fabric "
                    "Manager for NVSwitch systems (fabricmanager-linux-ARCH-VERSION-archive"
                    ".tar.xz), of the driver's own version: packed into bin/ and "
                    "share/nvidia/nvswitch/")
    ap.add_argument("--nvlsm", metavar="DEB_ARCHIVE_OR_DIR", help="NVIDIA's NVLink Subnet "
                    "Manager for NVLink 5 systems (its nvlsm .deb, an archive or a "
                    "directory): packed into bin/nvlsm and share/nvidia/nvlsm/; with "
                    "--fabricmanager")
    ap.add_argument("--imex", metavar="DEB_ARCHIVE_OR_DIR", help="NVIDIA's IMEX daemon for "
                    "multi-node NVLink, GB200 NVL72 (its nvidia-imex-BRANCH or nvidia-imex "
                    ".deb of the driver's own version, an archive or a directory; driver 550 "
                    "and later): packed into bin/nvidia-imex, bin/nvidia-imex-ctl and "
                    "share/nvidia/imex/")
    ap.add_argument("--nvsdm", metavar="DEB_ARCHIVE_OR_DIR", help="NVIDIA's NVSwitch Device "
                    "Monitoring library, through which DCGM reads NVLink 5 switches, HGX "
                    "B200/B300 (its libnvsdm-BRANCH or libnvsdm .deb of the driver's own "
                    "version, an archive or a directory; driver 560 and later): packed into "
                    "lib64/ with its soname link libnvsdm.so.1")
    gpudirect.add_arguments(ap)
    ap.add_argument("--capabilities", default="compute,utility", metavar="LIST",
                    help="NVIDIA's driver capabilities the package serves, a comma list of "
                    "compute, utility, video, graphics, or all (default compute,utility, "
                    "always packed): video adds the encode and decode libraries, graphics "
                    "the GL, EGL and Vulkan ones and their loaders' files under share/")
    ap.add_argument("--os", help="os-release ID the package is limited to; it chooses the "
                    "platform (%s); without it, or for another ID, the platform is the one "
                    "whose options are given (%s where none are)" % (
                        ", ".join(p.name for p in PLATFORMS), DEFAULT.name))
    ap.add_argument("--os-build", help="os-release BUILD_ID the package is limited to")
    ap.add_argument("--pci-ids", action="append", default=[], metavar="[F=]FILE",
                    help="the GPUs flavour F supports (vvvv:dddd [name] lines, a list, or "
                    "NVIDIA's supported-gpus.json), instead of the source's")
    ap.add_argument("--pci-names", metavar="FILE", help="a pci.ids database for GPU names "
                    "(default: the host's, %s)" % ", ".join(PCI_IDS_DBS))
    ap.add_argument("--work", default=None, help="work directory, reused between runs")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--installer", default=None, help="nvidia-driver-installer binary")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress lines on stderr (steps, elapsed time, the compiler's "
                    "latest line)")
    ap.add_argument("--progress-every", type=float, default=15.0, metavar="SECONDS",
                    help="while the modules compile, say so this often (default 15)")
    for p in PLATFORMS:
        marks[p] += p.add_options(ap.add_argument_group(p.title))
    return ap, marks


def given(args, action):
    return getattr(args, action.dest) not in (None, False, [])


def choose_platform(args, marks):
    """The platform of the command line ARGS (MARKS: each platform's own options). --os
    names it; without --os, or with an os-release ID no platform has, it is the one whose
    options are given, Debian's where none are (the command lines from before --os chose
    the platform). Options of two platforms, or of another platform than --os names, are
    refused: exit 2, one line naming the fix."""
    used = {}
    for p, actions in marks.items():
        opts = [a.option_strings[0] for a in actions if given(args, a)]
        if opts:
            used[p] = opts
    named = next((p for p in PLATFORMS if p.name == args.os), None)
    if named:
        for p, opts in used.items():
            if p is not named:
                usage("%s is an option of --os %s, not of --os %s: leave it out, or build "
                      "for --os %s" % (opts[0], p.name, named.name, p.name))
        return named
    if len(used) > 1:
        (p1, o1), (p2, o2) = list(used.items())[:2]
        usage("%s (%s) and %s (%s) are options of two platforms: build for one, naming it "
              "with --os %s or --os %s" % (o1[0], p1.name, o2[0], p2.name, p1.name, p2.name))
    return next(iter(used), DEFAULT)


def parse_args(argv, doc):
    """ARGV parsed (argparse's exit 2 on bad usage), and the platform class it builds for."""
    ap, marks = parser(doc)
    args = ap.parse_args(argv)
    return args, choose_platform(args, marks)


def parse(argv, doc):
    """The build record of ARGV: parsed, its platform chosen, checked."""
    args, platform = parse_args(argv, doc)
    b = record.from_args(args, platform(args))
    gpudirect.check(b)
    return b
