/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The install directory and its atomic switch (docs/design.md):
 *
 *   INSTALL_DIR/.versions/<version>[-<module type>]-<sha12>/{bin,lib64,drivers,firmware,share,.install.json}
 *   INSTALL_DIR/.versions/<version>-<sha12>/bin/.real/   NVIDIA's programs (installer/stage/wrap.h)
 *   INSTALL_DIR/.current -> .versions/<version>-<sha12>
 *   INSTALL_DIR/{bin,lib64,drivers,firmware,share} -> .current/<name>
 *
 * A version is unpacked into INSTALL_DIR/.staging-*, synced, renamed into
 * .versions/ and made current by one rename(2) of the .current symlink, so
 * readers see the old tree or the new one, never a mixture. The manifest
 * .install.json inside each version is the record of what is installed: it
 * is switched in the same rename as the files it describes.
 */
#pragma once

#include <pthread.h>

#include <stdbool.h>
#include <stdint.h>

#include "host/host.h"
#include "util/err.h"

#define MANIFEST_NAME ".install.json"

/*
 * Which driver: its version, its module flavour ("open", "proprietary", or NULL where the
 * package does not state one) and the kernel release it is for. The three travel together,
 * from the choice to the version's id, the kernel stage, the labels, the pending record
 * and the metrics: one record, so that one cannot be passed in another's place. The
 * strings are borrowed from whoever fills it.
 */
struct driver_id {
	const char *version;
	const char *module_type;
	const char *kernel;
};

struct manifest {
	char *driver_version;
	char *kernel_release;
	char *package_sha256;
	uint64_t package_size;
	char *package_path;
	char *repository;
	char *requested_version;
	char *installed_at; /* RFC 3339, UTC */
	char *os_id;
	char *arch;
	char *key_fingerprint;
	char *module_type; /* "open" or "proprietary"; NULL: the package did not state it */
};

void manifest_done(struct manifest *m);
/* Parses manifest JSON. Returns 0, or -1 with e set. */
_must_check_ int manifest_parse(const char *buf, size_t len, struct manifest *m, struct err *e);
/* Serialises M; returns a malloc'd JSON string or NULL on ENOMEM. */
char *manifest_to_json(const struct manifest *m);
/* The driver M records, its strings M's (the kernel release it was installed for). */
struct driver_id manifest_driver(const struct manifest *m);

struct installdir;

/*
 * Opens INSTALL_DIR under root_fd. CREATE makes it; without CREATE a missing
 * directory gives 1 and no handle. Returns 0, 1 or -1.
 */
_must_check_ int publish_open(int root_fd, const char *install_dir, bool create,
			      struct installdir **ret, struct err *e);
void publish_free(struct installdir *d);
DEFINE_POINTER_CLEANUP(struct installdir, publish_free)

/*
 * Before anything changes: whether the install dir can be ours. A link at .versions is
 * removed (never followed); a .versions or .current of another kind, or a real bin/,
 * lib64/, drivers/, firmware/ or share/ directory that is not provably an earlier NVIDIA
 * install (lib64/libnvidia-ml.so.1, lib64/libcuda.so.1 or bin/nvidia-smi) is refused.
 * Returns 0, or -1 (EXIT_USAGE) naming the directory.
 */
_must_check_ int publish_check_takeover(struct installdir *d, const char *install_dir,
					struct err *e);

/* The install dir's fd (owned by D), for callers that inspect it. */
int publish_fd(const struct installdir *d);

/*
 * Removes what an interrupted run left: staging trees, temp links, and every version
 * but the current one and the pending one (installer/stage/pending.h): at most two versions
 * stay on disk between runs.
 */
_must_check_ int publish_cleanup(struct installdir *d, struct err *e);

/* Reads the current version's manifest. Returns 0, 1 when nothing is installed, or -1. */
_must_check_ int publish_current(struct installdir *d, struct manifest *ret, struct err *e);

/* Whether the top-level links point where they should (a cheap integrity check). */
bool publish_links_ok(struct installdir *d);

