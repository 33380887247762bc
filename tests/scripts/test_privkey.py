# SPDX-License-Identifier: Apache-2.0
"""Unit tests of scripts/privkey.py, the keys the repository tools sign with: a file or a
pkcs11: URI (RFC 7512). The URI's attributes, the PIN's sources and its absence from every
message, command line and child environment, and libp11's failures read back as a cause
and a fix (what openssl printed, recorded from Debian 12's libengine-pkcs11-openssl 0.4.12
and SoftHSM2 2.6.1). A stand-in openssl on PATH shows what the real one would get."""
import os
import shutil
import stat
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
sys.path.insert(0, os.path.realpath(SCRIPTS))

import privkey  # noqa: E402

PIN = "Unit-pin-4821"
# What openssl and libp11 print, as they printed it (t_pkcs11's token).
WRONG_PIN = b"""Engine "pkcs11" set.
Login failed
Login to token failed, returning NULL...
The private key was not found at: pkcs11:token=nvtest;object=repokey;type=private
4057:error:418000A0:PKCS#11 module:ERR_CKR_error:PIN incorrect:p11_slot.c:208:
"""
NO_OBJECT = b"""Engine "pkcs11" set.
The private key was not found at: pkcs11:token=nvtest;object=nokey;type=private
4007:error:40800065:pkcs11 engine:ERR_ENG_error:object not found:eng_back.c:887:
"""
NO_MODULE = b"""Engine "pkcs11" set.
/nonexistent.so: cannot open shared object file: No such file or directory
Unable to load module /nonexistent.so
4057:error:41000401:libp11:ERR_P11_error:Unable to load PKCS#11 module:p11_load.c:77:
"""
MISMATCH = b"""Engine "pkcs11" set.
4067:error:05800073:x509 certificate routines:X509_check_private_key:key type mismatch:x.c:406:
4067:error:17000088:CMS routines:CMS_add1_signer:private key does not match certificate:x:3:
"""
NO_ENGINE = b"""Invalid engine "pkcs11"
4087:error:12800067:DSO support routines:dlfcn_load:could not load the shared library:x:115:
4087:error:13000084:engine routines:dynamic_load:dso not found:../crypto/engine/eng_dyn.c:433:
4087:error:13000074:engine routines:ENGINE_by_id:no such engine:eng_list.c:428:id=pkcs11
No engine specified for loading key
"""
# A stand-in openssl: logs its arguments and environment, reads the PIN from -passin fd:N
# and prints it back in its error (as a careless module might), then crashes as openssl
# does after libp11's failed login.
FAKE_OPENSSL = """#!/bin/sh
{ echo "ARGV $*"; env; } >"$FAKE_LOG"
for a in "$@"; do case $a in fd:*) read -r pin <&${a#fd:} ;; esac; done
echo "4057:error:0:fake:fake:the token said no to ($pin):p11_slot.c:208:" >&2
exit 139
"""


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test-privkey-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.addCleanup(setattr, privkey, "ENV_PIN", privkey.ENV_PIN)
        privkey.ENV_PIN = None
        self.pin = self.write("pin", PIN + "\n")

    def write(self, name, text):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def refused(self, value, kind=privkey.Refused):
        with self.assertRaises(kind) as cm:
            privkey.parse(value, "--key")
        self.assertNotIn(PIN, str(cm.exception))
        return str(cm.exception)


