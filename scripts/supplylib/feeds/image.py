# SPDX-License-Identifier: Apache-2.0
"""What a feed learns: one node image that is coming (Image), the files a build for it
takes (Input), and the one error every feed raises (FeedError), whose message is one line
naming the cause and, where there is one, the fix."""
import re
from dataclasses import dataclass, field
from typing import Optional

ARCHES = ("x86_64", "aarch64")
# A kernel release as uname -r gives it (at most __NEW_UTS_LEN, 64 characters, in the
# kernel's include/uapi/linux/utsname.h): digits first, then what distributions append
# (6.1.0-28-amd64, 6.8.0-45-generic, 5.14.0-427.13.1.el9_4.x86_64, 6.1.100+). A path
# separator, a space or a "..", which no release has, refuses the name.
KERNEL_RE = re.compile(r"^[0-9]+\.[0-9]+[0-9A-Za-z.+_~-]{0,61}$")


class FeedError(Exception):
    """A feed that cannot be read or an input that cannot be trusted: one line."""


class Incomplete(FeedError):
    """One kernel the index names without all it depends on (an archive half published):
    that kernel is left out and noted, the rest of the feed read."""


def check_kernel(name, where):
    """NAME if it is a kernel release; refuses it otherwise (WHERE: what named it)."""
    if not KERNEL_RE.match(name) or ".." in name:
        raise FeedError("%s names %r, which is not a kernel release: refused (a damaged "
                        "or hostile index)" % (where, name[:80]))
    return name


@dataclass
class Input:
    """One file a build takes: where it is, and what the index says of it (the digest it
    is checked against once downloaded; sha256 or, where the index states only that,
    Cloud Storage's md5). KIND "file" is downloaded as is; "cos-artifacts" is a COS build's
    directory of artifacts (URL: BASE/BUILD_ID/BOARD), fetched by scripts/fetch-cos-artifacts;
    "base" is only a URL the fetch of another input needs."""
    url: str
    sha256: Optional[str] = None
    md5: Optional[str] = None
    size: Optional[int] = None
    kind: str = "file"


@dataclass
class Image:
    """A node image a feed says is coming: os-release ID, BUILD_ID (None where the
    platform has none), uname -r and uname -m, what said so (ORIGIN: the feed's name and
    what it read), and the inputs a build for it takes, by name (build_args' {input_NAME})."""
    os: str
    os_build: Optional[str]
    kernel: str
    arch: str
    origin: str
    inputs: dict = field(default_factory=dict)

    def key(self):
        return (self.os, self.os_build, self.kernel, self.arch)
