// SPDX-License-Identifier: Apache-2.0
/*
 * installer/expose/partition.h: the layouts --mig-layout takes (and GKE's file behind
 * "gke"), go-nvlib's profile names from NVML's numbers, and the CDI devices of MIG.
 */
#include "cmocka_prelude.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "expose/cdi.h"
#include "expose/partition.h"

static void name(unsigned ci, unsigned gi, uint64_t mem_mib, uint64_t total_mib, const char *suffix,
		 const char *want)
{
	char buf[MIG_SIZE_MAX];

	partition_profile_name(&(struct part_shape){.ci_slices = ci,
						    .gi_slices = gi,
						    .mem_mib = mem_mib,
						    .total_bytes = total_mib << 20,
						    .suffix = suffix},
			       buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_profile_names(void **state)
{
	(void)state;
	/*
	 * H100 80GB HBM3 (81559 MiB): `nvidia-smi mig -lgip` sizes 9.75, 19.62, 39.50, 79.25 GiB.
	 */
	name(1, 1, 9984, 81559, "", "1g.10gb");
	name(1, 1, 9984, 81559, "+me", "1g.10gb+me");
	name(1, 1, 20096, 81559, "", "1g.20gb");
	name(2, 2, 20096, 81559, "", "2g.20gb");
	name(3, 3, 40448, 81559, "", "3g.40gb");
	name(7, 7, 81152, 81559, "", "7g.80gb");
	/* A compute instance smaller than its GPU instance. */
	name(1, 2, 20096, 81559, "", "1c.2g.20gb");
	/* H200 (143771 MiB, 141 GiB rounded up): an eighth of it is 17.6 GB, named 18. */
	name(1, 1, 16384, 143771, "", "1g.18gb");
	name(3, 3, 65536, 143771, "", "3g.71gb");
	name(7, 7, 130560, 143771, "", "7g.141gb");
	/* A100 40GB (40536 MiB). */
	name(1, 1, 4864, 40536, "", "1g.5gb");
	name(4, 4, 19968, 40536, "", "4g.20gb");
	/* No total known: no memory to speak of, and no division by zero. */
	name(1, 1, 4864, 0, "", "1g.0gb");
}

static void layout(const char *spec, int want_rc, enum part_kind kind, const char *profile)
{
	struct part_layout l;
	struct err e;
	char back[64];

	err_clear(&e);
	assert_int_equal(part_layout_parse(spec, -1, &l, &e), want_rc);
	if (want_rc < 0) {
		assert_int_equal(e.code, EXIT_USAGE);
		return;
	}
	assert_int_equal(l.kind, kind);
	assert_string_equal(l.profile, profile);
	part_layout_name(&l, back, sizeof(back));
	if (spec && *spec)
		assert_string_equal(back, spec);
}

static void test_layouts(void **state)
{
	(void)state;
	layout("none", 0, PART_KEEP, "");
	layout("", 0, PART_KEEP, "");
	layout("all-disabled", 0, PART_DISABLED, "");
	layout("all-enabled", 0, PART_ENABLED, "");
	layout("all-1g.10gb", 0, PART_PROFILE, "1g.10gb");
	layout("all-1g.10gb+me", 0, PART_PROFILE, "1g.10gb+me");
	layout("all-1c.2g.20gb", 0, PART_PROFILE, "1c.2g.20gb");
	layout("all-7g.141gb", 0, PART_PROFILE, "7g.141gb");
	/* What no GPU has a name for. */
	layout("all-tiny", -1, PART_KEEP, "");
	layout("all-1g", -1, PART_KEEP, "");
	layout("all-1g.10gb;rm", -1, PART_KEEP, "");
	layout("all-1g.10GB", -1, PART_KEEP, "");
	layout("1g.10gb", -1, PART_KEEP, "");
	layout("all-1g.100000000000000000000000000000gb", -1, PART_KEEP, "");
}

/* A layout per GPU: "N=LAYOUT" items, and at most one for the GPUs not named. */
static void test_layouts_per_gpu(void **state)
{
	static const char *const bad[] = {"0=all-1g.10gb,0=all-disabled",
					  "16=all-disabled",
					  "01=all-disabled",
					  "+1=all-disabled",
					  " 1=all-disabled",
					  "all-disabled,all-enabled",
					  "0=gke",
					  ",",
					  "all-disabled,",
					  ",all-disabled",
					  "0=",
					  "=all-disabled",
					  "0=all-1g.10gb,,1=none",
					  "x=all-disabled",
					  "0=all-1g.10gb=x"};
	struct part_layout l;
	struct part_one one;
	struct err e;
	char back[PART_LAYOUT_NAME_MAX];

	(void)state;
	assert_int_equal(part_layout_parse("all-disabled,0=all-1g.10gb,3=all-3g.40gb", -1, &l, &e),
			 0);
	part_layout_name(&l, back, sizeof(back));
	assert_string_equal(back, "all-disabled,0=all-1g.10gb,3=all-3g.40gb");
	one = part_layout_for(&l, 0);
	assert_int_equal(one.kind, PART_PROFILE);
	assert_string_equal(one.profile, "1g.10gb");
	assert_int_equal(part_layout_for(&l, 1).kind, PART_DISABLED);
	assert_string_equal(part_layout_for(&l, 3).profile, "3g.40gb");
	assert_int_equal(part_layout_for(&l, 99).kind, PART_DISABLED);
	assert_false(part_layout_keeps(&l));
	/* Items in any order; the GPUs not named kept as they are. */
	assert_int_equal(part_layout_parse("1=all-enabled,0=none", -1, &l, &e), 0);
	part_layout_name(&l, back, sizeof(back));
	assert_string_equal(back, "0=none,1=all-enabled");
	assert_int_equal(part_layout_for(&l, 2).kind, PART_KEEP);
	assert_false(part_layout_keeps(&l));
	assert_int_equal(part_layout_parse("0=none,none", -1, &l, &e), 0);
	assert_true(part_layout_keeps(&l));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err_clear(&e);
		if (part_layout_parse(bad[i], -1, &l, &e) != -1)
			fail_msg("'%s' was taken", bad[i]);
		assert_int_equal(e.code, EXIT_USAGE);
	}
}

/* "gke": the pool's file under the host root; none, or no partition size: keep. */
static void test_gke_layout(void **state)
{
	char dir[] = "/tmp/test_partition.XXXXXX", path[256];
	struct part_layout l;
	struct err e;
	int root;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	root = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(root >= 0);
	assert_int_equal(part_layout_parse("gke", root, &l, &e), 0);
	assert_int_equal(l.kind, PART_KEEP);
	snprintf(path, sizeof(path), "%s/etc", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/nvidia", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/nvidia/gpu_config.json", dir);
	f = fopen(path, "w");
	fputs("{\"gpupartitionsize\": \"2g.35gb\"}", f);
	fclose(f);
	assert_int_equal(part_layout_parse("gke", root, &l, &e), 0);
	assert_int_equal(l.kind, PART_PROFILE);
	assert_string_equal(l.profile, "2g.35gb");
	assert_string_equal(l.source, MIG_GKE_CONFIG);
	f = fopen(path, "w");
	fputs("{\"GPUSharingConfig\": {\"GPUSharingStrategy\": \"time-sharing\", "
	      "\"MaxSharedClientsPerGPU\": 2}}",
	      f);
	fclose(f);
	assert_int_equal(part_layout_parse("gke", root, &l, &e), 0);
	assert_int_equal(l.kind, PART_KEEP);
	/* A file GKE's plugin would refuse is refused, naming it. */
	f = fopen(path, "w");
	fputs("{\"GPUPartitionSize\": 7}", f);
	fclose(f);
	assert_int_equal(part_layout_parse("gke", root, &l, &e), -1);
	assert_non_null(strstr(e.msg, "/etc/nvidia/gpu_config.json"));
	unlink(path);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
	close(root);
}

/* MIG devices in the CDI spec: by GPU:INDEX and UUID, with their instances' nodes. */
static void test_cdi_migs(void **state)
{
	struct cdi_input in = {.install_dir = "/home/kubernetes/bin/nvidia",
			       .container_dir = "/usr/local/nvidia",
			       .n_gpus = 1,
			       .n_migs = 2};
	json_object *spec, *devices, *all, *nodes;
	const char *paths[6];
	char *json;

	(void)state;
	in.gpus[0] = (struct cdi_gpu){.index = 0, .minor = 0, .uuid = "GPU-a"};
	in.migs[0] = (struct cdi_mig){.gpu = 1,
				      .index = 0,
				      .gpu_minor = 1,
				      .gi_cap = 147,
				      .ci_cap = 148,
				      .uuid = "MIG-b"};
	in.migs[1] = (struct cdi_mig){
		.gpu = 1, .index = 1, .gpu_minor = 1, .gi_cap = 156, .ci_cap = 157, .uuid = ""};
	json = cdi_render(&in);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"name\": \"1:0\""));
	assert_non_null(strstr(json, "\"name\": \"MIG-b\""));
	assert_non_null(strstr(json, "\"name\": \"1:1\""));
	assert_non_null(strstr(json, "\"/dev/nvidia-caps/nvidia-cap157\""));
	/* A name with ':' needs no newer cdiVersion than a GPU's. */
	assert_non_null(strstr(json, "\"cdiVersion\": \"0.5.0\""));
	/* "all": nvidia0, then nvidia1 once with the four capabilities. */
	spec = json_tokener_parse(json);
	assert_true(json_object_object_get_ex(spec, "devices", &devices));
	all = json_object_array_get_idx(devices, json_object_array_length(devices) - 1);
	assert_string_equal(json_object_get_string(json_object_object_get(all, "name")), "all");
	nodes = json_object_object_get(json_object_object_get(all, "containerEdits"),
				       "deviceNodes");
	assert_int_equal(json_object_array_length(nodes), 6);
	for (size_t i = 0; i < 6; i++)
		paths[i] = json_object_get_string(
			json_object_object_get(json_object_array_get_idx(nodes, i), "path"));
	assert_string_equal(paths[0], "/dev/nvidia0");
	assert_string_equal(paths[1], "/dev/nvidia1");
	assert_string_equal(paths[5], "/dev/nvidia-caps/nvidia-cap157");
	json_object_put(spec);
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_names),	cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_layouts_per_gpu), cmocka_unit_test(test_gke_layout),
		cmocka_unit_test(test_cdi_migs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
