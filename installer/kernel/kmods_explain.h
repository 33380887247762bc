/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why the kernel refused a module's insertion, in words: the kernel's errno, what the
 * driver itself logged (/dev/kmsg), and for EPERM which rule holds (LoadPin, lockdown,
 * signature enforcement, a missing CAP_SYS_MODULE). Used by kmods.c, which inserts;
 * this folder only (kmods.h includes it).
 */
#pragma once

#include <stddef.h>

#include "util/err.h"

struct kmod_module;
struct ktrust;

/*
 * A module to insert: libkmod's handle on it, its name, its file, and the parameters it is
 * given (NULL or "": none).
 */
struct insertion {
	struct kmod_module *m;
	const char *name;
	const char *path;
	const char *options;
};

/* The host's module tree the kernel was asked to load from: /lib/modules/RELEASE. */
struct kmods_tree {
	const char *release;
	int moddir_fd; /* ROOT/lib/modules/RELEASE, or -1 */
};

/*
 * Whether the file or directory open as FD is on another file system than the kernel's
 * own modules (TREE's moddir_fd), the one LoadPin pins when the kernel loads its first
 * module at boot: 1, 0, or -1 when either cannot be read.
 */
int kmods_tree_other_fs(const struct kmods_tree *tree, int fd);

/*
 * /dev/kmsg opened at its end, before an insertion, for kmods_driver_log after a failure;
 * -1 where it cannot be opened or sought (messages then go without the driver's words).
 */
int kmods_kmsg_open_end(void);

/*
 * Reads kernel log records (one per read(2), as /dev/kmsg gives them) from FD until none
 * is left, and joins the text of the kernel's own (facility 0, util/kmsg.h) that carry
 * NVIDIA's "NVRM: " prefix into BUF. FD < 0 gives "".
 */
void kmods_driver_log(int fd, char *buf, size_t size);

/*
 * The kernel's ERRNUM for inserting IN from TREE as a message a node operator can act on
 * (EXIT_KERNEL_REFUSED), quoting what the driver logged on KMSG_FD since it was opened;
 * TRUST says which rule an EPERM comes from. Returns -1.
 */
int kmods_explain(const struct kmods_tree *tree, int errnum, const struct insertion *in,
		  const struct ktrust *trust, int kmsg_fd, struct err *e);
