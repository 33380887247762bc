# SPDX-License-Identifier: Apache-2.0
"""Private keys the repository tools sign with, named by a file (PEM) or by a PKCS#11 URI
(RFC 7512, "pkcs11:token=...;object=...?pin-source=file:..."): an HSM, a cloud KMS or a
smart card through its PKCS#11 module, SoftHSM2 in tests (docs/building-packages.md, "Keys
where builds run"). make-repo signs the index with one, build-driver-package its modules,
build-fleet reads the index key's public half.

A token's key is used through OpenSSL's pkcs11 engine (libp11, Debian's
libengine-pkcs11-openssl): `openssl ... -engine pkcs11 -keyform engine -inkey URI`. Debian 12
has no pkcs11 provider (pkcs11-provider is in bookworm-backports only), and Debian 12's
sign-file (linux-kbuild-6.1 6.1.192) loads a "pkcs11:" key only through that provider:
upstream commit 558bdc45dfb2, "sign-file,extract-cert: use pkcs11 provider for OPENSSL MAJOR
>= 3", taken into 6.1 stable, reads it with OSSL_PROVIDER_try_load(NULL, "pkcs11") and
OSSL_STORE_open, and on that path ignores KBUILD_SIGN_PIN. So module signatures are made by
`openssl cms` through the engine, in the form sign-file makes (CMS, detached, no signed
attributes, no certificates, issuer and serial: scripts/sign-file.c's CMS_sign and
CMS_add1_signer flags), and attached with `sign-file -s`; for an RSA key the module is byte
for byte the one sign-file makes with the same key in a file.

The PIN never reaches a command line (ps shows those) or a message: it comes from the URI's
pin-source=file:PATH, or from the environment (PIN_ENV), and goes to openssl through a pipe
(-passin fd:N). A URI with pin-value is refused, and every message shows a URI through
shown(), which blanks a pin-value. Only the URI's path (token, object, id, ...) reaches the
engine: libp11 before 0.4.12 refuses query attributes it does not know (src/eng_parse.c,
parse_pkcs11_uri), and module-path is ours to carry out (the engine's PKCS11_MODULE_PATH;
without one, libp11's default, p11-kit's proxy, which loads every module p11-kit knows)."""
import dataclasses
import os
import re
import subprocess
import urllib.parse
from typing import Optional

PIN_ENV = "NVIDIA_PKCS11_PIN"
PIN_MAX = 256
# RFC 7512 section 2.3: the path attributes (token and object) and the query attributes.
PATH_ATTRS = ("library-description", "library-manufacturer", "library-version",
              "manufacturer", "model", "object", "serial", "slot-description",
              "slot-id", "slot-manufacturer", "token", "type", "id")
QUERY_ATTRS = ("pin-source", "module-path")
ENGINE_PKG = "libengine-pkcs11-openssl"
KEY = object()  # where in openssl's arguments the key's options go
# $PIN_ENV, taken out of this process's environment as it starts, so that no program it
# runs inherits it (a compiler's, a test's log of its environment): only our own tools
# that take a key get it back (child_env), and openssl gets it through a pipe.
ENV_PIN = os.environ.pop(PIN_ENV, None)


class Refused(Exception):
    """A key that cannot be used: one line naming the cause and the fix, the PIN never."""


class Usage(Refused):
    """A key named in a way that cannot work (a malformed URI, a PIN on the command line)."""


@dataclasses.dataclass
class Key:
    given: str                 # what the option said: a path, or the URI as given
    option: str                # the option that named it, for messages
    uri: Optional[str] = None  # the URI's path part, what the engine gets; None: a file
    module: Optional[str] = None
    pin_file: Optional[str] = None
    public: Optional[bytes] = None  # public_pem's answer, kept

    @property
    def is_token(self):
        return self.uri is not None

    def shown(self):
        return shown(self.given)

    def pin_where(self):
        return "pin-source %s" % self.pin_file if self.pin_file else "$" + PIN_ENV


def is_uri(value):
    return isinstance(value, str) and value[:7].lower() == "pkcs11:"


def shown(value):
    """VALUE as a message may show it: a pin-value's value blanked, wherever it is."""
    if not is_uri(value):
        return value
    return re.sub(r"(?i)(pin-value=)[^;&?]*", r"\1***", value)


