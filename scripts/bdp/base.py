# SPDX-License-Identifier: Apache-2.0
"""A package platform: what differs between the node images a package is built for.

Each platform is a module of its own (debian.py, cos.py, ubuntu.py, rhel.py) with a class
derived from Platform and a row in platforms.PLATFORMS; --os chooses it. The methods here
are what a platform that says nothing otherwise does (Debian's: the kernel's build tree
from --headers or the installed headers, the modules compiled from the driver's sources or
taken from --prebuilt-modules, signed with --sign-key or kept with --keep-signatures); a
platform overrides those that differ:

  add_sources        its own ways to the driver (options of the exclusive group)
  add_options        its options (an argparse group)
  default_flavour    the flavour built where --flavour is not given
  headers            where the kernel's build tree comes from
  toolchain          the compiler and the tools' directory the modules are built with
  userspace          where the user space comes from, when not the driver's source
  modules            which modules it builds or takes
  sign               how the modules are signed, or their signatures kept
  build_info         its part of the build record (build-info.json)
"""
from bdp import kernel, signing
from bdp.common import say


class Platform:
    name = None         # the os-release ID --os names it by
    title = None        # its options' heading in --help

    @classmethod
    def add_sources(cls, sources):
        """Adds the platform's ways to the driver's files to SOURCES, the exclusive group of
        --source; returns the argparse actions of those that mark a command line as this
        platform's."""
        return []

    @classmethod
    def add_options(cls, group):
        """Adds the platform's options to GROUP, its heading in --help; returns the argparse
        actions of those that mark a command line as this platform's."""
        return []

    def __init__(self, args):
        """Takes the platform's options from ARGS, argparse's."""

    # ---- the command line ----

    def brings_signatures(self):
        """True when the modules come with the vendor's signatures, one flavour's modules
        (no --sign-key)."""
        return False

    def check_signatures(self, b):
        """Refuses the signing options that contradict the platform's own signatures."""

    def check(self, b):
        """Refuses, once the record B is made, options that contradict the platform's."""

    def default_flavour(self):
        """The flavour built where --flavour is not given."""
        return "proprietary"

    # ---- the kernel ----

    def headers(self, b):
        """The kernel's build tree, or None for /lib/modules/R/build."""
        return b.headers

    def needs_headers(self, b):
        return not b.prebuilt

    def toolchain(self, b):
        """(CC, BINDIR): the compiler (--cc) and a directory to put first in PATH."""
        return b.cc, None

    def needs_sign_file(self, b):
        return not b.keep_signatures

    def kernel_tree(self, b):
        """The platform step of a run: the build tree, the toolchain and the sign-file."""
        headers = self.headers(b)
        tree = kernel.KernelTree()
        if self.needs_headers(b):
            tree.sysroot = kernel.find_headers(b.kernel, headers, b.arch)
            cc, bindir = self.toolchain(b)
            tree.make_vars, tree.env, tree.toolchain = kernel.toolchain_make(
                b, tree.sysroot[1], cc, bindir)
        if self.needs_sign_file(b):
            tree.sign_file = kernel.find_sign_file(
                tree.sysroot[1] if tree.sysroot else "/nonexistent", b.sign_file)
        return tree

    # ---- the driver ----

    def userspace_from(self):
        """The platform's own packages of the user space (an option's value), or None."""
        return None

    def userspace(self, b, stage):
        """Stages the user space into STAGE (the .run layout) from the platform's own
        packages and returns the driver version; None where the driver's source gives it."""
        return None

    def modules(self, b, fl, src, version, tree):
        """Flavour FL's modules, {name: path}: compiled from SRC against TREE, or taken from
        --prebuilt-modules."""
        if fl.prebuilt:
            return kernel.prebuilt_modules(b, fl)
        return kernel.build_modules(b, fl, src, version, tree)

    def sign(self, b, fl, mods, version, tree, outdir):
        """MODS signed (or their signatures kept) into OUTDIR: (files, signer)."""
        if b.keep_signatures:
            say("checking %d modules with their own signatures (%s)" % (
                len(mods), ", ".join(sorted(mods))))
            return signing.keep_modules(b, fl, mods, version, outdir)
        say("signing and checking %d %s modules (%s)" % (
            len(mods), fl.name, ", ".join(sorted(mods))))
        return signing.prepare_modules(b, fl, mods, version, tree.sign_file, outdir)

    def build_info(self, b):
        """The platform's part of build-info.json."""
        return {}

    def source_kind(self, b):
        """build-info.json's "source": where the user space came from."""
        return "directory" if b.source else "debian"
