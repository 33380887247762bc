/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subcommands. Each returns 0 on success or -1 with e set; main() turns
 * e->code into the exit status.
 */
#pragma once

#include <sys/utsname.h>

#include "cmd/config.h"
#include "expose.h"
#include "hostpath.h"
#include "kernel.h"
#include "source.h"
#include "util/err.h"

/* install: host, index, selection, download, unpack, publish (see docs/design.md). */
_must_check_ int install_run(const struct config *c, struct err *e);

/* list-versions: what this host could install, and why the rest cannot be. */
_must_check_ int list_versions_run(const struct config *c, struct err *e);

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

/* Shared by the subcommands: the host root, and the lock that serialises runs. */
_must_check_ int session_open_root(const struct config *c, struct err *e);
_must_check_ int session_lock(int root_fd, struct err *e);
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