def parse(value, option):
    """The key named by VALUE (a file, or a "pkcs11:" URI) given with OPTION. A URI's
    attributes are checked here, the file and the PIN's presence too (Refused, Usage)."""
    if not is_uri(value):
        if not os.path.isfile(value):
            raise Refused("%s %s does not exist" % (option, value))
        return Key(given=value, option=option)
    body, _, query = value[7:].partition("?")
    for attr in filter(None, body.split(";")):
        name = attr.split("=", 1)[0].lower()
        if "=" not in attr or name not in PATH_ATTRS:
            raise Usage("%s %s: '%s' is not a PKCS#11 URI path attribute (RFC 7512: %s)" % (
                option, shown(value), shown(attr), ", ".join(PATH_ATTRS)))
    if not body.strip(";"):
        raise Usage("%s %s names no key: give token= and object= (or id=) of the key" % (
            option, shown(value)))
    key = Key(given=value, option=option, uri="pkcs11:" + body)
    for attr in filter(None, query.split("&")):
        name, _, val = attr.partition("=")
        name = name.lower()
        if name == "pin-value":
            raise Usage("%s %s: pin-value puts the PIN on the command line, where ps shows "
                        "it: give pin-source=file:PATH (a file holding the PIN) or set $%s" %
                        (option, shown(value), PIN_ENV))
        if name not in QUERY_ATTRS:
            raise Usage("%s %s: query attribute '%s' is not taken: give pin-source=file:PATH "
                        "and module-path=PATH only" % (option, shown(value), name))
        val = urllib.parse.unquote(val)
        if name == "module-path":
            if not os.path.isfile(val):
                raise Refused("%s %s: module-path %s does not exist: give the PKCS#11 module "
                              "of the token (e.g. /usr/lib/softhsm/libsofthsm2.so)" % (
                                  option, shown(value), val))
            key.module = val
        else:
            key.pin_file = pin_path(key, val)
    pin(key)
    return key


def pin_path(key, source):
    """pin-source's file: file:PATH or file://PATH (RFC 7512 names a URI; libp11 takes
    file: ones only)."""
    if not source.startswith("file:"):
        raise Usage("%s %s: pin-source '%s' is not a file: URI: give pin-source=file:PATH" % (
            key.option, key.shown(), source))
    path = source[5:]
    if path.startswith("//"):
        path = path[2:]
    if not path.startswith("/"):
        raise Usage("%s %s: pin-source '%s' is not an absolute path: give "
                    "pin-source=file:/PATH" % (key.option, key.shown(), source))
    return path


def pin(key):
    """The PIN of KEY's token, from its pin-source file or $PIN_ENV; one trailing newline
    dropped (echo PIN >FILE)."""
    if key.pin_file:
        try:
            with open(key.pin_file, "rb") as f:
                raw = f.read(PIN_MAX + 2)
        except OSError as e:
            raise Refused("%s %s: pin-source %s cannot be read (%s): give the file that holds "
                          "the token's user PIN" % (key.option, key.shown(), key.pin_file,
                                                    e.strerror))
    else:
        raw = os.fsencode(ENV_PIN or "")
        if not raw:
            raise Refused("%s %s: no PIN for the token: add pin-source=file:PATH to the URI "
                          "(a file holding the user PIN) or set $%s" % (
                              key.option, key.shown(), PIN_ENV))
    text = raw[:-1] if raw.endswith(b"\n") else raw
    text = text[:-1] if text.endswith(b"\r") else text
    if not text or len(text) > PIN_MAX or b"\n" in text or b"\0" in text:
        raise Refused("%s %s: the PIN in %s is empty, longer than %d bytes or more than one "
                      "line: put the token's user PIN there, alone" % (
                          key.option, key.shown(), key.pin_where(), PIN_MAX))
    return text


def with_key(args, options):
    """ARGS with OPTIONS in the place of KEY (openssl takes options before its files)."""
    i = args.index(KEY)
    return args[:i] + options + args[i + 1:]


def openssl(key, args, key_opt, form_opt, what):
    """Runs `openssl ARGS` with KEY given, where ARGS has KEY, as KEY_OPT (-inkey, -sign,
    -in) and, for a token, FORM_OPT engine (-keyform, -inform) and the PIN through a pipe.
    Returns its stdout; raises Refused naming the cause (WHAT: what openssl was doing) and
    the fix."""
    if not key.is_token:
        try:
            proc = subprocess.run(["openssl"] + with_key(args, [key_opt, key.given]),
                                  stdin=subprocess.DEVNULL, capture_output=True)
        except FileNotFoundError:
            raise Refused("openssl is not installed (apt-get install openssl)")
        if proc.returncode != 0:
            raise Refused("%s failed with %s %s: %s" % (what, key.option, key.given,
                                                       last_error(proc.stderr)))
        return proc.stdout
    secret = pin(key)
    env = dict(os.environ)
    if key.module:
        env["PKCS11_MODULE_PATH"] = key.module
    r, w = os.pipe()
    try:
        os.write(w, secret + b"\n")
        os.close(w)
        w = None
        options = ["-engine", "pkcs11", form_opt, "engine", key_opt, key.uri,
                   "-passin", "fd:%d" % r]
        # No terminal (a session of its own, stdin /dev/null): the engine never prompts.
        proc = subprocess.run(["openssl"] + with_key(args, options), env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, pass_fds=(r,),
                              start_new_session=True)
    except FileNotFoundError:
        raise Refused("openssl is not installed (apt-get install openssl)")
    finally:
        os.close(r)
        if w is not None:
            os.close(w)
    # libp11's engine can crash openssl at exit after a failed login (SIGSEGV): the cause
    # is in what it printed before.
    if proc.returncode != 0:
        raise Refused("%s failed with %s %s: %s" % (what, key.option, key.shown(),
                                                   token_cause(key, proc.stderr, secret)))
    return proc.stdout


