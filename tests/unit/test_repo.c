// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/repo.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"

#define PKG(kernel, extra, sha)                                                                    \
	"{\"kernel\":\"" kernel "\",\"arch\":\"x86_64\",\"path\":\"p/" kernel ".tar.zst\","        \
	"\"sha256\":\"" sha "\",\"size\":100" extra "}"

static const char index_json[] =
	"{\"format\":1,\"generated\":\"2026-01-01T00:00:00Z\",\"extra\":{\"x\":1},\"drivers\":["
	"{\"version\":\"535.261.03\",\"tags\":[\"default\"],\"packages\":[" PKG(
		"6.1.0-57-amd64", "",
		SHA_A) "," PKG("6.1.0-57-amd64", ",\"os\":\"cos\",\"os_build\":\"17800.66.78\"",
			       SHA_B) "," PKG("6.1.0-57-amd64", ",\"os\":\"cos\"",
					      SHA_A) "]},"
						     "{\"version\":\"550.90.07\",\"supported_pci_"
						     "ids\":[\"10de:2330\",\"10DE:20B0\"],"
						     "\"packages\":[" PKG("6.1.0-57-amd64", "", SHA_A) "," PKG(
							     "6.1.0-58-amd64", "",
							     SHA_A) "]},"
								    "{\"version\":\"535.183.01\","
								    "\"unknown\":true,\"packages\":"
								    "[" PKG("6.1.0-57-amd64", "",
									    SHA_A) "]},"
										   "{\"version\":"
										   "\"560.1.1\","
										   "\"packages\":["
										   "{\"kernel\":"
										   "\"6.1.0-57-"
										   "amd64\","
										   "\"arch\":"
										   "\"amd64\","
										   "\"os\":"
										   "\"ubuntu\","
										   "\"path\":\"u."
										   "tar.zst\","
										   "\"sha256\":"
										   "\"" SHA_A
										   "\",\"size\":5}]"
										   "}"
										   "]}";

struct fixture {
	struct repo_index *idx;
	struct host host;
	struct gpu gpus[2];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct err e;

	err_clear(&e);
	if (repo_index_parse(index_json, strlen(index_json), &f->idx, &e) < 0)
		fail_msg("parse: %s", e.msg);
	f->host.os_id = (char *)"cos";
	f->host.os_build_id = (char *)"17800.66.78";
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-57-amd64");
	snprintf(f->host.arch, sizeof(f->host.arch), "x86_64");
	f->gpus[0] = (struct gpu){.bdf = "0000:00:04.0", .vendor = 0x10de, .device = 0x2330};
	f->gpus[1] = (struct gpu){.bdf = "0000:00:05.0", .vendor = 0x10de, .device = 0x20b0};
	f->host.gpus = f->gpus;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	repo_index_free(f->idx);
	free(f);
	return 0;
}

