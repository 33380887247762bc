/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subcommands. Each returns 0 on success or -1 with e set; main() turns
 * e->code into the exit status.
 */
#pragma once

#include <json-c/json.h>
#include <sys/utsname.h>

#include "cmd/config.h"
#include "expose.h"
#include "hostpath.h"
#include "kernel.h"
#include "pending.h"
#include "source.h"
#include "util/err.h"

/* install: host, index, selection, download, unpack, publish (see docs/design.md). */
_must_check_ int install_run(const struct config *c, struct err *e);

/*
 * list-versions: what this host could install, and why the rest cannot be; then
 * EXIT_NO_MATCH when nothing is.
 */
_must_check_ int list_versions_run(const struct config *c, struct err *e);

/*
 * coverage: the repository's packages by kernel, OS build and architecture; with --os and
 * --kernel, whether it serves that node image, decided as install decides (repo_select):
 * EXIT_NO_MATCH when it does not.
 */
_must_check_ int coverage_run(const struct config *c, struct err *e);

/* status: what is installed. EXIT_NO_MATCH when nothing is. */
_must_check_ int status_run(const struct config *c, struct err *e);

/* uninstall: removes the install (the cache stays). */
_must_check_ int uninstall_run(const struct config *c, struct err *e);

/* config: the effective configuration as JSON; EXIT_USAGE for unknown NVIDIA_* variables. */
_must_check_ int config_run(const struct config *c, struct err *e);

/* doctor: a check list with a verdict and a fix per line; EXIT_UNHEALTHY if any fails. */
_must_check_ int doctor_run(const struct config *c, struct err *e);

/* verify-module: per module, what the kernel would check; EXIT_VERIFY if any fails. */
_must_check_ int verify_module_run(const struct config *c, struct err *e);
/* Waits for SIGTERM or SIGINT (util/interrupt.h), then returns 0. */
_must_check_ int pause_run(const struct config *c, struct err *e);

/* Shared by the subcommands: the host root, and the lock that serialises runs. */
_must_check_ int session_open_root(const struct config *c, struct err *e);
_must_check_ int session_lock(int root_fd, struct err *e);
/*
 * How a command uses the host root, for session_check_container: not at all, reading it,
 * or changing it.
 */
enum session_host { SESSION_HOST_NONE, SESSION_HOST_READS, SESSION_HOST_WRITES };
/*
 * A run inside a container (runenv.h) with neither --root nor ROOT_MOUNT_DIR would work on
 * the container's / instead of the host's: a command that WRITES there is refused
 * (EXIT_USAGE, naming the signal seen); one that READS is warned once (stage NAME) and
 * goes on. An explicit --root, "/" included, is the operator's word. Returns 0 or -1.
 */
_must_check_ int session_check_container(const struct config *c, const char *name,
					 enum session_host use, struct err *e);
/* The kernel release to work for: --kernel-release, else the running kernel's (filled into U). */
const char *session_release(const struct config *c, struct utsname *u);

/*
 * What each stage reads of C: the stages take these, never the whole configuration. The
 * strings and lists stay C's.
 */
struct kernel_opts session_kernel_opts(const struct config *c);
struct expose_opts session_expose_opts(const struct config *c);
struct source_opts session_source_opts(const struct config *c);
struct hostpath_opts session_hostpath_opts(const struct config *c);
/* --kernel-module-type (validated by config_validate; anything else reads as auto). */
enum repo_kmt_policy session_kmt_policy(const struct config *c);

/*
 * Every command's --json document, printed one way: pretty, with spaces, "/" unescaped
 * (docs/json.md). session_json_string: a JSON string, or null for NULL;
 * session_json_nonempty: the same, and null for "" too (a field not known).
 */
void session_print_json(json_object *o);
json_object *session_json_string(const char *s);
json_object *session_json_nonempty(const char *s);

/*
 * The upgrade that waits on this node (installer/pending.h), read from the install dir
 * under ROOT_FD: 1 and RET filled, 0 when none (or no install dir, or a damaged record).
 */
int session_pending(const struct config *c, int root_fd, struct pending *ret);
/* RET as docs/json.md's "pending_upgrade" object, or null for NULL. */
json_object *session_pending_json(const struct pending *p);
/* "550.90.07 (open modules): driver_in_use since T: WHY" for the text forms, into BUF. */
void session_pending_text(const struct pending *p, char *buf, size_t size);

/*
 * The report of a pending version that failed and was withdrawn (installer/pending.h,
 * struct pending_failure), installer/cmd/pending_failed.c. pfail_record: writes it for
 * VERSION (MODULE_TYPE, or NULL) failed with CAUSE, and its label; best effort (logged), the
 * failure stays the run's error. pfail_clear: the version or a newer one was staged or
 * installed: removes both; 0 or -1. pfail_load: 1 and RET filled, 0 when none; a damaged
 * report is logged once and removed with its label. pfail_read: the same for the commands
 * that only read (status, doctor): a damaged one is none.
 */
void pfail_record(int root_fd, int dir_fd, const char *version, const char *module_type,
		  const struct err *cause);
_must_check_ int pfail_clear(int root_fd, int dir_fd, struct err *e);
int pfail_load(int root_fd, int dir_fd, struct pending_failure *ret);
int pfail_read(const struct config *c, int root_fd, struct pending_failure *ret);
/* RET as docs/json.md's "pending_failure" object, or null for NULL. */
json_object *pfail_json(const struct pending_failure *f);
/* "550.90.07 (open modules) failed at T (exit 5): CAUSE" for the text forms, into BUF. */
void pfail_text(const struct pending_failure *f, char *buf, size_t size);