def child_env():
    """The environment for one of our own tools that takes a key (make-repo run by
    build-driver-package): this one's, $PIN_ENV given back where it was set."""
    env = dict(os.environ)
    if ENV_PIN is not None:
        env[PIN_ENV] = ENV_PIN
    return env


def token_cause(key, err, secret=None):
    """The cause and fix of a token's failure, from what openssl and libp11 printed (ERR);
    what is quoted of it has the PIN (SECRET) blanked, should a module have printed it."""
    text = err.decode(errors="replace")
    module = key.module or "p11-kit's proxy (p11-kit list-modules)"
    causes = (
        # First: without the engine, openssl's own "dso not found" would read as no key.
        ("Invalid engine \"pkcs11\"", "OpenSSL's pkcs11 engine is not installed: apt-get "
         "install %s" % ENGINE_PKG),
        ("PIN incorrect", "the token refused the PIN (CKR_PIN_INCORRECT): put the token's "
         "user PIN in %s (each wrong one counts towards the token's lockout)" % key.pin_where()),
        ("PIN locked", "the token has locked its user PIN (CKR_PIN_LOCKED) after wrong ones: "
         "its security officer unlocks it (pkcs11-tool --login --login-type so --init-pin)"),
        ("PIN len", "the token takes no PIN of that length (CKR_PIN_LEN_RANGE): put its user "
         "PIN in %s" % key.pin_where()),
        ("PIN invalid", "the token takes no such PIN (CKR_PIN_INVALID): put its user PIN in "
         "%s" % key.pin_where()),
        ("Unable to load", "the PKCS#11 module %s does not load: give module-path= of the "
         "token's module" % module),
        ("does not match certificate", "the token's key is not the key of the certificate: "
         "give the certificate made for this key"),
        ("not found", "no private key on the token(s) of %s matches %s: list them with "
         "pkcs11-tool --module MODULE --login --list-objects, and name one by token= and "
         "object= or id=" % (module, key.uri)),
    )
    for needle, cause in causes:
        if needle in text:
            return cause
    return last_error(err.replace(secret, b"***") if secret else err)


def last_error(err):
    """OpenSSL's last error line, its reason only, or the last line it printed."""
    lines = [l.strip() for l in err.decode(errors="replace").splitlines() if l.strip()]
    for l in reversed(lines):
        if ":error:" in l:
            return shown(l.split(":")[5] if l.count(":") >= 6 else l)
    return shown(lines[-1]) if lines else "openssl said nothing"


def sign_digest(key, path, out, what=None):
    """The SHA-256 signature of PATH with KEY (openssl dgst -sign) written to OUT: what
    index.json.sig holds (docs/repository-format.md). WHAT names it in a refusal."""
    openssl(key, ["dgst", "-sha256", KEY, "-out", out, path], "-sign", "-keyform",
            what or "signing %s" % path)


def sign_module_cms(key, cert, module, out, what=None):
    """OUT: MODULE's signature by KEY as sign-file makes it (CMS, DER, detached, no signed
    attributes, no certificates, the signer by CERT's issuer and serial, SHA-256), for
    `sign-file -s OUT sha256 CERT MODULE` to attach. openssl checks that KEY is CERT's."""
    openssl(key, ["cms", "-sign", "-binary", "-noattr", "-nocerts", "-nosmimecap",
                  "-md", "sha256", "-outform", "DER", "-signer", cert, "-in", module,
                  "-out", out, KEY], "-inkey", "-keyform",
            what or "signing %s" % os.path.basename(module))


def public_pem(key):
    """KEY's public key, PEM (what nodes get as --repo-key); read once, a token's with a
    login: so a wrong PIN is found before a tool writes anything."""
    if key.public is None:
        key.public = openssl(key, ["pkey", "-pubout", KEY], "-in", "-inform",
                             "reading the public key")
    return key.public
