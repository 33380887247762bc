/* SPDX-License-Identifier: Apache-2.0 */
#include "host/selinux.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fs.h"

#define XATTR_NAME "security.selinux"
#define SELINUXFS "/sys/fs/selinux"
/* Directories deeper than this are not walked: our trees are a few levels deep. */
#define MAX_DEPTH 16

const char *selinux_mode_name(enum selinux_mode m)
{
	switch (m) {
	case SELINUX_PERMISSIVE:
		return "permissive";
	case SELINUX_ENFORCING:
		return "enforcing";
	default:
		return "disabled";
	}
}

int selinux_parse_flag(const char *buf, size_t len)
{
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len != 1 || (buf[0] != '0' && buf[0] != '1'))
		return -EINVAL;
	return buf[0] - '0';
}

char *selinux_context_of(const char *type, bool mls, char *buf, size_t size)
{
	int n = snprintf(buf, size, "system_u:object_r:%s%s", type, mls ? ":s0" : "");

	return n < 0 || (size_t)n >= size ? NULL : buf;
}

static int read_flag(int root_fd, const char *name)
{
	char path[64];
	_cleanup_free_ char *buf = NULL;
	size_t len;

	snprintf(path, sizeof(path), SELINUXFS "/%s", name);
	buf = fs_read_in_root(root_fd, path, 64, &len);
	return buf ? selinux_parse_flag(buf, len) : -ENOENT;
}

/*
 * Whether the loaded policy knows CONTEXT: selinuxfs's context file takes a context and
 * answers EINVAL for one it cannot map (libselinux's security_check_context). 1 yes, 0 no,
 * -1 when it cannot be asked.
 */
static int policy_knows(int root_fd, const char *context)
{
	struct err e;
	_cleanup_close_ int fd =
		fs_open_in_root(root_fd, SELINUXFS "/context", O_RDWR | O_CLOEXEC, 0, 0, &e);

	if (fd < 0)
		return -1;
	if (write(fd, context, strlen(context) + 1) >= 0)
		return 1;
	return errno == EINVAL ? 0 : -1;
}

void selinux_probe(int root_fd, struct selinux *ret)
{
	int enforce = read_flag(root_fd, "enforce"), mls, known;

	*ret = (struct selinux){.mode = SELINUX_DISABLED};
	if (enforce < 0)
		return;
	ret->mode = enforce ? SELINUX_ENFORCING : SELINUX_PERMISSIVE;
	mls = read_flag(root_fd, "mls");
	ret->mls = mls == 1;
	if (!selinux_context_of(SELINUX_CONTAINER_TYPE, ret->mls, ret->context,
				sizeof(ret->context)))
		return;
	known = policy_knows(root_fd, ret->context);
	if (known == 0) {
		ret->context[0] = '\0';
		return;
	}
	ret->checked = known == 1;
	if (selinux_context_of(SELINUX_MODULES_TYPE, ret->mls, ret->modules_context,
			       sizeof(ret->modules_context)) &&
	    policy_knows(root_fd, ret->modules_context) == 0)
		ret->modules_context[0] = '\0';
}

