/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the installer needs to know about the node: the OS (os-release), the
 * kernel release and architecture, the NVIDIA GPUs on the PCI bus, and the
 * loaded modules that matter here (/proc/modules). Every file is read under
 * the host root fd.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/*
 * The face of host/, the only header of it that other folders include: the probe above,
 * host paths judged by where they resolve, and whether this process runs in a container.
 */
#include "host/hostpath.h"
#include "host/nvlink.h"
#include "host/runenv.h"
#include "host/selinux.h"

#define PCI_VENDOR_NVIDIA 0x10de

struct gpu {
	char bdf[32];	    /* "0000:00:04.0" */
	uint16_t vendor;    /* 0x10de */
	uint16_t device;    /* 0x2330 */
	uint32_t pci_class; /* 0x030200 */
};

#define HOST_MAX_MODULES 16
/* The longest kernel release: uname's (struct utsname's release, less its NUL). */
#define HOST_RELEASE_MAX 64

/* A loaded kernel module that is NVIDIA's or competes for its GPUs. */
struct loaded_module {
	char name[64];
	char version[64]; /* /sys/module/NAME/version, or "" */
};

struct host {
	char *os_id;	     /* os-release ID ("cos", "ubuntu"), never NULL after probe */
	char *os_version_id; /* VERSION_ID, or NULL */
	char *os_build_id;   /* BUILD_ID, or NULL */
	char *os_pretty;     /* PRETTY_NAME, or NULL */
	char *os_like;	     /* ID_LIKE: the IDs it derives from, blank-separated, or NULL */
	char kernel[256];    /* kernel release, as uname -r prints it */
	char arch[64];	     /* uname -m */
	struct gpu *gpus;
	size_t n_gpus;
	size_t n_nvswitches;  /* NVIDIA functions of PCI class "bridge, other": NVSwitch */
	struct nvlink nvlink; /* NVLink 5: the NVSwitches' management ports (host/nvlink.h) */
	bool modules_known;   /* false where the kernel has no module support */
	struct loaded_module modules[HOST_MAX_MODULES];
	size_t n_modules;
	struct selinux selinux; /* its mode, and the label published files carry (selinux.h) */
};

/*
 * Whether the host is of the distribution ID: its own ID, or one ID_LIKE names (a rebuild:
 * Rocky Linux's "rhel centos fedora"), as os-release(5) means it.
 */
bool host_os_is(const struct host *h, const char *id);

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

/*
 * Parses a PCI id as the index and --gpu write it, "10de:2330" (four hex digits, a colon,
 * four hex digits; either case). Returns 0, or -1 when S is not exactly that.
 */
int host_parse_pci_id(const char *s, uint16_t *ret_vendor, uint16_t *ret_device);

/* Whether a PCI function is an NVIDIA display controller (VGA or 3D class). */
int host_is_nvidia_gpu(uint16_t vendor, uint32_t pci_class);

/*
 * Whether a PCI function is an NVSwitch: NVIDIA's, of class 0x0680 ("bridge, other"), as
 * HGX systems show theirs (lspci: "Bridge: NVIDIA Corporation", 22a3 on H100 and H200).
 */
int host_is_nvidia_nvswitch(uint16_t vendor, uint32_t pci_class);

/*
 * What the host's NVSwitches are, for messages: "2 NVSwitch(es)" (on the PCI bus) or
 * "NVLink 5 NVSwitches behind 2 management port(s)", into BUF; NULL when it has none.
 */
const char *host_fabric(const struct host *h, char *buf, size_t size);

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

/*
 * Probes the host under root_fd. KERNEL (may be NULL) overrides the running
 * kernel's release. Returns 0, or -1 with e set; on failure *h holds nothing.
 */
_must_check_ int host_probe(int root_fd, const char *kernel, struct host *h, struct err *e);

/* A node image, as coverage's options name it. */
struct host_image {
	const char *os;	      /* os-release ID */
	const char *os_build; /* os-release BUILD_ID, or NULL */
	const char *kernel;   /* kernel release */
	const char *arch;     /* uname -m; amd64, arm64 too */
	char *const *gpu_ids; /* "10de:2330" */
	size_t n_gpus;
};

/*
 * A host as its node image IMG describes it, not probed, for asking the repository about
 * a node that is not this one. Returns 0, or -1 (EXIT_USAGE naming the value) with *h
 * holding nothing.
 */
_must_check_ int host_describe(const struct host_image *img, struct host *h, struct err *e);

/* Frees what host_probe allocated; the struct may be reused. */
void host_done(struct host *h);
