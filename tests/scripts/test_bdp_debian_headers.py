# SPDX-License-Identifier: Apache-2.0
"""build-driver-package --headers-debs (scripts/bdp/debian.py, headers_from_debs): Debian's
split headers of a kernel this machine never installed, unpacked confined into the work
directory and made usable as scripts/fetch-debian-kernel makes them: the Makefile's include
pointed at the unpacked -common tree, scripts/ resolved to the linux-kbuild given. The
packages here are made with dpkg-deb in Debian's layout (linux-headers-6.1.0-47-amd64 and
its -common, linux-kbuild-6.1 as bookworm ships them: absolute build/source links, the
relative scripts/ and tools/ links); with NDI_DEBIAN_HEADERS_DEBS naming a directory of
Debian's real three packages (apt-get download), a module is compiled against them."""
import os
import shutil
import subprocess
import unittest

import test_bdp_cli as cli_test
from bdp_test import Case

from bdp import debian, kernel
from bdp.common import Usage

R = "6.1.0-47-amd64"
COMMON = "linux-headers-6.1.0-47-common"


def deb(top, name, files, links=()):
    """A .deb NAME made with dpkg-deb from FILES {path: (text, mode)} and LINKS."""
    root = os.path.join(top, "pkg-" + name)
    os.makedirs(os.path.join(root, "DEBIAN"))
    with open(os.path.join(root, "DEBIAN/control"), "w") as f:
        f.write("Package: %s\nVersion: 6.1.170-3\nArchitecture: amd64\nMaintainer: t <t@t>\n"
                "Description: test\n" % name)
    for path, (data, mode) in files.items():
        p = os.path.join(root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, mode)
    for path, target in links:
        p = os.path.join(root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        os.symlink(target, p)
    out = os.path.join(top, "%s_6.1.170-3_amd64.deb" % name)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", root, out], check=True,
                   capture_output=True)
    shutil.rmtree(root)
    return out


def fixdep(machine):
    """An ELF header with e_machine MACHINE (what check_kbuild_runs reads)."""
    return b"\x7fELF\x02\x01\x01" + b"\0" * 11 + machine.to_bytes(2, "little") + b"\0" * 40


