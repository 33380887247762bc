// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/host.h"
#include "util/cleanup.h"

/* The files an engine leaves in its containers, in the order they are looked for. */
static const char *const marker_files[] = {
	"/run/.containerenv",	  /* podman and buildah (containers-run(5)) */
	"/.dockerenv",		  /* Docker */
	"/run/systemd/container", /* systemd's Container Interface: the manager's name */
};

/* "/run/systemd/container (lxc)": the file's first word, when it has one. */
static void describe_file(const char *path, const char *name, char *buf, size_t size)
{
	char word[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd >= 0) {
		ssize_t n = read(fd, word, sizeof(word) - 1);

		close(fd);
		word[n > 0 ? n : 0] = '\0';
		word[strcspn(word, " \t\n")] = '\0';
	}
	/* Only printable words: the file is the container's, not ours to trust. */
	for (const char *c = word; *c; c++) {
		if (*c < 0x21 || *c > 0x7e) {
			word[0] = '\0';
			break;
		}
	}
	if (word[0] && strcmp(name, "/run/systemd/container") == 0)
		snprintf(buf, size, "%s (%s)", name, word);
	else
		snprintf(buf, size, "%s", name);
}

bool runenv_in_container(const char *prefix, const struct runenv_vars *vars, char *ret_signal,
			 size_t size)
{
	const char *p = prefix ? prefix : "";

	ret_signal[0] = '\0';
	if (vars->container && vars->container[0]) {
		snprintf(ret_signal, size, "container=%s", vars->container);
		return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(marker_files); i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s%s", p, marker_files[i]);
		if (access(path, F_OK) == 0) {
			describe_file(path, marker_files[i], ret_signal, size);
			return true;
		}
	}
	if (vars->k8s_service_host && vars->k8s_service_host[0]) {
		snprintf(ret_signal, size, "KUBERNETES_SERVICE_HOST");
		return true;
	}
	return false;
}
