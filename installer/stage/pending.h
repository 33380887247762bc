/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An upgrade that waits (docs/design.md, "Busy nodes"): a verified version staged in
 * the install dir's .versions/ beside the current one, or new module parameters for
 * the live driver, recorded in INSTALL_DIR/.pending.json until the GPUs are idle or the
 * node boots. The record is written atomically; the version it names is kept by
 * publish_cleanup. At most one thing is pending: a newer request replaces it.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>

#include "util/err.h"

#define PENDING_FILE ".pending.json"
/* The report of a pending version that failed and was withdrawn (struct pending_failure). */
#define PENDING_FAILED_FILE ".pending-failed.json"

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
