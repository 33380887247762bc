# SPDX-License-Identifier: Apache-2.0
"""COS's parsers (scripts/bdp/cos.py): who signed a detached signature (cms_signer, from
openssl's print of the CMS message), the length a DER message announces (der_extent) and
COS's toolchain_env (read_toolchain_env). The signatures are made here with openssl."""
import subprocess
import unittest

from bdp_test import Case

from bdp import cos

# 20 bytes, as sign-file's keys have (openssl prints a shorter one in decimal).
SERIAL = "0x1234567890abcdef1234567890abcdef12345678"


class CmsSigner(Case):
    def setUp(self):
        super().setUp()
        self.key, self.cert = self.path("key.pem"), self.path("cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", self.key, "-out",
                        self.cert, "-subj", "/O=bdp tests/CN=Test signer", "-days", "1",
                        "-set_serial", SERIAL], check=True, capture_output=True)
        self.content = self.write("nvidia.ko", "the module as linked\n")

    def sign(self, *extra):
        """A detached signature of the content, as sign-file -d makes one (no attributes,
        no certificate), SignerInfo naming the signer as EXTRA asks."""
        sig = self.path("nvidia.ko.sig")
        subprocess.run(["openssl", "cms", "-sign", "-binary", "-in", self.content, "-signer",
                        self.cert, "-inkey", self.key, "-outform", "DER", "-out", sig,
                        "-nocerts", "-noattr"] + list(extra), check=True, capture_output=True)
        return sig

    def test_issuer_and_serial(self):
        self.assertEqual(cos.cms_signer(self.sign()),
                         "issuer 'O=bdp tests, CN=Test signer', serial 0x" + SERIAL[2:].upper())

    def test_key_id(self):
        skid = subprocess.run(["openssl", "x509", "-in", self.cert, "-noout", "-ext",
                               "subjectKeyIdentifier"], check=True, capture_output=True,
                              text=True).stdout.split()[-1].lower()
        self.assertEqual(cos.cms_signer(self.sign("-keyid")), "key id " + skid)

    def test_not_a_signature(self):
        self.assertEqual(cos.cms_signer(self.content), "unknown")


class DerExtent(unittest.TestCase):
    def test_lengths(self):
        self.assertEqual(cos.der_extent(b"\x30\x05abcde"), 7)
        self.assertEqual(cos.der_extent(b"\x30\x82\x01\x00" + b"x" * 10), 4 + 256)
        self.assertEqual(cos.der_extent(b"\x30\x81\x80"), 3 + 128)

    def test_not_a_sequence(self):
        for data in (b"", b"\x30", b"\x31\x05abcde", b"\x30\x80", b"\x30\x85\x01\x02\x03\x04\x05",
                     b"\x30\x82\x01"):
            self.assertIsNone(cos.der_extent(data), data)


class ToolchainEnv(Case):
    def test_cc_and_cxx(self):
        p = self.write("toolchain_env", "# COS\nexport CC=\"x86_64-cros-linux-gnu-clang\"\n"
                       "CXX='x86_64-cros-linux-gnu-clang++'  # C++\n")
        self.assertEqual(cos.read_toolchain_env(p), {"CC": "x86_64-cros-linux-gnu-clang",
                                                     "CXX": "x86_64-cros-linux-gnu-clang++"})

    def test_no_cc(self):
        p = self.write("toolchain_env", "CXX=clang++\n")
        self.assertEqual(self.refused(cos.read_toolchain_env, p),
                         "%s sets no CC: not a COS toolchain_env (pass --cc)" % p)




class Signatures(Case):
    def platform(self):
        p = cos.Cos.__new__(cos.Cos)
        p.detached_signatures = self.path("gpu-driver-signature.tar.gz")
        return p

    def test_detached_and_kept(self):
        """Google's signatures attached and a prebuilt module's kept: one or the other."""
        b = self.record(sign_key=None, sign_cert=None, keep_signatures=True)
        self.assertEqual(self.refused(self.platform().check_signatures, b),
                         "--detached-signatures attaches Google's signatures to the modules "
                         "linked here, --keep-signatures keeps those prebuilt modules carry: "
                         "give one")

    def test_detached_alone(self):
        b = self.record(sign_key=None, sign_cert=None, keep_signatures=False)
        self.assertIsNone(self.platform().check_signatures(b))


if __name__ == "__main__":
    unittest.main()
