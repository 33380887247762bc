/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The face of stage/, the only header of it that other folders include: the staging of
 * the selected package (below), the install dir and its switch, the record of an upgrade
 * that waits, and the programs the installer ships into the install dir. What only stage/
 * uses is in its internal headers (publish.h, unpack.h, libexec.h, carry.h, locate.h,
 * wrap.h, zframes.h).
 */
#pragma once

#include <pthread.h>

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "host/host.h"
#include "source/source.h"
#include "util/cleanup.h"
#include "util/err.h"
#include "util/str.h"

/*
 * ---- the install dir and its atomic switch (stage/publish.h lays it out) ----
 *
 * A version is unpacked into INSTALL_DIR/.staging-*, synced, renamed into
 * .versions/ and made current by one rename(2) of the .current symlink, so
 * readers see the old tree or the new one, never a mixture. The manifest
 * .install.json inside each version is the record of what is installed.
 */

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
	/*
	 * The driver capabilities the version was installed for ("compute,utility,graphics",
	 * source/repo_caps.c's words); NULL: compute and utility, as before the field. The CDI
	 * spec's graphics mounts follow it, not the run's --driver-capabilities.
	 */
	char *capabilities;
};

void manifest_done(struct manifest *m);

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
/* publish_current for the install dir open as INSTALL_FD. */
_must_check_ int publish_current_at(int install_fd, struct manifest *ret, struct err *e);
/*
 * Rewrites the current version's manifest (atomically) with CAPABILITIES as the
 * capabilities it is installed for. Returns 0, or -1 (also when nothing is installed).
 */
_must_check_ int publish_record_capabilities(struct installdir *d, const char *capabilities,
					     struct err *e);

/* Whether the top-level links point where they should (a cheap integrity check). */
bool publish_links_ok(struct installdir *d);

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

/*
 * ---- an upgrade that waits (stage/pending.h) ----
 *
 * A verified version staged beside the current one, or new module parameters for the
 * live driver, recorded in the install dir until the GPUs are idle or the node boots.
 */

/* Why the change waits: the docs' names (docs/json.md), and the record's. */
#define PENDING_DRIVER_IN_USE "driver_in_use"
#define PENDING_MODULE_ARGS "module_args"
/* A GPU layout (--mig-layout) for the current version, refused while the GPUs are busy. */
#define PENDING_MIG_LAYOUT "mig_layout"

struct pending {
	char id[NAME_MAX + 1]; /* the staged version under .versions/ (the current one for args) */
	char driver_version[64]; /* the version that waits */
	char module_type[16];	 /* its flavour, or "" when the package does not state one */
	char reason[24];	 /* PENDING_DRIVER_IN_USE or PENDING_MODULE_ARGS */
	char requested[128];	 /* the request it answers (NVIDIA_DRIVER_VERSION) */
	char module_args[512];	 /* the parameters asked for, space-separated */
	char since[32];		 /* RFC 3339, UTC: when it was first deferred */
	char waiting_for[1024];	 /* what holds the driver, as the idle check said */
	char mig_layout[512];	 /* PENDING_MIG_LAYOUT: the layout that waits ("all-1g.10gb") */
};

/*
 * Reads the record in the install dir DIR_FD. Returns 0, 1 when there is none, or -1
 * (EXIT_UNEXPECTED) for a damaged one; RET is untouched unless 0.
 */
_must_check_ int pending_read(int dir_fd, struct pending *ret, struct err *e);
/* Replaces the record atomically (temp file, fsync, rename). Returns 0 or -1. */
_must_check_ int pending_write(int dir_fd, const struct pending *p, struct err *e);
/* Removes the record; none is success. Returns 0 or -1. */
_must_check_ int pending_clear(int dir_fd, struct err *e);

/*
 * A pending version that failed (verification, a missing or linked tree, publish, load)
 * and was withdrawn, the current version loaded instead: kept in
 * INSTALL_DIR/.pending-failed.json so that status, doctor, the metrics and the labels say
 * so until that version or a newer one is staged or installed, or uninstall runs.
 */
struct pending_failure {
	char driver_version[64]; /* the version that failed */
	char module_type[16];	 /* its flavour, or "" */
	int exit_code;		 /* the failure's exit code (docs/exit-codes.md) */
	char cause[512];	 /* the failure, one line */
	char failed_at[32];	 /* RFC 3339, UTC */
};

/*
 * Reads the failure report in the install dir DIR_FD. Returns 0, 1 when there is none, or
 * -1 (EXIT_UNEXPECTED) for a damaged one (not a regular file, too large, wrong types);
 * RET is untouched unless 0.
 */
_must_check_ int pending_failure_read(int dir_fd, struct pending_failure *ret, struct err *e);
/* Replaces the report atomically (temp file, fsync, rename). Returns 0 or -1. */
_must_check_ int pending_failure_write(int dir_fd, const struct pending_failure *f, struct err *e);
/* Removes the report; none is success. Returns 0 or -1. */
_must_check_ int pending_failure_clear(int dir_fd, struct err *e);

/* What an install run does, given what is current, pending and chosen. */
enum pending_action {
	PENDING_ENSURE,	     /* the choice is current: make sure of it */
	PENDING_RELOAD_ARGS, /* the choice is current, loaded with other parameters */
	PENDING_USE_STAGED,  /* the choice is the staged pending version: switch to it */
	PENDING_STAGE,	     /* the choice is new: download, verify, switch (or defer) */
};
struct pending_plan {
	enum pending_action action;
	bool clear; /* the record is obsolete: remove it (and its version) first */
};

