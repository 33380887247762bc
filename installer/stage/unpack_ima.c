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

#include "stage/unpack.h"
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

/* Whether the func= value at FUNC, in a line that ends at END, is HOOK. */
static bool hook_is(const char *func, const char *end, const char *hook)
{
	size_t n = strlen(hook);

	return (size_t)(end - func) >= n && strncmp(func, hook, n) == 0 &&
	       (func + n == end || func[n] == ' ');
}

/*
 * The first rule of POLICY (LEN bytes) that appraises firmware or module loads
 * ("appraise" with func=FIRMWARE_CHECK, func=MODULE_CHECK, or no func=, which means
 * every hook), into OUT; false when none does. A NUL ends a line as '\n' does: bytes
 * the kernel never writes there hide no rule after them.
 */
static bool policy_appraises(const char *policy, size_t len, char *out, size_t size)
{
	const char *end = policy + len;

	for (const char *line = policy; line < end;) {
		size_t n = 0;
		const char *func = NULL;

		while (line + n < end && line[n] != '\n' && line[n] != '\0')
			n++;
		if (n > 9 && strncmp(line, "appraise ", 9) == 0) {
			for (const char *c = line; c + 5 <= line + n; c++) {
				if ((c == line || c[-1] == ' ') && strncmp(c, "func=", 5) == 0) {
					func = c + 5;
					break;
				}
			}
			if (!func || hook_is(func, line + n, "FIRMWARE_CHECK") ||
			    hook_is(func, line + n, "MODULE_CHECK")) {
				snprintf(out, size, "the IMA policy has '%.*s'",
					 (int)(n < 120 ? n : 120), line);
				return true;
			}
		}
		line += n + 1;
	}
	return false;
}

bool unpack_ima_enforced(const char *cmdline, const struct unpack_ima_policy *policy, char *why,
			 size_t size)
{
	char mode[32] = "", list[256] = "";
	bool has_mode = cmdline_param(cmdline, "ima_appraise", mode, sizeof(mode));

	/* log, fix and off: appraisal does not refuse anything. */
	if (has_mode && strcmp(mode, "enforce") != 0) {
		snprintf(why, size, "ima_appraise=%s on the kernel command line", mode);
		return false;
	}
	/* There, but not a policy one can read whole: appraisal is not ruled out. */
	if (policy->unreadable) {
		snprintf(why, size, "the IMA policy cannot be read whole (%s)", policy->unreadable);
		return true;
	}
	if (policy->text) {
		if (policy_appraises(policy->text, policy->len, why, size))
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
	_cleanup_free_ char *cmdline = NULL, *text = NULL;
	struct unpack_ima_policy policy = {0};
	char why[192];
	struct err pe;
	const char *cause =
		st->ima_errno == EPERM
			? "no CAP_SYS_ADMIN, which setting security.* needs"
			: "the install dir's file system does not store security.* attributes";

	if (st->ima_unstored == 0)
		return 0;
	cmdline = fs_read_in_root(root_fd, "/proc/cmdline", POLICY_MAX, NULL);
	/*
	 * Not there (no securityfs, no IMA) or not shown (EACCES: no CONFIG_IMA_READ_POLICY):
	 * the command line tells. Anything else (a FIFO, a policy past the limit, a read
	 * error) is a policy this run cannot read, which is not one that does not appraise.
	 */
	if (fs_read_file_in_root(root_fd, IMA_POLICY, POLICY_MAX, &text, &policy.len, &pe) == 0)
		policy.text = text;
	else if (err_errnum(&pe) != ENOENT && err_errnum(&pe) != EACCES)
		policy.unreadable = pe.msg;
	if (unpack_ima_enforced(cmdline ? cmdline : "", &policy, why, sizeof(why))) {
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
