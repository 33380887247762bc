// SPDX-License-Identifier: Apache-2.0
/*
 * The repository's manifest as the installer reads it (oci.h; docs/repository-format.md,
 * "In an OCI registry"): an OCI image manifest of our artifact type whose layers are the
 * index, its signature and the packages. The manifest is not signed: it only says where
 * the signed index's bytes are, and every byte it points at is checked against the
 * digest that reaches it. Also an OCI image layout's index.json, read for a tag.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/oci_manifest.h"
#include "source/verify.h"
#include "util/jsonc.h"

DEFINE_POINTER_CLEANUP(json_tokener, json_tokener_free)

void oci_package_media_type(const char *path, char *buf, size_t size)
{
	static const struct {
		const char *suffix, *type;
	} types[] = {{".tar.zst", OCI_MT_PACKAGE "+zstd"},
		     {".tar.xz", OCI_MT_PACKAGE "+xz"},
		     {".tar.gz", OCI_MT_PACKAGE "+gzip"}};
	size_t n = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		size_t k = strlen(types[i].suffix);

		if (n >= k && strcmp(path + n - k, types[i].suffix) == 0) {
			snprintf(buf, size, "%s", types[i].type);
			return;
		}
	}
	snprintf(buf, size, "%s", OCI_MT_PACKAGE);
}

static bool is_package_type(const char *t)
{
	return strcmp(t, OCI_MT_PACKAGE) == 0 || strcmp(t, OCI_MT_PACKAGE "+zstd") == 0 ||
	       strcmp(t, OCI_MT_PACKAGE "+xz") == 0 || strcmp(t, OCI_MT_PACKAGE "+gzip") == 0;
}

int oci_sha256_is(const void *buf, size_t len, const char *sha256)
{
	char got[65];

	if (sha256_hex_of(buf, len, got) < 0)
		return -1;
	return strcmp(got, sha256) == 0;
}

/* Strict JSON, the whole of BUF: the object, or NULL with e set (WHAT names the document). */
static json_object *parse_object(const char *buf, size_t len, const char *what, struct err *e)
{
	_cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new_ex(32);
	json_object *root;

	if (!tok || len > INT32_MAX) {
		err_set(e, EXIT_VERIFY, "%s: too large or out of memory", what);
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len ||
	    !json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		err_set(e, EXIT_VERIFY, "%s: not a JSON object", what);
		return NULL;
	}
	return root;
}