static void test_parse(void **state)
{
	struct fixture *f = *state;
	const struct repo_driver *d;

	assert_int_equal(f->idx->n_drivers, 4);
	/* Sorted newest first. */
	assert_string_equal(f->idx->drivers[0].version, "560.1.1");
	assert_string_equal(f->idx->drivers[1].version, "550.90.07");
	assert_string_equal(f->idx->drivers[2].version, "535.261.03");
	assert_string_equal(f->idx->drivers[3].version, "535.183.01");
	d = &f->idx->drivers[1];
	assert_true(d->has_pci_ids);
	assert_int_equal(d->n_pci_ids, 2);
	assert_int_equal(d->pci_ids[1], 0x10de20b0);
	/* sha256 is normalised to lower case, arch aliases to uname -m. */
	assert_string_equal(f->idx->drivers[2].pkgs[1].sha256,
			    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	assert_string_equal(f->idx->drivers[0].pkgs[0].arch, "x86_64");
	assert_true(repo_driver_has_tag(&f->idx->drivers[2], "default"));
	assert_false(repo_driver_has_tag(&f->idx->drivers[1], "default"));
}

static void expect_parse_error(const char *json, const char *needle)
{
	struct repo_index *idx = NULL;
	struct err e;

	err_clear(&e);
	if (repo_index_parse(json, strlen(json), &idx, &e) == 0) {
		repo_index_free(idx);
		fail_msg("accepted: %s", json);
	}
	assert_int_equal(e.code, EXIT_VERIFY);
	if (!strstr(e.msg, needle))
		fail_msg("message '%s' lacks '%s'", e.msg, needle);
	assert_null(idx);
}

/* JSON parsed, the test failed where the index is refused; free with repo_index_free. */
static struct repo_index *parse_ok(const char *json)
{
	struct repo_index *idx = NULL;
	struct err e;

	err_clear(&e);
	if (repo_index_parse(json, strlen(json), &idx, &e) < 0)
		fail_msg("parse: %s", e.msg);
	return idx;
}

/*
 * Each of the N values BAD as packages[0].FIELD of an otherwise good index: refused
 * (exit 5) with NEEDLE in the message.
 */
static void expect_field_refused(const char *field, const char *const *bad, size_t n,
				 const char *needle)
{
	char doc[512];

	for (size_t i = 0; i < n; i++) {
		snprintf(
			doc, sizeof(doc),
			"{\"format\":1,\"drivers\":[{\"version\":\"1\",\"packages\":[{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"a\",\"sha256\":\"" SHA_A
			"\",\"size\":1,\"%s\":%s}]}]}",
			field, bad[i]);
		expect_parse_error(doc, needle);
	}
}

#define DRV(v, pkgs) "{\"format\":1,\"drivers\":[{\"version\":\"" v "\",\"packages\":[" pkgs "]}]}"

/*
 * packages[].capabilities (docs/repository-format.md): absent is compute and utility; a
 * word this installer does not know (display, a newer build's word, "all") is skipped and
 * grants nothing, the rest of the index stands (format evolution rules 1 and 3); anything
 * but an array of strings refuses the index. --driver-capabilities: commas only, items
 * trimmed, none empty.
 */
static void test_capabilities(void **state)
{
	static const char *const bad[] = {"\"video\"", "[1]", "{}", "[\"video\",null]"};
	static const struct {
		const char *array;
		unsigned caps;
	} skipped[] = {
		{"[\"display\"]", REPO_CAP_DEFAULT},
		{"[\"all\"]", REPO_CAP_DEFAULT},
		{"[\"video,graphics\"]", REPO_CAP_DEFAULT},
		{"[\"graphics\",\"ngx\",\"video\"]", REPO_CAP_ALL},
		{"[]", REPO_CAP_DEFAULT},
	};
	static const char *const bad_lists[] = {
		"compute,display", " , ",	    "", "video,", ",video", "video,,graphics",
		"video graphics",  "video;graphics"};
	struct repo_index *idx = NULL;
	unsigned caps = 0;
	char buf[64], json[1024];
	struct err e;

	(void)state;
	err_clear(&e);
	snprintf(json, sizeof(json), DRV("535.261.03", PKG("6.1.0-57-amd64", "%s", SHA_A)),
		 ",\"capabilities\":[\"compute\",\"utility\",\"graphics\"]");
	assert_int_equal(repo_index_parse(json, strlen(json), &idx, &e), 0);
	assert_int_equal(idx->drivers[0].pkgs[0].capabilities,
			 REPO_CAP_DEFAULT | REPO_CAP_GRAPHICS);
	repo_index_free(idx);
	snprintf(json, sizeof(json), DRV("535.261.03", PKG("6.1.0-57-amd64", "%s", SHA_A)), "");
	assert_int_equal(repo_index_parse(json, strlen(json), &idx, &e), 0);
	assert_int_equal(idx->drivers[0].pkgs[0].capabilities, REPO_CAP_DEFAULT);
	repo_index_free(idx);
	for (size_t i = 0; i < ARRAY_SIZE(skipped); i++) {
		char extra[128];

		snprintf(extra, sizeof(extra), ",\"capabilities\":%s", skipped[i].array);
		snprintf(json, sizeof(json), DRV("535.261.03", PKG("6.1.0-57-amd64", "%s", SHA_A)),
			 extra);
		err_clear(&e);
		if (repo_index_parse(json, strlen(json), &idx, &e) < 0)
			fail_msg("%s refused the index: %s", skipped[i].array, e.msg);
		assert_int_equal(idx->drivers[0].pkgs[0].capabilities, skipped[i].caps);
		repo_index_free(idx);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char extra[128];

		snprintf(extra, sizeof(extra), ",\"capabilities\":%s", bad[i]);
		snprintf(json, sizeof(json), DRV("535.261.03", PKG("6.1.0-57-amd64", "%s", SHA_A)),
			 extra);
		expect_parse_error(json, "\"capabilities\" must be an array of strings");
	}
	assert_int_equal(repo_caps_parse("graphics", &caps), 0);
	assert_int_equal(caps, REPO_CAP_DEFAULT | REPO_CAP_GRAPHICS);
	assert_string_equal(repo_caps_text(caps, buf, sizeof(buf)), "compute,utility,graphics");
	assert_int_equal(repo_caps_parse(" video ,\tall ", &caps), 0);
	assert_int_equal(caps, REPO_CAP_ALL);
	for (size_t i = 0; i < ARRAY_SIZE(bad_lists); i++) {
		caps = 0;
		if (repo_caps_parse(bad_lists[i], &caps) == 0)
			fail_msg("'%s' taken as %#x", bad_lists[i], caps);
	}
}

static void test_parse_errors(void **state)
{
	(void)state;
	expect_parse_error("", "not valid JSON");
	expect_parse_error("{\"format\":1,\"drivers\":[]", "not valid JSON");
	expect_parse_error("{\"format\":1,\"drivers\":[]} x", "not valid JSON");
	expect_parse_error("[]", "top level must be an object");
	expect_parse_error("{\"drivers\":[]}", "missing integer \"format\"");
	expect_parse_error("{\"format\":\"1\",\"drivers\":[]}", "missing integer \"format\"");
	expect_parse_error("{\"format\":2,\"drivers\":[]}", "format 2 is not supported");
	expect_parse_error("{\"format\":1}", "missing \"drivers\"");
	expect_parse_error("{\"format\":1,\"drivers\":{}}", "must be an array");
	expect_parse_error("{\"format\":1,\"drivers\":[1]}", "must be an object");
	expect_parse_error(DRV("v550", ""), "is not a dotted number");
	expect_parse_error("{\"format\":1,\"drivers\":[{\"version\":\"1\"}]}",
			   "missing \"packages\"");
	expect_parse_error(DRV("1", "{}"), "missing \"kernel\"");
	expect_parse_error(DRV("1", PKG("k", "", "abc")), "64 hex digits");
	expect_parse_error(
		DRV("1", PKG("k", "",
			     "gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg")),
		"64 hex digits");
	expect_parse_error(DRV("1", "{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"/etc/x\","
				    "\"sha256\":\"" SHA_A "\",\"size\":1}"),
			   "must be relative");
	expect_parse_error(DRV("1", "{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"a/../../x\","
				    "\"sha256\":\"" SHA_A "\",\"size\":1}"),
			   "must be relative");
	expect_parse_error(DRV("1", "{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"a b\","
				    "\"sha256\":\"" SHA_A "\",\"size\":1}"),
			   "must be relative");
	expect_parse_error(DRV("1", "{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"a\","
				    "\"sha256\":\"" SHA_A "\",\"size\":-1}"),
			   "out of range");
	expect_parse_error(DRV("1", "{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"a\","
				    "\"sha256\":\"" SHA_A "\",\"size\":\"1\"}"),
			   "\"size\" must be an integer");
	expect_parse_error(DRV("1", "{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"a\","
				    "\"sha256\":\"" SHA_A "\",\"size\":1,\"unpacked_size\":0}"),
			   "\"unpacked_size\" must be an integer from 1 to 2^40");
	expect_parse_error(DRV("1", "{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"a\","
				    "\"sha256\":\"" SHA_A "\",\"size\":1,\"unpacked_size\":\"9\"}"),
			   "\"unpacked_size\" must be an integer");
	expect_parse_error(DRV("1", "{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"a\","
				    "\"sha256\":\"" SHA_A
				    "\",\"size\":1,\"unpacked_size\":1099511627777}"),
			   "\"unpacked_size\" must be an integer");
	expect_parse_error(DRV("1", "{\"kernel\":7,\"arch\":\"x86_64\",\"path\":\"a\","
				    "\"sha256\":\"" SHA_A "\",\"size\":1}"),
			   "\"kernel\" must be a string");
	expect_parse_error("{\"format\":1,\"drivers\":[{\"version\":\"1\",\"supported_pci_ids\":"
			   "[\"10de-2330\"],\"packages\":[]}]}",
			   "supported_pci_ids");
	expect_parse_error(
		"{\"format\":1,\"drivers\":[{\"version\":\"1\",\"packages\":[]},"
		"{\"version\":\"1.0\",\"packages\":[]},{\"version\":\"01\",\"packages\":[]}]}",
		"listed twice");
}

static void expect_choice(struct fixture *f, const char *req, const char *version,
			  const char *sha_prefix)
{
	struct repo_choice c = {0};
	struct err e;

	err_clear(&e);
	if (repo_select(f->idx, &f->host, req, REPO_KMT_AUTO, &c, &e) < 0)
		fail_msg("%s: %s", req, e.msg);
	assert_string_equal(c.driver->version, version);
	assert_memory_equal(c.pkg->sha256, sha_prefix, strlen(sha_prefix));
}

static void expect_no_choice(struct fixture *f, const char *req, int code, const char *needle)
{
	struct repo_choice c = {0};
	struct err e;

	err_clear(&e);
	if (repo_select(f->idx, &f->host, req, REPO_KMT_AUTO, &c, &e) == 0)
		fail_msg("%s: chose %s", req, c.driver->version);
	assert_int_equal(e.code, code);
	if (!strstr(e.msg, needle))
		fail_msg("%s: message '%s' lacks '%s'", req, e.msg, needle);
}

static void test_generated(void **state)
{
	static const char *const bad[] = {
		"",
		"2026-11-30",
		"2026-11-30T04:13:03",	     /* no zone */
		"2026-11-30T04:13:03+00:00", /* only Z */
		"2026-11-30 04:13:03Z",	     /* space for T */
		"2026-02-29T00:00:00Z",	     /* not a leap year */
		"2026-13-01T00:00:00Z",	     /* month 13 */
		"2026-11-31T00:00:00Z",	     /* November has 30 days */
		"2026-11-30T24:00:00Z",	     /* hour 24 */
		"2026-11-30T04:60:00Z",	     /* minute 60 */
		"1969-12-31T23:59:59Z",	     /* before the epoch */
		"2026-11-30T04:13:03.Z",     /* empty fraction */
		"2026-11-30T04:13:03Zjunk",  /* trailing bytes */
		"+026-11-30T04:13:03Z",	     /* a sign for a digit */
		"2026-1a-30T04:13:03Z",	     /* a letter */
	};
	static const char with[] =
		"{\"format\":1,\"generated\":\"2026-11-30T04:13:03.000001Z\",\"drivers\":[]}";
	static const char without[] = "{\"format\":1,\"drivers\":[]}";
	struct repo_index *idx = NULL;
	struct err e;
	int64_t us;

	(void)state;
	assert_int_equal(repo_parse_time("1970-01-01T00:00:00Z", &us), 0);
	assert_int_equal(us, 0);
	assert_int_equal(repo_parse_time("2000-03-01T00:00:00Z", &us), 0);
	assert_int_equal(us, 951868800ll * 1000000);
	assert_int_equal(repo_parse_time("2024-02-29T12:34:56Z", &us), 0);
	assert_int_equal(us, 1709210096ll * 1000000);
	/* Fractions keep microseconds; digits beyond are dropped, not rounded. */
	assert_int_equal(repo_parse_time("2026-11-30T04:13:03.5Z", &us), 0);
	assert_int_equal(us, 1796011983ll * 1000000 + 500000);
	assert_int_equal(repo_parse_time("2026-11-30T04:13:03.1234569Z", &us), 0);
	assert_int_equal(us, 1796011983ll * 1000000 + 123456);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (repo_parse_time(bad[i], &us) == 0)
			fail_msg("accepted '%s'", bad[i]);
	}

	err_clear(&e);
	assert_int_equal(repo_index_parse(with, strlen(with), &idx, &e), 0);
	assert_true(idx->has_generated);
	assert_string_equal(idx->generated, "2026-11-30T04:13:03.000001Z");
	assert_int_equal(idx->generated_us, 1796011983ll * 1000000 + 1);
	repo_index_free(idx);
	idx = NULL;
	assert_int_equal(repo_index_parse(without, strlen(without), &idx, &e), 0);
	assert_false(idx->has_generated);
	repo_index_free(idx);
	expect_parse_error("{\"format\":1,\"generated\":1796011983,\"drivers\":[]}",
			   "\"generated\" is not a UTC time");
	expect_parse_error("{\"format\":1,\"generated\":\"yesterday\",\"drivers\":[]}",
			   "\"generated\" is not a UTC time");
}

