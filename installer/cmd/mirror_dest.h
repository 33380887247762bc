/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where mirror writes (mirror.c): a directory (mirror_dir.c), an OCI image layout
 * directory (mirror_oci.c) or a registry repository (mirror_push.c), each a row of
 * operations. mirror.c chooses the packages, verifies the index and judges rollback;
 * a destination only reads what it holds, copies a package it lacks (verified before it
 * is written there) and, last, publishes the index: the one switch a reader sees.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/config.h"
#include "source/source.h"
#include "util/err.h"

/* The packages a run carries, in the index's order (the manifest lists them so). */
struct mirror_carried {
	const struct repo_package **v;
	size_t n;
};

/* The index a destination holds now, for anti-rollback; NULL json: none. */
struct mirror_held {
	char *json, *sig;
	size_t len, sig_len;
};
void mirror_held_done(struct mirror_held *h);

struct mirror_dest;

struct mirror_dest_ops {
	const char *kind; /* for messages: "directory", "OCI image layout", "registry" */
	/* The index the destination holds: 0 and *RET (json NULL when none), or -1. */
	int (*held)(struct mirror_dest *d, struct mirror_held *ret, struct err *e);
	/* Whether it holds PKG already, whole: 1, 0, or -1 with e set. */
	int (*have)(struct mirror_dest *d, const struct repo_package *pkg, struct err *e);
	/*
	 * Copies PKG from SRC: downloaded and verified against the index before any byte of it
	 * is where a reader looks. Adds the bytes downloaded to *NET. 0, or -1.
	 */
	int (*copy)(struct mirror_dest *d, struct source *src, const struct repo_package *pkg,
		    uint64_t *net, struct err *e);
	/* The index, its signature and (OCI) the manifest listing CARRIED, the switch last. */
	int (*publish)(struct mirror_dest *d, const struct source *src,
		       const struct mirror_carried *carried, struct err *e);
	void (*close)(struct mirror_dest *d);
};

struct mirror_dest {
	const struct mirror_dest_ops *ops;
	const struct config *c;
	int dir_fd; /* directory, layout: the directory */
	char *tag;  /* layout: the tag written */
	void *priv; /* registry: its state (mirror_push.c) */
};

/*
 * Opens --to: a directory or file:// URL (mirror_dir_open), oci-layout:PATH[:TAG]
 * (mirror_layout_open), oci://HOST/NAME[:TAG] (mirror_push_open). 0, or -1 (EXIT_USAGE for
 * a malformed --to).
 */
_must_check_ int mirror_dir_open(const struct config *c, const char *path, struct mirror_dest *ret,
				 struct err *e);
_must_check_ int mirror_layout_open(const struct config *c, const char *ref,
				    struct mirror_dest *ret, struct err *e);
_must_check_ int mirror_push_open(const struct config *c, const char *ref, struct mirror_dest *ret,
				  struct err *e);

/* Whether the file at FD has PKG's size and digest (it is read from where it is). */
bool mirror_is_package(int fd, const struct repo_package *pkg);

/*
 * The partial file PART in DFD for a copy to write into, resumed where an earlier run left
 * a regular file with no other link; anything else there removed first. An fd, or -1.
 */
_must_check_ int mirror_open_part(int dfd, const char *part, struct err *e);