/* Creates a staging directory; returns its fd and writes its name to ret_name. */
_must_check_ int publish_staging(struct installdir *d, char *ret_name, size_t size, struct err *e);

/* Removes a staging directory after a failure. */
void publish_staging_abort(struct installdir *d, const char *name);

/*
 * Flushes the staged tree to disk in a thread of its own while the caller goes
 * on checking (the kernel modules' signatures): publish_stage's own sync then
 * finds little left to write. publish_flush_end waits for it; its result does
 * not matter, publish_stage syncs again and checks.
 */
struct publish_flush {
	pthread_t thread;
	int fd;
	bool started;
};
void publish_flush_begin(struct publish_flush *f, int staging_fd);
void publish_flush_end(struct publish_flush *f);

/* What publish_stage makes a version: a staging tree (publish_staging) and its manifest. */
struct publish_request {
	const char *staging; /* the tree's name in the install dir */
	int staging_fd;
	const struct manifest *manifest;
	const struct selinux *selinux; /* the tree's labels (host/selinux.h); NULL: none */
};

/*
 * Makes the staged tree a version: moves kernel/ to drivers/, adds the
 * missing standard directories, puts the launcher in front of the programs in
 * bin/ (installer/stage/wrap.h), adds the manifest, syncs, and renames it into
 * .versions/; its id ("<version>-<sha12>", or "<version>-open-<sha12>" for a package
 * that states its module type) goes to ret_id. Nothing current
 * changes. Returns 0 or -1.
 */
_must_check_ int publish_stage(struct installdir *d, const struct publish_request *rq, char *ret_id,
			       size_t size, struct err *e);

/*
 * Labels what the install dir holds with SE's labels (host/selinux.h): the dir, its links,
 * the helpers and every version with the container label, each version's drivers/ with
 * the kernel modules' (where the policy has it); not what an earlier install left that
 * was not the driver's (.taken-over/), nor a staging tree, nor what the installer did not
 * make (host/selinux.h, struct selinux_links: a hard link to a file outside the install
 * dir, a device), which a WARN line names. Entries that carry their label already are
 * left as they are; none is set where SE has no container label. A file system that
 * keeps no labels is a warning. Returns 0 or -1 (EXIT_USAGE when the kernel
 * refuses: the installer runs confined).
 */
_must_check_ int publish_label(struct installdir *d, const struct selinux *se, struct err *e);

/*
 * Counts what publish_label would change: the entries it labels whose type or level is not
 * the one it gives them, the first named in RET; and apart (RET's foreign) those it leaves
 * as not the installer's. Returns 0, or -errno when the install dir's own label cannot
 * be read (EOPNOTSUPP: its file system keeps none).
 */
int publish_find_mislabelled(struct installdir *d, const struct selinux *se,
			     struct selinux_mislabel *ret);

/*
 * The id publish_stage gives a package of driver D: "<version>[-<module type>]-<sha12>"
 * (D's kernel is not part of it).
 */
void publish_version_id(const struct driver_id *d, const char *sha256, char *buf, size_t size);

/*
 * Whether version ID is staged whole under .versions/: a directory of its own (not a link),
 * its manifest there.
 */
bool publish_has_version(struct installdir *d, const char *id);

/* Makes version ID current with one rename of .current, then repairs the links. 0 or -1. */
_must_check_ int publish_activate(struct installdir *d, const char *id, struct err *e);

/* Makes no version current (undoing the activation of a first install). 0 or -1. */
_must_check_ int publish_deactivate(struct installdir *d, struct err *e);

/* The id of the current version, or "" when none. */
void publish_current_id(struct installdir *d, char *buf, size_t size);

/* Opens directory SUB ("drivers") of version ID. Returns an fd or -1. */
_must_check_ int publish_version_subdir(struct installdir *d, const char *id, const char *sub,
					struct err *e);

/* Makes the top-level links point into .current. Returns 0 or -1. */
_must_check_ int publish_links(struct installdir *d, struct err *e);

/* Removes every trace of an install (uninstall). Returns 0 or -1. */
_must_check_ int publish_remove(struct installdir *d, struct err *e);
