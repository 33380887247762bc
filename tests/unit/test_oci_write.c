// SPDX-License-Identifier: Apache-2.0
/*
 * source/oci_write.c: the manifest mirror writes is one the reader (oci_manifest_parse)
 * accepts, field by field as docs/repository-format.md has it; a layout's index.json is
 * retagged with the other tags and the index's annotations kept.
 */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/oci.h"
#include "util/jsonc.h"

#define HEX_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HEX_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static struct repo_package pkg(const char *path, const char *hex, uint64_t size)
{
	struct repo_package p = {.path = (char *)path, .size = size};

	snprintf(p.sha256, sizeof(p.sha256), "%s", hex);
	return p;
}

/* A source as mirror holds one after source_open: the index's bytes and what it says. */
struct fixture {
	struct repo_index idx;
	struct source src;
};

static void fixture_init(struct fixture *f, bool generated)
{
	static char json[] = "{\"format\":1}", sig[] = "signature";

	memset(f, 0, sizeof(*f));
	f->idx.has_generated = generated;
	snprintf(f->idx.generated, sizeof(f->idx.generated), "2026-12-06T21:00:00Z");
	f->src.idx = &f->idx;
	f->src.index_json = json;
	f->src.index_len = strlen(json);
	f->src.index_sig = sig;
	f->src.sig_len = strlen(sig);
}

static const char *str_at(json_object *o, const char *a, const char *b)
{
	json_object *v;

	if (!json_object_object_get_ex(o, a, &v) || (b && !json_object_object_get_ex(v, b, &v)))
		return NULL;
	return json_object_get_string(v);
}

static void test_manifest_read_back(void **state)
{
	struct repo_package p[] = {pkg("packages/k1/x86_64/nvidia-1.tar.zst", HEX_A, 10),
				   pkg("packages/k2/x86_64/nvidia-1.tar.xz", HEX_B, 20),
				   /* the first package's bytes under another path: listed once */
				   pkg("packages/k3/x86_64/nvidia-1.tar.zst", HEX_A, 10),
				   pkg("packages/k4/x86_64/nvidia-1.bin", HEX_C, 30)};
	const struct repo_package *v[] = {&p[0], &p[1], &p[2], &p[3]};
	_cleanup_(oci_manifest_freep) struct oci_manifest *m = NULL;
	_cleanup_(json_object_putp) json_object *o = NULL;
	_cleanup_free_ char *text = NULL;
	struct fixture f;
	json_object *layers;
	size_t len = 0;
	struct err e;

	(void)state;
	err_clear(&e);
	fixture_init(&f, true);
	assert_int_equal(oci_artifact_manifest(&f.src, v, 4, &text, &len, &e), 0);
	assert_int_equal(len, strlen(text));
	assert_null(strstr(text, "\\/")); /* '/' as written, not json-c's default escape */
	if (oci_manifest_parse(text, len, &m, &e) < 0)
		fail_msg("the reader refuses what the writer wrote: %s", e.msg);
	assert_int_equal(m->index.size, f.src.index_len);
	assert_string_equal(m->index.title, "index.json");
	assert_string_equal(m->sig.title, "index.json.sig");
	assert_int_equal(m->n_pkgs, 3);
	assert_string_equal(m->pkgs[0].sha256, HEX_A);
	assert_string_equal(m->pkgs[0].title, "packages/k1/x86_64/nvidia-1.tar.zst");
	assert_string_equal(m->pkgs[1].sha256, HEX_B);
	assert_string_equal(m->pkgs[2].sha256, HEX_C);
	assert_int_equal(m->pkgs[2].size, 30);

	o = json_tokener_parse(text);
	assert_string_equal(str_at(o, "artifactType", NULL), OCI_ARTIFACT_TYPE);
	assert_string_equal(str_at(o, "config", "digest"), OCI_EMPTY_DIGEST);
	assert_string_equal(str_at(o, "annotations", OCI_ANNOTATION_CREATED),
			    "2026-12-06T21:00:00Z");
	assert_true(json_object_object_get_ex(o, "layers", &layers));
	assert_string_equal(str_at(json_object_array_get_idx(layers, 2), "mediaType", NULL),
			    OCI_MT_PACKAGE "+zstd");
	assert_string_equal(str_at(json_object_array_get_idx(layers, 3), "mediaType", NULL),
			    OCI_MT_PACKAGE "+xz");
	assert_string_equal(str_at(json_object_array_get_idx(layers, 4), "mediaType", NULL),
			    OCI_MT_PACKAGE);

	/* What the index and signature layers name, as the layout's reader asks. */
	{
		char idx_hex[65], sig_hex[65];

		assert_int_equal(oci_artifact_index_layers(text, len, idx_hex, sig_hex, &e), 0);
		assert_string_equal(idx_hex, m->index.sha256);
		assert_string_equal(sig_hex, m->sig.sha256);
		assert_int_equal(oci_artifact_index_layers("{}", 2, idx_hex, sig_hex, &e), -1);
		assert_int_equal(e.code, EXIT_VERIFY);
	}
}

