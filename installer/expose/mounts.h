/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mounts, with libmount. Reads which mount holds a directory and its flags
 * (mountinfo); makes the install dir executable where its file system is
 * noexec (COS mounts /home so) with an exec bind mount of it, binds it onto
 * the container paths that expose it, records each mount, and withdraws them
 * (uninstall) from that record, newest first.
 */
#pragma once

#include <stddef.h>

#include "expose/expose.h" /* the face: what other folders call of this module */
#include "util/err.h"

/*
 * Makes the directory open as DIR_FD executable in place and visible to the
 * host: when its file system is noexec (COS mounts /home so), bind-mounts it
 * onto itself with exec, keeping nosuid, nodev, ro and the atime flags. Then
 * bind-mounts it onto each of TARGETS (paths as this process sees them).
 *
 * Propagation: a remount changes one mount's flags and does not propagate, so
 * the exec mount is prepared first on a private staging point (RUN_DIR, a
 * directory of this process's own, unshared /run) and then bind-mounted into
 * place: a bind copies its source's flags, and propagation copies those of the
 * new mount. Under the DaemonSet's hostPath / with mountPropagation:
 * Bidirectional the host then sees the same exec mount.
 *
 * Idempotent: a target that already is such a mount is left alone. Records
 * what it mounted in RECORD_FD/mounts. Returns the number of mounts made, or -1.
 */
_must_check_ int mounts_expose(int dir_fd, const char *run_dir, char *const *targets,
			       size_t n_targets, int record_fd, struct err *e);

/* Unmounts what mounts_expose recorded under record_fd, newest first. Returns 0 or -1. */
_must_check_ int mounts_withdraw(int record_fd, struct err *e);
