# SPDX-License-Identifier: Apache-2.0
"""--gdrcopy and --gds (scripts/bdp/gpudirect.py): the versions upstream's trees say, the
trees told apart, archives entered at their one top directory, and what is refused before
anything is built. tests/packaging's and tests/vm's scenario gpudirect build with it."""
import io
import os
import shutil
import subprocess
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
        self.assertIn("--keep-signatures keeps a vendor's signatures only; leave it out",
                      self.refused(gpudirect.check, b))
        b = self.build(gdrcopy="x", sign_key=None)
        self.assertIn("--gdrcopy builds modules that the package's key must sign: give "
                      "--sign-key", self.refused(gpudirect.check, b))
        gpudirect.check(self.build())   # neither given: nothing to refuse

    def test_member_twice_refused(self):
        # common.unpack_given's check: which copy of a member is the tree cannot be told.
        src = self.gdrcopy("gdrcopy-2.6")
        with tarfile.open(self.path("g.tar"), "w") as t:
            t.add(src, "gdrcopy-2.6")
            data = b"twice\n"
            info = tarfile.TarInfo("gdrcopy-2.6/Makefile")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        b = self.build(gdrcopy=self.path("g.tar"))
        self.assertIn("gdrcopy-2.6/Makefile twice", self.refused(gpudirect.unpack, b, "gdrcopy"))

    def test_source_without_nv_p2p_h_refused_before_building(self):
        self.write("drv/kernel/nvidia/nv.c", "")
        self.assertIn("has no nv-p2p.h", self.refused(gpudirect.check_source,
                                                      self.path("drv")))
        self.write("drv/kernel/nvidia/nv-p2p.h", "")
        gpudirect.check_source(self.path("drv"))

    def test_make_failure_is_one_line(self):
        self.write("m/Makefile", "all:\n\t@echo broken; false\n")
        b = self.build()
        msg = self.refused(gpudirect.make, b, self.path("m"), ["all"], "gdrcopy's gdrdrv",
                           self.record(env=None), self.path("m.log"))
        self.assertNotIn("\n", msg)
        self.assertIn("gdrcopy's gdrdrv does not build for kernel 6.1.0-57-amd64 (make all "
                      "failed): see %s" % self.path("m.log"), msg)

    @unittest.skipUnless(shutil.which("gcc") and shutil.which("readelf"), "gcc, readelf")
    def test_library_links_and_soname(self):
        # libgdrapi.so.X.Y with its soname's link and the linker name's, as upstream's
        # install (Makefile:105-111); a soname that only starts its name is refused.
        def lib(d, name, so):
            os.makedirs(self.path(d), exist_ok=True)
            self.write(d + "/x.c", "int gdr_x(void) { return 1; }\n")
            subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname," + so, "-o",
                            self.path(d, name), self.path(d, "x.c")], check=True)
            os.unlink(self.path(d, "x.c"))
            return self.path(d)
        b = self.build(strip="strip")
        tree = self.path("tree")
        so = gpudirect.stage_library(b, lib("l1", "libgdrapi.so.2.6", "libgdrapi.so.2"), tree)
        self.assertEqual(so, "libgdrapi.so.2")
        self.assertEqual(os.readlink(os.path.join(tree, "lib64/libgdrapi.so.2")),
                         "libgdrapi.so.2.6")
        self.assertEqual(os.readlink(os.path.join(tree, "lib64/libgdrapi.so")),
                         "libgdrapi.so.2")
        self.assertIn("has soname libgdrapi.so.2, which does not name it",
                      self.refused(gpudirect.stage_library, b,
                                   lib("l2", "libgdrapi.so.26.1", "libgdrapi.so.2"),
                                   self.path("tree2")))


if __name__ == "__main__":
    unittest.main()
