# SPDX-License-Identifier: Apache-2.0
"""Canonical's late link, parsed (scripts/bdp/ubuntu.py): the ld command-line parser
(ld_argv), bits/BUILD (parse_build), SHA256SUMS (read_sums) and a .ko.sig
(check_sig_file). Each is fed good lines and every kind of line it must refuse."""
import os
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


if __name__ == "__main__":
    unittest.main()
