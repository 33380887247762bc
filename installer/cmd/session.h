/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the commands share (cmd/session.c): the host root, the lock that serialises runs,
 * the refusal of a run in a container without --root, what each stage reads of the
 * configuration, the one JSON printer, and the upgrade that waits on the node.
 */
#pragma once

#include <json-c/json.h>
#include <sys/utsname.h>

#include "agent/agent.h"
#include "cmd/config.h"
#include "expose/expose.h"
#include "host/host.h"
#include "kernel/kernel.h"
#include "source/source.h"
#include "stage/stage.h"
#include "util/err.h"

/* Shared by the subcommands: the host root, and the lock that serialises runs. */
_must_check_ int session_open_root(const struct config *c, struct err *e);
_must_check_ int session_lock(int root_fd, struct err *e);
/* The lock if it is free now: its fd, or -1 with E (err_errnum EWOULDBLOCK: a run holds it). */
_must_check_ int session_lock_try(int root_fd, struct err *e);
/* Whether an install, uninstall or other run holds the lock now (the agent waits for it). */
bool session_installer_running(int root_fd);
/* The installer's lock held shared (no run may start meanwhile): the fd to close after, or
 * -1 while a run holds it. Where no run ever made the lock file, an fd of /dev/null. */
int session_lock_shared(int root_fd);
/*
 * How a command uses the host root, for session_check_container: not at all, reading it,
 * or changing it.
 */
enum session_host { SESSION_HOST_NONE, SESSION_HOST_READS, SESSION_HOST_WRITES };
/*
 * A run inside a container (host/runenv.c) with neither --root nor ROOT_MOUNT_DIR would work on
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
/* --rdma as the kernel stage takes it (off when not given). */
enum kernel_rdma session_rdma(const struct config *c);
struct expose_opts session_expose_opts(const struct config *c);
struct source_opts session_source_opts(const struct config *c);
struct hostpath_opts session_hostpath_opts(const struct config *c);
struct nodestate_opts session_nodestate_opts(const struct config *c);
/* --kernel-module-type (validated by config_validate; anything else reads as auto). */
enum repo_kmt_policy session_kmt_policy(const struct config *c);

/*
 * Whether CH's package serves what --driver-capabilities asks (the index's
 * packages[].capabilities). 0, or -1: EXIT_NO_MATCH naming the build that would serve it,
 * EXIT_USAGE for a list of other words.
 */
_must_check_ int session_check_capabilities(const struct config *c, const struct repo_choice *ch,
					    const struct host *h, struct err *e);

/* What --driver-capabilities asks, as REPO_CAP_* bits (compute and utility always). */
unsigned session_capabilities(const struct config *c);

/*
 * What --modules asks of the chosen package's GDRCopy and GDS modules (gdrdrv, nvidia-fs:
 * the index's packages[].gpudirect). 0, or -1: EXIT_NO_MATCH naming build-driver-package's
 * --gdrcopy or --gds.
 */
_must_check_ int session_check_gpudirect(const struct config *c, const struct repo_choice *ch,
					 const struct host *h, struct err *e);

/*
 * Every command's --json document, printed one way: pretty, with spaces, "/" unescaped
 * (docs/json.md). session_json_string: a JSON string, or null for NULL;
 * session_json_nonempty: the same, and null for "" too (a field not known).
 */
void session_print_json(json_object *o);
json_object *session_json_string(const char *s);
json_object *session_json_nonempty(const char *s);

/*
 * The upgrade that waits on this node (installer/stage/pending.h), read from the install dir
 * under ROOT_FD: 1 and RET filled, 0 when none (or no install dir, or a damaged record).
 */
int session_pending(const struct config *c, int root_fd, struct pending *ret);
/* RET as docs/json.md's "pending_upgrade" object, or null for NULL. */
json_object *session_pending_json(const struct pending *p);
/* "550.90.07 (open modules): driver_in_use since T: WHY" for the text forms, into BUF. */
void session_pending_text(const struct pending *p, char *buf, size_t size);

/*
 * The wait of an install for its package (install --wait-for-package, stage/waiting.c), read
 * from the install dir under ROOT_FD: 1 and RET filled, 0 when none (or no install dir, or a
 * damaged record).
 */
int session_waiting(const struct config *c, int root_fd, struct waiting *ret);
/*
 * "waiting for the repository to serve kernel K (driver V, FLAVOUR) since T; last check L,
 * next N", and, when the next check is past by more than a minute, that the waiting
 * installer seems gone; into BUF.
 */
void session_waiting_text(const struct waiting *w, char *buf, size_t size);
