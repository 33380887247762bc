/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's dynamic linker: ROOT/etc/ld.so.conf.d/nvidia.conf names the
 * install dir's lib64, and the host's ld cache is rebuilt, so that
 * `ldconfig -p` on the host finds libcuda.so.1 and libnvidia-ml.so.1.
 */
#pragma once

#include "expose/expose.h" /* the face: what other folders call of this module */
#include "util/err.h"

#define LDCACHE_CONF "/etc/ld.so.conf.d/nvidia.conf"

/*
 * Writes the configuration (only when it differs) and runs ldconfig for the
 * host: the host's own /sbin/ldconfig chrooted into ROOT_PATH when it has
 * one, else this image's `ldconfig -r ROOT_PATH`. Returns 0 or -1.
 */
_must_check_ int ldcache_update(int root_fd, const char *root_path, const char *install_dir,
				struct err *e);

/* Removes the configuration and rebuilds the cache. Returns 0 or -1. */
_must_check_ int ldcache_remove(int root_fd, const char *root_path, struct err *e);
