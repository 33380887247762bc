// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/oci.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* ---- references --------------------------------------------------------------------- */

static void test_ref_accepts(void **state)
{
	struct oci_ref r;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(oci_ref_parse("oci://registry.example.com/driver/repo", &r, &e), 0);
	assert_string_equal(r.host, "registry.example.com");
	assert_string_equal(r.name, "driver/repo");
	assert_string_equal(r.tag, "latest");
	assert_string_equal(r.digest, "");
	assert_string_equal(oci_ref_manifest(&r), "latest");

	assert_int_equal(oci_ref_parse("oci://127.0.0.1:5000/a.b_c__d--e/f:v1.2_x-y", &r, &e), 0);
	assert_string_equal(r.host, "127.0.0.1:5000");
	assert_string_equal(r.name, "a.b_c__d--e/f");
	assert_string_equal(r.tag, "v1.2_x-y");

	assert_int_equal(oci_ref_parse("oci://[::1]:443/r@sha256:" HEX64, &r, &e), 0);
	assert_string_equal(r.host, "[::1]:443");
	assert_string_equal(r.name, "r");
	assert_string_equal(r.tag, "");
	assert_string_equal(oci_ref_manifest(&r), "sha256:" HEX64);
	assert_true(oci_is_registry("OCI://x/y"));
	assert_false(oci_is_registry("https://x/y"));
}

