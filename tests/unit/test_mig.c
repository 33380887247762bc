// SPDX-License-Identifier: Apache-2.0
/*
 * installer/expose/mig.h: GKE's gpu_config.json as its device plugin reads it, and the MIG
 * sizes each GPU model has (NVIDIA's MIG user guide, as GKE's partitioner has them, and
 * the +me profiles).
 */
#include "cmocka_prelude.h"

#include <string.h>

#include "expose/mig.h"

static int parse(const char *json, struct mig_request *r, struct err *e)
{
	err_clear(e);
	return mig_parse_gke_config(json, strlen(json), r, e);
}

static void test_partition_size_and_sharing(void **state)
{
	struct mig_request r;
	struct err e;

	(void)state;
	assert_int_equal(parse("{\"GPUPartitionSize\": \"1g.10gb\"}", &r, &e), 0);
	assert_string_equal(r.partition_size, "1g.10gb");
	assert_int_equal(r.sharing, MIG_SHARING_NONE);
	/* Go's encoding/json: keys in any case, unknown keys ignored. */
	assert_int_equal(parse("{\"gpupartitionsize\": \"2g.20gb\", \"HealthCriticalXid\": [48], "
			       "\"gpusharingconfig\": {\"gpusharingstrategy\": \"mps\", "
			       "\"maxsharedclientspergpu\": 8}}",
			       &r, &e),
			 0);
	assert_string_equal(r.partition_size, "2g.20gb");
	assert_int_equal(r.sharing, MIG_SHARING_MPS);
	assert_int_equal(r.max_shared_clients, 8);
	assert_string_equal(mig_sharing_name(r.sharing), "mps");
	/* The deprecated field means time-sharing, over the newer one. */
	assert_int_equal(parse("{\"MaxTimeSharedClientsPerGPU\": 3}", &r, &e), 0);
	assert_int_equal(r.sharing, MIG_SHARING_TIME);
	assert_int_equal(r.max_shared_clients, 3);
	assert_int_equal(parse("{}", &r, &e), 0);
	assert_string_equal(r.partition_size, "");
	assert_int_equal(r.sharing, MIG_SHARING_NONE);
}

static void test_refused(void **state)
{
	static const struct {
		const char *json, *says;
	} bad[] = {
		{"[]", "is not a JSON object"},
		{"{\"GPUPartitionSize\": 1}", "GPUPartitionSize is not a string"},
		{"{\"GPUPartitionSize\": \"1g.10gb1g.10gb1g.10gb1g.10gb1g.10gb\"}", "too long"},
		{"{\"GPUSharingConfig\": []}", "GPUSharingConfig is not an object"},
		{"{\"GPUSharingConfig\": {\"GPUSharingStrategy\": 1}}", "is not a string"},
		{"{\"GPUSharingConfig\": {\"GPUSharingStrategy\": \"mps\"}}",
		 "needs MaxSharedClientsPerGPU between 1 and 1024"},
		{"{\"GPUSharingConfig\": {\"GPUSharingStrategy\": \"mps\", \"MaxSharedClientsPerGPU\": \"2\"}}",
		 "MaxSharedClientsPerGPU is not an integer"},
		{"{\"GPUSharingConfig\": {\"GPUSharingStrategy\": \"vgpu\", \"MaxSharedClientsPerGPU\": 2}}",
		 "unknown GPUSharingStrategy 'vgpu'"},
		{"{\"GPUSharingConfig\": {\"MaxSharedClientsPerGPU\": 2}}",
		 "MaxSharedClientsPerGPU without a GPUSharingStrategy"},
		{"{\"MaxTimeSharedClientsPerGPU\": 1.5}", "is not an integer"},
		{"{\"MaxTimeSharedClientsPerGPU\": 1e1}", "is not an integer"},
		{"{\"MaxTimeSharedClientsPerGPU\": 99999999999999999999}", "is not an integer"},
		/* What Go's scanner refuses, though json-c takes it: the file is no JSON. */
		{"{'GPUPartitionSize': '1g.10gb'}", "is not a JSON object"},
		{"{\"GPUPartitionSize\": \"1g.10gb\",}", "is not a JSON object"},
		{"{/* c */ \"GPUPartitionSize\": \"1g.10gb\"}", "is not a JSON object"},
		{"{\"x\": NaN}", "is not a JSON object"},
		{"{\"x\": 1.}", "is not a JSON object"},
		{"{\"x\": 01}", "is not a JSON object"},
		{"{\"x\": \"a\tb\"}", "is not a JSON object"},
		{"{\"x\": \"\\x\"}", "is not a JSON object"},
		{"{} {}", "is not a JSON object"},
		{"{\"x\": [1, {\"y\": tru}]}", "is not a JSON object"},
	};
	struct mig_request r;
	struct err e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(parse(bad[i].json, &r, &e), -1);
		if (!strstr(e.msg, bad[i].says))
			fail_msg("%s: got '%s'", bad[i].json, e.msg);
	}
	/* A NUL inside the file is not JSON. */
	err_clear(&e);
	assert_int_equal(mig_parse_gke_config("{}\0{}", 5, &r, &e), -1);
	/* 64 brackets open inside the file's object are read, 65 are refused; where they are
	 * (an unknown member, or GPUSharingConfig's) does not matter. */
	for (int k = 0; k < 2; k++) {
		for (size_t depth = 64; depth <= 65; depth++) {
			char text[256];
			size_t n = (size_t)snprintf(text, sizeof(text), "%s",
						    k ? "{\"GPUSharingConfig\": {\"x\": "
						      : "{\"x\": ");
			size_t open = k ? depth - 1 : depth;

			memset(text + n, '[', open);
			memset(text + n + open, ']', open);
			snprintf(text + n + 2 * open, sizeof(text) - n - 2 * open, "%s",
				 k ? "}}" : "}");
			if ((parse(text, &r, &e) == 0) != (depth == 64))
				fail_msg("%zu deep: %s", depth, depth == 64 ? e.msg : "read");
		}
	}
}

