# SPDX-License-Identifier: Apache-2.0
"""Canonical's late link, parsed (scripts/bdp/ubuntu.py): the ld command-line parser
(ld_argv), bits/BUILD (parse_build), SHA256SUMS (read_sums) and a .ko.sig
(check_sig_file). Each is fed good lines and every kind of line it must refuse. And
Canonical's packages as a set: the control fields (deb_control), the version pins of the
modules package (pinned, check_pins) and the flavour the packages' names give."""
import os
import subprocess
import types
import unittest

from bdp_test import Case

from bdp import ubuntu
from bdp.common import SIG_MAGIC

SHA = "0123456789abcdef" * 4
LINK = ("ld.bfd -r -m elf_x86_64 -z noexecstack --no-warn-rwx-segments --build-id=sha1 "
        "-T scripts/module.lds -o nvidia.ko nvidia.o nvidia.mod.o")


class LdArgv(Case):
    def setUp(self):
        super().setUp()
        self.bits = self.path("bits")
        os.makedirs(os.path.join(self.bits, "scripts"))

    def argv(self, line, env=None):
        return ubuntu.ld_argv(self.bits, line.split(), env or {}, "BUILD line 4")

    def refusal(self, line, env=None):
        return self.refused(ubuntu.ld_argv, self.bits, line.split(), env or {}, "BUILD line 4")

    def test_kbuild_link(self):
        self.assertEqual(self.argv(LINK), ["ld.bfd"] + LINK.split()[1:])

    def test_exported_variable(self):
        argv = self.argv("ld.bfd -r --package-metadata=$ELF_PACKAGE_METADATA -o a.ko a.o",
                         {"ELF_PACKAGE_METADATA": '{"type":"deb"}'})
        self.assertEqual(argv[2], '--package-metadata={"type":"deb"}')

    def test_response_file(self):
        self.write("bits/nvidia.mod", "nv.o nv-extra.o\n")
        self.assertEqual(self.argv("ld.bfd -r -o nvidia.o @nvidia.mod"),
                         ["ld.bfd", "-r", "-o", "nvidia.o", "@nvidia.mod"])

    def test_variable_not_exported(self):
        self.assertEqual(self.refusal("ld.bfd -r -o a.ko $OBJS"),
                         "BUILD line 4 uses $OBJS, which BUILD does not export: refused")

    def test_option_no_link_needs(self):
        self.assertEqual(self.refusal("ld.bfd -r --wrap=malloc -o a.ko a.o"),
                         "BUILD line 4 passes ld the option '--wrap=malloc', which no module "
                         "link needs: refused")

    def test_output_outside_bits(self):
        self.assertEqual(self.refusal("ld.bfd -r -o ../../x.ko a.o"),
                         "BUILD line 4 names '../../x.ko', a path outside bits/: refused")

    def test_absolute_input(self):
        self.assertEqual(self.refusal("ld.bfd -r -o a.ko /etc/passwd"),
                         "BUILD line 4 names '/etc/passwd', a path outside bits/: refused")

    def test_linker_script_through_link(self):
        os.symlink("/etc", os.path.join(self.bits, "etc"))
        self.assertEqual(self.refusal("ld.bfd -r -T etc/passwd -o a.ko a.o"),
                         "BUILD line 4 names 'etc/passwd', which resolves outside bits/: "
                         "refused")

    def test_response_file_object_outside(self):
        self.write("bits/nvidia.mod", "nv.o ../../../secret.o\n")
        self.assertEqual(self.refusal("ld.bfd -r -o nvidia.o @nvidia.mod"),
                         "BUILD line 4 (in nvidia.mod) names '../../../secret.o', a path "
                         "outside bits/: refused")

    def test_command_substitution(self):
        self.assertEqual(self.refusal("ld.bfd -r -o a.ko `id`.o"),
                         "BUILD line 4 has '`id`.o': refused")

    def test_not_a_link(self):
        self.assertEqual(self.refusal("ld.bfd -r a.o"),
                         "BUILD line 4 is not a module link (no -o and inputs): refused")
        self.assertEqual(self.refusal("ld.bfd -r -o a.ko"),
                         "BUILD line 4 is not a module link (no -o and inputs): refused")


