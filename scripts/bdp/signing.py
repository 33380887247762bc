# SPDX-License-Identifier: Apache-2.0
"""How a package's modules are signed, the ways every platform shares: with the operator's
key (--sign-key, --sign-cert: any earlier signature replaced), or kept byte for byte as the
vendor signed them (--keep-signatures, verified with --vendor-cert). Either way the modules
are checked as a node will check them (installer verify-module) and their one signer goes
into the build record. A platform's own signatures (Canonical's, Google's detached ones)
are its module's (base.Platform.sign).

--sign-key (and --repo-key) may name a token's key by a pkcs11: URI (scripts/privkey.py):
each module's signature is then made through OpenSSL's pkcs11 engine in sign-file's form and
attached by `sign-file -s`, the PIN never on a command line or in a message."""
import glob
import json
import os
import shutil
import subprocess
import tempfile

import privkey
from bdp.common import (MODULES, NVIDIA_LICENSE, SIG_MAGIC, check_machine, die, modinfo,
                        progress, run, say, usage)


def add_arguments(ap):
    ap.add_argument("--sign-key", help="the private key that signs the modules: a PEM file "
                    "or a pkcs11: URI (pin-source=file:PATH or $%s for its PIN)" %
                    privkey.PIN_ENV)
    ap.add_argument("--sign-cert", help="its certificate, a file (PEM or DER)")
    ap.add_argument("--keep-signatures", action="store_true",
                    help="with --prebuilt-modules: keep the modules' own signatures byte for "
                    "byte (no --sign-key), verified with --vendor-cert")
    ap.add_argument("--vendor-cert", action="append", default=[], metavar="CERT",
                    help="the certificate the kept signatures must verify with, as the "
                    "node's kernel will (PEM or DER; repeatable)")
    ap.add_argument("--modules", default=",".join(MODULES), metavar="LIST",
                    help="the module names to take from --prebuilt-modules (default: %s)" %
                    ",".join(MODULES))

    ap.add_argument("--sign-file", help="the kernel's sign-file (default: found)")


def check_arguments(b):
    """The signing options of record B: the operator's key, the vendor's signatures kept,
    or the platform's own (which checks its options itself)."""
    if b.modules != MODULES and not b.prebuilt:
        die("--modules chooses among --prebuilt-modules; a build makes NVIDIA's own set")
    if b.platform.brings_signatures():
        b.platform.check_signatures(b)
        return
    if not b.keep_signatures:
        if b.vendor_cert:
            die("--vendor-cert goes with --keep-signatures, --ubuntu-modules-deb or "
                "--detached-signatures")
        if not b.sign_key or not b.sign_cert:
            die("--sign-key and --sign-cert are needed to sign the modules (or keep their "
                "own signatures with --keep-signatures --vendor-cert)")
        if privkey.is_uri(b.sign_cert):
            usage("--sign-cert %s: the certificate comes from a file (nodes get the same "
                  "file): export it from the token, e.g. pkcs11-tool --read-object --type "
                  "cert --label LABEL --output-file mod.der" % privkey.shown(b.sign_cert))
        return
    if not b.prebuilt:
        die("--keep-signatures keeps the signatures of --prebuilt-modules: give the "
            "vendor's signed modules with it")
    if not b.vendor_cert:
        die("--keep-signatures needs --vendor-cert CERT, the certificate the node's kernel "
            "trusts for these modules, to verify them with")
    if b.sign_key or b.sign_cert or b.patched:
        die("--keep-signatures keeps the vendor's signatures: drop --sign-key, --sign-cert "
            "and --patch")


def key_of(value, option):
    """The key VALUE names (a file or a pkcs11: URI), or the refusal: exit 2 for a URI that
    cannot work, 1 for a key that is not there."""
    try:
        return privkey.parse(value, option)
    except privkey.Usage as e:
        usage(str(e))
    except privkey.Refused as e:
        die(str(e))


def check_keys(b):
    """--sign-key and --repo-key, before anything is built: a file that is there, or a
    token's key that signs with its PIN (one login each), --sign-key's matching --sign-cert
    (which check_arguments and from_args found to be a file).
    A wrong PIN or a missing key fails here, not after the modules compiled."""
    keys = [key_of(b.repo_key, "--repo-key")] if b.repo_key else []
    sign_key = key_of(b.sign_key, "--sign-key") if b.sign_key else None
    if sign_key is not None and sign_key.is_token:
        with tempfile.TemporaryDirectory(prefix="bdp-key-") as d:
            probe = os.path.join(d, "probe")
            with open(probe, "wb") as f:
                f.write(b"build-driver-package: the token signs\n")
            try:
                privkey.sign_module_cms(sign_key, b.sign_cert, probe, probe + ".p7s",
                                        "a trial signature with --sign-cert %s" % b.sign_cert)
            except privkey.Refused as e:
                die(str(e))
    for k in keys:
        if k.is_token:
            try:
                privkey.public_pem(k)
            except privkey.Refused as e:
                die(str(e))