/*
 * Two keys for one field: GKE's plugin decodes the file with Go's encoding/json
 * (src/encoding/json/decode.go, decodeState.object): each member in the order of the text
 * goes to the field its key names (fields.byExactName, else byFoldedName[foldName(key)]),
 * so the last one wins; null changes nothing (decodeState.literalStore); a nested object
 * is decoded into the struct that is there, field by field.
 */
static void test_last_key_wins(void **state)
{
	static const struct {
		const char *json, *size;
	} sizes[] = {
		{"{\"GPUPartitionSize\": \"1g.10gb\", \"gpuPartitionSize\": \"2g.20gb\"}",
		 "2g.20gb"},
		{"{\"gpuPartitionSize\": \"2g.20gb\", \"GPUPartitionSize\": \"1g.10gb\"}",
		 "1g.10gb"},
		/* The same spelling twice around another: json-c keeps one value per key at the
		 * first one's place; the text's order decides. */
		{"{\"GPUPartitionSize\": \"1g.10gb\", \"gpupartitionsize\": \"2g.20gb\", "
		 "\"GPUPartitionSize\": \"3g.40gb\"}",
		 "3g.40gb"},
		{"{\"GPUPartitionSize\": \"1g.10gb\", \"gpuPartitionSize\": null}", "1g.10gb"},
		{"{\"GPUPartitionSize\": null}", ""},
		/* Go folds U+017F (long s) to S (fold.go): a key GKE's plugin takes. */
		{"{\"GPUPartition\xc5\xbfize\": \"1g.10gb\"}", "1g.10gb"},
		{"{\"GPUPartition\\u017fize\": \"1g.10gb\", \"x\": 1}", "1g.10gb"},
		/* Other look-alikes are not folded: U+0131 (dotless i), U+0130 (dotted I). */
		{"{\"GPUPart\xc4\xb1tionSize\": \"1g.10gb\"}", ""},
		{"{\"GPUPart\xc4\xb0tionSize\": \"1g.10gb\"}", ""},
		{"{\"GPUPartitionSize \": \"1g.10gb\"}", ""},
	};
	struct mig_request r;
	struct err e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		if (parse(sizes[i].json, &r, &e) != 0)
			fail_msg("%s: %s", sizes[i].json, e.msg);
		if (strcmp(r.partition_size, sizes[i].size) != 0)
			fail_msg("%s: got '%s', not '%s'", sizes[i].json, r.partition_size,
				 sizes[i].size);
	}
	/* Sharing: two objects merge, the last of each field; the last strategy. */
	assert_int_equal(parse("{\"GPUSharingConfig\": {\"GPUSharingStrategy\": \"mps\", "
			       "\"MaxSharedClientsPerGPU\": 2}, \"gpusharingconfig\": "
			       "{\"maxsharedclientspergpu\": 4}}",
			       &r, &e),
			 0);
	assert_int_equal(r.sharing, MIG_SHARING_MPS);
	assert_int_equal(r.max_shared_clients, 4);
	assert_int_equal(parse("{\"GPUSharingConfig\": {\"GPUSharingStrategy\": \"time-sharing\", "
			       "\"gpuSharingStrategy\": \"mps\", \"MaxSharedClientsPerGPU\": 2}, "
			       "\"GPUSharingConfig\": null}",
			       &r, &e),
			 0);
	assert_int_equal(r.sharing, MIG_SHARING_MPS);
	assert_int_equal(r.max_shared_clients, 2);
	assert_int_equal(
		parse("{\"MaxTimeSharedClientsPerGPU\": 3, \"maxTimeSharedClientsPerGPU\": 0}", &r,
		      &e),
		0);
	assert_int_equal(r.sharing, MIG_SHARING_NONE);
	/* The last value is judged, not the first: a bad one after a good one is refused. */
	assert_int_equal(
		parse("{\"GPUPartitionSize\": \"1g.10gb\", \"gpuPartitionSize\": 1}", &r, &e), -1);
	assert_non_null(strstr(e.msg, "GPUPartitionSize is not a string"));
}

