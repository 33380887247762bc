/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The programs our CDI spec has the container runtime run on the host
 * (installer/helpers/): nvidia-cdi-hook and the static ldconfig it runs. They
 * belong to the installer, not to a driver version: the installer ships them
 * beside itself (LIBEXEC below) and copies them into INSTALL_DIR/.helpers/,
 * where the host can run them whatever its OS, before a spec names them.
 * The launcher ships there too; publication copies it into each version's
 * bin/ (installer/stage/wrap.h).
 */
#pragma once

#include <stddef.h>

#include "stage/stage.h"

/* Not copied to .helpers/: it stands in each version's bin/ (installer/stage/wrap.h). */
#define HELPER_LAUNCHER "launcher"
/*
 * Where the installer finds them, relative to its own binary: DIR/libexec/... (a
 * build tree: build/nvidia-driver-installer) or DIR/../libexec/... (an install:
 * /usr/bin/nvidia-driver-installer).
 */
#define HELPERS_LIBEXEC "libexec/nvidia-driver-installer"

/*
 * Reads helper NAME from the installer's libexec directory into a malloc'd buffer.
 * Returns 0 and sets *ret_buf and *ret_len, or -1 naming what is missing.
 */
_must_check_ int libexec_read(const char *name, char **ret_buf, size_t *ret_len, struct err *e);

/* Removes INSTALL_FD/.helpers/. Returns 0 or -1. */
_must_check_ int libexec_remove(int install_fd, struct err *e);
