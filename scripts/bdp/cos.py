# SPDX-License-Identifier: Apache-2.0
"""COS (Container-Optimized OS, docs/platforms/cos.md): the kernel's build tree from the
COS build's kernel-headers.tgz, its clang toolchain (toolchain.tar.xz, toolchain_env), and
Google's detached signatures attached to the modules as linked here."""
import glob
import hashlib
import os
import re
import shutil
import subprocess

from bdp import signing
from bdp.base import Platform
from bdp.common import (SIG_MAGIC, check_bundle_members, check_machine, die, inside, run,
                        say, unpack_confined)


class Cos(Platform):
    name = "cos"
    title = "COS (docs/platforms/cos.md)"

    @classmethod
    def add_options(cls, group):
        return [
            group.add_argument("--kernel-headers", metavar="DIR_OR_TGZ", help="COS: the "
                               "build's kernel-headers.tgz (usr/src/linux-headers-R/), instead "
                               "of --headers"),
            group.add_argument("--toolchain", metavar="DIR", help="COS: toolchain.tar.xz "
                               "unpacked; its bin/ goes first in PATH, its toolchain_env names "
                               "CC"),
            group.add_argument("--toolchain-env", metavar="FILE", help="COS: the build's "
                               "toolchain_env (CC=, CXX=)"),
            group.add_argument("--detached-signatures", metavar="DIR_OR_TGZ", help="COS: "
                               "Google's gpu-driver-signature.tar.gz: attach NAME.ko.sig to the "
                               "modules linked here"),
        ]

    def __init__(self, args):
        self.kernel_headers = args.kernel_headers
        self.toolchain_dir = args.toolchain
        self.toolchain_env = args.toolchain_env
        self.detached_signatures = args.detached_signatures

    def brings_signatures(self):
        return bool(self.detached_signatures)

    def check_signatures(self, b):
        if b.sign_key or b.sign_cert:
            die("--detached-signatures attaches the vendor's signatures: drop --sign-key and "
                "--sign-cert")
        if b.keep_signatures:
            die("--detached-signatures attaches Google's signatures to the modules linked "
                "here, --keep-signatures keeps those prebuilt modules carry: give one")

    def headers(self, b):
        return kernel_headers(b, self.kernel_headers) if self.kernel_headers else b.headers

    def toolchain(self, b):
        """--toolchain DIR (its bin/ first in PATH, its toolchain_env) and --toolchain-env
        FILE name the compiler, unless --cc does."""
        cc, bindir = b.cc, None
        if self.toolchain_dir:
            bindir = os.path.join(os.path.realpath(self.toolchain_dir), "bin")
            if not os.path.isdir(bindir):
                die("%s has no bin/: pass the directory COS's toolchain.tar.xz unpacks to" %
                    self.toolchain_dir)
            tenv = self.toolchain_env or os.path.join(self.toolchain_dir, "toolchain_env")
            if os.path.isfile(tenv):
                cc = cc or read_toolchain_env(tenv)["CC"]
        elif self.toolchain_env:
            cc = cc or read_toolchain_env(self.toolchain_env)["CC"]
        return cc, bindir

    def sign(self, b, fl, mods, version, tree, outdir):
        if not self.detached_signatures:
            return super().sign(b, fl, mods, version, tree, outdir)
        say("attaching detached signatures to %d modules (%s)" % (
            len(mods), ", ".join(sorted(mods))))
        kos, cert = attach_detached_signatures(b, fl, self.detached_signatures, mods, version,
                                               tree.sign_file, outdir)
        return kos, signing.verified_signer(b, kos, [cert], "--detached-signatures")

    def build_info(self, b):
        if self.detached_signatures:
            return {"module_signatures": "detached, attached to this link"}
        return {}


