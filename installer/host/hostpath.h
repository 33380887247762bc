/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host paths judged by where they resolve, not by how they are spelled.
 *
 * Every host-path option (--install-dir, --host-mount, --cdi-dir, --cache-dir,
 * --metrics-file) names a place the installer writes, links, mounts over or
 * deletes in. "//", "/./", "/home/kubernetes/bin/nvidia" when it is a link to
 * "/" all spell the host's root; the installer must never treat the root or a
 * directory the system owns (/usr, /usr/local, /etc, /var/lib, ...) as its own.
 * docs/configuration.md ("Host paths") lists what is accepted and refused.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

/* The host paths a command writes, links, mounts over or deletes in. */
struct hostpath_opts {
	const char *install_dir; /* required, as are cache_dir and cdi_dir */
	const char *cache_dir;
	const char *cdi_dir;
	char *const *host_mounts;
	size_t n_host_mounts;
	const char *metrics_file; /* or NULL */
	/*
	 * How the first line of a metrics file of ours begins (expose/expose.h, METRICS_MARK):
	 * an existing --metrics-file is taken over only when it does. At most 127 bytes.
	 */
	const char *metrics_mark;
};

/*
 * The canonical in-root spelling of PATH ("/a/b"): every existing component
 * resolved inside root_fd (links followed, as the installer will follow them),
 * the missing tail appended as spelled, without "." or repeated slashes. A link
 * that dangles or a component that is not a directory is refused. Returns 0, or
 * -1 with e set (EXIT_USAGE for a path that cannot name a directory).
 */
_must_check_ int hostpath_resolve(int root_fd, const char *path, char *ret, size_t size,
				  struct err *e);

/*
 * Whether CANON (canonical, as from hostpath_resolve) is the host's root, a
 * top-level FHS directory, one of their standard children (/usr/local,
 * /var/lib, /lib/modules, ...) or a Kubernetes node directory, or lies inside a
 * kernel file system (/proc, /sys, /dev).
 */
bool hostpath_is_system(const char *canon);

/*
 * Checks every host-path option of O against the host under root_fd, before
 * anything is written: each must resolve to a place that is not a system
 * directory, and --metrics-file must name a *.prom file in such a place that
 * is absent or ours. Returns 0, or -1 with e set (EXIT_USAGE) naming the
 * option, its spelling and where it resolves.
 */
_must_check_ int hostpath_check_config(const struct hostpath_opts *o, int root_fd, struct err *e);

/*
 * Whether the installer can write at host path PATH: its nearest existing
 * ancestor is checked for a read-only file system (fstatvfs) and for write
 * permission for this process's effective ids. Returns 0 when writable, or -1
 * with e set (EXIT_USAGE) naming PATH, the directory that decides, and a fix.
 */
_must_check_ int hostpath_check_writable(int root_fd, const char *name, const char *path,
					 struct err *e);

/*
 * Checks, before anything changes, that install can write what it writes: the
 * install dir, the cache dir and the host's /run (the lock). Returns 0 or -1
 * (EXIT_USAGE).
 */
_must_check_ int hostpath_check_install_writable(const struct hostpath_opts *o, int root_fd,
						 struct err *e);
