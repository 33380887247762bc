// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel module flavours: parsing the index's module_type, module_types and gpu_names,
 * the layout older installers rely on, and the decision (repo_kmt_decide) over host PCI
 * sets (Hopper, Volta, Blackwell, mixed) for branches before and after NVIDIA's open
 * default, with every refusal's sentence.
 */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/repo.h"
#include "source/repo_kmt.h"

#define SHA_P "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_O "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define SHA_U "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define K "6.1.0-57-amd64"

#define PKG(sha, extra)                                                                            \
	"{\"kernel\":\"" K "\",\"arch\":\"x86_64\",\"path\":\"p/" sha                              \
	".tar.zst\",\"sha256\":\"" sha "\",\"size\":100" extra "}"
#define PROP PKG(SHA_P, ",\"module_type\":\"proprietary\"")
#define OPEN PKG(SHA_O, ",\"module_type\":\"open\"")

#define HOPPER 0x10de2330u
#define VOLTA 0x10de1db1u
#define BLACKWELL 0x10de2901u

#define NAMES                                                                                      \
	"\"gpu_names\":{\"10de:2330\":\"NVIDIA H100 80GB HBM3\",\"10de:1db1\":\"Tesla "            \
	"V100-SXM2-16GB\",\"10de:2901\":\"NVIDIA B200\"}"

/*
 * 535.261.03, before the open default: proprietary Hopper and Volta, open Hopper only;
 * no Blackwell. 570.124.06, after it: proprietary Hopper and Volta, open Hopper and
 * Blackwell. 550.1.1: only the proprietary package (Hopper) for this kernel. 580.1.1: only the
 * open package, and no list of the GPUs its open modules support. 520.1.1: no flavour
 * stated (an index from before the field).
 */
static const char both_json[] =
	"{\"format\":1,\"drivers\":["
	"{\"version\":\"535.261.03\",\"supported_pci_ids\":[\"10de:2330\",\"10de:1db1\"],"
	"\"module_types\":{\"proprietary\":{\"supported_pci_ids\":[\"10de:2330\",\"10de:1db1\"]},"
	"\"open\":{\"supported_pci_ids\":[\"10de:2330\"]}}," NAMES ",\"packages\":[" PROP "," OPEN
	"]},"
	"{\"version\":\"570.124.06\",\"supported_pci_ids\":[\"10de:2330\",\"10de:1db1\"],"
	"\"module_types\":{\"proprietary\":{\"supported_pci_ids\":[\"10de:2330\",\"10de:1db1\"]},"
	"\"open\":{\"supported_pci_ids\":[\"10de:2330\",\"10de:2901\"]}}," NAMES
	",\"packages\":[" PROP "," OPEN "]},"
	"{\"version\":\"550.1.1\",\"supported_pci_ids\":[\"10de:2330\"],\"module_types\":{\"open\":{\"supported_pci_ids\":"
	"[\"10de:2330\",\"10de:2901\"]}},\"packages\":[" PROP "]},"
	"{\"version\":\"580.1.1\",\"packages\":[" OPEN "]},"
	"{\"version\":\"520.1.1\",\"supported_pci_ids\":[\"10de:2330\"],\"packages\":[" PKG(
		SHA_U, "") "]}"
			   "]}";

struct fixture {
	struct repo_index *idx;
	struct host host;
	struct gpu gpus[3];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct err e;

