/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SELinux on the node, and the label of what we publish for containers.
 *
 * On a host that runs SELinux (RHEL and its rebuilds; Fedora), a container process runs as
 * container_t with a pair of MCS categories of its own, and reads a host file only when its
 * type is one the container policy grants: container_file_t, the type container-selinux
 * gives files made for containers (its container_contexts: file =
 * "system_u:object_r:container_file_t:s0"; container.te: container_domain may read, map and
 * execute it, and container_t may enter it). At level s0 the file is dominated by every
 * container's categories, so each container may read it (policy/mcs, "h1 dom h2"). The
 * install dir, its firmware and the CDI hook carry that label, set here from the
 * installer without a policy module of our own (docs/platforms/rhel.md).
 *
 * The state is read from the host's selinuxfs (/sys/fs/selinux under the host root);
 * labels are written as the security.selinux extended attribute, never through a path
 * that follows a link.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/cleanup.h"
#include "util/err.h"

enum selinux_mode {
	SELINUX_DISABLED, /* no selinuxfs with a policy: no label matters */
	SELINUX_PERMISSIVE,
	SELINUX_ENFORCING,
};

/* The type that containers may read and execute (container-selinux, refpolicy). */
#define SELINUX_CONTAINER_TYPE "container_file_t"
/*
 * The type of kernel modules: the one the policy lets a module be loaded from
 * (refpolicy's can_load_kernmodule: modules_object_t:system module_load), which NVIDIA's
 * driver container gives its modules too (gpu-driver-container, rhel9/ocp_dtk_entrypoint).
 */
#define SELINUX_MODULES_TYPE "modules_object_t"
#define SELINUX_CONTEXT_MAX 256

struct selinux {
	enum selinux_mode mode;
	bool mls; /* the policy has levels (MCS or MLS): contexts end in one */
	/*
	 * The label to publish with ("system_u:object_r:container_file_t:s0"), or "" where
	 * SELinux is disabled or its policy has no container_file_t (no container policy:
	 * containers do not run confined by it).
	 */
	char context[SELINUX_CONTEXT_MAX];
	/*
	 * The kernel modules' label (drivers/ of each version): modules_object_t at s0, or ""
	 * where CONTEXT is, or the policy has no such type (drivers/ then gets CONTEXT).
	 */
	char modules_context[SELINUX_CONTEXT_MAX];
	bool checked; /* the policy confirmed CONTEXT (selinuxfs's context file) */
};

/*
 * Reads SELinux's state under ROOT_FD (enforce, mls) and asks the policy whether it knows
 * the label (a write to selinuxfs's context file, which the kernel answers EINVAL for a
 * type it has not). A selinuxfs that cannot be written (mounted read-only in a container)
 * cannot say: the label is then taken as valid, and CHECKED is false.
 */
void selinux_probe(int root_fd, struct selinux *ret);

/* The label to publish with, or NULL where none is to be set. */
static inline const char *selinux_label(const struct selinux *s)
{
	return s->context[0] ? s->context : NULL;
}

/* "disabled", "permissive" or "enforcing". */
const char *selinux_mode_name(enum selinux_mode m);

/* Parses an enforce or mls file's contents ("0" or "1", a newline allowed). -EINVAL else. */
int selinux_parse_flag(const char *buf, size_t len);

/* The context for TYPE at level s0 where the policy has levels: BUF, or NULL if too long. */
char *selinux_context_of(const char *type, bool mls, char *buf, size_t size);

/*
 * The hard links of a tree the installer labels: its entries that are not directories and
 * have more than one name, each with how many of its names lie in the tree. A label is on
 * the inode, so labelling a name labels every other: an entry is labelled only where it is
 * the installer's, a directory, or a regular file or symbolic link whose every name lies in
 * the tree (the installer links a version's usr/bin/ to its bin/, and carries lib64/ across
 * versions by link, all inside the install dir). A hard link to a file outside it (the
 * host's /etc/shadow) would give that file the container label, and is left as it is, as
 * is any device, FIFO or socket, which the installer never makes there.
 */
struct selinux_links {
	struct selinux_link *v; /* sorted by device and inode */
	size_t n;
	/* What the passes given these links left unlabelled: how many, and the first. */
	size_t skipped;
	char first_skipped[512];
};

/*
 * Counts the hard links under DIRFD/NAME (NULL or "": DIRFD's tree), links not followed.
 * Returns 0 and *RET (selinux_links_free), or -1 with E set.
 */
_must_check_ int selinux_links_new(int dirfd, const char *name, struct selinux_links **ret,
				   struct err *e);
void selinux_links_free(struct selinux_links *l);
DEFINE_POINTER_CLEANUP(struct selinux_links, selinux_links_free)

/*
 * Labels DIRFD's NAME (NULL or "": DIRFD itself) and, where TREE and it is a directory,
 * everything under it with CONTEXT, where it carries another, never following a link (a
 * link is labelled itself), and only what is the installer's by LINKS (above; NULL: the
 * links of what this call labels), which counts what it skips. Returns the number of
 * entries changed, or -1 with e set: EXIT_USAGE when the kernel refused (the installer
 * runs confined), EXIT_UNEXPECTED else. A file system without labels (EOPNOTSUPP) is -1
 * with e's errno EOPNOTSUPP, for the caller to judge.
 */
_must_check_ int selinux_label_at(int dirfd, const char *name, const char *context, bool tree,
				  struct selinux_links *links, struct err *e);

/* What selinux_find_mislabelled found: how many, and the first, by path under DIRFD. */
struct selinux_mislabel {
	size_t count;
	size_t total;
	char first[512];
	char first_label[SELINUX_CONTEXT_MAX]; /* "" when it has none */
	size_t foreign; /* entries not the installer's, which no pass labels (selinux_links) */
	char first_foreign[512];
};

/*
 * Counts the entries of DIRFD/NAME's tree (NULL: DIRFD's; itself included, links not
 * followed, at most MAX_ENTRIES) whose type or level is not CONTEXT's, and apart, those
 * that are not the installer's by LINKS (NULL: the links of that tree), which
 * selinux_label_at leaves as they are. Returns 0, or -errno when its own label cannot be
 * read (EOPNOTSUPP: a file system without labels).
 */
int selinux_find_mislabelled(int dirfd, const char *name, const char *context, size_t max_entries,
			     const struct selinux_links *links, struct selinux_mislabel *ret);
