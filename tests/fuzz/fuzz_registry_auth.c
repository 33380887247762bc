// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer: a Docker config.json (a pull Secret's .dockerconfigjson) as
 * oci_auth_files_load reads it, then looked up as the registry client looks it up.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "source/oci_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

/* Removes what file() made, at exit. */
static void remove_file(void)
{
	unlink(path);
}

/* A file of this process's, named once. */
static char *file(void)
{
	if (!path[0]) {
		int fd;

		snprintf(path, sizeof(path), "/tmp/ndi-fuzz-auth-XXXXXX");
		fd = mkstemp(path);
		if (fd < 0)
			abort();
		close(fd);
		atexit(remove_file);
	}
	return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[][2] = {
		{"reg.example", "team/repo"}, {"reg.example:5000", "a"}, {"docker.io", "library/x"},
		{"x.glob.example", "r"},      {"[::1]:443", "r"},
	};
	char *paths[1] = {file()};
	struct oci_auth_files *a = NULL;
	struct err e;
	FILE *f = fopen(paths[0], "w");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	err_clear(&e);
	if (oci_auth_files_load(paths, 1, false, &a, &e) < 0)
		return 0;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		struct oci_cred c = {0};

		if (oci_auth_lookup(a, hosts[i][0], hosts[i][1], &c) == 1)
			oci_cred_done(&c);
	}
	oci_auth_files_free(a);
	return 0;
}
