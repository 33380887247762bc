# SPDX-License-Identifier: Apache-2.0
"""--nvsdm (scripts/bdp/nvsdm.py): the version NVIDIA's package names say; what is refused
before anything is built (a branch without libnvsdm, another version, no library, a soname
that is not the one DCGM dlopens, another architecture); and the library packed into lib64/
so that DCGM's lookup finds it: tests/standin/dcgm-load.c, DCGM's dlopen of libnvsdm.so.1
and libnvidia-nscq.so.2 restated, run through glibc's loader with LD_LIBRARY_PATH at lib64/
(GKE: the install dir at /usr/local/nvidia, LD_LIBRARY_PATH=/usr/local/nvidia/lib64) and
with an ld cache made by ldconfig over lib64/ (the CDI spec's update-ldcache hook), on
stand-in libraries (NVIDIA's are not in Debian). tests/packaging's scenario imex builds with
it."""
import os
import re
import shutil
import subprocess
import unittest

from bdp_test import SCRIPTS, Case

from bdp import nvsdm

SRC = os.path.realpath(os.path.join(SCRIPTS, ".."))
STANDIN = os.path.join(SRC, "tests/standin/nvsdm.c")
PROBE = os.path.join(SRC, "tests/standin/dcgm-load.c")
V = "570.172.08"
ELF_ARM = b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x03\x00\xb7\x00" + b"\x00" * 44
LIBDIR = "usr/lib/x86_64-linux-gnu"


class Names(Case):
    def test_nvidia_names(self):
        for name, want in (("libnvsdm-570_570.172.08-1_amd64.deb", "570.172.08"),
                           ("libnvsdm_580.65.06-1_amd64.deb", "580.65.06"),
                           ("libnvsdm-575_575.57.08-0ubuntu1_amd64.deb", "575.57.08"),
                           ("libnvsdm-570_570.172.08-1_amd64.tar.gz", "570.172.08"),
                           ("libnvsdm-570_570.172.08-1_amd64", "570.172.08"),
                           ("libnvsdm-570-570.172.08-1.x86_64", "570.172.08"),
                           ("libnvsdm_1:580.65.06-1_amd64.deb", "580.65.06")):
            self.assertEqual(nvsdm.version_of_name(name), want, name)

    def test_first_branch_is_the_installers(self):
        """coverage's and doctor's fix (host_nvsdm_fix) names the branch this refuses below."""
        with open(os.path.join(SRC, "installer/host/host.h")) as f:
            m = re.search(r"^#define HOST_NVSDM_FIRST_BRANCH (\d+)$", f.read(), re.M)
        self.assertIsNotNone(m)
        self.assertEqual(int(m.group(1)), nvsdm.FIRST_BRANCH)

    def test_not_nvidia_names(self):
        for name in ("libnvsdm-575_570.172.08-1_amd64.deb", "libnvsdm.deb",
                     "nvidia-imex-570_570.172.08-1_amd64.deb", "libnvsdm_latest_amd64.deb"):
            self.assertIsNone(nvsdm.version_of_name(name), name)


