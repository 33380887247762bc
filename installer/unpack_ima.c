// SPDX-License-Identifier: Apache-2.0
/*
 * What the host does with the security.ima values a package carries: whether it
 * enforces IMA appraisal on firmware and module loads, read from the kernel command
 * line and the IMA policy, and the verdict when some value could not be stored.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "unpack.h"
#include "util/fs.h"
#include "util/log.h"

#define IMA_POLICY "/sys/kernel/security/ima/policy"
#define POLICY_MAX (1u << 20)

/* The value of the kernel parameter KEY= in CMDLINE (the last one wins), into OUT. */
static bool cmdline_param(const char *cmdline, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);
	bool found = false;

	for (const char *c = cmdline; *c;) {
		size_t n = strcspn(c, " \t\n");

		/* What follows "--" is init's, not the kernel's. */
		if (n == 2 && c[0] == '-' && c[1] == '-')
			break;
		if (n > klen && strncmp(c, key, klen) == 0 && c[klen] == '=') {
			size_t vlen = n - klen - 1 < size - 1 ? n - klen - 1 : size - 1;

			memcpy(out, c + klen + 1, vlen);
			out[vlen] = '\0';
			found = true;
		} else if (n == klen && strncmp(c, key, klen) == 0) {
			out[0] = '\0';
			found = true;
		}
		c += n;
		c += strspn(c, " \t\n");
	}
	return found;
}

/* Whether the '|'-separated LIST names ITEM. */
static bool list_has(const char *list, const char *item)
{
	size_t len = strlen(item);

	for (const char *c = list; *c;) {
		size_t n = strcspn(c, "|");

		if (n == len && strncmp(c, item, len) == 0)
			return true;
		c += n;
		c += *c == '|';
	}
	return false;
}

/*
 * The first rule of POLICY that appraises firmware or module loads ("appraise" with
 * func=FIRMWARE_CHECK, func=MODULE_CHECK, or no func=, which means every hook), into
 * OUT; false when none does.
 */
static bool policy_appraises(const char *policy, char *out, size_t size)
{
	for (const char *line = policy; *line;) {
		size_t n = strcspn(line, "\n");
		const char *func = NULL;

		if (n > 9 && strncmp(line, "appraise ", 9) == 0) {
			for (const char *c = line; c < line + n; c++) {
				if ((c == line || c[-1] == ' ') && strncmp(c, "func=", 5) == 0) {
					func = c + 5;
					break;
				}
			}
			if (!func || strncmp(func, "FIRMWARE_CHECK", 14) == 0 ||
			    strncmp(func, "MODULE_CHECK", 12) == 0) {
				snprintf(out, size, "the IMA policy has '%.*s'",
					 (int)(n < 120 ? n : 120), line);
				return true;
			}
		}
		line += n;
		line += *line == '\n';
	}
	return false;
}

bool unpack_ima_enforced(const char *cmdline, const char *policy, char *why, size_t size)
{
	char mode[32] = "", list[256] = "";
	bool has_mode = cmdline_param(cmdline, "ima_appraise", mode, sizeof(mode));

	/* log, fix and off: appraisal does not refuse anything. */
	if (has_mode && strcmp(mode, "enforce") != 0) {
		snprintf(why, size, "ima_appraise=%s on the kernel command line", mode);
		return false;
	}
	if (policy) {
		if (policy_appraises(policy, why, size))
			return true;
		snprintf(why, size, "the IMA policy appraises neither firmware nor modules");
		return false;
	}
	/* The policy is not readable here (no securityfs, no CONFIG_IMA_READ_POLICY). */
	if (cmdline_param(cmdline, "ima_policy", list, sizeof(list)) &&
	    (list_has(list, "appraise_tcb") || list_has(list, "secure_boot"))) {
		snprintf(why, size, "ima_policy=%s on the kernel command line", list);
		return true;
	}
	if (cmdline_param(cmdline, "ima_appraise_tcb", list, sizeof(list))) {
		snprintf(why, size, "ima_appraise_tcb on the kernel command line");
		return true;
	}
	if (has_mode) {
		snprintf(
			why, size,
			"ima_appraise=enforce on the kernel command line, and the IMA policy is not readable");
		return true;
	}
	snprintf(why, size, "neither the kernel command line nor a readable IMA policy appraises");
	return false;
}

int unpack_ima_verdict(int root_fd, const struct unpack_stats *st, struct err *e)
{
	_cleanup_free_ char *cmdline = NULL, *policy = NULL;
	char why[192];
	const char *cause =
		st->ima_errno == EPERM
			? "no CAP_SYS_ADMIN, which setting security.* needs"
			: "the install dir's file system does not store security.* attributes";

	if (st->ima_unstored == 0)
		return 0;
	cmdline = fs_read_in_root(root_fd, "/proc/cmdline", POLICY_MAX, NULL);
	policy = fs_read_in_root(root_fd, IMA_POLICY, POLICY_MAX, NULL);
	if (unpack_ima_enforced(cmdline ? cmdline : "", policy, why, sizeof(why))) {
		err_set(e, EXIT_KERNEL_REFUSED,
			"cannot store security.ima on '%s' and %u more (%s: %s), and this host enforces IMA appraisal (%s): the kernel would refuse those files",
			st->ima_first, st->ima_unstored - 1, strerror(st->ima_errno), cause, why);
		err_hint(
			e,
			st->ima_errno == EPERM
				? "run the installer with CAP_SYS_ADMIN (a privileged container)"
				: "put the install dir on a file system that stores security.* attributes (ext4, xfs, tmpfs)");
		return -1;
	}
	log_kv(LOG_WARN, "unpack",
	       "security.ima not stored; the files are installed without it, which this host does not check",
	       "first", st->ima_first, U64("files", st->ima_unstored), "cause", cause, "host", why,
	       LOG_END);
	return 0;
}
