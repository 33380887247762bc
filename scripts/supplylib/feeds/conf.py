# SPDX-License-Identifier: Apache-2.0
"""A feed's configuration (one entry of supply.json's "feeds", docs/building-packages.md):
the fields every feed reads, each checked, a wrong one refused in one line."""
import os

from .image import FeedError

# The archives' keyrings where Debian installs them: debian-archive-keyring's, and
# ubuntu-keyring's (Debian's package of Ubuntu's archive keys).
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
UBUNTU_KEYRING = "/usr/share/keyrings/ubuntu-archive-keyring.gpg"

# uname -m <-> Debian's architecture names.
DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
UNAME_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "x86_64": "x86_64", "aarch64": "aarch64"}


def name(conf):
    return str(conf.get("name") or conf.get("type") or "feed")


def text(conf, key, default=None):
    """CONF[KEY], a non-empty string (DEFAULT where absent; required where DEFAULT is None)."""
    v = conf.get(key, default)
    if v is None:
        raise FeedError("feed %s: no \"%s\": add it to the feed's entry in supply.json" % (
            name(conf), key))
    if not isinstance(v, str) or not v or any(c in v for c in "\n\r\t "):
        raise FeedError("feed %s: \"%s\" is %r, not one word" % (name(conf), key, v))
    return v


def words(conf, key, default):
    """CONF[KEY]: a string or a list of them."""
    v = conf.get(key, default)
    v = [v] if isinstance(v, (str, int)) else v
    if not isinstance(v, list) or not all(isinstance(x, (str, int)) and str(x) for x in v):
        raise FeedError("feed %s: \"%s\" is %r, not a list of names" % (name(conf), key, v))
    return [str(x) for x in v]


def count(conf, key, default):
    v = conf.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 1000:
        raise FeedError("feed %s: \"%s\" is %r, not a number from 1 to 1000" % (
            name(conf), key, v))
    return v


def arch(conf, default="x86_64"):
    """The feed's architecture as uname -m names it (amd64 and arm64 taken too)."""
    a = text(conf, "arch", default)
    if a not in UNAME_ARCH:
        raise FeedError("feed %s: \"arch\" is %r: give x86_64 or aarch64 (amd64, arm64)" % (
            name(conf), a))
    return UNAME_ARCH[a]


def url(conf, default=None, key="url"):
    u = text(conf, key, default).rstrip("/")
    if not u.startswith(("http://", "https://", "file://")):
        raise FeedError("feed %s: \"%s\" %r is not an http, https or file URL" % (
            name(conf), key, u))
    return u


def https_url(conf, default=None, key="url"):
    """CONF's url, https:// (or file://, for tests and local mirrors): what the feed reads
    carries no signature this pass checks, so TLS alone vouches for it, and its headers'
    Makefiles run where the signing keys are."""
    u = url(conf, default, key)
    if u.startswith("http://"):
        raise FeedError("feed %s: \"%s\" %r is plain http, and nothing this feed reads is "
                        "signed: give the mirror's https:// URL (or a file:// copy)" % (
                            name(conf), key, u))
    return u


def keyring(conf, u):
    """The keyring a Debian-format archive's Release is checked against (or None): the
    feed's "keyring"; for a plain http:// URL U one is required (Debian's own where the
    feed names none and DEBIAN_KEYRING is installed): without it anyone on the path could
    serve headers whose Makefiles run where the signing keys are."""
    if "keyring" in conf:
        return text(conf, "keyring")
    if not u.startswith("http://"):
        return None
    if conf.get("type") == "debian" and os.path.isfile(DEBIAN_KEYRING):
        return DEBIAN_KEYRING
    ring, pkg = ((UBUNTU_KEYRING, "ubuntu-keyring") if conf.get("type") == "ubuntu" else
                 (DEBIAN_KEYRING, "debian-archive-keyring"))
    raise FeedError("feed %s: \"url\" %r is plain http and the feed names no \"keyring\": "
                    "give \"keyring\": \"%s\" (apt-get install %s), or an https:// URL" % (
                        name(conf), u, ring, pkg))