def kernel_headers(b, given_path):
    """--kernel-headers GIVEN_PATH: a COS build's kernel-headers.tgz (or the directory it
    unpacks to), which holds usr/src/linux-headers-RELEASE/, one tree. Returns that tree."""
    given = os.path.realpath(given_path)
    if os.path.isfile(given):
        root = os.path.join(b.work, "kernel-headers")
        unpack_confined.unpack_tar(given, root, given_path)
    elif os.path.isdir(given):
        root = given
    else:
        die("%s does not exist: pass the COS build's kernel-headers.tgz or the directory it "
            "unpacks to" % given_path)
    for tree in (os.path.join(root, "usr/src/linux-headers-" + b.kernel), root):
        if os.path.isfile(os.path.join(tree, "Makefile")):
            return tree
    have = [os.path.basename(p) for p in glob.glob(os.path.join(root, "usr/src/linux-headers-*"))]
    die("%s has no usr/src/linux-headers-%s (it has: %s): take kernel-headers.tgz of the COS "
        "build whose kernel is %s" % (given_path, b.kernel, ", ".join(have) or
                                      "nothing", b.kernel))


def read_toolchain_env(path):
    """COS's toolchain_env, which GKE's installer sources: CC=... and CXX=... lines."""
    vals = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^\s*(?:export\s+)?(CC|CXX)=[\"']?([^\"'#]*?)[\"']?\s*(?:#.*)?$", line)
            if m:
                vals[m.group(1)] = m.group(2)
    if "CC" not in vals:
        die("%s sets no CC: not a COS toolchain_env (pass --cc)" % path)
    return vals


def detached_bundle(b, bundle):
    """--detached-signatures: Google's gpu-driver-signature.tar.gz (or its directory):
    NAME.ko.sig per module, and gpu-driver-cert.pem (or .der), the certificate they verify
    with. Returns (directory, certificate)."""
    given = os.path.realpath(bundle)
    if os.path.isfile(given):
        d = os.path.join(b.work, "detached-signatures")
        check_bundle_members(bundle, given)
        unpack_confined.unpack_tar(given, d, bundle)
    elif os.path.isdir(given):
        d = given
    else:
        die("%s does not exist: pass gpu-driver-signature.tar.gz or its directory" %
            bundle)
    cert = b.vendor_cert[0] if b.vendor_cert else None
    for c in ([cert] if cert else [os.path.join(d, "gpu-driver-cert.pem"),
                                   os.path.join(d, "gpu-driver-cert.der")]):
        if os.path.isfile(c):
            return d, c if cert else inside(d, c, bundle)
    die("%s has no gpu-driver-cert.pem or .der: the certificate the signatures verify with "
        "is needed" % bundle)


def der_extent(data):
    """The length of the DER SEQUENCE that DATA begins with (header included), or None when
    DATA does not begin with one."""
    if len(data) < 2 or data[0] != 0x30:
        return None
    if data[1] < 0x80:
        return 2 + data[1]
    n = data[1] & 0x7f
    if n == 0 or n > 4 or len(data) < 2 + n:
        return None
    return 2 + n + int.from_bytes(data[2:2 + n], "big")


def cms_signer(sig):
    """Who signed the detached signature SIG, as its SignerInfo names them ("issuer ...,
    serial ..." or "key id ..."), for a message; "unknown" when openssl does not say."""
    out = subprocess.run(["openssl", "cms", "-cmsout", "-print", "-inform", "DER", "-in", sig],
                         capture_output=True, text=True).stdout
    issuer = re.search(r"^\s*issuer: (.*)$", out, re.M)
    serial = re.search(r"^\s*serialNumber: (.*)$", out, re.M)
    if issuer and serial:
        return "issuer '%s', serial %s" % (issuer.group(1).strip(), serial.group(1).strip())
    # The key id as openssl dumps it: "0000 - 36 ee ... c3-6f ...   6...o" lines under it.
    skid = re.search(r"d\.subjectKeyIdentifier:[ \t]*\n((?:[ \t]+[0-9a-f]{4} - .*\n?)+)", out)
    key = []
    for line in skid.group(1).splitlines() if skid else []:
        dump = re.match(r"\s*[0-9a-f]{4} - ((?:[0-9a-f]{2}[ -])*[0-9a-f]{2})", line)
        key += re.split(r"[ -]", dump.group(1)) if dump else []
    return "key id " + ":".join(key) if key else "unknown"


def openssl_cms_verify(sig, content, cert, extra=()):
    return subprocess.run(["openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", sig,
                           "-content", content, "-certfile", cert, "-nointern", "-noverify",
                           "-purpose", "any", "-out", os.devnull] + list(extra),
                          capture_output=True, text=True).returncode == 0


