/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where this process itself runs: whether it is inside a container, judged from the signals
 * container engines document (docs/configuration.md, "Running in a container"). Only this
 * process's own file system and environment are read, never the host root's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The variables among the signals, as set (NULL or "" when unset); config.c reads them. */
struct runenv_vars {
	const char *container;	      /* `container`: podman, systemd-nspawn, LXC */
	const char *k8s_service_host; /* KUBERNETES_SERVICE_HOST: the kubelet sets it in pods */
};

/*
 * Whether this process runs in a container: the first signal seen of the `container`
 * variable, /run/.containerenv (podman, buildah), /.dockerenv (Docker),
 * /run/systemd/container (systemd, in the container it runs in) and KUBERNETES_SERVICE_HOST.
 * The files are looked for under PREFIX: "" for this process's own /, a directory in tests.
 * Returns true with what was seen in RET_SIGNAL ("container=podman", "/.dockerenv"), or
 * false with RET_SIGNAL "".
 */
bool runenv_in_container(const char *prefix, const struct runenv_vars *vars, char *ret_signal,
			 size_t size);
