/* SPDX-License-Identifier: Apache-2.0 */
#include "host/selinux.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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
/* Hard links counted at most; past these, the tree's other linked entries are not ours. */
#define MAX_LINKS 65536

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

struct selinux_link {
	dev_t dev;
	ino_t ino;
	nlink_t names; /* in the tree counted */
};

static int link_cmp(const void *a, const void *b)
{
	const struct selinux_link *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int count_link(int fd, const char *path, void *ud)
{
	struct selinux_links *l = ud;
	struct stat st;

	(void)path;
	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode) || st.st_nlink < 2)
		return 0;
	if (l->n == MAX_LINKS)
		return 1;
	if (l->n % 256 == 0) {
		struct selinux_link *v = reallocarray(l->v, l->n + 256, sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
	}
	l->v[l->n++] = (struct selinux_link){.dev = st.st_dev, .ino = st.st_ino, .names = 1};
	return 0;
}

void selinux_links_free(struct selinux_links *l)
{
	if (!l)
		return;
	free(l->v);
	free(l);
}

/* The hard links of the tree open as FD (O_PATH, not followed; a file is a tree of one). */
static int links_of(int fd, struct selinux_links **ret, struct err *e)
{
	_cleanup_(selinux_links_freep) struct selinux_links *l = calloc(1, sizeof(*l));
	size_t n = 0;

	if (!l || walk(fd, ".", 0, count_link, l) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "count hard links");
	/* One entry per inode, with the number of its names met. */
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), link_cmp);
	for (size_t i = 0; i < l->n; i++) {
		if (n && link_cmp(&l->v[n - 1], &l->v[i]) == 0)
			l->v[n - 1].names++;
		else
			l->v[n++] = l->v[i];
	}
	l->n = n;
	*ret = TAKE_PTR(l);
	return 0;
}

int selinux_links_new(int dirfd, const char *name, struct selinux_links **ret, struct err *e)
{
	_cleanup_close_ int fd = open_entry(dirfd, name);

	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open '%s' to count its hard links",
				 name && *name ? name : ".");
	return links_of(fd, ret, e);
}

/*
 * Whether the entry ST is the installer's to label (struct selinux_links): a directory, or a
 * regular file or symbolic link with one name, or with all its names in the tree LINKS
 * counted (NULL: none counted).
 */
static bool is_ours(const struct stat *st, const struct selinux_links *links)
{
	struct selinux_link key = {.dev = st->st_dev, .ino = st->st_ino}, *found;

	if (S_ISDIR(st->st_mode))
		return true;
	if (!S_ISREG(st->st_mode) && !S_ISLNK(st->st_mode))
		return false;
	if (st->st_nlink < 2)
		return true;
	found = links && links->n ? bsearch(&key, links->v, links->n, sizeof(key), link_cmp) : NULL;
	return found && found->names >= st->st_nlink;
}

struct relabel {
	const char *context;
	struct selinux_links *links;
	size_t changed;
	int error; /* the first errno */
	char where[512];
};

static int relabel_one(int fd, const char *path, void *ud)
{
	struct relabel *w = ud;
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0) {
		w->error = errno;
		snprintf(w->where, sizeof(w->where), "%s", path);
		return 1;
	}
	/* Checked on the entry itself: a name added outside since the count shows here. */
	if (!is_ours(&st, w->links)) {
		if (w->links && w->links->skipped++ == 0)
			snprintf(w->links->first_skipped, sizeof(w->links->first_skipped), "%s",
				 path);
		return 0;
	}
	r = label_fd(fd, w->context);

	if (r < 0) {
		w->error = -r;
		snprintf(w->where, sizeof(w->where), "%s", path);
		return 1;
	}
	w->changed += (size_t)r;
	return 0;
}

static int relabel_report(const struct relabel *w, const char *context, struct err *e);

int selinux_label_at(int dirfd, const char *name, const char *context, bool tree,
		     struct selinux_links *links, struct err *e)
{
	_cleanup_(selinux_links_freep) struct selinux_links *own = NULL;
	_cleanup_close_ int fd = open_entry(dirfd, name);
	const char *shown = name && *name ? name : ".";
	struct relabel w = {.context = context, .links = links};

	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open '%s' to label it", shown);
	if (!links && tree) {
		if (links_of(fd, &own, e) < 0)
			return -1;
		w.links = own;
	}
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
	const struct selinux_links *links;
	struct selinux_mislabel *m;
};

static int census_one(int fd, const char *path, void *ud)
{
	struct census *c = ud;
	char have[SELINUX_CONTEXT_MAX];
	struct stat st;

	if (c->m->total >= c->max)
		return 1;
	c->m->total++;
	if (fstat(fd, &st) == 0 && !is_ours(&st, c->links)) {
		if (c->m->foreign++ == 0)
			snprintf(c->m->first_foreign, sizeof(c->m->first_foreign), "%s", path);
		return 0;
	}
	if (label_of_fd(fd, have, sizeof(have)) < 0)
		have[0] = '\0';
	if ((!have[0] || !same_label(have, c->context)) && c->m->count++ == 0) {
		snprintf(c->m->first, sizeof(c->m->first), "%s", path);
		snprintf(c->m->first_label, sizeof(c->m->first_label), "%s", have);
	}
	return 0;
}

int selinux_find_mislabelled(int dirfd, const char *name, const char *context, size_t max_entries,
			     const struct selinux_links *links, struct selinux_mislabel *ret)
{
	_cleanup_(selinux_links_freep) struct selinux_links *own = NULL;
	_cleanup_close_ int fd = open_entry(dirfd, name);
	struct census c = {.context = context, .max = max_entries, .links = links, .m = ret};
	char have[SELINUX_CONTEXT_MAX];
	struct err e;
	int r;

	*ret = (struct selinux_mislabel){0};
	if (fd < 0)
		return -errno;
	r = label_of_fd(fd, have, sizeof(have));
	if (r < 0 && r != -ENODATA)
		return r;
	if (!links && links_of(fd, &own, &e) == 0)
		c.links = own;
	(void)walk(fd, name && *name ? name : ".", 0, census_one, &c);
	return 0;
}