/* Each refusal is EXIT_USAGE and names the part. */
static void refuse(const char *ref, const char *part)
{
	struct oci_ref r;
	struct err e;

	err_clear(&e);
	assert_int_equal(oci_ref_parse(ref, &r, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	if (!strstr(e.msg, part))
		fail_msg("'%s': '%s' does not name '%s'", ref, e.msg, part);
}

static void test_ref_refuses(void **state)
{
	char longname[300];

	(void)state;
	refuse("https://h/r", "does not start with oci://");
	refuse("oci://", "no registry host");
	refuse("oci:///r", "no registry host");
	refuse("oci://h", "no repository name");
	refuse("oci://h/", "no repository name");
	refuse("oci://user:pw@h/r", "user information");
	refuse("oci://h/r?x=1", "query or fragment");
	refuse("oci://h/r#f", "query or fragment");
	refuse("oci://h/Driver", "upper-case");
	refuse("oci://h/a/../b", "'..'");
	refuse("oci://h/a/./b", "'.'");
	refuse("oci://h/a//b", "empty path component");
	refuse("oci://h/a/", "empty path component");
	refuse("oci://h/-a", "start and end");
	refuse("oci://h/a-", "start and end");
	refuse("oci://h/a___b", "start and end");
	refuse("oci://h/a+b", "[a-z0-9._-]");
	refuse("oci://h/r:", "the tag ''");
	refuse("oci://h/r:.x", "the tag '.x'");
	refuse("oci://h/r:a/b", "the tag");
	refuse("oci://h/r@sha256:abc", "the digest");
	refuse("oci://h/r@sha512:" HEX64, "the digest");
	refuse("oci://h/r@sha256:" HEX64 "0", "the digest");
	refuse("oci://h:0/r", "the port '0'");
	refuse("oci://h:65536/r", "the port");
	refuse("oci://h:x/r", "the port");
	refuse("oci://h_x/r", "holds '_'");
	refuse("oci://[::1/r", "']'");
	refuse("oci://h/r x", "space");
	refuse("oci://h/r%41", "'%'");
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memcpy(longname, "oci://h/", 8);
	refuse(longname, "longer than 255");
}

static void test_layout_parse(void **state)
{
	char tag[OCI_TAG_MAX + 1], *path = NULL;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(oci_layout_parse("oci-layout:/srv/repo:v2", &path, tag, &e), 0);
	assert_string_equal(path, "/srv/repo");
	assert_string_equal(tag, "v2");
	free(path);
	assert_int_equal(oci_layout_parse("oci-layout:/a:b/c", &path, tag, &e), 0);
	assert_string_equal(path, "/a:b/c");
	assert_string_equal(tag, "latest");
	free(path);
	assert_int_equal(oci_layout_parse("oci-layout:rel", &path, tag, &e), 0);
	assert_string_equal(path, "rel");
	free(path);
	assert_int_equal(oci_layout_parse("oci-layout:", &path, tag, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_int_equal(oci_layout_parse("oci-layout::v1", &path, tag, &e), -1);
	assert_int_equal(oci_layout_parse("oci-layout:/x:-bad", &path, tag, &e), -1);
	assert_non_null(strstr(e.msg, "the tag '-bad'"));
}

/* ---- WWW-Authenticate ----------------------------------------------------------------- */

static void test_challenge(void **state)
{
	struct oci_challenge c;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(
		oci_challenge_parse(
			"Bearer realm=\"https://auth.example/token\",service=\"registry.example\",scope=\"repository:a/b:pull\"",
			&c, &e),
		0);
	assert_int_equal(c.scheme, OCI_AUTH_BEARER);
	assert_string_equal(c.realm, "https://auth.example/token");
	assert_string_equal(c.service, "registry.example");
	assert_string_equal(c.scope, "repository:a/b:pull");

	/* Basic alone; a token value, BWS around '=', an escaped quote */
	assert_int_equal(oci_challenge_parse("basic REALM = \"Re\\\"gistry\"", &c, &e), 0);
	assert_int_equal(c.scheme, OCI_AUTH_BASIC);
	assert_string_equal(c.realm, "Re\"gistry");

	/* Several challenges: Bearer is preferred wherever it stands; unknown ones skipped */
	assert_int_equal(
		oci_challenge_parse(
			"Negotiate, Basic realm=\"r\", Newauth realm=\"x\", type=1, Bearer realm=\"https://t\"",
			&c, &e),
		0);
	assert_int_equal(c.scheme, OCI_AUTH_BEARER);
	assert_string_equal(c.realm, "https://t");
	/* A token68 after a scheme */
	assert_int_equal(oci_challenge_parse("Other dXNlcg==, Basic realm=r", &c, &e), 0);
	assert_int_equal(c.scheme, OCI_AUTH_BASIC);
	assert_string_equal(c.realm, "r");
}

static void test_challenge_refuses(void **state)
{
	static const char *const bad[] = {
		"",			       /* nothing offered */
		"Negotiate",		       /* nothing we answer */
		"Bearer service=\"s\"",	       /* no realm */
		"Bearer realm=\"unterminated", /* a quoted-string without its end */
		"realm=\"x\"",		       /* a parameter before any scheme */
		"Bearer realm=",	       /* no value */
		"Bearer \"quoted\"",	       /* not a token */
	};
	struct oci_challenge c;
	struct err e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&e);
		if (oci_challenge_parse(bad[i], &c, &e) != -1)
			fail_msg("'%s' was accepted", bad[i]);
		assert_int_equal(e.code, EXIT_UNREACHABLE);
	}
}

/* ---- the token answer ----------------------------------------------------------------- */

static void test_token(void **state)
{
	char *t = NULL;
	unsigned exp = 0;
	struct err e;

	(void)state;
	err_clear(&e);
#define T1 "{\"token\":\"abc.def\",\"expires_in\":300}"
	assert_int_equal(oci_token_parse(T1, strlen(T1), &t, &exp, &e), 0);
	assert_string_equal(t, "abc.def");
	assert_int_equal(exp, 300);
	free(t);
	assert_int_equal(oci_token_parse("{\"access_token\":\"x\"}", 20u, &t, &exp, &e), 0);
	assert_string_equal(t, "x");
	assert_int_equal(exp, OCI_TOKEN_DEFAULT_EXPIRY_S);
	free(t);
	/* an empty "token" beside an "access_token": the latter */
	assert_int_equal(
		oci_token_parse("{\"token\":\"\",\"access_token\":\"y\"}", 31, &t, &exp, &e), 0);
	assert_string_equal(t, "y");
	free(t);
}

static void token_refused(const char *json, const char *why)
{
	char *t = NULL;
	unsigned exp;
	struct err e;

	err_clear(&e);
	assert_int_equal(oci_token_parse(json, strlen(json), &t, &exp, &e), -1);
	assert_null(t);
	assert_int_equal(e.code, EXIT_UNREACHABLE);
	if (!strstr(e.msg, why))
		fail_msg("'%s': '%s' does not say '%s'", json, e.msg, why);
}

static void test_token_refuses(void **state)
{
	(void)state;
	token_refused("<html>gateway</html>", "not a JSON object");
	token_refused("[\"token\"]", "not a JSON object");
	token_refused("{\"token\":\"a\"} x", "not a JSON object");
	token_refused("{}", "no \"token\"");
	token_refused("{\"token\":1}", "no \"token\"");
	token_refused("{\"token\":\"\"}", "no \"token\"");
	token_refused("{\"token\":\"a\\r\\nX-Evil: 1\"}", "header cannot carry");
	token_refused("{\"token\":\"a b\"}", "header cannot carry");
	token_refused("{\"token\":\"a\",\"expires_in\":0}", "expires_in");
	token_refused("{\"token\":\"a\",\"expires_in\":\"60\"}", "expires_in");
	token_refused("{\"token\":\"a\",\"expires_in\":-5}", "expires_in");
}

/* ---- the manifest ------------------------------------------------------------------------ */

#define DESC(type, hex, size, extra)                                                               \
	"{\"mediaType\":\"" type "\",\"digest\":\"sha256:" hex "\",\"size\":" size extra "}"
#define TITLE(t) ",\"annotations\":{\"org.opencontainers.image.title\":\"" t "\"}"
#define MANIFEST(head, config, layers)                                                             \
	"{\"schemaVersion\":2" head ",\"config\":" config ",\"layers\":[" layers "]}"
#define HEAD_OK ",\"mediaType\":\"" OCI_MT_MANIFEST "\",\"artifactType\":\"" OCI_ARTIFACT_TYPE "\""
#define CONFIG_OK                                                                                  \
	DESC(OCI_MT_EMPTY, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",     \
	     "2", "")
#define L_INDEX DESC(OCI_MT_INDEX, HEX64, "100", TITLE("index.json"))
#define L_SIG DESC(OCI_MT_SIGNATURE, HEX64B, "256", TITLE("index.json.sig"))
#define L_PKG DESC(OCI_MT_PACKAGE "+zstd", HEX64, "1000", TITLE("p/a.tar.zst"))

static void test_manifest(void **state)
{
	static const char good[] = MANIFEST(HEAD_OK, CONFIG_OK, L_INDEX "," L_SIG "," L_PKG);
	struct oci_manifest *m = NULL;
	const struct oci_layer *l;
	struct repo_package pkg = {.path = (char *)"p/a.tar.zst", .sha256 = HEX64, .size = 1000};
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(oci_manifest_parse(good, strlen(good), &m, &e), 0);
	assert_string_equal(m->index.sha256, HEX64);
	assert_int_equal(m->index.size, 100);
	assert_string_equal(m->sig.title, "index.json.sig");
	assert_int_equal(m->n_pkgs, 1);
	assert_int_equal(oci_manifest_package(m, &pkg, &l, &e), 1);
	assert_ptr_equal(l, &m->pkgs[0]);
	/* not carried */
	memcpy(pkg.sha256, HEX64B, 65);
	pkg.path = (char *)"p/b.tar.zst";
	assert_int_equal(oci_manifest_package(m, &pkg, &l, &e), 0);
	/* the same path under another digest: the manifest contradicts the signed index */
	pkg.path = (char *)"p/a.tar.zst";
	assert_int_equal(oci_manifest_package(m, &pkg, &l, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);
	/* the digest with another size */
	memcpy(pkg.sha256, HEX64, 65);
	pkg.size = 999;
	assert_int_equal(oci_manifest_package(m, &pkg, &l, &e), -1);
	assert_non_null(strstr(e.msg, "listed with 1000 bytes"));
	oci_manifest_free(m);
}

static void manifest_refused(const char *json, const char *why)
{
	struct oci_manifest *m = NULL;
	struct err e;

	err_clear(&e);
	assert_int_equal(oci_manifest_parse(json, strlen(json), &m, &e), -1);
	assert_null(m);
	assert_int_equal(e.code, EXIT_VERIFY);
	if (!strstr(e.msg, why))
		fail_msg("'%s': '%s' does not say '%s'", json, e.msg, why);
}

static void test_manifest_refuses(void **state)
{
	char *huge;

	(void)state;
	manifest_refused("{", "not a JSON object");
	manifest_refused(MANIFEST("", CONFIG_OK, L_INDEX "," L_SIG), "mediaType '(none)'");
	manifest_refused("{\"schemaVersion\":1}", "schemaVersion");
	manifest_refused(MANIFEST(",\"mediaType\":\"" OCI_MT_IMAGE_INDEX
				  "\",\"artifactType\":\"" OCI_ARTIFACT_TYPE "\"",
				  CONFIG_OK, L_INDEX "," L_SIG),
			 "the mediaType");
	manifest_refused(MANIFEST(",\"mediaType\":\"" OCI_MT_MANIFEST
				  "\",\"artifactType\":\"application/vnd.other\"",
				  CONFIG_OK, L_INDEX "," L_SIG),
			 "the artifactType");
	manifest_refused(
		MANIFEST(",\"mediaType\":\"" OCI_MT_MANIFEST "\"", CONFIG_OK, L_INDEX "," L_SIG),
		"the artifactType '(none)'");
	manifest_refused(MANIFEST(HEAD_OK,
				  DESC("application/vnd.oci.image.config.v1+json", HEX64, "2", ""),
				  L_INDEX "," L_SIG),
			 "the config");
	manifest_refused(MANIFEST(HEAD_OK,
				  DESC(OCI_MT_EMPTY, HEX64, "2", ",\"urls\":[\"https://x\"]"),
				  L_INDEX "," L_SIG),
			 "\"urls\"");
	manifest_refused("{\"schemaVersion\":2" HEAD_OK ",\"config\":" CONFIG_OK "}", "layers");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK, L_INDEX), "fewer than 2 layers");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK, L_SIG "," L_INDEX), "layer 1's mediaType");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK, L_INDEX "," L_PKG), "layer 2's mediaType");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK,
				  DESC(OCI_MT_INDEX, HEX64, "100",
				       ",\"urls\":[\"https://evil\"]") "," L_SIG),
			 "layer 1 has \"urls\"");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK,
				  L_INDEX "," L_SIG "," DESC(OCI_MT_PACKAGE, HEX64, "5",
							     ",\"urls\":[\"https://e\"]")),
			 "layer 3 has \"urls\"");
	manifest_refused(
		MANIFEST(HEAD_OK, CONFIG_OK, DESC(OCI_MT_INDEX, HEX64, "16777217", "") "," L_SIG),
		"the index layer has 16777217 bytes");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK,
				  L_INDEX "," DESC(OCI_MT_SIGNATURE, HEX64, "65537", "")),
			 "the signature layer has 65537 bytes");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK,
				  "{\"mediaType\":\"" OCI_MT_INDEX "\",\"digest\":\"sha512:" HEX64
				  "\",\"size\":1}," L_SIG),
			 "layer 1 has no digest");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK,
				  L_INDEX "," L_SIG "," DESC(OCI_MT_PACKAGE, HEX64, "-1", "")),
			 "layer 3 has no size");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK,
				  L_INDEX "," L_SIG
					  "," DESC("application/octet-stream", HEX64, "1", "")),
			 "not a package's");
	manifest_refused(MANIFEST(HEAD_OK, CONFIG_OK, L_INDEX "," L_SIG ",\"x\""),
			 "layer 3 is not a descriptor");
	/* over 4 MiB: refused before a byte is parsed */
	huge = malloc(OCI_MANIFEST_MAX + 2);
	assert_non_null(huge);
	memset(huge, ' ', OCI_MANIFEST_MAX + 1);
	huge[OCI_MANIFEST_MAX + 1] = '\0';
	manifest_refused(huge, "over the 4194304 a manifest may have");
	free(huge);
}