class HeadersDebs(Case):
    def make(self, kbuild_machine=62, leave_out=()):
        d = self.path("debs")
        os.makedirs(d, exist_ok=True)
        made = {}
        src = "usr/src/linux-headers-%s/" % R
        if "headers" not in leave_out:
            made["headers"] = deb(d, "linux-headers-" + R, {
                src + "Makefile": (b"include /usr/src/%s/Makefile\n" % COMMON.encode(), 0o644),
                src + ".config": (b"CONFIG_X86_64=y\nCONFIG_CC_IS_GCC=y\n", 0o644),
                src + "include/generated/utsrelease.h": (
                    b'#define UTS_RELEASE "%s"\n' % R.encode(), 0o644)},
                [(src + "scripts", "../../lib/linux-kbuild-6.1/scripts"),
                 (src + "tools", "../../lib/linux-kbuild-6.1/tools"),
                 ("lib/modules/%s/build" % R, "/usr/src/linux-headers-" + R)])
        if "common" not in leave_out:
            made["common"] = deb(d, COMMON, {
                "usr/src/%s/Makefile" % COMMON: (b"# the common tree\n", 0o644)},
                [("usr/src/%s/scripts" % COMMON, "../../lib/linux-kbuild-6.1/scripts")])
        if "kbuild" not in leave_out:
            made["kbuild"] = deb(d, "linux-kbuild-6.1", {
                "usr/lib/linux-kbuild-6.1/scripts/sign-file": (b"#!/bin/sh\n", 0o755),
                "usr/lib/linux-kbuild-6.1/scripts/basic/fixdep": (fixdep(kbuild_machine),
                                                                  0o755),
                "usr/lib/linux-kbuild-6.1/tools/objtool/objtool": (b"", 0o755)})
        return d, made

    def b(self):
        return self.record(work=self.path("work"), kernel=R, arch="x86_64")

    def test_unpacked_and_usable(self):
        d, _ = self.make()
        tree = debian.headers_from_debs(self.b(), [d])
        self.assertEqual(tree, self.path("work/debian-headers/usr/src/linux-headers-" + R))
        common = os.path.realpath(self.path("work/debian-headers/usr/src/" + COMMON))
        with open(os.path.join(tree, "Makefile")) as f:
            self.assertEqual(f.read(), "include %s/Makefile\n" % common)
        # What the build then reads: the -common tree as SYSSRC, the kbuild's sign-file.
        self.assertEqual(kernel.find_headers(R, tree, "x86_64"),
                         (common, os.path.realpath(tree)))
        self.assertEqual(os.path.realpath(kernel.find_sign_file(tree, None)), os.path.realpath(
            self.path("work/debian-headers/usr/lib/linux-kbuild-6.1/scripts/sign-file")))
        # The same packages again: taken as unpacked.
        self.assertEqual(debian.headers_from_debs(self.b(), [d]), tree)
        self.assertIn("already unpacked", self.out.getvalue())

    def test_a_package_left_out_is_named(self):
        for left, want in (
                ("common", "linux-headers-6.1.0-47-amd64 includes /usr/src/%s/Makefile, which "
                 "they do not hold: give the %s package" % (COMMON, COMMON)),
                ("kbuild", "linux-headers-6.1.0-47-amd64/scripts leads to "
                 "usr/lib/linux-kbuild-6.1/scripts, which they do not hold: give the "
                 "linux-kbuild package it names"),
                ("headers", "hold no usr/src/linux-headers-6.1.0-47-amd64/Makefile (they have: "
                 "%s): give the linux-headers-%s package" % (COMMON, R))):
            with self.subTest(left=left):
                shutil.rmtree(self.path("debs"), ignore_errors=True)
                d, _ = self.make(leave_out=(left,))
                self.assertIn(want, self.refused(debian.headers_from_debs, self.b(), [d]))

    def test_kbuild_of_another_architecture(self):
        _, made = self.make(kbuild_machine=183)
        msg = self.refused(debian.headers_from_debs, self.b(), list(made.values()))
        self.assertIn("the linux-kbuild package is aarch64's, its helpers (scripts/basic/"
                      "fixdep) do not run on this x86_64 machine", msg)

    def test_not_debs(self):
        self.assertIn("is neither a .deb nor a directory of them", self.refused(
            debian.headers_from_debs, self.b(), [self.write("x.txt", "x")]))

    def test_command_line(self):
        self.assertIs(cli_test.choose(["--headers-debs", "d", "--source", "src"] +
                                      cli_test.SIGN), debian.Debian)
        with self.assertRaises(Usage) as cm:
            cli_test.choose(["--os", "ubuntu", "--headers-debs", "d", "--source", "src"] +
                            cli_test.SIGN)
        self.assertIn("--headers-debs is an option of --os debian, not of --os ubuntu",
                      str(cm.exception))

    @unittest.skipUnless(os.environ.get("NDI_DEBIAN_HEADERS_DEBS"),
                         "NDI_DEBIAN_HEADERS_DEBS names no directory of Debian's three packages")
    def test_real_packages_build_a_module(self):
        real = os.environ["NDI_DEBIAN_HEADERS_DEBS"]
        rel = [f.split("_")[0][len("linux-headers-"):] for f in os.listdir(real)
               if f.startswith("linux-headers-") and "-common" not in f][0]
        b = self.record(work=self.path("work"), kernel=rel, arch="x86_64")
        tree = debian.headers_from_debs(b, [real])
        mod = self.path("mod")
        os.makedirs(mod)
        with open(os.path.join(mod, "hello.c"), "w") as f:
            f.write('#include <linux/module.h>\nMODULE_LICENSE("GPL");\n')
        with open(os.path.join(mod, "Kbuild"), "w") as f:
            f.write("obj-m := hello.o\n")
        p = subprocess.run(["make", "-C", tree, "M=" + mod, "modules"], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        out = subprocess.run(["modinfo", "-F", "vermagic", os.path.join(mod, "hello.ko")],
                             capture_output=True, text=True).stdout
        self.assertTrue(out.startswith(rel + " "), out)


if __name__ == "__main__":
    unittest.main()