BUILD = """[ "$1" = "unsigned" ] && { signed_only=:; shift; }
[ "$1" = "nocheck" ] && { check_only=:; shift; }
export ELF_PACKAGE_METADATA='{"type":"deb","os":"ubuntu"}'
/usr/bin/ld.bfd -r -m elf_x86_64 \\
  -o nvidia.o @nvidia.mod
""" + ("/usr/bin/ld.bfd -r -m elf_x86_64 --package-metadata=$ELF_PACKAGE_METADATA"
       " -T scripts/module.lds -o nvidia.ko nvidia.o nvidia.mod.o; true\n") + """\
$check_only sha256sum -c SHA256SUMS || exit 1
$signed_only cat 'nvidia.ko' 'nvidia.ko.sig' >'../nvidia.ko'
$signed_only rm -f 'nvidia.ko'
"""


class ParseBuild(Case):
    def setUp(self):
        super().setUp()
        self.bits = self.path("bits")
        self.write("bits/nvidia.mod", "nv.o\n")

    def test_canonical_build(self):
        self.write("bits/BUILD", BUILD)
        env, links, kos = ubuntu.parse_build(self.bits)
        self.assertEqual(env, {"ELF_PACKAGE_METADATA": '{"type":"deb","os":"ubuntu"}'})
        self.assertEqual(links, [
            ["ld.bfd", "-r", "-m", "elf_x86_64", "-o", "nvidia.o", "@nvidia.mod"],
            ["ld.bfd", "-r", "-m", "elf_x86_64",
             '--package-metadata={"type":"deb","os":"ubuntu"}', "-T", "scripts/module.lds",
             "-o", "nvidia.ko", "nvidia.o", "nvidia.mod.o"]])
        self.assertEqual(kos, ["nvidia"])

    def test_other_command(self):
        self.write("bits/BUILD", BUILD.replace("$check_only", "rm -rf /tmp/x\n$check_only"))
        self.assertEqual(
            self.refused(ubuntu.parse_build, self.bits),
            "BUILD line 7 of %s runs 'rm -rf /tmp/x': only its ld.bfd links, the SHA256SUMS "
            "check and the signature attach are carried out here, so the package is "
            "refused" % self.path("bits/BUILD"))

    def test_shell_after_link(self):
        # Numbered by the file's lines: line 4 continues on line 5.
        self.write("bits/BUILD", BUILD.replace("; true", "; curl x | sh"))
        self.assertIn("BUILD line 6 of ", self.refused(ubuntu.parse_build, self.bits))

    def test_no_signature_attach(self):
        self.write("bits/BUILD", BUILD.replace("$signed_only cat", "# cat"))
        self.assertEqual(self.refused(ubuntu.parse_build, self.bits),
                         "%s has no signature attach lines: not the BUILD of a "
                         "linux-objects-nvidia package" % self.path("bits/BUILD"))


class ReadSums(Case):
    def test_binary_and_text_lines(self):
        p = self.write("SHA256SUMS", "%s *nvidia.ko\n%s  nvidia-drm.ko\n" % (SHA, SHA[::-1]))
        self.assertEqual(ubuntu.read_sums(p), {"nvidia.ko": SHA, "nvidia-drm.ko": SHA[::-1]})

    def test_not_sha256sum(self):
        p = self.write("SHA256SUMS", "%s *nvidia.ko\n%s nvidia.ko\n" % (SHA, SHA[:40]))
        self.assertEqual(self.refused(ubuntu.read_sums, p),
                         "%s has a line that is not sha256sum's: '%s nvidia.ko\\n'" % (
                             p, SHA[:40]))

    def test_uppercase_digest(self):
        p = self.write("SHA256SUMS", "%s *nvidia.ko\n" % SHA.upper())
        self.assertIn("has a line that is not sha256sum's", self.refused(ubuntu.read_sums, p))

    def test_missing(self):
        p = self.path("SHA256SUMS")
        self.assertEqual(self.refused(ubuntu.read_sums, p),
                         "no %s: the linux-objects-nvidia package is incomplete" % p)