static void test_max_age(void **state)
{
	static const char with[] = "{\"format\":1,\"max_age\":300,\"drivers\":[]}";
	static const char most[] = "{\"format\":1,\"max_age\":86400,\"drivers\":[]}";
	static const char without[] = "{\"format\":1,\"drivers\":[]}";
	struct repo_index *idx = NULL;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(repo_index_parse(with, strlen(with), &idx, &e), 0);
	assert_int_equal(idx->max_age_s, 300);
	repo_index_free(idx);
	idx = NULL;
	assert_int_equal(repo_index_parse(most, strlen(most), &idx, &e), 0);
	assert_int_equal(idx->max_age_s, 86400);
	repo_index_free(idx);
	idx = NULL;
	/* Absent: 0, a node asks on every run. */
	assert_int_equal(repo_index_parse(without, strlen(without), &idx, &e), 0);
	assert_int_equal(idx->max_age_s, 0);
	repo_index_free(idx);
	expect_parse_error("{\"format\":1,\"max_age\":-1,\"drivers\":[]}",
			   "\"max_age\" must be an integer from 0 to 86400");
	expect_parse_error("{\"format\":1,\"max_age\":86401,\"drivers\":[]}",
			   "\"max_age\" must be an integer");
	expect_parse_error("{\"format\":1,\"max_age\":\"300\",\"drivers\":[]}",
			   "\"max_age\" must be an integer");
	expect_parse_error("{\"format\":1,\"max_age\":1.5,\"drivers\":[]}",
			   "\"max_age\" must be an integer");
}

