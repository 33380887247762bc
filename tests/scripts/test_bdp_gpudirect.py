# SPDX-License-Identifier: Apache-2.0
"""--gdrcopy and --gds (scripts/bdp/gpudirect.py): the versions upstream's trees say, the
trees told apart, archives entered at their one top directory, and what is refused before
anything is built. tests/packaging's and tests/vm's scenario gpudirect build with it."""
import os
import tarfile
import unittest

from bdp_test import Case

from bdp import gpudirect

GDRAPI_H = "#define MAJOR_VERSION_SHIFT 16\n#define GDR_API_MAJOR_VERSION    2\n" \
    "#define GDR_API_MINOR_VERSION    6\n"
NVFS_VERS_H = "#define NVFS_DRIVER_MAJOR_VERSION   2 //2-bytes\n\n" \
    "#define NVFS_DRIVER_MINOR_VERSION   28 //2-bytes\n#define NVFS_DRIVER_PATCH_VERSION  4\n"


class Trees(Case):
    def gdrcopy(self, top, gdrapi=GDRAPI_H):
        for m in gpudirect.TREES["gdrcopy"]["marks"]:
            self.write(os.path.join(top, m), "")
        self.write(os.path.join(top, "include/gdrapi.h"), gdrapi)
        return self.path(top)

    def gds(self, top, vers=NVFS_VERS_H):
        for m in gpudirect.TREES["gds"]["marks"]:
            self.write(os.path.join(top, m), "")
        self.write(os.path.join(top, "src/nvfs-vers.h"), vers)
        return self.path(top)

    def build(self, **kw):
        args = dict(gdrcopy=None, gds=None, work=self.path("work"), prebuilt=False,
                    keep_signatures=False, sign_key="k.pem", kernel="6.1.0-57-amd64",
                    cross="", arch="x86_64")
        args.update(kw)
        os.makedirs(args["work"], exist_ok=True)
        return self.record(**args)

    def test_versions_as_upstream_says_them(self):
        # gdrcopy's `make version` (Makefile:34-35, 52-53); nvidia-fs's MODULE_VERSION.
        self.assertEqual(gpudirect.gdrcopy_version(self.gdrcopy("g")), "2.6")
        self.assertEqual(gpudirect.gds_version(self.gds("n")), "2.28.4")
        self.assertIsNone(gpudirect.gdrcopy_version(
            self.gdrcopy("g2", "#define GDR_API_MAJOR_VERSION 2\n")))
        self.assertIsNone(gpudirect.gds_version(
            self.gds("n2", "#define NVFS_DRIVER_MAJOR_VERSION x\n")))

    def test_archive_entered_at_its_top(self):
        src = self.gdrcopy("gdrcopy-2.6")
        with tarfile.open(self.path("g.tar.gz"), "w:gz") as t:
            t.add(src, "gdrcopy-2.6")
        b = self.build(gdrcopy=self.path("g.tar.gz"))
        root = gpudirect.unpack(b, "gdrcopy")
        self.assertEqual(os.path.basename(root), "gdrcopy-2.6")
        self.assertEqual(gpudirect.gdrcopy_version(root), "2.6")

    def test_other_trees_refused(self):
        b = self.build(gdrcopy=self.gds("n"), gds=self.gdrcopy("g"))
        self.assertIn("is not NVIDIA's gdrcopy source: it has no Makefile",
                      self.refused(gpudirect.unpack, b, "gdrcopy"))
        self.assertIn("is not NVIDIA's gds-nvidia-fs source: it has no src/configure",
                      self.refused(gpudirect.unpack, b, "gds"))
        self.write("plain.txt", "x")
        b = self.build(gdrcopy=self.path("plain.txt"), gds=self.path("none"))
        self.assertIn("is neither a directory nor a tar archive",
                      self.refused(gpudirect.unpack, b, "gdrcopy"))
        self.assertIn("does not exist", self.refused(gpudirect.unpack, b, "gds"))

    def test_no_version_refused_before_building(self):
        b = self.build(gdrcopy=self.gdrcopy("g", "/* none */\n"))
        msg = self.refused(gpudirect.prepare, b, None)
        self.assertIn("its version cannot be told (include/gdrapi.h has no "
                      "GDR_API_MAJOR_VERSION and GDR_API_MINOR_VERSION)", msg)

    def test_gds_needs_the_standard_headers(self):
        b = self.build(gds=self.gds("n"), kernel="0.0.0-nonexistent")
        tree = self.record(sysroot=("/x", self.path("elsewhere")))
        self.assertIn("nvidia-fs's configure probes the kernel in "
                      "/lib/modules/0.0.0-nonexistent/build only",
                      self.refused(gpudirect.prepare, b, tree))

    def test_command_lines_refused(self):
        b = self.build(gds="x", prebuilt=True)
        self.assertIn("--gds compiles against the nvidia.ko this build compiles",
                      self.refused(gpudirect.check, b))
        b = self.build(gdrcopy="x", keep_signatures=True, sign_key=None)
        self.assertIn("--gdrcopy builds modules that the package's key must sign",
                      self.refused(gpudirect.check, b))
        gpudirect.check(self.build())   # neither given: nothing to refuse


if __name__ == "__main__":
    unittest.main()