/*
 * The decision: IS_CURRENT says the choice is what is installed (same package, same
 * kernel); CURRENT_ID and CHOICE_ID are version ids ("" for none), P the record or
 * NULL, ARGS_DIFFER whether the live driver's parameters differ from those asked for
 * (only when the choice is current and live). A request for the current version clears
 * a pending version (a reverted rollout); a request for another version than the
 * pending one stages it (its record then replaces the old one).
 */
struct pending_plan pending_decide(bool is_current, const char *current_id, const struct pending *p,
				   const char *choice_id, bool args_differ);

/*
 * ---- an install that waits for its package (stage/waiting.c) ----
 *
 * install --wait-for-package: the repository has no package of the chosen driver for this
 * node's kernel, OS build and architecture, and the run waits for one, checking again with
 * a backoff. Its record, INSTALL_DIR/.waiting.json (written atomically at each check,
 * removed when the wait ends), is what status, doctor and the metrics say the node waits
 * for (docs/json.md, "waiting_for_package").
 */

#define WAITING_FILE ".waiting.json"

struct waiting {
	char kernel[256];	  /* uname -r */
	char arch[64];		  /* uname -m */
	char os[64];		  /* os-release ID */
	char os_build[64];	  /* os-release BUILD_ID, or "" */
	char driver_version[64];  /* the exact version the run chose */
	char flavour[16];	  /* the module type the node needs: open or proprietary */
	char reason[ERR_MSG_MAX]; /* the repository's refusal, one line */
	int64_t since;		  /* Unix time: when the wait began */
	int64_t last_check;	  /* when the repository was last asked */
	int64_t next_check;	  /* when it will be asked again */
	int64_t pid;		  /* the waiting run's process (0: unknown); with since, its mark */
};

/* T (Unix time) as RFC 3339 UTC into BUF; 0, or -1 (BUF "") when it cannot be. */
int waiting_time_format(int64_t t, char buf[STR_UTC_SIZE]);
/* "2026-12-06T18:00:00Z" (RFC 3339, UTC, whole seconds: also an API server's metav1.Time) into
 * *RET; 0, or -1 when S is not that form. */
int waiting_time_parse(const char *s, int64_t *ret);
/* Reads the record in the install dir DIR_FD: 0, 1 when there is none, or -1 (damaged). */
_must_check_ int waiting_read(int dir_fd, struct waiting *ret, struct err *e);
/* The record as status --json shows it (no "format", no "pid"), or NULL (ENOMEM). */
json_object *waiting_json(const struct waiting *w);
/* Replaces the record atomically (temp file, fsync, rename). Returns 0 or -1. */
_must_check_ int waiting_write(int dir_fd, const struct waiting *w, struct err *e);
/* Removes the record; none is success. Returns 0 or -1. */
_must_check_ int waiting_clear(int dir_fd, struct err *e);

/*
 * ---- the helper programs (stage/libexec.h) ----
 *
 * nvidia-cdi-hook and the static ldconfig it runs, which our CDI spec has the container
 * runtime run on the host, copied into INSTALL_DIR/.helpers/.
 */

#define HELPERS_DIR ".helpers"
#define HELPER_CDI_HOOK "nvidia-cdi-hook"

/*
 * Makes INSTALL_FD/.helpers/ hold this installer's helpers: each copied (atomically)
 * when its size or time differs from ours. Returns 0, or -1 naming what is missing.
 */
_must_check_ int libexec_install(int install_fd, struct err *e);

/*
 * ---- the one pass (stage/onepass.c) ----
 *
 * The selected package, unpacked into a staging tree of the install dir and
 * verified, ready for publish_stage(). From the node's cache when it holds the
 * package (its bytes hashed again as they are unpacked: the cache is not
 * trusted on its own). Otherwise in one pass: the download appends to the
 * cache's partial file, hashing as it goes, while an unpacker thread follows
 * it through the same file; the staging tree is kept only when the download
 * completed with the index's size and digest.
 */

/*
 * The microseconds the download and the unpacking took, each summed when it ran twice,
 * and whether each ran to its end (the metrics list only those: expose/expose.h). When
 * the unpacking follows the download as it is written, the download's time includes the
 * unpacking alongside and the unpacking's is only what it took after the download ended:
 * the stages do not overlap.
 */
struct stage_times {
	uint64_t download_us;
	uint64_t unpack_us;
	bool downloaded;
	bool unpacked;
};

/*
 * What stage_package stages: PKG, from CACHE when it holds the package, else downloaded
 * from SRC's mirrors into CACHE; into a staging tree of DIR. The host under ROOT_FD
 * decides what a security.ima it cannot store means (unpack_ima_verdict).
 */
struct stage_request {
	struct source *src;
	struct cache *cache;
	const struct repo_package *pkg;
	int root_fd;
	struct installdir *dir;
};

/*
 * Stages RQ's package: writes the staging directory's name to STAGING (SIZE bytes) and
 * returns an fd on it, or -1 with e set and no staging left behind. Adds the
 * download's and the unpacking's times to T (may be NULL).
 */
_must_check_ int stage_package(const struct stage_request *rq, char *staging, size_t size,
			       struct stage_times *t, struct err *e);
