/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subcommands. Each returns 0 on success or -1 with e set; main() turns
 * e->code into the exit status.
 */
#pragma once

#include "cmd/config.h"
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
/*
 * agent: the node agent; looks at the node every --interval, keeps its readiness, labels and
 * metrics true to it, and serves them over HTTP until SIGTERM or SIGINT, then returns 0.
 */
_must_check_ int agent_run(const struct config *c, struct err *e);