/* O's member KEY when it is a string, else NULL. */
static const char *get_string(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* An OCI descriptor (image-spec descriptor.md) into L; its media type in *RET_TYPE. */
static int descriptor_read(json_object *d, const char *what, struct oci_layer *l,
			   const char **ret_type, struct err *e)
{
	json_object *size, *ann, *urls;
	const char *type = get_string(d, "mediaType"), *digest = get_string(d, "digest"), *title;
	int64_t n;

	if (!json_object_is_type(d, json_type_object) || !type)
		return err_set(e, EXIT_VERIFY, "manifest: %s is not a descriptor with a mediaType",
			       what);
	if (json_object_object_get_ex(d, "urls", &urls))
		return err_set(
			e, EXIT_VERIFY,
			"manifest: %s has \"urls\": a blob is only read from the registry itself",
			what);
	if (!digest || !oci_digest_is_valid(digest))
		return err_set(e, EXIT_VERIFY,
			       "manifest: %s has no digest of sha256: and 64 lower-case hex digits",
			       what);
	if (!json_object_object_get_ex(d, "size", &size) ||
	    !json_object_is_type(size, json_type_int) || (n = json_object_get_int64(size)) < 0 ||
	    (uint64_t)n > REPO_PACKAGE_MAX)
		return err_set(e, EXIT_VERIFY, "manifest: %s has no size from 0 to %llu", what,
			       (unsigned long long)REPO_PACKAGE_MAX);
	memcpy(l->sha256, digest + 7, 65);
	l->size = (uint64_t)n;
	if (json_object_object_get_ex(d, "annotations", &ann) &&
	    (title = get_string(ann, OCI_ANNOTATION_TITLE)) && !(l->title = strdup(title)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "manifest");
	*ret_type = type;
	return 0;
}

/* schemaVersion 2, our media type and artifact type, the empty config. */
static int manifest_head(json_object *root, struct err *e)
{
	json_object *v, *config;
	const char *mt = get_string(root, "mediaType"), *at = get_string(root, "artifactType");
	const char *ct;

	if (!json_object_object_get_ex(root, "schemaVersion", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) != 2)
		return err_set(e, EXIT_VERIFY, "manifest: schemaVersion is not 2");
	if (!mt || strcmp(mt, OCI_MT_MANIFEST) != 0)
		return err_set(e, EXIT_VERIFY, "manifest: the mediaType '%.100s' is not %s",
			       mt ? mt : "(none)", OCI_MT_MANIFEST);
	if (!at || strcmp(at, OCI_ARTIFACT_TYPE) != 0)
		return err_set(
			e, EXIT_VERIFY,
			"manifest: the artifactType '%.100s' is not %s: not a driver repository",
			at ? at : "(none)", OCI_ARTIFACT_TYPE);
	if (!json_object_object_get_ex(root, "config", &config) ||
	    !json_object_is_type(config, json_type_object) ||
	    !(ct = get_string(config, "mediaType")) || strcmp(ct, OCI_MT_EMPTY) != 0)
		return err_set(e, EXIT_VERIFY,
			       "manifest: the config is not the empty descriptor (%s)",
			       OCI_MT_EMPTY);
	if (json_object_object_get_ex(config, "urls", &v))
		return err_set(
			e, EXIT_VERIFY,
			"manifest: the config has \"urls\": a blob is only read from the registry itself");
	return 0;
}

/* Layers 1 and 2: the index and its signature, of their types and within their limits. */
static int manifest_index_layers(json_object *layers, struct oci_manifest *m, struct err *e)
{
	const char *type;

	if (json_object_array_length(layers) < 2)
		return err_set(
			e, EXIT_VERIFY,
			"manifest: fewer than 2 layers: the index and its signature are missing");
	if (descriptor_read(json_object_array_get_idx(layers, 0), "layer 1", &m->index, &type, e) <
	    0)
		return -1;
	if (strcmp(type, OCI_MT_INDEX) != 0)
		return err_set(e, EXIT_VERIFY, "manifest: layer 1's mediaType '%.100s' is not %s",
			       type, OCI_MT_INDEX);
	if (m->index.size > REPO_INDEX_MAX)
		return err_set(e, EXIT_VERIFY, "manifest: the index layer has %llu bytes, over %u",
			       (unsigned long long)m->index.size, REPO_INDEX_MAX);
	if (descriptor_read(json_object_array_get_idx(layers, 1), "layer 2", &m->sig, &type, e) < 0)
		return -1;
	if (strcmp(type, OCI_MT_SIGNATURE) != 0)
		return err_set(e, EXIT_VERIFY, "manifest: layer 2's mediaType '%.100s' is not %s",
			       type, OCI_MT_SIGNATURE);
	if (m->sig.size > VERIFY_SIG_MAX)
		return err_set(e, EXIT_VERIFY,
			       "manifest: the signature layer has %llu bytes, over %u",
			       (unsigned long long)m->sig.size, VERIFY_SIG_MAX);
	return 0;
}

static int manifest_packages(json_object *layers, struct oci_manifest *m, struct err *e)
{
	size_t n = json_object_array_length(layers) - 2;

	if (n && !(m->pkgs = calloc(n, sizeof(*m->pkgs))))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "manifest");
	for (size_t i = 0; i < n; i++) {
		const char *type;
		char what[32];

		snprintf(what, sizeof(what), "layer %zu", i + 3);
		if (descriptor_read(json_object_array_get_idx(layers, i + 2), what, &m->pkgs[i],
				    &type, e) < 0) {
			m->n_pkgs = i + 1;
			return -1;
		}
		m->n_pkgs = i + 1;
		if (!is_package_type(type))
			return err_set(
				e, EXIT_VERIFY,
				"manifest: %s's mediaType '%.100s' is not a package's (%s...)",
				what, type, OCI_MT_PACKAGE);
	}
	return 0;
}

int oci_manifest_parse(const char *buf, size_t len, struct oci_manifest **ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *root = NULL;
	_cleanup_(oci_manifest_freep) struct oci_manifest *m = NULL;
	json_object *layers;

	if (len > OCI_MANIFEST_MAX)
		return err_set(e, EXIT_VERIFY,
			       "manifest: %zu bytes, over the %u a manifest may have", len,
			       OCI_MANIFEST_MAX);
	if (!(root = parse_object(buf, len, "manifest", e)) || manifest_head(root, e) < 0)
		return -1;
	if (!json_object_object_get_ex(root, "layers", &layers) ||
	    !json_object_is_type(layers, json_type_array))
		return err_set(e, EXIT_VERIFY, "manifest: no \"layers\" array");
	if (!(m = calloc(1, sizeof(*m))))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "manifest");
	if (manifest_index_layers(layers, m, e) < 0 || manifest_packages(layers, m, e) < 0)
		return -1;
	*ret = TAKE_PTR(m);
	return 0;
}

