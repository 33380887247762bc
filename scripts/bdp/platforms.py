# SPDX-License-Identifier: Apache-2.0
"""The package platforms, one row each: the class of its module (base.Platform with what
differs there). --os chooses among them by name (cli.choose_platform). A new platform is a
module and a row here (docs/hacking.md, "A new package platform")."""
from bdp import cos, debian, rhel, ubuntu

PLATFORMS = [
    debian.Debian,      # Debian's kernels; also the default, for any other os-release ID
    cos.Cos,            # Container-Optimized OS: kernel-headers.tgz, clang, Google's signatures
    ubuntu.Ubuntu,      # Canonical's signed modules (linux-modules-nvidia-*)
    rhel.Rhel,          # RHEL and its rebuilds: the kernel-devel RPM
]
DEFAULT = debian.Debian