static void test_select(void **state)
{
	struct fixture *f = *state;

	/* The most specific package wins: os + os_build over os over generic. */
	expect_choice(f, "default", "535.261.03", "bbbb");
	/* 560 is Ubuntu-only; 550 supports both GPUs. */
	expect_choice(f, "latest", "550.90.07", "aaaa");
	expect_choice(f, "535", "535.261.03", "bbbb");
	expect_choice(f, "535.183", "535.183.01", "aaaa");
	expect_choice(f, "550.90.7", "550.90.07", "aaaa");
	expect_no_choice(f, "470", EXIT_NO_MATCH, "matches version '470'");
	expect_no_choice(f, "560.1.1", EXIT_NO_MATCH, "driver 560.1.1 has no package for kernel");
	expect_no_choice(f, "v1", EXIT_USAGE, "is not 'default'");

	/* Another build: the generic os=cos package is picked. */
	f->host.os_build_id = (char *)"18000.0.0";
	expect_choice(f, "default", "535.261.03", "aaaa");
	f->host.os_id = (char *)"ubuntu";
	f->host.os_build_id = NULL;
	expect_choice(f, "latest", "560.1.1", "aaaa");
	/* A derivative (ID_LIKE ubuntu) takes Ubuntu's package for its kernel. */
	f->host.os_id = (char *)"pop";
	f->host.os_like = (char *)"ubuntu debian";
	expect_choice(f, "latest", "560.1.1", "aaaa");
	f->host.os_like = (char *)"debian";
	expect_choice(f, "latest", "550.90.07", "aaaa");
	f->host.os_like = NULL;
	f->host.os_id = (char *)"cos";
	f->host.os_build_id = (char *)"17800.66.78";
}

/* repo_wanted: REQ's refusal on F's host is one a package lifts: DRIVER of flavour TYPE. */
static void expect_wanted(struct fixture *f, const char *req, enum repo_kmt_policy policy,
			  const char *driver, enum repo_module_type type)
{
	struct repo_want w = {0};

	if (repo_wanted(f->idx, &f->host, req, policy, &w) != 1)
		fail_msg("%s: no package wanted", req);
	assert_string_equal(w.driver->version, driver);
	assert_int_equal(w.module_type, type);
}

static void expect_not_wanted(struct fixture *f, const char *req)
{
	struct repo_want w = {0};

	if (repo_wanted(f->idx, &f->host, req, REPO_KMT_AUTO, &w) != 0)
		fail_msg("%s: wants driver %s", req, w.driver->version);
}