void oci_manifest_free(struct oci_manifest *m)
{
	if (!m)
		return;
	free(m->index.title);
	free(m->sig.title);
	for (size_t i = 0; i < m->n_pkgs; i++)
		free(m->pkgs[i].title);
	free(m->pkgs);
	free(m);
}

int oci_manifest_package(const struct oci_manifest *m, const struct repo_package *pkg,
			 const struct oci_layer **ret, struct err *e)
{
	for (size_t i = 0; i < m->n_pkgs; i++) {
		const struct oci_layer *l = &m->pkgs[i];

		if (strcmp(l->sha256, pkg->sha256) == 0) {
			if (l->size != pkg->size)
				return err_set(
					e, EXIT_VERIFY,
					"manifest: the package '%s' is listed with %llu bytes; the signed index says %llu",
					pkg->path, (unsigned long long)l->size,
					(unsigned long long)pkg->size);
			*ret = l;
			return 1;
		}
	}
	for (size_t i = 0; i < m->n_pkgs; i++) {
		const struct oci_layer *l = &m->pkgs[i];

		if (l->title && strcmp(l->title, pkg->path) == 0)
			return err_set(
				e, EXIT_VERIFY,
				"manifest: the package '%s' is listed as sha256:%.12s...; the signed index says sha256:%.12s...",
				pkg->path, l->sha256, pkg->sha256);
	}
	return 0;
}

/* A manifest descriptor of the layout's index.json that carries TAG, or NULL. */
static json_object *layout_tagged(json_object *manifests, const char *tag)
{
	for (size_t i = 0; i < json_object_array_length(manifests); i++) {
		json_object *d = json_object_array_get_idx(manifests, i), *ann;
		const char *ref;

		if (json_object_is_type(d, json_type_object) &&
		    json_object_object_get_ex(d, "annotations", &ann) &&
		    (ref = get_string(ann, OCI_ANNOTATION_REF_NAME)) && strcmp(ref, tag) == 0)
			return d;
	}
	return NULL;
}

int oci_layout_find(const char *buf, size_t len, const char *tag, char ret[OCI_DIGEST_SIZE],
		    bool *ret_missing, struct err *e)
{
	_cleanup_(json_object_putp) json_object *root = NULL;
	json_object *manifests, *d;
	const char *type, *digest;

	*ret_missing = false;
	if (!(root = parse_object(buf, len, "layout index.json", e)))
		return -1;
	if (!json_object_object_get_ex(root, "manifests", &manifests) ||
	    !json_object_is_type(manifests, json_type_array))
		return err_set(
			e, EXIT_VERIFY,
			"layout index.json: no \"manifests\" array: not an OCI image layout");
	if (!(d = layout_tagged(manifests, tag))) {
		*ret_missing = true;
		return err_set(e, EXIT_UNREACHABLE,
			       "the layout has no manifest tagged '%s' (annotation %s)", tag,
			       OCI_ANNOTATION_REF_NAME);
	}
	type = get_string(d, "mediaType");
	digest = get_string(d, "digest");
	if (!type || strcmp(type, OCI_MT_MANIFEST) != 0)
		return err_set(
			e, EXIT_VERIFY,
			"layout index.json: the manifest tagged '%s' is of type '%.100s', not %s",
			tag, type ? type : "(none)", OCI_MT_MANIFEST);
	if (!digest || !oci_digest_is_valid(digest))
		return err_set(e, EXIT_VERIFY,
			       "layout index.json: the manifest tagged '%s' has no sha256 digest",
			       tag);
	snprintf(ret, OCI_DIGEST_SIZE, "%s", digest);
	return 0;
}
