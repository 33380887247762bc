#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Stand-in for gdrcopy's scripts/test_gdrdrv_HAVE_PROC_OPS.sh: "-k KVER"; prints y when a
# module using what it probes compiles against /lib/modules/KVER/build (that path only, as
# upstream's), else n.
kver=$(uname -r)
while getopts "k:" o; do [ "$o" = k ] && kver=$OPTARG; done
d=$(mktemp -d) || { echo n; exit 0; }
cat >"$d/probe.c" <<'C'
#include <linux/module.h>
#include <linux/proc_fs.h>
static const struct proc_ops probe_ops;
static int __init probe_init(void) { return probe_ops.proc_open != 0; }
module_init(probe_init);
MODULE_LICENSE("GPL");
C
echo "obj-m := probe.o" >"$d/Kbuild"
if make -C "/lib/modules/$kver/build" M="$d" modules >/dev/null 2>&1; then echo y; else echo n; fi
rm -rf "$d"
