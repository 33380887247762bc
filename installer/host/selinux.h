/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SELinux on the node, and the label of what we publish for containers.
 *
 * On a host that runs SELinux (RHEL and its rebuilds; Fedora), a container process runs as
 * container_t with a pair of MCS categories of its own, and reads a host file only when its
 * type is one the container policy grants: container_file_t, the type container-selinux
 * gives files made for containers (its container_contexts: file =
 * "system_u:object_r:container_file_t:s0"; container.te: container_domain may read, map and
 * execute it, and container_t may enter it). At level s0 the file is dominated by every
 * container's categories, so each container may read it (policy/mcs, "h1 dom h2"). The
 * install dir, its firmware and the CDI hook carry that label, set here from the
 * installer without a policy module of our own (docs/platforms/rhel.md).
 *
 * The state is read from the host's selinuxfs (/sys/fs/selinux under the host root);
 * labels are written as the security.selinux extended attribute, never through a path
 * that follows a link.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "host/host.h"

/*
 * The type of kernel modules: the one the policy lets a module be loaded from
 * (refpolicy's can_load_kernmodule: modules_object_t:system module_load), which NVIDIA's
 * driver container gives its modules too (gpu-driver-container, rhel9/ocp_dtk_entrypoint).
 */
#define SELINUX_MODULES_TYPE "modules_object_t"

/* Parses an enforce or mls file's contents ("0" or "1", a newline allowed). -EINVAL else. */
int selinux_parse_flag(const char *buf, size_t len);

/* The context for TYPE at level s0 where the policy has levels: BUF, or NULL if too long. */
char *selinux_context_of(const char *type, bool mls, char *buf, size_t size);
