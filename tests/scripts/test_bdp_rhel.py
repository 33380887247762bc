# SPDX-License-Identifier: Apache-2.0
"""The kernel-devel RPM (scripts/bdp/rhel.py, kernel_devel): a small RPM made here with
rpmbuild, as tests/packaging makes its stand-ins, unpacked with rpm2cpio through
unpack_confined.py; its build tree found, an RPM of another release and a missing file
named, a link out of the work directory refused with nothing left."""
import os
import subprocess
import unittest

from bdp_test import Case

from bdp import rhel
from bdp.common import unpack_confined

R = "5.14.0-427.13.1.el9_4.x86_64"


class KernelDevel(Case):
    def rpm(self, release, files, links=()):
        """kernel-devel of RELEASE holding FILES {path under usr/src/kernels/RELEASE: text}
        and LINKS (path, target)."""
        br = self.path("buildroot-" + release)
        tree = os.path.join(br, "usr/src/kernels", release)
        os.makedirs(tree)
        for rel, text in files.items():
            with open(os.path.join(tree, rel), "w") as f:
                f.write(text)
        for rel, target in links:
            os.symlink(target, os.path.join(tree, rel))
        names = list(files) + [rel for rel, _ in links]
        spec = self.write("kernel-devel.spec", "\n".join([
            "Name: kernel-devel", "Version: 5.14.0", "Release: test", "Summary: test",
            "License: GPL-2.0-only", "AutoReqProv: no", "%define __os_install_post %{nil}",
            "%define debug_package %{nil}", "%define _build_id_links none",
            "%description", "A stand-in.", "%files"] +
            ["/usr/src/kernels/%s/%s" % (release, n) for n in names]) + "\n")
        top = self.path("rpm-" + release)
        subprocess.run(["rpmbuild", "--quiet", "-bb", "--buildroot", br, "--define",
                        "_topdir " + top, spec], check=True, capture_output=True)
        out = os.path.join(top, "RPMS")
        return os.path.join(out, os.listdir(out)[0], os.listdir(os.path.join(
            out, os.listdir(out)[0]))[0])

    def b(self, kernel=R):
        return self.record(work=self.path("work"), kernel=kernel)

    def test_build_tree(self):
        rpm = self.rpm(R, {"Makefile": "include common/Makefile\n", ".config": "CONFIG_X86_64=y\n"})
        tree = rhel.kernel_devel(self.b(), rpm)
        self.assertEqual(tree, self.path("work/kernel-devel/usr/src/kernels", R))
        with open(os.path.join(tree, "Makefile")) as f:
            self.assertEqual(f.read(), "include common/Makefile\n")
        self.assertTrue(os.path.isfile(os.path.join(tree, ".config")))

    def test_another_release(self):
        rpm = self.rpm(R, {"Makefile": "all:\n"})
        self.assertEqual(self.refused(rhel.kernel_devel, self.b("6.1.0-0test"), rpm),
                         "%s is the kernel-devel of %s, not of 6.1.0-0test: take the "
                         "kernel-devel RPM of the node's kernel (uname -r)" % (rpm, R))

    def test_not_a_file(self):
        self.assertEqual(self.refused(rhel.kernel_devel, self.b(), self.path("none.rpm")),
                         "%s is not a file: pass the kernel-devel RPM of the node's kernel "
                         "(kernel-devel-%s.rpm)" % (self.path("none.rpm"), R))

    def test_link_out(self):
        rpm = self.rpm(R, {"Makefile": "all:\n"}, [("build", "../../../../../../etc")])
        with self.assertRaises(unpack_confined.Refused) as cm:
            rhel.kernel_devel(self.b(), rpm)
        self.assertIn("member usr/src/kernels/%s/build is a link out of the archive" % R,
                      str(cm.exception))
        self.assertFalse(os.path.exists(self.path("work/kernel-devel")))


if __name__ == "__main__":
    unittest.main()