/* What a waiting node asks for, and the refusals no package would lift. */
static void test_wanted(void **state)
{
	struct fixture *f = *state;

	f->host.n_gpus = 1;
	/* Served: nothing wanted. */
	expect_not_wanted(f, "default");
	/* A kernel the default driver lacks: that driver, the flavour as before flavours. */
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-58-amd64");
	expect_wanted(f, "default", REPO_KMT_AUTO, "535.261.03", REPO_MT_PROPRIETARY);
	expect_wanted(f, "535.261.03", REPO_KMT_OPEN, "535.261.03", REPO_MT_OPEN);
	/*
	 * A kernel none has: the newest driver the request names, which the node would install
	 * were every driver built for it (latest: 560.1.1, though it has Ubuntu's packages only).
	 */
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-99-amd64");
	expect_wanted(f, "latest", REPO_KMT_AUTO, "560.1.1", REPO_MT_PROPRIETARY);
	expect_wanted(f, "535", REPO_KMT_AUTO, "535.261.03", REPO_MT_PROPRIETARY);
	/* A version the repository lacks, a malformed request: no package lifts them. */
	expect_not_wanted(f, "470");
	expect_not_wanted(f, "v1");
	/* A GPU the driver does not support, on a kernel it serves: not a missing package. */
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-57-amd64");
	f->gpus[0].device = 0x9999;
	expect_not_wanted(f, "550.90.07");
	f->gpus[0].device = 0x2330;
}

static void test_select_kernels(void **state)
{
	struct fixture *f = *state;

	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-58-amd64");
	expect_choice(f, "latest", "550.90.07", "aaaa");
	expect_no_choice(f, "default", EXIT_NO_MATCH,
			 "the default driver 535.261.03 has no package for kernel 6.1.0-58-amd64");
	expect_no_choice(f, "default", EXIT_NO_MATCH, "packages exist for kernels: 6.1.0-57-amd64");
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-99-amd64");
	expect_no_choice(f, "latest", EXIT_NO_MATCH,
			 "packages exist for kernels: 6.1.0-57-amd64, 6.1.0-58-amd64");
	expect_no_choice(f, "535", EXIT_NO_MATCH, "no driver of branch 535 has a package");
	snprintf(f->host.arch, sizeof(f->host.arch), "aarch64");
	expect_no_choice(f, "latest", EXIT_NO_MATCH, "packages exist for kernels: none");
	snprintf(f->host.arch, sizeof(f->host.arch), "x86_64");
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-57-amd64");
}

