/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host probe (probe.c), inside host/: the parsers and scans host_probe is made of,
 * which the unit tests reach and nothing outside host/ calls (that is in the face,
 * host/host.h, which has no .c of its own: the probe's face functions are in probe.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "host/host.h"

/*
 * Parses os-release(5) text into h's os_* fields (shell-like quoting and
 * escapes). A missing ID means "linux", as the specification says.
 * Returns 0, or -1 on malformed quoting.
 */
_must_check_ int host_parse_os_release(const char *buf, struct host *h, struct err *e);

/*
 * Parses one PCI sysfs attribute ("0x10de\n") into *ret. Returns 0, or -1 when
 * it is not a single hexadecimal number of at most MAX_DIGITS digits.
 */
int host_parse_pci_hex(const char *buf, unsigned max_digits, uint32_t *ret);

/* Whether a PCI function is an NVIDIA display controller (VGA or 3D class). */
int host_is_nvidia_gpu(uint16_t vendor, uint32_t pci_class);

/*
 * Whether a PCI function is an NVSwitch: NVIDIA's, of class 0x0680 ("bridge, other"), as
 * HGX systems show theirs (lspci: "Bridge: NVIDIA Corporation", 22a3 on H100 and H200).
 */
int host_is_nvidia_nvswitch(uint16_t vendor, uint32_t pci_class);

/* Whether module NAME is NVIDIA's (nvidia*) or a driver that conflicts with it. */
bool host_module_is_relevant(const char *name);

/*
 * Lists the loaded modules that matter here, from ROOT/proc/modules, with
 * versions from ROOT/sys/module. A kernel without module support leaves
 * modules_known false; that is not an error. Returns 0 or -1.
 */
_must_check_ int host_scan_modules(int root_fd, struct host *h, struct err *e);

/* Lists NVIDIA GPUs under ROOT/sys/bus/pci/devices, sorted by address. 0 or -1. */
_must_check_ int host_scan_pci(int root_fd, struct host *h, struct err *e);
