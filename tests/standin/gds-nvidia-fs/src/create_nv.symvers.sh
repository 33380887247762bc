#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Stand-in for gds-nvidia-fs's src/create_nv.symvers.sh: upstream takes the nvidia_p2p_*
# symbols' CRCs from an nvidia.ko installed for KVER (modinfo -k, nm), whatever driver that
# is. This stand-in writes what such a stray driver would give (a CRC no nvidia.ko of ours
# has), so that the tests show build-driver-package's copy never uses it.
printf '0x0badc0de\tnvidia_p2p_get_pages\tvmlinux\tEXPORT_SYMBOL\t\n' \
    >"$(dirname "$0")/nv.symvers"