static void test_media_type(void **state)
{
	char t[128];

	(void)state;
	oci_package_media_type("a/b.tar.zst", t, sizeof(t));
	assert_string_equal(t, OCI_MT_PACKAGE "+zstd");
	oci_package_media_type("b.tar.xz", t, sizeof(t));
	assert_string_equal(t, OCI_MT_PACKAGE "+xz");
	oci_package_media_type("b.tar.gz", t, sizeof(t));
	assert_string_equal(t, OCI_MT_PACKAGE "+gzip");
	oci_package_media_type("b.tgz", t, sizeof(t));
	assert_string_equal(t, OCI_MT_PACKAGE);
}

#define REF_NAME(t) ",\"annotations\":{\"org.opencontainers.image.ref.name\":\"" t "\"}"
#define LAYOUT_OLD DESC(OCI_MT_MANIFEST, HEX64B, "10", REF_NAME("old"))
#define LAYOUT_LATEST DESC(OCI_MT_MANIFEST, HEX64, "10", REF_NAME("latest"))

static void test_layout_find(void **state)
{
	static const char idx[] =
		"{\"schemaVersion\":2,\"manifests\":[" LAYOUT_OLD "," LAYOUT_LATEST "]}";
	char digest[OCI_DIGEST_SIZE];
	bool missing;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(oci_layout_find(idx, strlen(idx), "latest", digest, &missing, &e), 0);
	assert_string_equal(digest, "sha256:" HEX64);
	assert_int_equal(oci_layout_find(idx, strlen(idx), "old", digest, &missing, &e), 0);
	assert_string_equal(digest, "sha256:" HEX64B);
	assert_int_equal(oci_layout_find(idx, strlen(idx), "v9", digest, &missing, &e), -1);
	assert_true(missing);
	assert_int_equal(oci_layout_find("{}", 2, "latest", digest, &missing, &e), -1);
	assert_false(missing);
	assert_int_equal(e.code, EXIT_VERIFY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ref_accepts),	  cmocka_unit_test(test_ref_refuses),
		cmocka_unit_test(test_layout_parse),	  cmocka_unit_test(test_challenge),
		cmocka_unit_test(test_challenge_refuses), cmocka_unit_test(test_token),
		cmocka_unit_test(test_token_refuses),	  cmocka_unit_test(test_manifest),
		cmocka_unit_test(test_manifest_refuses),  cmocka_unit_test(test_media_type),
		cmocka_unit_test(test_layout_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
