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

#include "host/host.h"

/*
 * Whether CANON (canonical, as from hostpath_resolve) is the host's root, a
 * top-level FHS directory, one of their standard children (/usr/local,
 * /var/lib, /lib/modules, ...) or a Kubernetes node directory, or lies inside a
 * kernel file system (/proc, /sys, /dev).
 */
bool hostpath_is_system(const char *canon);