/* An index without "generated": no created annotation, and still one the reader takes. */
static void test_manifest_without_generated(void **state)
{
	_cleanup_(oci_manifest_freep) struct oci_manifest *m = NULL;
	_cleanup_free_ char *text = NULL;
	struct fixture f;
	size_t len = 0;
	struct err e;

	(void)state;
	err_clear(&e);
	fixture_init(&f, false);
	assert_int_equal(oci_artifact_manifest(&f.src, NULL, 0, &text, &len, &e), 0);
	assert_null(strstr(text, OCI_ANNOTATION_CREATED));
	assert_int_equal(oci_manifest_parse(text, len, &m, &e), 0);
	assert_int_equal(m->n_pkgs, 0);
}

static void test_layout_retag(void **state)
{
	static const char old[] =
		"{\"schemaVersion\":2,\"annotations\":{\"k\":\"v\"},\"manifests\":["
		"{\"mediaType\":\"" OCI_MT_MANIFEST "\",\"digest\":\"sha256:" HEX_A "\",\"size\":5,"
		"\"annotations\":{\"" OCI_ANNOTATION_REF_NAME "\":\"v1\"}},"
		"{\"mediaType\":\"" OCI_MT_MANIFEST "\",\"digest\":\"sha256:" HEX_B "\",\"size\":6,"
		"\"annotations\":{\"" OCI_ANNOTATION_REF_NAME "\":\"v2\"}},"
		"{\"mediaType\":\"" OCI_MT_MANIFEST "\",\"digest\":\"sha256:" HEX_B
		"\",\"size\":6}]}";
	_cleanup_free_ char *text = NULL, *fresh = NULL;
	char hex[65];
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(oci_layout_tagged(old, strlen(old), "v1", hex, &e), 1);
	assert_string_equal(hex, HEX_A);
	assert_int_equal(oci_layout_tagged(old, strlen(old), "v3", hex, &e), 0);

	/* v1 now names C; v2 and the untagged entry stay, and so do the annotations. */
	assert_int_equal(oci_layout_retag(old, "v1", HEX_C, 7, &text, &e), 0);
	assert_int_equal(oci_layout_tagged(text, strlen(text), "v1", hex, &e), 1);
	assert_string_equal(hex, HEX_C);
	assert_int_equal(oci_layout_tagged(text, strlen(text), "v2", hex, &e), 1);
	assert_string_equal(hex, HEX_B);
	assert_non_null(strstr(text, "\"annotations\":{\"k\":\"v\"}"));
	assert_null(strstr(text, HEX_A));
	{
		_cleanup_(json_object_putp) json_object *o = json_tokener_parse(text);
		json_object *ms;

		assert_true(json_object_object_get_ex(o, "manifests", &ms));
		assert_int_equal(json_object_array_length(ms), 3);
		assert_string_equal(str_at(o, "mediaType", NULL), OCI_MT_IMAGE_INDEX);
	}

	/* No index.json yet: one entry. Not JSON: refused. */
	assert_int_equal(oci_layout_retag(NULL, "latest", HEX_A, 5, &fresh, &e), 0);
	assert_int_equal(oci_layout_tagged(fresh, strlen(fresh), "latest", hex, &e), 1);
	assert_int_equal(oci_layout_retag("not json", "v1", HEX_A, 5, &text, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
}

static void test_layout_dest(void **state)
{
	_cleanup_free_ char *path = NULL, *tag = NULL, *p2 = NULL, *t2 = NULL;
	char *p3 = NULL, *t3 = NULL;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(oci_layout_dest("oci-layout:/srv/a:b/lay:v1.2", &path, &tag, &e), 0);
	assert_string_equal(path, "/srv/a:b/lay");
	assert_string_equal(tag, "v1.2");
	assert_int_equal(oci_layout_dest("oci-layout:rel/dir", &p2, &t2, &e), 0);
	assert_string_equal(p2, "rel/dir");
	assert_string_equal(t2, "latest");
	assert_int_equal(oci_layout_dest("oci-layout:dir:-bad", &p3, &t3, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_int_equal(oci_layout_dest("oci-layout:", &p3, &t3, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manifest_read_back),
		cmocka_unit_test(test_manifest_without_generated),
		cmocka_unit_test(test_layout_retag),
		cmocka_unit_test(test_layout_dest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
