// SPDX-License-Identifier: Apache-2.0
/*
 * Why the kernel refused an insertion: its errno, the driver's own words from the kernel
 * log, and for EPERM which rule (LoadPin, lockdown, signature enforcement, a missing
 * CAP_SYS_MODULE) holds, put into one message a node operator can act on. Split from
 * kmods.c, which inserts; this file only reads and words.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kmods_explain.h"
#include "kernel/ktrust.h"
#include "kernel/modsig.h"
#include "util/fs.h"
#include "util/kmsg.h"

/*
 * What the driver itself logged while the kernel ran its init: NVIDIA's module says why
 * it gives up ("NVRM: No NVIDIA GPU found.", or which GPU this release does not support)
 * in the kernel log only. /dev/kmsg is opened at its end before the insertion and read
 * after a failure; where it cannot be read, messages go without the quote.
 */
int kmods_kmsg_open_end(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The kernel's "NVRM: " lines logged since FD was opened, joined, without their prefix. */
void kmods_driver_log(int fd, char *buf, size_t size)
{
	char rec[8192]; /* a record longer than the buffer fails with EINVAL: ends the loop */
	size_t len = 0;

	buf[0] = '\0';
	while (fd >= 0) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		struct kmsg_record r;
		char *nv;

		if (n < 0 && errno == EPIPE)
			continue; /* overwritten before we read it: go on with the next */
		if (n <= 0)
			break;
		rec[n] = '\0';
		rec[strcspn(rec, "\n")] = '\0'; /* the continuation lines (" KEY=VALUE") go */
		/* The kernel's records only: user space may write anything into /dev/kmsg. */
		if (kmsg_parse_record(rec, strlen(rec), &r) < 0 ||
		    r.facility != KMSG_FACILITY_KERNEL)
			continue;
		nv = strstr(r.msg, "NVRM: ");
		if (!nv)
			continue;
		nv += strlen("NVRM: ");
		while (*nv == ' ')
			nv++;
		if (*nv && len + 1 < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", nv);
		if (len >= size)
			len = size - 1;
	}
}

int kmods_tree_other_fs(const struct kmods_tree *tree, int fd)
{
	struct stat a, b;

	if (fd < 0 || tree->moddir_fd < 0 || fstat(fd, &a) < 0 || fstat(tree->moddir_fd, &b) < 0)
		return -1;
	return a.st_dev != b.st_dev;
}

/*
 * EPERM: which rule refused the module. Only a process without CAP_SYS_MODULE is told
 * it lacks it; LoadPin, lockdown and enforcement are named when they hold, and a state
 * that could not be read is said to be unknown, never taken for a missing capability.
 */
static int explain_eperm(const struct kmods_tree *tree, const char *name, int fd,
			 const struct ktrust *t, struct err *e)
{
	const char *ld = t->lockdown;
	int cap = ktrust_has_cap_sys_module(), ofs = kmods_tree_other_fs(tree, fd);

	if (ktrust_loadpin_enforces(t) && ofs != 0) {
		err_set(e, EXIT_KERNEL_REFUSED,
			"LoadPin refused module %s: it admits kernel files only from the file system it pinned (that of /lib/modules/%s), and the module is on %s",
			name, tree->release, ofs == 1 ? "another" : "one not known to be it");
		err_hint(
			e,
			"boot with loadpin.exclude=kernel-module (modules then need a trusted signature), or write 0 to /proc/sys/kernel/loadpin/enforce where the kernel offers it; see dmesg ('LoadPin: kernel-module denied')");
	} else if (strcmp(ld, "none") != 0 && strcmp(ld, "unknown") != 0) {
		err_set(e, EXIT_KERNEL_REFUSED,
			"the kernel refused module %s under lockdown (%s): only modules signed by a key it trusts may load",
			name, ld);
		err_hint(
			e,
			"sign the modules with a trusted key (enroll it with mokutil), or boot without lockdown");
	} else if (strcmp(t->sig_enforce, "yes") == 0) {
		err_set(e, EXIT_KERNEL_REFUSED,
			"the kernel refused module %s (EPERM) and enforces module signatures (sig_enforce): only modules signed by a key it trusts may load",
			name);
		err_hint(
			e,
			"sign the modules with a key the kernel trusts, or enroll the signer's certificate (mokutil, or --kernel-keyring-cert)");
	} else if (cap == 0) {
		err_set(e, EXIT_KERNEL_REFUSED,
			"no permission to load module %s: the installer lacks CAP_SYS_MODULE",
			name);
		err_hint(e, "run the installer in a privileged container");
	} else {
		err_set(e, EXIT_KERNEL_REFUSED,
			"the kernel refused module %s (EPERM) although the installer holds CAP_SYS_MODULE: a security rule refused it (LoadPin %s, lockdown %s, sig_enforce %s)",
			name, t->loadpin, ld, t->sig_enforce);
		err_hint(
			e, "%s",
			strcmp(ld, "unknown") == 0 || strcmp(t->loadpin, "unknown") == 0
				? "mount securityfs on the host's /sys/kernel/security so the installer can read lockdown and LoadPin; see dmesg for the rule (LoadPin, lockdown, an LSM)"
				: "see dmesg for the security module that refused it (LoadPin, SELinux, AppArmor)");
	}
	return -1;
}

/* The kernel's errno, as a message a node operator can act on. */
int kmods_explain(const struct kmods_tree *tree, int errnum, const struct insertion *in,
		  const struct ktrust *trust, int kmsg_fd, struct err *e)
{
	const char *name = in->name, *options = in->options;
	struct modsig_result sig = {0};
	struct err ie;
	_cleanup_close_ int fd = fs_open_regular_at(AT_FDCWD, in->path, 0, &ie);
	char said[512];

	/* Words only: with the trailer unreadable the message names no signer, as unsigned. */
	if (fd >= 0 && modsig_check_fd(fd, NULL, &sig, &ie) < 0)
		sig = (struct modsig_result){0};
	kmods_driver_log(kmsg_fd, said, sizeof(said));
	switch (errnum) {
	case EKEYREJECTED:
		if (sig.is_signed)
			err_set(e, EXIT_KERNEL_REFUSED,
				"the kernel rejected the signature of module %s: signed by '%s' (key %s), a key it does not trust",
				name, sig.signer, sig.key_id[0] ? sig.key_id : "?");
		else
			err_set(e, EXIT_KERNEL_REFUSED,
				"the kernel rejected module %s: it is not signed and the kernel enforces module signatures",
				name);
		err_hint(
			e,
			"sign the modules with a key the kernel trusts, or enroll the signer's certificate (mokutil, or --kernel-keyring-cert)");
		return -1;
	case EPERM:
		return explain_eperm(tree, name, fd, trust, e);
	case ENOKEY:
		err_set(e, EXIT_KERNEL_REFUSED,
			"the kernel has no key to check module %s (signer '%s', key %s)", name,
			sig.signer[0] ? sig.signer : "?", sig.key_id[0] ? sig.key_id : "?");
		err_hint(e, "enroll the signer's certificate (mokutil, or --kernel-keyring-cert)");
		return -1;
	case ENOEXEC:
		err_set(e, EXIT_KERNEL_REFUSED,
			"the kernel cannot run module %s: it is built for another kernel or malformed",
			name);
		err_hint(e, "use a package built for this kernel; see dmesg");
		return -1;
	case EINVAL:
		err_set(e, EXIT_KERNEL_REFUSED,
			"the kernel refused module %s as invalid: an unknown parameter (%s) or a build for another kernel",
			name, options && *options ? options : "none given");
		err_hint(e,
			 "check --module-arg, and that the package matches this kernel; see dmesg");
		return -1;
	case ENOENT:
		err_set(e, EXIT_KERNEL_REFUSED,
			"module %s needs symbols no loaded module provides (a dependency is missing)",
			name);
		err_hint(e, "see dmesg for the unknown symbols");
		return -1;
	case ENODEV:
		if (said[0])
			err_set(e, EXIT_KERNEL_REFUSED,
				"module %s found no NVIDIA GPU it supports; the driver logged: %s",
				name, said);
		else
			err_set(e, EXIT_KERNEL_REFUSED,
				"module %s found no NVIDIA GPU it supports (no such device)", name);
		err_hint(
			e,
			"check that the node has an NVIDIA GPU (lspci -d 10de:) that this driver version supports, and that no other driver holds it");
		return -1;
	default:
		if (said[0])
			err_errno(e, EXIT_KERNEL_REFUSED, errnum,
				  "the kernel refused module %s (the driver logged: %s)", name,
				  said);
		else
			err_errno(e, EXIT_KERNEL_REFUSED, errnum, "the kernel refused module %s",
				  name);
		err_hint(e, "see dmesg%s",
			 ktrust_enforces(trust) ? "; the kernel enforces module signatures" : "");
		return -1;
	}
}