	err_clear(&e);
	if (repo_index_parse(both_json, strlen(both_json), &f->idx, &e) < 0)
		fail_msg("parse: %s", e.msg);
	f->host.os_id = (char *)"cos";
	snprintf(f->host.kernel, sizeof(f->host.kernel), K);
	snprintf(f->host.arch, sizeof(f->host.arch), "x86_64");
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

static const struct repo_driver *driver(struct fixture *f, const char *version)
{
	for (size_t i = 0; i < f->idx->n_drivers; i++) {
		if (strcmp(f->idx->drivers[i].version, version) == 0)
			return &f->idx->drivers[i];
	}
	fail_msg("no driver %s", version);
	return NULL;
}

/* The host's GPUs, as PCI ids. */
static void gpus(struct fixture *f, size_t n, const uint32_t *ids)
{
	for (size_t i = 0; i < n; i++) {
		snprintf(f->gpus[i].bdf, sizeof(f->gpus[i].bdf), "0000:00:0%zu.0", i + 4);
		f->gpus[i].vendor = (uint16_t)(ids[i] >> 16);
		f->gpus[i].device = (uint16_t)(ids[i] & 0xffff);
	}
	f->host.n_gpus = n;
}

#define AVAIL_BOTH (1u << REPO_MT_PROPRIETARY | 1u << REPO_MT_OPEN)

/* The question for driver VERSION of F, asked for N GPUS under POLICY with AVAIL. */
static struct repo_kmt_request request(struct fixture *f, const char *version,
				       enum repo_kmt_policy policy, unsigned avail, size_t n,
				       const uint32_t *ids)
{
	return (struct repo_kmt_request){.driver = driver(f, version),
					 .gpus = ids,
					 .n_gpus = n,
					 .policy = policy,
					 .avail = avail,
					 .kernel = K};
}

static void expect_type(struct fixture *f, const char *version, enum repo_kmt_policy policy,
			unsigned avail, size_t n, const uint32_t *ids, enum repo_module_type want,
			const char *excluded)
{
	struct repo_kmt_request rq = request(f, version, policy, avail, n, ids);
	struct repo_kmt_decision d;
	enum repo_module_type other = want == REPO_MT_OPEN ? REPO_MT_PROPRIETARY : REPO_MT_OPEN;

	repo_kmt_decide(&rq, &d);
	if (!d.ok)
		fail_msg("%s: refused: %s", version, d.reason);
	assert_int_equal(d.type, want);
	if (excluded && strcmp(d.excluded[other], excluded) != 0)
		fail_msg("%s: the %s flavour excluded with '%s', not '%s'", version,
			 repo_module_type_name(other), d.excluded[other], excluded);
	assert_string_equal(d.excluded[want], "");
}

static void expect_refusal(struct fixture *f, const char *version, enum repo_kmt_policy policy,
			   unsigned avail, size_t n, const uint32_t *ids, const char *reason)
{
	struct repo_kmt_request rq = request(f, version, policy, avail, n, ids);
	struct repo_kmt_decision d;

	repo_kmt_decide(&rq, &d);
	if (d.ok)
		fail_msg("%s: took %s", version, repo_module_type_name(d.type));
	assert_string_equal(d.reason, reason);
}

static const uint32_t hopper[] = {HOPPER}, volta[] = {VOLTA}, blackwell[] = {BLACKWELL},
		      hopper_volta[] = {HOPPER, VOLTA}, blackwell_volta[] = {BLACKWELL, VOLTA},
		      hopper_blackwell[] = {HOPPER, BLACKWELL};

static void test_hopper(void **state)
{
	struct fixture *f = *state;

	/* Both flavours support it: the branch decides. */
	expect_type(
		f, "535.261.03", REPO_KMT_AUTO, AVAIL_BOTH, 1, hopper, REPO_MT_PROPRIETARY,
		"535.261.03 is of branch 535: before 560 NVIDIA installs the proprietary modules where the GPUs support both; --kernel-module-type open takes the open ones");
	expect_type(
		f, "570.124.06", REPO_KMT_AUTO, AVAIL_BOTH, 1, hopper, REPO_MT_OPEN,
		"from branch 560 NVIDIA installs the open modules where the GPUs support them (570.124.06 is of branch 570)");
	/* Asked for: either. */
	expect_type(f, "535.261.03", REPO_KMT_OPEN, AVAIL_BOTH, 1, hopper, REPO_MT_OPEN,
		    "--kernel-module-type open asks for the open modules");
	expect_type(f, "570.124.06", REPO_KMT_PROPRIETARY, AVAIL_BOTH, 1, hopper,
		    REPO_MT_PROPRIETARY,
		    "--kernel-module-type proprietary asks for the proprietary modules");
	/* The preferred flavour missing for the kernel: the other. */
	expect_type(f, "570.124.06", REPO_KMT_AUTO, 1u << REPO_MT_PROPRIETARY, 1, hopper,
		    REPO_MT_PROPRIETARY, "");
}

static void test_volta(void **state)
{
	struct fixture *f = *state;

	expect_type(
		f, "535.261.03", REPO_KMT_AUTO, AVAIL_BOTH, 1, volta, REPO_MT_PROPRIETARY,
		"GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of 535.261.03");
	expect_type(
		f, "570.124.06", REPO_KMT_AUTO, AVAIL_BOTH, 1, volta, REPO_MT_PROPRIETARY,
		"GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of 570.124.06");
	expect_refusal(
		f, "535.261.03", REPO_KMT_OPEN, AVAIL_BOTH, 1, volta,
		"GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of 535.261.03");
	expect_refusal(
		f, "570.124.06", REPO_KMT_AUTO, 1u << REPO_MT_OPEN, 1, volta,
		"GPU 10de:1db1 (Tesla V100-SXM2-16GB) needs the proprietary modules; this repository has only open modules of 570.124.06 for kernel " K);
}

static void test_blackwell(void **state)
{
	struct fixture *f = *state;

	expect_refusal(f, "535.261.03", REPO_KMT_AUTO, AVAIL_BOTH, 1, blackwell,
		       "GPU 10de:2901 (NVIDIA B200) is not supported by 535.261.03 in any flavour");
	expect_type(
		f, "570.124.06", REPO_KMT_AUTO, AVAIL_BOTH, 1, blackwell, REPO_MT_OPEN,
		"GPU 10de:2901 (NVIDIA B200) is not supported by the proprietary modules of 570.124.06");
	expect_refusal(
		f, "570.124.06", REPO_KMT_AUTO, 1u << REPO_MT_PROPRIETARY, 1, blackwell,
		"GPU 10de:2901 (NVIDIA B200) needs the open modules; this repository has only proprietary modules of 570.124.06 for kernel " K);
	expect_refusal(
		f, "570.124.06", REPO_KMT_PROPRIETARY, AVAIL_BOTH, 1, blackwell,
		"GPU 10de:2901 (NVIDIA B200) is not supported by the proprietary modules of 570.124.06");
	expect_refusal(
		f, "570.124.06", REPO_KMT_OPEN, 1u << REPO_MT_PROPRIETARY, 1, blackwell,
		"--kernel-module-type open: this repository has no open modules of 570.124.06 for kernel " K
		" (only proprietary)");
}

static void test_mixed(void **state)
{
	struct fixture *f = *state;

	/* Hopper and Volta: Volta decides, before and after the open default. */
	expect_type(
		f, "535.261.03", REPO_KMT_AUTO, AVAIL_BOTH, 2, hopper_volta, REPO_MT_PROPRIETARY,
		"GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of 535.261.03");
	expect_type(
		f, "570.124.06", REPO_KMT_AUTO, AVAIL_BOTH, 2, hopper_volta, REPO_MT_PROPRIETARY,
		"GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of 570.124.06");
	expect_refusal(
		f, "570.124.06", REPO_KMT_OPEN, AVAIL_BOTH, 2, hopper_volta,
		"GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of 570.124.06");
	/* Blackwell and Volta: each needs the other flavour. */
	expect_refusal(
		f, "570.124.06", REPO_KMT_AUTO, AVAIL_BOTH, 2, blackwell_volta,
		"GPU 10de:2901 (NVIDIA B200) needs the open modules and GPU 10de:1db1 (Tesla V100-SXM2-16GB) the proprietary ones: no flavour of 570.124.06 drives both");
	/* Hopper and Blackwell: Blackwell decides. */
	expect_type(
		f, "570.124.06", REPO_KMT_AUTO, AVAIL_BOTH, 2, hopper_blackwell, REPO_MT_OPEN,
		"GPU 10de:2901 (NVIDIA B200) is not supported by the proprietary modules of 570.124.06");
	expect_refusal(f, "535.261.03", REPO_KMT_AUTO, AVAIL_BOTH, 2, hopper_blackwell,
		       "GPU 10de:2901 (NVIDIA B200) is not supported by 535.261.03 in any flavour");
}

/* No list for the open modules (580.1.1): auto never takes them on no evidence. */
static void test_unknown_open_list(void **state)
{
	struct fixture *f = *state;

	expect_refusal(
		f, "580.1.1", REPO_KMT_AUTO, 1u << REPO_MT_OPEN, 1, hopper,
		"this repository has only open modules of 580.1.1 for kernel " K
		", and its open modules do not list the GPUs they support; --kernel-module-type open takes them anyway");
	expect_type(f, "580.1.1", REPO_KMT_OPEN, 1u << REPO_MT_OPEN, 1, hopper, REPO_MT_OPEN, "");
	expect_type(
		f, "580.1.1", REPO_KMT_AUTO, AVAIL_BOTH, 1, hopper, REPO_MT_PROPRIETARY,
		"its open modules do not list the GPUs they support (module_types.open); --kernel-module-type open takes them");
	/* Asked for, and not there for the kernel. */
	expect_refusal(
		f, "580.1.1", REPO_KMT_OPEN, 1u << REPO_MT_PROPRIETARY, 1, hopper,
		"--kernel-module-type open: this repository has no open modules of 580.1.1 for kernel " K
		" (only proprietary)");
}

/* Through the index: the package of the flavour decided, and the older fields' judge. */
static void test_judge(void **state)
{
	struct fixture *f = *state;
	struct repo_choice c;
	struct repo_judgement j;
	struct err e;

	gpus(f, 1, blackwell);
	err_clear(&e);
	assert_int_equal(repo_select(f->idx, &f->host, "570", REPO_KMT_AUTO, &c, &e), 0);
	assert_string_equal(c.pkg->sha256, SHA_O);
	assert_int_equal(c.pkg->module_type, REPO_MT_OPEN);
	/* 550.1.1 has only the proprietary package for the kernel. */
	assert_int_equal(repo_select(f->idx, &f->host, "550", REPO_KMT_AUTO, &c, &e), -1);
	assert_int_equal(e.code, EXIT_NO_MATCH);
	assert_string_equal(
		e.msg,
		"GPU 10de:2901 needs the open modules; this repository has only proprietary modules of 550.1.1 for kernel " K);
	gpus(f, 2, hopper_volta);
	assert_int_equal(repo_select(f->idx, &f->host, "570", REPO_KMT_AUTO, &c, &e), 0);
	assert_string_equal(c.pkg->sha256, SHA_P);
	/* Explicit flavours refuse packages that do not state theirs; auto takes them. */
	err_clear(&e);
	assert_int_equal(repo_select(f->idx, &f->host, "520", REPO_KMT_OPEN, &c, &e), -1);
	assert_string_equal(e.msg,
			    "--kernel-module-type open: the packages of 520.1.1 for kernel " K
			    " do not say their module type (packages[].module_type)");
	gpus(f, 1, hopper);
	assert_int_equal(repo_select(f->idx, &f->host, "520", REPO_KMT_AUTO, &c, &e), 0);
	assert_string_equal(c.pkg->sha256, SHA_U);
	/* Without a flavour, "supported_pci_ids" judges as before. */
	gpus(f, 1, volta);
	assert_int_equal(repo_driver_judge(driver(f, "520.1.1"), &f->host, REPO_KMT_AUTO, &j),
			 REPO_GPU_UNSUPPORTED);
	/* latest under a policy: the newest driver whose flavour suits. */
	gpus(f, 1, hopper);
	assert_ptr_equal(repo_resolve_tag(f->idx, &f->host, REPO_KMT_PROPRIETARY, "latest"),
			 driver(f, "570.124.06"));
	assert_ptr_equal(repo_resolve_tag(f->idx, &f->host, REPO_KMT_OPEN, "latest"),
			 driver(f, "580.1.1"));
	assert_string_equal(repo_gpu_name(driver(f, "570.124.06"), VOLTA), "Tesla V100-SXM2-16GB");
	assert_null(repo_gpu_name(driver(f, "580.1.1"), VOLTA));
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

#define DRV(fields, pkgs)                                                                          \
	"{\"format\":1,\"drivers\":[{\"version\":\"570.1\"" fields ",\"packages\":[" pkgs "]}]}"

static void test_parse_errors(void **state)
{
	(void)state;
	expect_parse_error(DRV("", PKG(SHA_P, ",\"module_type\":\"Open\"")),
			   "packages[0]: \"module_type\" must be \"open\" or \"proprietary\"");
	expect_parse_error(DRV("", PKG(SHA_P, ",\"module_type\":1")),
			   "\"module_type\" must be \"open\" or \"proprietary\"");
	expect_parse_error(DRV(",\"module_types\":[]", PROP), "\"module_types\" must be an object");
	expect_parse_error(
		DRV(",\"module_types\":{\"opne\":{}}", PROP),
		"\"module_types\" has \"opne\"; a flavour is \"open\" or \"proprietary\"");
	expect_parse_error(DRV(",\"module_types\":{\"open\":[]}", PROP),
			   "\"module_types\".\"open\" must be an object");
	expect_parse_error(
		DRV(",\"module_types\":{\"open\":{\"supported_pci_ids\":\"10de:2330\"}}", PROP),
		"\"module_types\".\"open\".\"supported_pci_ids\" must be an array");
	expect_parse_error(
		DRV(",\"module_types\":{\"open\":{\"supported_pci_ids\":[\"10de2330\"]}}", PROP),
		"\"module_types\".\"open\".\"supported_pci_ids\"[0] must look like \"10de:2330\"");
	expect_parse_error(DRV(",\"gpu_names\":{\"V100\":\"x\"}", PROP),
			   "\"gpu_names\" must map ids like \"10de:1db1\"");
	expect_parse_error(DRV(",\"gpu_names\":{\"10de:1db1\":\"\"}", PROP),
			   "\"gpu_names\" must map ids");
	expect_parse_error(DRV(",\"gpu_names\":{\"10de:1db1\":\"a\\nb\"}", PROP),
			   "\"gpu_names\" must map ids");
	expect_parse_error(DRV(",\"gpu_names\":[]", PROP), "\"gpu_names\" must be an object");
	/* The layout older installers rely on. */
	expect_parse_error(
		DRV("", OPEN "," PROP),
		"packages[0] (open) would be taken by older installers before packages[1] (proprietary)");
	expect_parse_error(
		DRV("", PROP "," PKG(SHA_O, ",\"module_type\":\"open\",\"os\":\"cos\"")),
		"packages[1] (open) would be taken by older installers before packages[0] (proprietary)");
	expect_parse_error(
		DRV(",\"supported_pci_ids\":[\"10de:2330\"],\"module_types\":{\"proprietary\":{"
		    "\"supported_pci_ids\":[\"10de:2330\",\"10de:1db1\"]}}",
		    PROP "," OPEN),
		"\"supported_pci_ids\" differs from \"module_types\".\"proprietary\"");
}

static void test_parse_ok(void **state)
{
	struct repo_index *idx = NULL;
	struct err e;
	/* An open package for another OS than the proprietary one is no variant of it. */
	static const char ok[] =
		DRV(",\"supported_pci_ids\":[\"10de:1db1\",\"10DE:2330\"],\"module_types\":{"
		    "\"proprietary\":{\"supported_pci_ids\":[\"10de:2330\",\"10de:1db1\"],\"x\":1},"
		    "\"open\":{}}",
		    PKG(SHA_P, ",\"module_type\":\"proprietary\",\"os\":\"cos\"") "," PKG(
			    SHA_O, ",\"module_type\":\"open\",\"os\":\"ubuntu\""));

	(void)state;
	err_clear(&e);
	if (repo_index_parse(ok, strlen(ok), &idx, &e) < 0)
		fail_msg("%s", e.msg);
	assert_true(idx->drivers[0].module_types[REPO_MT_PROPRIETARY].known);
	assert_int_equal(idx->drivers[0].module_types[REPO_MT_PROPRIETARY].n, 2);
	assert_false(idx->drivers[0].module_types[REPO_MT_OPEN].known);
	assert_int_equal(idx->drivers[0].pkgs[1].module_type, REPO_MT_OPEN);
	repo_index_free(idx);
}

static void test_policy_parse(void **state)
{
	enum repo_kmt_policy p;

	(void)state;
	assert_int_equal(repo_kmt_policy_parse("open", &p), 0);
	assert_int_equal(p, REPO_KMT_OPEN);
	assert_int_equal(repo_kmt_policy_parse("proprietary", &p), 0);
	assert_int_equal(p, REPO_KMT_PROPRIETARY);
	assert_int_equal(repo_kmt_policy_parse("auto", &p), 0);
	assert_int_equal(p, REPO_KMT_AUTO);
	assert_int_equal(repo_kmt_policy_parse("Open", &p), -1);
	assert_int_equal(repo_kmt_policy_parse("", &p), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hopper, setup, teardown),
		cmocka_unit_test_setup_teardown(test_volta, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blackwell, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mixed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_open_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_judge, setup, teardown),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_policy_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