def signature(pkcs7_len, announced=None):
    """sign-file's trailer: the PKCS#7 bytes, struct module_signature (id_type 2 = PKCS#7,
    the length big-endian in its last 4 bytes), the magic."""
    info = bytes([0, 0, 2, 0, 0, 0, 0, 0]) + (announced or pkcs7_len).to_bytes(4, "big")
    return b"\x30" * pkcs7_len + info + SIG_MAGIC


class SigFile(Case):
    def test_one_signature(self):
        ubuntu.check_sig_file("nvidia", signature(300), "bits")

    def test_announces_another_length(self):
        self.assertEqual(self.refused(ubuntu.check_sig_file, "nvidia", signature(300, 200),
                                      "bits"),
                         "nvidia.ko.sig in bits is %d bytes but announces a 200-byte PKCS#7 "
                         "signature: not one appended signature" % len(signature(300)))

    def test_no_trailer(self):
        self.assertIn("is not a module signature",
                      self.refused(ubuntu.check_sig_file, "nvidia", b"\x30" * 300, "bits"))


KREL, KVER = "6.8.0-86-generic", "6.8.0-86.87"
MODULES_PKG = "linux-modules-nvidia-535-server-" + KREL
OBJECTS_PKG = "linux-objects-nvidia-535-server-" + KREL
SIGS_PKG = "linux-signatures-nvidia-" + KREL
# A Depends of the form of Canonical's linux-modules-nvidia-BRANCH-R: the kernel image, the
# objects and signatures pinned to the package's own version, the user space's common part.
DEPENDS = ("debconf (>= 0.5) | debconf-2.0, linux-image-%s | linux-image-unsigned-%s,\n "
           "%s (= %s), %s (= %s), nvidia-kernel-common-535-server (<= 535.274.02-1)" % (
               KREL, KREL, OBJECTS_PKG, KVER, SIGS_PKG, KVER))


