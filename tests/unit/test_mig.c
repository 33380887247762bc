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
		cmocka_unit_test(test_sizes_by_gpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