/* The sizes by PCI id, as GKE's partitioner has them; a size the model lacks names the rest. */
static void test_sizes_by_gpu(void **state)
{
	static const struct {
		uint16_t device;
		const char *size;
		unsigned profile, count;
	} ok[] = {
		{0x20b0, "1g.5gb", 19, 7},     {0x20b2, "7g.80gb", 0, 1},
		{0x2330, "1g.20gb", 15, 4},    {0x2330, "3g.40gb", 9, 2},
		{0x2335, "1g.18gb", 19, 7},    {0x2335, "4g.71gb", 5, 1},
		{0x2901, "2g.45gb", 14, 3},    {0x2941, "7g.186gb", 0, 1},
		{0x2330, "1g.10gb+me", 20, 1}, {0x20b0, "1g.10gb", 15, 4},
	};
	struct mig_request r = {.partition_size = ""};
	const struct mig_size *s;
	struct err e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		snprintf(r.partition_size, sizeof(r.partition_size), "%s", ok[i].size);
		err_clear(&e);
		assert_int_equal(mig_size_for_gpu(&r, 0x10de, ok[i].device, &s, &e), 0);
		assert_non_null(s);
		assert_int_equal(s->profile_id, ok[i].profile);
		assert_int_equal(s->count, ok[i].count);
	}
	snprintf(r.partition_size, sizeof(r.partition_size), "1g.18gb");
	assert_int_equal(mig_size_for_gpu(&r, 0x10de, 0x2330, &s, &e), -1);
	assert_string_equal(
		e.msg, "the H100 80GB (nvidia-h100-80gb) has no MIG partition size 1g.18gb; "
		       "it has 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb");
	assert_null(s);
	err_clear(&e);
	assert_int_equal(mig_size_for_gpu(&r, 0x10de, 0x27b8, &s, &e), -1);
	assert_non_null(strstr(e.msg, "GPU 10de:27b8 has no MIG partition sizes known here"));
	assert_null(mig_model_of(0x1002, 0x2330));
	/* No size asked for: whole GPUs, whatever the model. */
	r.partition_size[0] = '\0';
	assert_int_equal(mig_size_for_gpu(&r, 0x10de, 0x27b8, &s, &e), 0);
	assert_null(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partition_size_and_sharing),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_last_key_wins),
		cmocka_unit_test(test_sizes_by_gpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
