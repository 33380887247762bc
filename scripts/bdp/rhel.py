# SPDX-License-Identifier: Apache-2.0
"""RHEL and its rebuilds (docs/platforms/rhel.md): the kernel's build tree from the node
kernel's kernel-devel RPM, its payload unpacked confined to the work directory with
rpm2cpio, no RPM database involved. The modules are built and signed as on any platform."""
import os
import shutil

from bdp.base import Platform
from bdp.common import die, unpack_confined


class Rhel(Platform):
    name = "rhel"
    title = "RHEL (docs/platforms/rhel.md)"

    @classmethod
    def add_options(cls, group):
        return [group.add_argument("--kernel-devel-rpm", metavar="FILE", help="RHEL: the node "
                                   "kernel's kernel-devel RPM, unpacked with rpm2cpio: its "
                                   "usr/src/kernels/RELEASE/ is the build tree")]

    def __init__(self, args):
        self.kernel_devel_rpm = args.kernel_devel_rpm

    def check(self, b):
        if self.kernel_devel_rpm and b.headers:
            die("--kernel-devel-rpm is the build tree: leave out --headers and --kernel-headers")

    def headers(self, b):
        return kernel_devel(b, self.kernel_devel_rpm) if self.kernel_devel_rpm else b.headers


def kernel_devel(b, given):
    """--kernel-devel-rpm GIVEN: the node kernel's kernel-devel RPM (RHEL and its rebuilds), its
    payload (rpm2cpio) unpacked into the work directory, no RPM database involved. Its
    usr/src/kernels/RELEASE/ is the build tree; a package of another release is named."""
    rpm = os.path.realpath(given)
    if not os.path.isfile(rpm):
        die("%s is not a file: pass the kernel-devel RPM of the node's kernel "
            "(kernel-devel-%s.rpm)" % (given, b.kernel))
    if not shutil.which("rpm2cpio"):
        die("rpm2cpio is missing: apt-get install rpm2cpio")
    root = os.path.join(b.work, "kernel-devel")
    # Its payload read here (unpack_confined.py): regular files, directories and links that
    # stay inside root only, no device nodes, no set-id bits; a refused RPM leaves nothing.
    unpack_confined.unpack_rpm(rpm, root, given)
    tree = os.path.join(root, "usr/src/kernels", b.kernel)
    if os.path.isfile(os.path.join(tree, "Makefile")):
        return tree
    have = sorted(os.listdir(os.path.join(root, "usr/src/kernels"))) \
        if os.path.isdir(os.path.join(root, "usr/src/kernels")) else []
    die("%s is the kernel-devel of %s, not of %s: take the kernel-devel RPM of the node's "
        "kernel (uname -r)" % (given, ", ".join(have) or "no kernel",
                               b.kernel))