def sign_module(b, sign_file, path):
    """Signs the module at PATH with --sign-key as sign-file does: sign-file itself with a
    key file; with a token's key, the signature made through OpenSSL's engine and attached
    with `sign-file -s` (Debian 12's sign-file loads pkcs11: keys only through a provider
    Debian 12 lacks: scripts/privkey.py)."""
    key = key_of(b.sign_key, "--sign-key")
    if not key.is_token:
        run([sign_file, "sha256", b.sign_key, b.sign_cert, path])
        return
    p7s = path + ".p7s"
    try:
        privkey.sign_module_cms(key, b.sign_cert, path, p7s)
    except privkey.Refused as e:
        die(str(e))
    run([sign_file, "-s", p7s, "sha256", b.sign_cert, path])
    os.unlink(p7s)


def strip_signature(path):
    """Drops an appended signature (a distribution's or DKMS's) so ours can replace it."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.endswith(SIG_MAGIC) or len(data) < 40:
        return False
    sig_len = int.from_bytes(data[-32:-28], "big")
    end = len(data) - 40 - sig_len
    if end <= 0:
        die("%s: corrupt module signature trailer" % path)
    with open(path, "wb") as f:
        f.write(data[:end])
    return True


def prepare_modules(b, fl, mods, version, sign_file, outdir):
    """Strips MODS of flavour FL and signs them with --sign-key into OUTDIR, each checked.
    Returns (files, signer)."""
    os.makedirs(outdir, exist_ok=True)
    for need in ("nvidia", "nvidia-uvm"):
        if need not in mods and b.modules == MODULES:
            die("no %s.ko among the modules (%s)" % (need, ", ".join(sorted(mods)) or "none"))
    for i, (name, path) in enumerate(sorted(mods.items())):
        progress("stripping and signing %s.ko (%d of %d)" % (name, i + 1, len(mods)))
        dst = os.path.join(outdir, name + ".ko")
        shutil.copyfile(path, dst)
        if strip_signature(dst):
            say("  %s: its previous signature is replaced with ours" % name)
        check_machine(b, dst, name + ".ko")
        run([b.strip, "--strip-debug", dst])
        sign_module(b, sign_file, dst)
        check_modinfo(b, fl, name, dst, version)
    # The installer's own check, as a node will run it: signature against the certificate
    # and vermagic against the kernel.
    progress("checking the signed modules as a node will (verify-module)")
    files = sorted(glob.glob(os.path.join(outdir, "*.ko")))
    signer = verified_signer(b, files, [b.sign_cert], "--sign-cert")
    return files, signer


def check_modinfo(b, fl, name, path, version):
    """NAME.ko at PATH is for --kernel, of the user space's VERSION and of flavour FL."""
    vermagic = modinfo(path, "vermagic")
    if vermagic.split(" ")[0] != b.kernel:
        die("%s.ko is built for kernel %s, not %s (vermagic '%s')" % (
            name, vermagic.split(" ")[0], b.kernel, vermagic))
    mv = modinfo(path, "version")
    if mv and mv != version:
        die("%s.ko is driver %s but the user space is %s: give one version's files" % (
            name, mv, version))
    check_license(b, fl, name, path)


def check_license(b, fl, name, path):
    """nvidia.ko names its flavour in its license: the index must not call the proprietary
    module open or the other way round (modules with other licenses, stand-ins, pass). The
    fix named is one the command line takes: with one flavour built, building it as the
    flavour the module is; with two, each flavour's own --prebuilt-modules."""
    if name != "nvidia":
        return
    lic = modinfo(path, "license")
    other = [f for f, l in NVIDIA_LICENSE.items() if l == lic and f != fl.name]
    if not other:
        return
    if len(b.flavours) == 1:
        fix = "build them as --flavour %s" % other[0]
    else:
        fix = "give each flavour its own modules (--prebuilt-modules %s=DIR)" % fl.name
    die("%s.ko carries license '%s': it is the %s flavour's module, not the %s one; %s" % (
        name, lic, other[0], fl.name, fix))


