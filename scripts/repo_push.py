# SPDX-License-Identifier: Apache-2.0
"""How make-repo pushes a published repository to an OCI registry (make-repo's --to
oci://HOST/NAME[:TAG]; docs/repository-format.md, "In an OCI registry"): by the installer's
own `nvidia-driver-installer mirror --from file://DIR --to oci://...`, the one push there is
(blobs first, the manifest by its tag last; a re-run sends only what the registry lacks),
which verifies the index's signature with the public half of make-repo's --key before it
sends anything. The directory stays the repository's authority: the push runs after its
index switch, under its publish lock, so that the index and signature it reads are one
generation and the pushes of two publishes reach the registry in the order of their
generations (a later push never meets a newer index it would refuse as a rollback).

Everything a push needs is checked before a publish writes anything (check_target,
installer_of, readable): a usage error, exit 2. A push that fails is one line naming the
installer's own error (Failure, exit 1); the local publish stays.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
INSTALLER_ENV = "MAKE_REPO_INSTALLER"

# SPEC48 §1, after the distribution spec's grammar (github.com/opencontainers/
# distribution-spec, spec.md, "Pulling manifests": <name> and <reference>): a path of
# lower-case components, a tag of at most 128 characters.
HOST_RE = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)"
                     r"(:[0-9]{1,5})?$")
COMPONENT_RE = re.compile(r"^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$")
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


class Usage(Exception):
    """What a push was given that cannot work: one line, exit 2, before anything is
    written."""


class Failure(Exception):
    """A push that failed after the local publish: one line, exit 1."""


def check_target(value):
    """VALUE when it is oci://HOST[:PORT]/NAME[:TAG] (a tag: a push moves one), else Usage
    naming the part that is wrong."""
    if not value.startswith("oci://"):
        raise Usage("--to %s: give a registry repository, oci://HOST[:PORT]/NAME[:TAG] (a "
                    "directory or an OCI layout: nvidia-driver-installer mirror --to)" % value)
    rest = value[len("oci://"):]
    host, slash, path = rest.partition("/")
    if "@" in host:
        raise Usage("--to %s: credentials in the reference; give them in a Docker config.json "
                    "with --registry-auth" % value)
    if not slash or not HOST_RE.match(host):
        raise Usage("--to %s: the registry host '%s' is not HOST[:PORT]" % (value, host))
    if "?" in path or "#" in path:
        raise Usage("--to %s: a query or fragment in the reference" % value)
    if "@" in path:
        raise Usage("--to %s: a push moves a tag, not a digest: give NAME[:TAG]" % value)
    name, colon, tag = path.partition(":")
    for c in name.split("/"):
        if not COMPONENT_RE.match(c):
            raise Usage("--to %s: the repository name's part '%s' is not lower-case letters "
                        "and digits joined by '.', '_', '__' or '-'" % (value, c))
    if colon and not TAG_RE.match(tag):
        raise Usage("--to %s: the tag '%s' is not [A-Za-z0-9_][A-Za-z0-9._-]{0,127}" % (
            value, tag))
    return value


def installer_of(given):
    """The nvidia-driver-installer that pushes: GIVEN (--installer), else $MAKE_REPO_INSTALLER,
    else this checkout's build/, else PATH's; Usage when none can be run."""
    named = given or os.environ.get(INSTALLER_ENV)
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise Usage("%s %s is not an executable file: give the nvidia-driver-installer "
                        "binary" % ("--installer" if given else "$" + INSTALLER_ENV, named))
        return named
    built = os.path.join(HERE, "..", "build", "nvidia-driver-installer")
    found = built if os.access(built, os.X_OK) else shutil.which("nvidia-driver-installer")
    if not found:
        raise Usage("--to: no nvidia-driver-installer binary to push with (run make, or "
                    "give --installer BIN or $%s)" % INSTALLER_ENV)
    return os.path.realpath(found)


def readable(path, option):
    """PATH when it is a file this process can read, else Usage naming OPTION."""
    try:
        with open(path, "rb"):
            return path
    except OSError as e:
        raise Usage("%s %s cannot be read (%s)" % (option, path, e.strerror)) from None


def error_line(lines):
    """The installer's own error among its log LINES (the last ERROR line, text format),
    else its last line, else None."""
    lines = [l.strip() for l in lines if l.strip()]
    errors = [l for l in lines if l.startswith("ERROR")]
    return (errors or lines or [None])[-1]


def push(repo, public_pem, target, installer, ca_file=None, auth=()):
    """Pushes the repository in the directory REPO to TARGET (oci://...) with INSTALLER's
    mirror, its index verified with PUBLIC_PEM (bytes); CA_FILE and the Docker config.json
    files AUTH are the installer's --ca-file and --registry-auth. Its log goes to stderr as
    it comes, its summary too (stdout is make-repo's paths). Failure naming its error."""
    with tempfile.NamedTemporaryFile(prefix="make-repo-push-", suffix=".pem") as f:
        f.write(public_pem)
        f.flush()
        cmd = [installer, "mirror", "--from", "file://" + os.path.abspath(repo),
               "--repo-key", f.name, "--to", target]
        cmd += (["--ca-file", ca_file] if ca_file else []) + [
            a for path in auth for a in ("--registry-auth", path)]
        # Its log lines in the text format, whatever the caller's environment says: the
        # error is read from them.
        env = dict(os.environ, NVIDIA_INSTALLER_LOG_FORMAT="text")
        env.pop(INSTALLER_ENV, None)
        sys.stderr.flush()
        try:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(),
                                 stderr=subprocess.PIPE, text=True, errors="replace", env=env)
        except OSError as e:
            raise Failure("%s cannot be run (%s): the repository is published here, not "
                          "pushed to %s" % (installer, e.strerror, target)) from None
        lines = []
        for line in p.stderr:
            sys.stderr.write(line)
            lines.append(line)
        rc = p.wait()
    if rc != 0:
        raise Failure("the push to %s failed (%s mirror, exit %d: %s); %s is published here: "
                      "run the publish again to push what the registry lacks" % (
                          target, os.path.basename(installer), rc,
                          error_line(lines) or "no message", repo))