static void expect_names(const struct repo_names *n, const char *want)
{
	char buf[512];

	repo_names_join(n, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

/* What the index offers near a host: the lists coverage shows and the messages name. */
static void test_offer(void **state)
{
	struct fixture *f = *state;
	struct repo_names n = {0};

	assert_int_equal(repo_kernels(f->idx, NULL, NULL, &n), 0);
	expect_names(&n, "6.1.0-57-amd64, 6.1.0-58-amd64");
	repo_names_done(&n);
	/* For this image (cos build, x86_64) whatever the kernel, of the drivers asked for. */
	assert_int_equal(repo_kernels(f->idx, &f->host, "default", &n), 0);
	expect_names(&n, "6.1.0-57-amd64");
	repo_names_done(&n);
	assert_int_equal(repo_kernels(f->idx, &f->host, "560", &n), 0);
	expect_names(&n, "none"); /* Ubuntu only */
	repo_names_done(&n);
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-58-amd64");
	assert_int_equal(repo_versions_for_host(f->idx, &f->host, &n), 0);
	expect_names(&n, "550.90.07");
	repo_names_done(&n);
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-57-amd64");
	assert_int_equal(repo_versions_for_host(f->idx, &f->host, &n), 0);
	expect_names(&n, "550.90.07, 535.261.03, 535.183.01");
	repo_names_done(&n);
	assert_true(repo_has_kernel(f->idx, "6.1.0-58-amd64"));
	assert_false(repo_has_kernel(f->idx, "6.1.0-99-amd64"));

	/* The no-match messages say what there is, and what this host's kernel has. */
	expect_no_choice(
		f, "570", EXIT_NO_MATCH,
		"no driver in the repository matches version '570'; it has versions 560.1.1, 550.90.07, 535.261.03, 535.183.01 (branches 560, 550, 535; tags default), of which these have a package for kernel 6.1.0-57-amd64: 550.90.07, 535.261.03, 535.183.01");
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-58-amd64");
	expect_no_choice(
		f, "535", EXIT_NO_MATCH,
		"packages exist for kernels: 6.1.0-57-amd64; versions with a package for kernel 6.1.0-58-amd64: 550.90.07");
	f->host.os_id = (char *)"ubuntu";
	f->host.os_build_id = NULL;
	expect_no_choice(f, "560", EXIT_NO_MATCH,
			 "packages exist for kernels: 6.1.0-57-amd64; versions with a package");
	snprintf(f->host.arch, sizeof(f->host.arch), "aarch64");
	expect_no_choice(f, "latest", EXIT_NO_MATCH,
			 "packages exist for kernels: none for ubuntu on aarch64; versions");
	{
		struct repo_choice c;
		struct err e;

		err_clear(&e);
		assert_int_equal(repo_select(f->idx, &f->host, "latest", REPO_KMT_AUTO, &c, &e),
				 -1);
		assert_string_equal(
			e.hint,
			"add a package for kernel 6.1.0-58-amd64, ubuntu on aarch64, to the repository");
	}
	snprintf(f->host.arch, sizeof(f->host.arch), "x86_64");
	snprintf(f->host.kernel, sizeof(f->host.kernel), "6.1.0-57-amd64");
	f->host.os_id = (char *)"cos";
	f->host.os_build_id = (char *)"17800.66.78";
}

/* Long lists are cut after REPO_NAMES_SHOWN, or what fits, and say how many more. */
static void test_names_join(void **state)
{
	const char *v[12] = {"k0", "k1", "k2", "k3", "k4",  "k5",
			     "k6", "k7", "k8", "k9", "k10", "k11"};
	struct repo_names n = {.v = v, .n = 0};
	char buf[512], small[40];

	(void)state;
	repo_names_join(&n, buf, sizeof(buf));
	assert_string_equal(buf, "none");
	n.n = 1;
	repo_names_join(&n, buf, sizeof(buf));
	assert_string_equal(buf, "k0");
	n.n = REPO_NAMES_SHOWN;
	repo_names_join(&n, buf, sizeof(buf));
	assert_string_equal(buf, "k0, k1, k2, k3, k4, k5, k6, k7");
	n.n = 12;
	repo_names_join(&n, buf, sizeof(buf));
	assert_string_equal(buf, "k0, k1, k2, k3, k4, k5, k6, k7 and 4 more");
	/* A small buffer shows fewer, and still counts the rest. */
	repo_names_join(&n, small, sizeof(small));
	assert_string_equal(small, "k0, k1, k2, k3 and 8 more");
}

static void test_select_gpus(void **state)
{
	struct fixture *f = *state;
	struct repo_judgement j;

	f->host.n_gpus = 2;
	expect_choice(f, "latest", "550.90.07", "aaaa");
	/* A GPU the newest driver does not list. */
	f->gpus[1].device = 0x1db4;
	assert_int_equal(repo_driver_judge(&f->idx->drivers[1], &f->host, REPO_KMT_AUTO, &j),
			 REPO_GPU_UNSUPPORTED);
	assert_string_equal(j.gpu->bdf, "0000:00:05.0");
	/* latest falls back to the newest that supports every GPU (no list: all). */
	expect_choice(f, "latest", "535.261.03", "bbbb");
	expect_no_choice(f, "550", EXIT_NO_MATCH,
			 "driver 550.90.07 does not support GPU 10de:1db4 at 0000:00:05.0");
	assert_ptr_equal(repo_resolve_tag(f->idx, &f->host, REPO_KMT_AUTO, "latest"),
			 &f->idx->drivers[2]);
	f->gpus[1].device = 0x20b0;
	f->host.n_gpus = 0;
}

static void test_default_missing(void **state)
{
	static const char json[] = DRV("1.2", PKG("k", "", SHA_A));
	struct repo_index *idx = NULL;
	struct repo_choice c;
	struct host h = {.os_id = (char *)"cos"};
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(repo_index_parse(json, strlen(json), &idx, &e), 0);
	snprintf(h.kernel, sizeof(h.kernel), "k");
	snprintf(h.arch, sizeof(h.arch), "x86_64");
	assert_int_equal(repo_select(idx, &h, "default", REPO_KMT_AUTO, &c, &e), -1);
	assert_non_null(strstr(e.msg, "tagged 'default'"));
	assert_non_null(strstr(e.hint, "latest"));
	assert_null(repo_resolve_tag(idx, &h, REPO_KMT_AUTO, "default"));
	assert_int_equal(repo_select(idx, &h, "latest", REPO_KMT_AUTO, &c, &e), 0);
	repo_index_free(idx);
}

/* A request that equals a listed version means that version; otherwise it is a prefix. */
static void test_select_exact(void **state)
{
	static const char json[] =
		"{\"format\":1,\"drivers\":["
		"{\"version\":\"550.90.07\",\"packages\":[" PKG(
			"k", "",
			SHA_A) "]},"
			       "{\"version\":\"550.90.07.1\",\"packages\":[" PKG(
				       "k", "",
				       SHA_B) "]},"
					      "{\"version\":\"535.1\",\"packages\":[" PKG(
						      "other", "",
						      SHA_A) "]},"
							     "{\"version\":\"535.1.2\","
							     "\"packages\":[" PKG("k", "",
										  SHA_B) "]}]}";
	struct fixture f = {.host = {.os_id = (char *)"cos"}};
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(repo_index_parse(json, strlen(json), &f.idx, &e), 0);
	snprintf(f.host.kernel, sizeof(f.host.kernel), "k");
	snprintf(f.host.arch, sizeof(f.host.arch), "x86_64");
	expect_choice(&f, "550.90.07", "550.90.07", "aaaa");
	expect_choice(&f, "550.90.7", "550.90.07", "aaaa");
	expect_choice(&f, "550.90.07.1", "550.90.07.1", "bbbb");
	expect_choice(&f, "550.90", "550.90.07.1", "bbbb");
	expect_choice(&f, "550", "550.90.07.1", "bbbb");
	/* Listed but without a package for this host: refused, never the longer version. */
	expect_no_choice(&f, "535.1", EXIT_NO_MATCH, "driver 535.1 has no package for kernel k");
	expect_choice(&f, "535", "535.1.2", "bbbb");
	assert_true(repo_driver_wanted(f.idx, &f.idx->drivers[0], "550.90"));
	assert_false(repo_driver_wanted(f.idx, &f.idx->drivers[0], "550.90.07"));
	assert_true(repo_driver_wanted(f.idx, &f.idx->drivers[1], "550.90.07"));
	assert_true(repo_driver_wanted(f.idx, &f.idx->drivers[2], "latest"));
	assert_false(repo_driver_wanted(f.idx, &f.idx->drivers[2], "default"));
	repo_index_free(f.idx);
}

/* "repository": the identity anti-rollback keys its record by; the key when absent. */
static void test_repository(void **state)
{
	static const char with[] =
		"{\"format\":1,\"repository\":\"drivers.example.com/nvidia:pool-a_1\","
		"\"generated\":\"2026-11-30T04:13:03Z\",\"drivers\":[]}";
	static const char without[] = "{\"format\":1,\"drivers\":[]}";
	struct repo_index *idx = NULL;
	char ident[REPO_IDENTITY_SIZE];
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(repo_index_parse(with, strlen(with), &idx, &e), 0);
	assert_string_equal(idx->repository, "drivers.example.com/nvidia:pool-a_1");
	repo_index_identity(idx, "0123456789abcdef", ident, sizeof(ident));
	assert_string_equal(ident, "repository:drivers.example.com/nvidia:pool-a_1");
	/* Not older than itself; older than a later time, with the fix. */
	assert_int_equal(repo_check_not_older(idx, ident, idx->generated_us, "x", "held", &e), 0);
	assert_int_equal(repo_check_not_older(idx, ident, idx->generated_us + 1,
					      "2026-11-30T04:13:04Z", "this node accepted before",
					      &e),
			 -1);
	assert_int_equal(e.code, EXIT_VERIFY);
	assert_non_null(strstr(e.msg, "(repository drivers.example.com/nvidia:pool-a_1)"));
	assert_non_null(strstr(e.hint, "resync"));
	assert_null(strstr(e.hint, "allow-index-rollback"));
	repo_index_free(idx);
	idx = NULL;
	assert_int_equal(repo_index_parse(without, strlen(without), &idx, &e), 0);
	assert_null(idx->repository);
	repo_index_identity(idx, "0123456789abcdef", ident, sizeof(ident));
	assert_string_equal(ident, "0123456789abcdef");
	err_clear(&e);
	assert_int_equal(repo_check_not_older(idx, ident, 0, "1970-01-01T00:00:00Z", "held", &e),
			 -1);
	assert_non_null(strstr(e.msg, "no \"generated\" time"));
	assert_non_null(strstr(e.msg, "(key 0123456789abcdef)"));
	repo_index_free(idx);
	{
		static const char pkg[] = DRV(
			"1", PKG("k", ",\"unpacked_size\":4096", SHA_A) "," PKG("k2", "", SHA_A));

		assert_int_equal(repo_index_parse(pkg, strlen(pkg), &idx, &e), 0);
		assert_int_equal(idx->drivers[0].pkgs[0].unpacked_size, 4096);
		assert_int_equal(idx->drivers[0].pkgs[1].unpacked_size, 0);
		repo_index_free(idx);
	}
	expect_parse_error("{\"format\":1,\"repository\":\"a b\",\"drivers\":[]}",
			   "\"repository\" must be 1 to 128");
	expect_parse_error("{\"format\":1,\"repository\":\"\",\"drivers\":[]}",
			   "\"repository\" is empty");
	expect_parse_error("{\"format\":1,\"repository\":7,\"drivers\":[]}",
			   "\"repository\" must be a string");
	expect_parse_error(
		"{\"format\":1,\"repository\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaa\",\"drivers\":[]}",
		"\"repository\" must be 1 to 128");
}

/*
 * docs/repository-format.md, "How the format evolves": an index that carries the fields
 * planned later (a module flavour and signer per package, "formats" announcing another
 * index) and unknown ones at every level is read as format 1, and of two packages that
 * fit equally the first listed wins: the variant listed after is never taken by an
 * installer that ignores the field.
 */
static void test_format_evolution(void **state)
{
	static const char json[] =
		"{\"format\":1,\"formats\":{\"2\":\"index.v2.json\"},\"future\":[1,{}],"
		"\"drivers\":[{\"version\":\"560.1.1\",\"future\":null,\"packages\":["
		"{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"p/prop.tar.zst\","
		"\"sha256\":\"" SHA_A "\",\"size\":100,\"signer\":{\"subject\":\"Vendor key\","
		"\"key_id\":\"0A:FF\",\"sha256\":\"" SHA_A "\",\"future\":1}},"
		"{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"p/open.tar.zst\","
		"\"sha256\":\"" SHA_B "\",\"size\":100,\"flavour\":\"open\",\"x\":{}}]}]}";
	struct fixture f = {.host = {.os_id = (char *)"cos"}};
	struct err e;

	(void)state;
	err_clear(&e);
	if (repo_index_parse(json, strlen(json), &f.idx, &e) < 0)
		fail_msg("parse: %s", e.msg);
	assert_int_equal(f.idx->format, 1);
	snprintf(f.host.kernel, sizeof(f.host.kernel), "k");
	snprintf(f.host.arch, sizeof(f.host.arch), "x86_64");
	expect_choice(&f, "latest", "560.1.1", "aaaa");
	assert_true(f.idx->drivers[0].pkgs[0].has_signer);
	assert_string_equal(f.idx->drivers[0].pkgs[0].signer_subject, "Vendor key");
	assert_string_equal(f.idx->drivers[0].pkgs[0].signer_key_id, "0A:FF");
	assert_string_equal(f.idx->drivers[0].pkgs[0].signer_sha256, SHA_A);
	assert_false(f.idx->drivers[0].pkgs[1].has_signer);
	repo_index_free(f.idx);
}

/* packages[].signer, once known, is checked strictly (an index that breaks it: exit 5). */
static void test_signer_errors(void **state)
{
	static const char *const bad[] = {
		"\"x\"",
		"{\"subject\":\"S\",\"key_id\":\"0A\"}",
		"{\"subject\":\"\",\"key_id\":\"0A\",\"sha256\":\"" SHA_A "\"}",
		"{\"subject\":\"S\",\"key_id\":\"0a\",\"sha256\":\"" SHA_A "\"}",
		"{\"subject\":\"S\",\"key_id\":\"0A\",\"sha256\":\"abc\"}",
		"{\"subject\":\"S\\n\",\"key_id\":\"0A\",\"sha256\":\"" SHA_A "\"}",
	};
	char json[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(
			json, sizeof(json),
			"{\"format\":1,\"drivers\":[{\"version\":\"1.2\",\"packages\":[{\"kernel\":\"k\",\"arch\":\"x86_64\",\"path\":\"p.tar.zst\",\"sha256\":\"" SHA_A
			"\",\"size\":1,\"signer\":%s}]}]}",
			bad[i]);
		expect_parse_error(json, "\"signer\" must be an object with \"subject\"");
	}
}

/*
 * packages[].imex (docs/repository-format.md): a boolean, false when absent; any other
 * value refuses the index (exit 5), naming the field.
 */
static void test_imex(void **state)
{
	static const char json[] =
		DRV("1", PKG("a", ",\"imex\":true", SHA_A) "," PKG("b", ",\"imex\":false",
								   SHA_A) "," PKG("c", "", SHA_A));
	static const char *const bad[] = {"1", "\"true\"", "null", "{}", "[true]"};
	struct repo_index *idx = parse_ok(json);

	(void)state;
	assert_true(idx->drivers[0].pkgs[0].imex);
	assert_false(idx->drivers[0].pkgs[1].imex);
	assert_false(idx->drivers[0].pkgs[2].imex);
	repo_index_free(idx);
	expect_field_refused("imex", bad, ARRAY_SIZE(bad),
			     "packages[0]: \"imex\" must be true or false");
}

/*
 * packages[].nvsdm (docs/repository-format.md): a boolean, false when absent; any other
 * value refuses the index (exit 5), naming the field.
 */
static void test_nvsdm(void **state)
{
	static const char json[] =
		DRV("1", PKG("a", ",\"nvsdm\":true", SHA_A) "," PKG("b", ",\"nvsdm\":false",
								    SHA_A) "," PKG("c", "", SHA_A));
	static const char *const bad[] = {"1", "\"true\"", "null", "[true]"};
	struct repo_index *idx = parse_ok(json);

	(void)state;
	assert_true(idx->drivers[0].pkgs[0].nvsdm);
	assert_false(idx->drivers[0].pkgs[1].nvsdm);
	assert_false(idx->drivers[0].pkgs[2].nvsdm);
	assert_false(idx->drivers[0].pkgs[0].imex);
	repo_index_free(idx);
	expect_field_refused("nvsdm", bad, ARRAY_SIZE(bad),
			     "packages[0]: \"nvsdm\" must be true or false");
}

/*
 * packages[].gpudirect (docs/repository-format.md): "gdrcopy" and "gds" as the modules the
 * package carries, 0 when absent, a name not known skipped; anything but an array of
 * strings refuses the index (exit 5), naming the field.
 */
static void test_gpudirect(void **state)
{
	static const char json[] =
		DRV("1", PKG("a", ",\"gpudirect\":[\"gdrcopy\",\"gds\"]",
			     SHA_A) "," PKG("b", ",\"gpudirect\":[\"gds\",\"later\"]",
					    SHA_A) "," PKG("c", "", SHA_A));
	static const char *const bad[] = {"\"gdrcopy\"", "true", "null", "{}", "[1]", "[[]]"};
	struct repo_index *idx = parse_ok(json);

	(void)state;
	assert_int_equal(idx->drivers[0].pkgs[0].gpudirect,
			 REPO_GPUDIRECT_GDRCOPY | REPO_GPUDIRECT_GDS);
	assert_int_equal(idx->drivers[0].pkgs[1].gpudirect, REPO_GPUDIRECT_GDS);
	assert_int_equal(idx->drivers[0].pkgs[2].gpudirect, 0);
	repo_index_free(idx);
	expect_field_refused("gpudirect", bad, ARRAY_SIZE(bad),
			     "packages[0]: \"gpudirect\" must be an array of strings");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_parse, setup, teardown),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_capabilities),
		cmocka_unit_test(test_generated),
		cmocka_unit_test(test_max_age),
		cmocka_unit_test_setup_teardown(test_select, setup, teardown),
		cmocka_unit_test_setup_teardown(test_select_kernels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wanted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_select_gpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offer, setup, teardown),
		cmocka_unit_test(test_names_join),
		cmocka_unit_test(test_default_missing),
		cmocka_unit_test(test_select_exact),
		cmocka_unit_test(test_repository),
		cmocka_unit_test(test_format_evolution),
		cmocka_unit_test(test_signer_errors),
		cmocka_unit_test(test_imex),
		cmocka_unit_test(test_nvsdm),
		cmocka_unit_test(test_gpudirect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
