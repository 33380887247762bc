// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer: what a registry sends before anything of it is verified: the manifest (and a
 * package looked up in it), an OCI layout's index.json, the WWW-Authenticate challenge and
 * the token endpoint's answer; and the --repo references. The first byte picks the parser.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/oci_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void manifest(const char *buf, size_t len)
{
	struct repo_package pkg = {.path = (char *)"packages/p.tar.zst", .size = 1000};
	struct oci_manifest *m = NULL;
	const struct oci_layer *l;
	struct err e;

	err_clear(&e);
	if (oci_manifest_parse(buf, len, &m, &e) < 0)
		return;
	for (size_t i = 0; i < m->n_pkgs; i++) {
		memcpy(pkg.sha256, m->pkgs[i].sha256, sizeof(pkg.sha256));
		(void)oci_manifest_package(m, &pkg, &l, &e);
	}
	oci_manifest_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, digest[OCI_DIGEST_SIZE], tag[OCI_TAG_MAX + 1], *path = NULL, *token = NULL;
	struct oci_challenge ch;
	struct oci_ref ref;
	unsigned expires;
	bool missing;
	struct err e;

	if (size < 1 || !(s = malloc(size)))
		return 0;
	/* The rest, NUL-terminated for the parsers of a header or an argument. */
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	err_clear(&e);
	switch (data[0] % 5) {
	case 0:
		manifest(s, size - 1);
		break;
	case 1:
		(void)oci_challenge_parse(s, &ch, &e);
		break;
	case 2:
		if (oci_token_parse(s, size - 1, &token, &expires, &e) == 0)
			free(token);
		break;
	case 3:
		(void)oci_layout_find(s, size - 1, "latest", digest, &missing, &e);
		break;
	default:
		(void)oci_ref_parse(s, &ref, &e);
		if (oci_layout_parse(s, &path, tag, &e) == 0)
			free(path);
		break;
	}
	free(s);
	return 0;
}
