// SPDX-License-Identifier: Apache-2.0
/*
 * The repository as an OCI artifact, as mirror writes it (docs/repository-format.md, "In an
 * OCI registry"; the types and the reader's rules are oci_manifest.h's): the manifest, and
 * an OCI image layout's index.json with one tag pointed at it (the image spec's
 * image-layout.md and image-index.md, https://github.com/opencontainers/image-spec/blob/
 * v1.1.0/; the tag is the org.opencontainers.image.ref.name annotation, annotations.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/oci.h"
#include "util/jsonc.h"

/* A descriptor: TYPE, sha256:HEX, SIZE and, when TITLE, its title annotation. */
static json_object *descriptor(const char *type, const char *hex, uint64_t size, const char *title)
{
	json_object *o = json_object_new_object(), *a;
	char digest[OCI_DIGEST_SIZE];

	snprintf(digest, sizeof(digest), "sha256:%s", hex);
	json_object_object_add(o, "mediaType", json_object_new_string(type));
	json_object_object_add(o, "digest", json_object_new_string(digest));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)size));
	if (title) {
		a = json_object_new_object();
		json_object_object_add(a, OCI_ANNOTATION_TITLE, json_object_new_string(title));
		json_object_object_add(o, "annotations", a);
	}
	return o;
}

/* The packages' layers: PKGS in order, each digest once (the first path its title). */
static void package_layers(json_object *layers, const struct repo_package *const *pkgs, size_t n)
{
	char type[128];

	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(pkgs[j]->sha256, pkgs[i]->sha256) == 0;
		if (seen)
			continue;
		oci_package_media_type(pkgs[i]->path, type, sizeof(type));
		json_object_array_add(
			layers, descriptor(type, pkgs[i]->sha256, pkgs[i]->size, pkgs[i]->path));
	}
}

/* O as text (json-c's plain form, '/' not escaped): malloc'd, or NULL. */
static char *text_of(json_object *o, size_t *ret_len)
{
	const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE);
	char *s = t ? strdup(t) : NULL;

	if (s)
		*ret_len = strlen(s);
	return s;
}

int oci_artifact_manifest(const struct source *src, const struct repo_package *const *pkgs,
			  size_t n, char **ret, size_t *ret_len, struct err *e)
{
	_cleanup_(json_object_putp) json_object *m = json_object_new_object();
	json_object *layers = json_object_new_array(), *a;
	char idx_hex[65], sig_hex[65];

	if (!m || !layers || sha256_hex_of(src->index_json, src->index_len, idx_hex) < 0 ||
	    sha256_hex_of(src->index_sig, src->sig_len, sig_hex) < 0) {
		json_object_put(layers);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "manifest");
	}
	json_object_object_add(m, "schemaVersion", json_object_new_int(2));
	json_object_object_add(m, "mediaType", json_object_new_string(OCI_MT_MANIFEST));
	json_object_object_add(m, "artifactType", json_object_new_string(OCI_ARTIFACT_TYPE));
	json_object_object_add(
		m, "config",
		descriptor(OCI_MT_EMPTY, &OCI_EMPTY_DIGEST[7], strlen(OCI_EMPTY_BLOB), NULL));
	json_object_array_add(layers,
			      descriptor(OCI_MT_INDEX, idx_hex, src->index_len, "index.json"));
	json_object_array_add(
		layers, descriptor(OCI_MT_SIGNATURE, sig_hex, src->sig_len, "index.json.sig"));
	package_layers(layers, pkgs, n);
	json_object_object_add(m, "layers", layers);
	if (src->idx->has_generated) {
		a = json_object_new_object();
		json_object_object_add(a, OCI_ANNOTATION_CREATED,
				       json_object_new_string(src->idx->generated));
		json_object_object_add(m, "annotations", a);
	}
	if (!(*ret = text_of(m, ret_len)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "manifest");
	return 0;
}

int oci_artifact_index_layers(const char *buf, size_t len, char ret_index[65], char ret_sig[65],
			      struct err *e)
{
	_cleanup_(oci_manifest_freep) struct oci_manifest *m = NULL;

	if (oci_manifest_parse(buf, len, &m, e) < 0)
		return -1;
	memcpy(ret_index, m->index.sha256, 65);
	memcpy(ret_sig, m->sig.sha256, 65);
	return 0;
}

int oci_layout_tagged(const char *buf, size_t len, const char *tag, char ret_hex[65], struct err *e)
{
	char digest[OCI_DIGEST_SIZE];
	bool missing = false;

	if (oci_layout_find(buf, len, tag, digest, &missing, e) < 0) {
		if (missing)
			err_clear(e);
		return missing ? 0 : -1;
	}
	snprintf(ret_hex, 65, "%s", digest + 7);
	return 1;
}

/* Whether descriptor M carries the ref.name TAG. */
static bool has_tag(json_object *m, const char *tag)
{
	json_object *a, *v;

	return json_object_object_get_ex(m, "annotations", &a) &&
	       json_object_object_get_ex(a, OCI_ANNOTATION_REF_NAME, &v) &&
	       json_object_is_type(v, json_type_string) &&
	       strcmp(json_object_get_string(v), tag) == 0;
}

/* OLD's "manifests" but those tagged TAG, onto MS. */
static void keep_others(json_object *old, const char *tag, json_object *ms)
{
	json_object *v;

	if (!old || !json_object_object_get_ex(old, "manifests", &v) ||
	    !json_object_is_type(v, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *m = json_object_array_get_idx(v, i);

		if (!has_tag(m, tag))
			json_object_array_add(ms, json_object_get(m));
	}
}

int oci_layout_retag(const char *old, const char *tag, const char *hex, size_t len, char **ret,
		     struct err *e)
{
	size_t ret_len;
	_cleanup_(json_object_putp) json_object *prev = NULL, *out = json_object_new_object();
	json_object *ms = json_object_new_array(), *d, *a, *v;

	if (old && !(prev = json_tokener_parse(old))) {
		json_object_put(ms);
		return err_set(e, EXIT_USAGE, "the layout's index.json is not JSON");
	}
	json_object_object_add(out, "schemaVersion", json_object_new_int(2));
	json_object_object_add(out, "mediaType", json_object_new_string(OCI_MT_IMAGE_INDEX));
	keep_others(prev, tag, ms);
	d = descriptor(OCI_MT_MANIFEST, hex, len, NULL);
	json_object_object_add(d, "artifactType", json_object_new_string(OCI_ARTIFACT_TYPE));
	a = json_object_new_object();
	json_object_object_add(a, OCI_ANNOTATION_REF_NAME, json_object_new_string(tag));
	json_object_object_add(d, "annotations", a);
	json_object_array_add(ms, d);
	json_object_object_add(out, "manifests", ms);
	/* The index's own annotations are the layout's: kept. */
	if (prev && json_object_object_get_ex(prev, "annotations", &v))
		json_object_object_add(out, "annotations", json_object_get(v));
	if (!(*ret = text_of(out, &ret_len)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "layout");
	return 0;
}

int oci_layout_dest(const char *s, char **ret_path, char **ret_tag, struct err *e)
{
	char tag[OCI_TAG_MAX + 1];
	char *path = NULL;

	if (oci_layout_parse(s, &path, tag, e) < 0)
		return -1;
	if (!(*ret_tag = strdup(tag))) {
		free(path);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "oci-layout");
	}
	*ret_path = path;
	return 0;
}