/* An O_PATH fd of DIRFD/NAME, not followed (NULL or "": DIRFD itself). */
static int open_entry(int dirfd, const char *name)
{
	return openat(dirfd, name && *name ? name : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

/*
 * The label of the entry open as FD (O_PATH, a link included). Through /proc/self/fd,
 * which for an O_PATH descriptor names the entry itself, a link not followed further
 * (systemd's label_fix does the same).
 */
static int label_of_fd(int fd, char *buf, size_t size)
{
	char proc[64];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = getxattr(proc, XATTR_NAME, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Whether A and B name the same type and level: the user and role do not decide access. */
static bool same_label(const char *a, const char *b)
{
	const char *ta = strchr(a, ':'), *tb = strchr(b, ':');

	ta = ta ? strchr(ta + 1, ':') : NULL;
	tb = tb ? strchr(tb + 1, ':') : NULL;
	return ta && tb && strcmp(ta, tb) == 0;
}

/* Labels the entry open as FD; 1 when it changed, 0 when it had the label, -errno. */
static int label_fd(int fd, const char *context)
{
	char have[SELINUX_CONTEXT_MAX], proc[64];

	if (label_of_fd(fd, have, sizeof(have)) == 0 && same_label(have, context))
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return setxattr(proc, XATTR_NAME, context, strlen(context) + 1, 0) < 0 ? -errno : 1;
}

/*
 * Visits the entry open as FD (O_PATH, not followed) and, for a directory, what is under
 * it, depth first, links not followed; VISIT returns nonzero to stop the walk.
 */
typedef int (*visit_fn)(int fd, const char *path, void *ud);

static int walk(int fd, const char *path, unsigned depth, visit_fn visit, void *ud)
{
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;
	struct stat st;
	int r = visit(fd, path, ud), dfd;

	if (r || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || depth >= MAX_DEPTH)
		return r;
	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || !(dir = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while (!r && (de = readdir(dir))) {
		char sub[512];
		_cleanup_close_ int efd = -1;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		efd = openat(dirfd(dir), de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (efd >= 0) /* else gone meanwhile */
			r = walk(efd, sub, depth + 1, visit, ud);
	}
	return r;
}

struct relabel {
	const char *context;
	size_t changed;
	int error; /* the first errno */
	char where[512];
};

static int relabel_one(int fd, const char *path, void *ud)
{
	struct relabel *w = ud;
	int r = label_fd(fd, w->context);

	if (r < 0) {
		w->error = -r;
		snprintf(w->where, sizeof(w->where), "%s", path);
		return 1;
	}
	w->changed += (size_t)r;
	return 0;
}

static int relabel_report(const struct relabel *w, const char *context, struct err *e);

int selinux_label_at(int dirfd, const char *name, const char *context, bool tree, struct err *e)
{
	_cleanup_close_ int fd = open_entry(dirfd, name);
	const char *shown = name && *name ? name : ".";
	struct relabel w = {.context = context};

	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open '%s' to label it", shown);
	(void)(tree ? walk(fd, shown, 0, relabel_one, &w) : relabel_one(fd, shown, &w));
	return relabel_report(&w, context, e);
}

/* The walk's outcome: the number of entries changed, or -1 with e set. */
static int relabel_report(const struct relabel *w, const char *context, struct err *e)
{
	if (w->error == EOPNOTSUPP)
		return err_errno(e, EXIT_UNEXPECTED, EOPNOTSUPP,
				 "label '%s' %s: its file system keeps no SELinux labels", w->where,
				 context);
	if (w->error == EPERM || w->error == EACCES) {
		err_set(e, EXIT_USAGE, "SELinux: the kernel refused to label '%s' %s (%s)",
			w->where, context, strerror(w->error));
		err_hint(
			e,
			"the installer runs confined: run it privileged (spc_t), as the DaemonSet does");
		return -1;
	}
	if (w->error)
		return err_errno(e, EXIT_UNEXPECTED, w->error, "label '%s' %s", w->where, context);
	return w->changed > INT_MAX ? INT_MAX : (int)w->changed;
}

struct census {
	const char *context;
	size_t max;
	struct selinux_mislabel *m;
};

static int census_one(int fd, const char *path, void *ud)
{
	struct census *c = ud;
	char have[SELINUX_CONTEXT_MAX];

	if (c->m->total >= c->max)
		return 1;
	c->m->total++;
	if (label_of_fd(fd, have, sizeof(have)) < 0)
		have[0] = '\0';
	if ((!have[0] || !same_label(have, c->context)) && c->m->count++ == 0) {
		snprintf(c->m->first, sizeof(c->m->first), "%s", path);
		snprintf(c->m->first_label, sizeof(c->m->first_label), "%s", have);
	}
	return 0;
}

int selinux_find_mislabelled(int dirfd, const char *name, const char *context, size_t max_entries,
			     struct selinux_mislabel *ret)
{
	_cleanup_close_ int fd = open_entry(dirfd, name);
	struct census c = {.context = context, .max = max_entries, .m = ret};
	char have[SELINUX_CONTEXT_MAX];
	int r;

	*ret = (struct selinux_mislabel){0};
	if (fd < 0)
		return -errno;
	r = label_of_fd(fd, have, sizeof(have));
	if (r < 0 && r != -ENODATA)
		return r;
	(void)walk(fd, name && *name ? name : ".", 0, census_one, &c);
	return 0;
}