class Parse(Case):
    def test_file(self):
        key = privkey.parse(self.pin, "--key")
        self.assertFalse(key.is_token)
        self.assertEqual(self.refused("/nonexistent/key.pem"),
                         "--key /nonexistent/key.pem does not exist")

    def test_uri_parts(self):
        key = privkey.parse("pkcs11:token=a%20b;object=k;id=%01?pin-source=file:" + self.pin +
                            "&module-path=" + self.pin, "--key")
        self.assertTrue(key.is_token)
        # Only the path reaches the engine, still percent-encoded (libp11 decodes it).
        self.assertEqual(key.uri, "pkcs11:token=a%20b;object=k;id=%01")
        self.assertEqual((key.pin_file, key.module), (self.pin, self.pin))
        self.assertEqual(privkey.pin(key), PIN.encode())
        for source in ("file://" + self.pin, "file:" + self.pin):
            self.assertEqual(privkey.parse("pkcs11:object=k?pin-source=" + source,
                                           "--key").pin_file, self.pin)

    def test_pin_value_refused_and_blanked(self):
        msg = self.refused("pkcs11:token=t;object=k?pin-value=%s&module-path=/x" % PIN,
                           privkey.Usage)
        self.assertIn("pkcs11:token=t;object=k?pin-value=***&module-path=/x: pin-value puts "
                      "the PIN on the command line, where ps shows it", msg)
        self.assertEqual(privkey.shown("pkcs11:object=k;PIN-VALUE=%s?x=1" % PIN),
                         "pkcs11:object=k;PIN-VALUE=***?x=1")
        self.assertEqual(privkey.shown("/keys/pin-value=x.pem"), "/keys/pin-value=x.pem")

    def test_malformed(self):
        self.assertIn("'slot=1' is not a PKCS#11 URI path attribute",
                      self.refused("pkcs11:slot=1", privkey.Usage))
        self.assertIn("names no key", self.refused("pkcs11:?pin-source=file:/x",
                                                   privkey.Usage))
        self.assertIn("query attribute 'module-name' is not taken",
                      self.refused("pkcs11:object=k?module-name=softhsm2", privkey.Usage))
        self.assertIn("pin-source 'env:PIN' is not a file: URI",
                      self.refused("pkcs11:object=k?pin-source=env:PIN", privkey.Usage))
        self.assertIn("is not an absolute path",
                      self.refused("pkcs11:object=k?pin-source=file:pin", privkey.Usage))
        self.assertIn("module-path /nonexistent.so does not exist",
                      self.refused("pkcs11:object=k?module-path=/nonexistent.so&"
                                   "pin-source=file:" + self.pin))

    def test_pin_sources(self):
        uri = "pkcs11:object=k?pin-source=file:"
        self.assertEqual(privkey.pin(privkey.parse(uri + self.write("crlf", PIN + "\r\n"),
                                                   "--key")), PIN.encode())
        for name, text in (("empty", "\n"), ("two", PIN + "\n" + PIN + "\n")):
            self.assertIn("is empty, longer than 256 bytes or more than one line",
                          self.refused(uri + self.write(name, text)))
        self.assertIn("cannot be read (No such file or directory)",
                      self.refused(uri + "/nonexistent/pin"))
        self.assertIn("no PIN for the token: add pin-source=file:PATH to the URI",
                      self.refused("pkcs11:object=k"))
        privkey.ENV_PIN = PIN
        self.assertEqual(privkey.pin(privkey.parse("pkcs11:object=k", "--key")), PIN.encode())
        self.assertEqual(privkey.child_env()[privkey.PIN_ENV], PIN)

    def test_env_pin_out_of_the_environment(self):
        # Taken out as the module loads: no program this one runs inherits it.
        self.assertNotIn(privkey.PIN_ENV, os.environ)


class Openssl(Case):
    def test_with_key(self):
        self.assertEqual(privkey.with_key(["dgst", privkey.KEY, "-out", "o", "f"], ["-sign", "k"]),
                         ["dgst", "-sign", "k", "-out", "o", "f"])

    def test_causes(self):
        key = privkey.parse("pkcs11:token=nvtest;object=k?pin-source=file:" + self.pin, "--key")
        for err, want in ((WRONG_PIN, "the token refused the PIN (CKR_PIN_INCORRECT): put the "
                           "token's user PIN in pin-source " + self.pin),
                          (NO_OBJECT, "no private key on the token(s) of p11-kit's proxy"),
                          (NO_MODULE, "the PKCS#11 module p11-kit's proxy (p11-kit "
                           "list-modules) does not load"),
                          (MISMATCH, "the token's key is not the key of the certificate"),
                          (NO_ENGINE, "OpenSSL's pkcs11 engine is not installed: apt-get "
                           "install libengine-pkcs11-openssl"),
                          (b"x:error:1:a:b:some reason:c:1:\n", "some reason")):
            self.assertIn(want, privkey.token_cause(key, err))

    def test_pin_goes_through_a_pipe_only(self):
        bin_dir = os.path.join(self.dir, "bin")
        os.mkdir(bin_dir)
        fake = os.path.join(bin_dir, "openssl")
        with open(fake, "w") as f:
            f.write(FAKE_OPENSSL)
        os.chmod(fake, stat.S_IRWXU)
        log = os.path.join(self.dir, "log")
        env = {"PATH": bin_dir + ":" + os.environ["PATH"], "FAKE_LOG": log}
        old = dict(os.environ)
        self.addCleanup(os.environ.update, old)
        os.environ.update(env)
        privkey.ENV_PIN = PIN
        key = privkey.parse("pkcs11:token=t;object=k?module-path=" + self.pin, "--key")
        with self.assertRaises(privkey.Refused) as cm:
            privkey.sign_digest(key, self.pin, os.path.join(self.dir, "sig"))
        msg = str(cm.exception)
        self.assertNotIn(PIN, msg)
        self.assertEqual("signing %s failed with --key pkcs11:token=t;object=k?module-path=%s: "
                         "the token said no to (***)" % (self.pin, self.pin), msg)
        with open(log) as f:
            seen = f.read()
        self.assertNotIn(PIN, seen)
        self.assertIn("-engine pkcs11 -keyform engine -sign pkcs11:token=t;object=k -passin fd:",
                      seen)
        self.assertIn("PKCS11_MODULE_PATH=" + self.pin, seen)


if __name__ == "__main__":
    unittest.main()