def verified_signer(b, files, certs, option):
    """Checks FILES as a node will (installer verify-module against CERTS and the kernel)
    and returns their one signer: {"subject", "key_id", "sha256"} (the certificate's
    DER SHA-256), as the index's packages[].signer records it."""
    cmd = [b.installer, "verify-module", "--json", "--kernel-release", b.kernel]
    for c in certs:
        cmd += ["--module-cert", c]
    proc = subprocess.run(cmd + files, capture_output=True, text=True)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        die("%s verify-module failed (exit %d)\n%s" % (b.installer, proc.returncode,
                                                       proc.stderr.rstrip()))
    failed = [m for m in report["modules"] if not m["pass"]]
    if failed:
        m = failed[0]
        who = "" if "signed by" in m["verdict"] else " (signed by '%s', key %s)" % (
            m["signer"] or "nobody", m["key_id"] or "-")
        die("%s does not verify with %s %s: %s%s%s" % (
            os.path.basename(m["file"]), option, " ".join(certs), m["verdict"], who,
            "; %d more module(s) fail" % (len(failed) - 1) if len(failed) > 1 else ""))
    signers = {}
    for m in report["modules"]:
        name = os.path.basename(m["file"])
        signers.setdefault((m["signer"], m["key_id"], m["signer_cert_sha256"]), []).append(name)
    if len(signers) != 1:
        die("the modules are signed by %d different keys (%s): a package has one signer" % (
            len(signers), "; ".join("%s by '%s' key %s" % (", ".join(v), k[0], k[1])
                                    for k, v in sorted(signers.items()))))
    subject, key_id, sha = next(iter(signers))
    return {"subject": subject, "key_id": key_id, "sha256": sha}


def elf_extent(data):
    """The bytes a little-endian ELF64 object spans up to the end of its section headers,
    or None when DATA is not one."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff = int.from_bytes(data[0x28:0x30], "little")
    return shoff + int.from_bytes(data[0x3a:0x3c], "little") * int.from_bytes(
        data[0x3c:0x3e], "little")


def appended_signatures(data):
    """How many module signatures DATA carries one after the other (the kernel checks only
    the last: the bytes before it, an earlier signature included, are what it signed)."""
    n = 0
    while data.endswith(SIG_MAGIC) and len(data) >= len(SIG_MAGIC) + 12:
        info = data[-len(SIG_MAGIC) - 12:-len(SIG_MAGIC)]
        sig_len = int.from_bytes(info[8:12], "big")
        end = len(data) - len(SIG_MAGIC) - 12 - sig_len
        if end < 0:
            break
        n += 1
        data = data[:end]
    return n


def check_kept_module(name, src, data):
    """A module whose bytes cannot be the vendor's as shipped: cut short, or signed again
    after it was signed. Each named for what it is, not as a missing or foreign signature."""
    extent = elf_extent(data)
    if extent is not None and extent > len(data):
        die("%s.ko from %s is truncated (%d bytes; its ELF section headers end at byte %d): "
            "take the vendor's module again (a copy or download cut short?)" % (
                name, src, len(data), extent))
    if extent is not None and extent < len(data) and not data.endswith(SIG_MAGIC):
        die("%s.ko from %s has %d bytes after its ELF data but no signature trailer: its "
            "appended signature is cut short; take the vendor's module again (a copy or "
            "download cut short?)" % (name, src, len(data) - extent))
    n = appended_signatures(data)
    if n > 1:
        die("%s.ko from %s carries %d appended signatures (signed again after it was "
            "signed): the kernel checks only the last one; take the vendor's module as "
            "shipped" % (name, src, n))


KEPT_UNSIGNED = ("--keep-signatures takes modules the vendor signed (drop it to sign them "
                 "with --sign-key)")


def keep_modules(b, fl, mods, version, outdir, src=None, unsigned=KEPT_UNSIGNED):
    """The vendor's signed modules, byte for byte: refused unless each one verifies with
    --vendor-cert as the kernel will verify it. SRC names where they come from (default
    --prebuilt-modules), UNSIGNED what to do about one without a signature. Returns
    (files, signer)."""
    os.makedirs(outdir, exist_ok=True)
    for need in ("nvidia", "nvidia-uvm"):
        if need not in mods and b.modules == MODULES:
            die("no %s.ko among the modules (%s)" % (need, ", ".join(sorted(mods)) or "none"))
    src = src or fl.prebuilt
    if not mods:
        die("no modules in %s" % src)
    for name, path in sorted(mods.items()):
        dst = os.path.join(outdir, name + ".ko")
        shutil.copyfile(path, dst)
        with open(dst, "rb") as f:
            data = f.read()
        check_kept_module(name, src, data)
        check_machine(b, dst, "%s.ko from %s" % (name, src))
        if not data.endswith(SIG_MAGIC):
            die("%s.ko from %s has no appended signature: %s" % (name, src, unsigned))
        check_modinfo(b, fl, name, dst, version)
    files = sorted(glob.glob(os.path.join(outdir, "*.ko")))
    signer = verified_signer(b, files, b.vendor_cert, "--vendor-cert")
    say("  signatures kept: %s signed by '%s' (key %s)" % (
        ", ".join(sorted(mods)), signer["subject"], signer["key_id"]))
    return files, signer
