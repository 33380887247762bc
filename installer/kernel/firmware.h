/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GSP firmware: the package's firmware/nvidia/VERSION/ lives in the install
 * dir. The kernel's loader finds it through a link in the host's
 * /lib/firmware/nvidia/ where that directory is writable, else through
 * firmware_class.path, which is set only when nobody else has set it.
 */
#pragma once

#include "util/err.h"

/*
 * Makes INSTALL_DIR/firmware/nvidia/VERSION (host paths) reachable by the
 * kernel. Returns 0 (a path someone else set is left alone, with a warning),
 * or -1 on I/O trouble.
 */
_must_check_ int firmware_expose(int root_fd, const char *install_dir, const char *version,
				 struct err *e);

/* Undoes firmware_expose for any version. Returns 0 or -1. */
_must_check_ int firmware_withdraw(int root_fd, const char *install_dir, struct err *e);