class Packages(Case):
    def deb(self, name, version, depends=None):
        """A .deb of no files whose control has NAME, VERSION (and DEPENDS)."""
        root = self.path("root-" + name)
        ctl = "Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: stand-in\n" % (
            name, version)
        ctl += ("Depends: %s\n" % depends if depends else "") + "Description: stand-in\n"
        self.write("root-%s/DEBIAN/control" % name, ctl)
        out = self.path("%s_%s_amd64.deb" % (name, version))
        subprocess.run(["dpkg-deb", "--build", root, out], check=True, capture_output=True)
        return out

    def controls(self, *debs):
        return {d: ubuntu.deb_control(d) for d in debs}

    def test_control_continuation(self):
        f = ubuntu.deb_control(self.deb(MODULES_PKG, KVER, DEPENDS))
        self.assertEqual((f["Package"], f["Version"]), (MODULES_PKG, KVER))
        self.assertIn("%s (= %s)" % (OBJECTS_PKG, KVER), f["Depends"])

    def test_not_a_deb(self):
        p = self.write("x.deb", "not an archive\n")
        msg = self.refused(ubuntu.deb_control, p)
        self.assertTrue(msg.startswith("--ubuntu-modules-deb %s is not a .deb dpkg-deb can "
                                       "read (dpkg-deb" % p), msg)
        self.assertNotIn("\n", msg)

    def test_pins(self):
        self.assertEqual(ubuntu.pinned({"Depends": DEPENDS.replace("\n", "")}),
                         {OBJECTS_PKG: KVER, SIGS_PKG: KVER})
        # An alternative pins nothing; neither does a version range.
        self.assertEqual(ubuntu.pinned({"Depends": "%s (= 1) | x, %s (>= 1)" % (
            OBJECTS_PKG, SIGS_PKG)}), {})

    def test_modules_package_alone(self):
        ctl = self.controls(self.deb(MODULES_PKG, KVER, DEPENDS))
        self.assertEqual(
            self.refused(ubuntu.check_pins, ctl),
            "%s %s depends on %s (= %s) and %s (= %s): add them to --ubuntu-modules-deb "
            "(apt-get download %s=%s %s=%s)" % (
                MODULES_PKG, KVER, OBJECTS_PKG, KVER, SIGS_PKG, KVER, OBJECTS_PKG, KVER,
                SIGS_PKG, KVER))

    def test_objects_of_another_version(self):
        other = "6.8.0-86.87+1"
        objects = self.deb(OBJECTS_PKG, other)
        ctl = self.controls(self.deb(MODULES_PKG, KVER, DEPENDS), objects,
                            self.deb(SIGS_PKG, KVER))
        self.assertEqual(
            self.refused(ubuntu.check_pins, ctl),
            "%s is %s %s, but %s %s depends on %s (= %s): take that version (apt-get "
            "download %s=%s)" % (os.path.basename(objects), OBJECTS_PKG, other, MODULES_PKG,
                                 KVER, OBJECTS_PKG, KVER, OBJECTS_PKG, KVER))

    def test_signatures_of_another_version(self):
        sigs = self.deb(SIGS_PKG, "6.8.0-85.86")
        ctl = self.controls(self.deb(MODULES_PKG, KVER, DEPENDS), self.deb(OBJECTS_PKG, KVER),
                            sigs)
        self.assertIn("is %s 6.8.0-85.86, but %s %s depends on %s (= %s)" % (
            SIGS_PKG, MODULES_PKG, KVER, SIGS_PKG, KVER), self.refused(ubuntu.check_pins, ctl))

    def test_one_version(self):
        ubuntu.check_pins(self.controls(self.deb(MODULES_PKG, KVER, DEPENDS),
                                        self.deb(OBJECTS_PKG, KVER), self.deb(SIGS_PKG, KVER)))

    def check(self, arch, flavour, *debs):
        """Ubuntu.check of a build for ARCH and FLAVOUR from the packages DEBS."""
        args = types.SimpleNamespace(ubuntu_modules_deb=list(debs), userspace_debs=None)
        b = self.record(arch=arch, prebuilt=False,
                        flavours=[types.SimpleNamespace(name=flavour)])
        return ubuntu.Ubuntu(args).check(b)

    def test_arm64_proprietary_has_no_signatures(self):
        # Canonical publishes no linux-signatures-nvidia for arm64: said plainly, before
        # the pins ask for the package that does not exist.
        debs = (self.deb(MODULES_PKG, KVER, DEPENDS), self.deb(OBJECTS_PKG, KVER))
        self.assertEqual(
            self.refused(self.check, "aarch64", "proprietary", *debs),
            "%s is the proprietary flavour's late link, and Canonical publishes no "
            "linux-signatures-nvidia for arm64 (NVIDIA's gpu-driver-container installs it on "
            "amd64 only): its modules would carry no Canonical signature. On arm64 take the "
            "open flavour (linux-modules-nvidia-BRANCH-open-R, Canonical-signed), or build "
            "from the driver's sources with your key (no --ubuntu-modules-deb)" % OBJECTS_PKG)
        # On amd64 the same packages are asked for their signatures (the pins).
        self.assertIn("depends on %s (= %s): add it" % (SIGS_PKG, KVER),
                      self.refused(self.check, "x86_64", "proprietary", *debs))

    def test_arm64_open_and_given_signatures(self):
        self.check("aarch64", "open", self.deb("linux-modules-nvidia-535-server-open-" + KREL,
                                               KVER))
        self.check("aarch64", "proprietary", self.deb(MODULES_PKG, KVER, DEPENDS),
                   self.deb(OBJECTS_PKG, KVER), self.deb(SIGS_PKG, KVER))

    def test_flavour_of_the_packages(self):
        def flavour(*debs):
            args = types.SimpleNamespace(ubuntu_modules_deb=list(debs), userspace_debs=None)
            return ubuntu.Ubuntu(args).default_flavour()
        self.assertEqual(flavour(self.deb("linux-modules-nvidia-535-server-open-" + KREL,
                                          KVER)), "open")
        self.assertEqual(flavour(self.deb(MODULES_PKG, KVER), self.deb(SIGS_PKG, KVER)),
                         "proprietary")
        self.assertEqual(flavour(self.deb(SIGS_PKG, KVER)), "proprietary")


if __name__ == "__main__":
    unittest.main()
