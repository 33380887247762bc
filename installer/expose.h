/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The last stage: making the installed driver usable and visible. In order:
 * the exec bind mount (and --host-mount targets), the host's ld cache, the
 * NVML verification against the loaded driver, the CDI spec, the node
 * labels, and last the readiness marker, so that whatever waits for it finds
 * everything else in place. Uninstall withdraws them in the reverse order:
 * the marker, labels and CDI spec before the kernel side, the ld
 * configuration and the mounts after it.
 */
#pragma once

#include "cmd/config.h"
#include "host.h"
#include "util/err.h"

#define EXPOSE_RUN_DIR "/run/nvidia-driver-installer" /* this process's own, for staging */

/*
 * Exposes VERSION, installed in the directory open as INSTALL_FD. Without a
 * loaded driver of that version (--skip-modules), stops after the ld cache.
 * Returns 0, or -1 (EXIT_DRIVER_CHECK when NVML disagrees; no marker then).
 */
_must_check_ int expose_run(const struct config *c, int root_fd, int install_fd,
			    const struct host *h, const char *version, struct err *e);

/* uninstall, first: the readiness marker, the labels, the CDI spec. Returns 0 or -1. */
_must_check_ int expose_withdraw_notices(const struct config *c, int root_fd, struct err *e);

/* uninstall, after the kernel side: the ld configuration and the mounts. Returns 0 or -1. */
_must_check_ int expose_withdraw_host(const struct config *c, int root_fd, struct err *e);