class Source(Case):
    def lib(self, rel, soname=nvsdm.SONAME, nscq=False):
        """A stand-in library built at REL with SONAME."""
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname," + soname, "-o", p, STANDIN] +
                       (["-DSTANDIN_NSCQ"] if nscq else []), check=True)
        return p

    def tree(self, name, version=V, soname=nvsdm.SONAME):
        """A package unpacked as NVIDIA's .deb lays it out: the library, its soname link and
        the linker name (NVSDM docs, installation.html), and nvsdm_cli."""
        self.lib("%s/%s/libnvsdm.so.%s" % (name, LIBDIR, version), soname)
        os.symlink("libnvsdm.so.%s" % version, self.path(name, LIBDIR, "libnvsdm.so.1"))
        os.symlink("libnvsdm.so.1", self.path(name, LIBDIR, "libnvsdm.so"))
        self.write("%s/usr/lib/x86_64-linux-gnu-bin/nvsdm_cli" % name, "#!/bin/sh\n")
        return self.path(name)

    def b(self, given):
        return self.record(nvsdm=given, work=self.path("work"), arch="x86_64")

    def probe(self):
        exe = self.path("dcgm-load")
        if not os.path.exists(exe):
            subprocess.run(["cc", "-O1", "-o", exe, PROBE, "-ldl"], check=True)
        return exe

    def load(self, env):
        env = dict(os.environ, **env)
        env.pop("LD_PRELOAD", None)
        return subprocess.run([self.probe()], capture_output=True, text=True, env=env)

    def test_taken_and_found_as_dcgm_looks(self):
        d = self.tree("libnvsdm-570_%s-1_amd64" % V)
        src = nvsdm.nvsdm_source(self.b(d), V)
        self.assertEqual(src[0], os.path.join(d, LIBDIR, "libnvsdm.so." + V))
        self.assertEqual(src[1:], (V, []))
        tree = self.path("pkg")
        info = nvsdm.stage_nvsdm(src, tree)
        self.assertEqual(info, {"version": V, "library": "libnvsdm.so.1",
                                "file": "libnvsdm.so." + V, "needs": []})
        lib64 = os.path.join(tree, "lib64")
        self.assertEqual(sorted(os.listdir(lib64)),
                         ["libnvsdm.so", "libnvsdm.so.1", "libnvsdm.so." + V])
        self.assertEqual(os.readlink(os.path.join(lib64, "libnvsdm.so.1")), "libnvsdm.so." + V)
        self.assertIn("libnvsdm %s packed: lib64/libnvsdm.so.1 -> libnvsdm.so.%s" % (V, V),
                      self.out.getvalue())
        # Nothing else of the package (nvsdm_cli, the headers) comes along.
        self.assertFalse(os.path.exists(os.path.join(tree, "bin")))
        # GKE's consumer: LD_LIBRARY_PATH at the install dir's lib64.
        r = self.load({"LD_LIBRARY_PATH": lib64})
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(r.stdout, "nvsdm: loaded %s/libnvsdm.so.1\nnvswitch: nvsdm\n" % lib64)
        # Without it, DCGM's two lookups fail as issue 1405's log shows.
        r = self.load({"LD_LIBRARY_PATH": self.path("work")})
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("nvsdm: not loaded: libnvsdm.so.1: cannot open shared object file",
                      r.stdout)

    def test_found_through_the_ld_cache(self):
        """The CDI spec's consumer: no LD_LIBRARY_PATH, the container's ld cache remade
        over lib64/ (ldconfig, as the update-ldcache hook runs it), read by glibc's loader
        from /etc/ld.so.cache (a mount namespace of the test's own puts it there)."""
        if shutil.which("unshare") is None or os.geteuid() != 0:
            self.fail("needs root and unshare (mount namespaces), as make script-unit has")
        d = self.tree("libnvsdm_%s-1_amd64" % "580.65.06", version="580.65.06")
        tree = self.path("pkg")
        nvsdm.stage_nvsdm(nvsdm.nvsdm_source(self.b(d), "580.65.06"), tree)
        lib64 = os.path.join(tree, "lib64")
        # The linker name and soname links only: ldconfig's view of what lib64/ offers.
        cache = self.path("ld.so.cache")
        conf = self.write("ld.so.conf", lib64 + "\n")
        subprocess.run(["ldconfig", "-X", "-C", cache, "-f", conf], check=True)
        listed = subprocess.run(["ldconfig", "-p", "-C", cache], capture_output=True,
                                text=True, check=True).stdout
        self.assertIn("libnvsdm.so.1 (libc6,x86-64) => %s/libnvsdm.so.1" % lib64, listed)
        probe = self.probe()
        r = subprocess.run(["unshare", "-m", "sh", "-c",
                            "mount --make-rprivate / && mount --bind \"$1\" /etc/ld.so.cache "
                            "&& exec \"$2\"", "sh", cache, probe],
                           capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items()
                                if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "nvsdm: loaded %s/libnvsdm.so.1\nnvswitch: nvsdm\n" % lib64)

    def test_nscq_fallback(self):
        """DCGM's second lookup: a lib64/ with libnvidia-nscq (NVLink 4, collect_userspace's
        soname link) and no libnvsdm serves through NSCQ."""
        lib64 = self.path("nscq/lib64")
        self.lib("nscq/lib64/libnvidia-nscq.so." + V, "libnvidia-nscq.so.2", nscq=True)
        os.symlink("libnvidia-nscq.so." + V, os.path.join(lib64, "libnvidia-nscq.so.2"))
        r = self.load({"LD_LIBRARY_PATH": lib64})
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(r.stdout.splitlines()[-2:],
                         ["nscq: loaded %s/libnvidia-nscq.so.2" % lib64, "nvswitch: nscq"])

    def test_branch_without_nvsdm(self):
        d = self.tree("libnvsdm-570_%s-1_amd64" % V)
        self.assertEqual(self.refused(nvsdm.nvsdm_source, self.b(d), "550.163.01"),
                         "--nvsdm: driver 550.163.01 is of the 550 branch, for which NVIDIA "
                         "ships no libnvsdm (it comes with the 560 branch): leave out --nvsdm, "
                         "or build a 560 or later driver")

    def test_other_version(self):
        d = self.tree("libnvsdm_580.65.06-1_amd64", version="580.65.06")
        self.assertEqual(self.refused(nvsdm.nvsdm_source, self.b(d), "580.82.07"),
                         "%s is libnvsdm 580.65.06, the driver is 580.82.07: libnvsdm must be "
                         "the driver's own version; take libnvsdm_580.82.07-1_amd64.deb" % d)

    def test_unknown_version(self):
        d = self.tree("nvsdm")
        self.assertIn("the version of %s cannot be told" % d,
                      self.refused(nvsdm.nvsdm_source, self.b(d), V))

    def test_no_library(self):
        d = self.path("libnvsdm-570_%s-1_amd64" % V)
        self.write("libnvsdm-570_%s-1_amd64/usr/share/doc/README" % V, "")
        self.assertEqual(self.refused(nvsdm.nvsdm_source, self.b(d), V),
                         "%s has no libnvsdm.so.1 (looked in %s): not NVIDIA's libnvsdm "
                         "package" % (d, ", ".join(nvsdm.LIB_DIRS)))

    def test_other_soname(self):
        d = self.tree("libnvsdm-570_%s-1_amd64" % V, soname="libnvsdm.so.2")
        self.assertEqual(self.refused(nvsdm.nvsdm_source, self.b(d), V),
                         "%s: %s/libnvsdm.so.%s has the soname libnvsdm.so.2, but DCGM loads "
                         "libnvsdm.so.1: not NVIDIA's libnvsdm package" % (d, LIBDIR, V))

    def test_other_architecture(self):
        d = "libnvsdm-570_%s-1_arm64" % V
        self.write("%s/usr/lib/aarch64-linux-gnu/libnvsdm.so.1" % d, ELF_ARM, "wb")
        self.assertEqual(self.refused(nvsdm.nvsdm_source, self.b(self.path(d)), V),
                         "%s: usr/lib/aarch64-linux-gnu/libnvsdm.so.1 is built for aarch64, not "
                         "an ELF file for x86_64 (--arch): give the x86_64 build's files"
                         % self.path(d))

    def test_not_an_archive(self):
        p = self.write("libnvsdm-570_%s-1.x86_64.rpm" % V, "not a tar")
        self.assertEqual(self.refused(nvsdm.nvsdm_source, self.b(p), V),
                         "%s is neither a .deb nor a tar archive: pass NVIDIA's libnvsdm "
                         "package (.deb), an archive of it or its directory" % p)


if __name__ == "__main__":
    unittest.main()