def check_detached_signature(bundle, name, path, digest, sig, cert):
    """Refuses a detached signature that cannot be attached to NAME.ko as linked (PATH, whose
    SHA-256 is DIGEST), each cause its own: not a signature, truncated, more than one
    message, made with another key than CERT's, made for other bytes (the link differs)."""
    with open(sig, "rb") as f:
        data = f.read()
    whole = der_extent(data)
    if whole is None:
        die("%s.ko.sig in %s is not a detached signature (%d bytes, not a DER PKCS#7 "
            "message): take gpu-driver-signature.tar.gz of this COS build and driver again" % (
                name, bundle, len(data)))
    if whole > len(data):
        die("%s.ko.sig in %s is truncated (%d of the %d bytes its header announces): take "
            "gpu-driver-signature.tar.gz again (a download cut short?)" % (
                name, bundle, len(data), whole))
    if whole < len(data):
        die("%s.ko.sig in %s has %d bytes after its signature (two signatures, or another "
            "file, in one): take gpu-driver-signature.tar.gz as Google publishes it" % (
                name, bundle, len(data) - whole))
    if subprocess.run(["openssl", "cms", "-cmsout", "-noout", "-inform", "DER", "-in", sig],
                      capture_output=True).returncode != 0:
        die("%s.ko.sig in %s is damaged: not a PKCS#7 message openssl can read; take "
            "gpu-driver-signature.tar.gz again" % (name, bundle))
    # The signer and the structure alone (-nosigs): a signature of another key is not a
    # link that differs.
    if not openssl_cms_verify(sig, path, cert, ["-nosigs"]):
        die("%s.ko.sig in %s was not made with the key of %s (it names the signer %s): take "
            "the certificate that comes with this bundle (gpu-driver-cert.pem), or the bundle "
            "of this COS build and driver" % (name, bundle, cert, cms_signer(sig)))
    if not openssl_cms_verify(sig, path, cert):
        die("%s.ko as linked here (sha256 %s) is not the module %s.ko.sig was made for: "
            "the link differs; link from the same inputs (driver, kernel headers, "
            "toolchain, patches, --work directory) or take Google's precompiled signed "
            "modules instead" % (name, digest, name))


def attach_detached_signatures(b, fl, bundle, mods, version, sign_file, outdir):
    """Attaches Google's detached signatures to the modules as linked here, as GKE's
    installer does (sign-file -s): only to a module whose bytes are the ones signed (the
    signature is checked against them first), never stripped after."""
    sigdir, cert = detached_bundle(b, bundle)
    os.makedirs(outdir, exist_ok=True)
    for need in ("nvidia", "nvidia-uvm"):
        if need not in mods:
            die("no %s.ko among the modules (%s)" % (need, ", ".join(sorted(mods)) or "none"))
    for name, path in sorted(mods.items()):
        sig = os.path.join(sigdir, name + ".ko.sig")
        if not os.path.isfile(sig):
            die("%s has no %s.ko.sig: the signatures are for other modules (take the bundle "
                "of this COS build and driver)" % (bundle, name))
        sig = inside(sigdir, sig, bundle)
        with open(path, "rb") as f:
            data = f.read()
        if data.endswith(SIG_MAGIC):
            die("%s.ko already carries a signature: a detached one attaches to the module as "
                "linked, unsigned" % name)
        check_machine(b, path, name + ".ko")
        digest = hashlib.sha256(data).hexdigest()
        check_detached_signature(bundle, name, path, digest, sig, cert)
        dst = os.path.join(outdir, name + ".ko")
        shutil.copyfile(path, dst)
        run([sign_file, "-s", sig, "sha256", cert, dst])
        say("  %s: Google's detached signature attached (link sha256 %s)" % (name, digest))
        signing.check_modinfo(b, fl, name, dst, version)
    files = sorted(glob.glob(os.path.join(outdir, "*.ko")))
    run([b.installer, "verify-module", "--kernel-release", b.kernel, "--module-cert",
         cert] + files)
    return files, cert
