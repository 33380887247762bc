// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer: containerd's hosts.toml as oci_hosts_load reads it (source/oci_toml.c's TOML
 * and source/oci_hosts.c's meaning), the bytes written as DIR/reg.example/hosts.toml.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source/oci_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

/* Removes what dir() made, at exit. */
static void remove_dir(void)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/reg.example/hosts.toml", root);
	unlink(p);
	snprintf(p, sizeof(p), "%s/reg.example", root);
	rmdir(p);
	rmdir(root);
}

/* A directory of this process's, made once: DIR/reg.example/. */
static const char *dir(void)
{
	char sub[96];

	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/ndi-fuzz-hosts-XXXXXX");
		if (!mkdtemp(root))
			abort();
		snprintf(sub, sizeof(sub), "%s/reg.example", root);
		if (mkdir(sub, 0700) < 0)
			abort();
		atexit(remove_dir);
	}
	return root;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_endpoint *v = NULL;
	char path[128];
	size_t n = 0;
	struct err e;
	FILE *f;

	snprintf(path, sizeof(path), "%s/reg.example/hosts.toml", dir());
	f = fopen(path, "w");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	err_clear(&e);
	/* Read or refused, both are answers; a crash is not. */
	if (oci_hosts_load(dir(), "reg.example", &v, &n, &e) == 0)
		oci_endpoints_free(v, n);
	return 0;
}
