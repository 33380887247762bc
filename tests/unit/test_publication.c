// SPDX-License-Identifier: Apache-2.0
/* What the node publishes: labels (GFD's names) and the CDI spec. */
#include "cmocka_prelude.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "expose/cdi.h"
#include "expose/nodeinfo.h"

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p += n) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	}
	return false;
}

static void test_labels(void **state)
{
	struct nvml_report r = {.driver_version = "550.90.07", .cuda_version = 12040, .n_gpus = 8};
	char *l;

	(void)state;
	snprintf(r.gpus[0].name, sizeof(r.gpus[0].name), "NVIDIA H100 80GB HBM3");
	r.gpus[0].memory_mib = 81559;
	r.gpus[0].cc_major = 9;
	l = labels_render(&(struct driver_id){.version = "550.90.07", .module_type = "open"}, &r,
			  8);
	assert_true(has_line(l, "nvidia.com/gpu.driver-installer.kernel-module-type=open"));
	assert_true(has_line(l, "nvidia.com/gpu.present=true"));
	assert_true(has_line(l, "nvidia.com/gpu.count=8"));
	assert_true(has_line(l, "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"));
	assert_true(has_line(l, "nvidia.com/gpu.memory=81559"));
	assert_true(has_line(l, "nvidia.com/gpu.compute.major=9"));
	assert_true(has_line(l, "nvidia.com/gpu.compute.minor=0"));
	assert_true(has_line(l, "nvidia.com/cuda.driver-version.full=550.90.07"));
	assert_true(has_line(l, "nvidia.com/cuda.driver-version.major=550"));
	assert_true(has_line(l, "nvidia.com/cuda.driver-version.minor=90"));
	assert_true(has_line(l, "nvidia.com/cuda.driver-version.revision=07"));
	assert_true(has_line(l, "nvidia.com/cuda.runtime-version.full=12.4"));
	assert_true(has_line(l, "nvidia.com/cuda.runtime-version.major=12"));
	assert_true(has_line(l, "nvidia.com/cuda.runtime-version.minor=4"));
	free(l);

	/* Product names against GFD's rule: test_labels.c. */

	/* Without NVML: what PCI and the version tell. */
	l = labels_render(&(struct driver_id){.version = "535.261.03"}, NULL, 0);
	assert_true(has_line(l, "nvidia.com/gpu.present=false"));
	assert_true(has_line(l, "nvidia.com/gpu.count=0"));
	assert_null(strstr(l, "gpu.product"));
	assert_null(strstr(l, "runtime-version"));
	/* The flavour not known: no label rather than a guess. */
	assert_null(strstr(l, "kernel-module-type"));
	free(l);
}

static void test_cdi(void **state)
{
	struct cdi_input in = {.install_dir = "/home/kubernetes/bin/nvidia",
			       .container_dir = "/usr/local/nvidia",
			       .n_gpus = 2,
			       .shared_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"},
			       .n_shared = 2};
	json_object *spec, *devices, *v;
	char *json;

	(void)state;
	in.gpus[0] = (struct cdi_gpu){.index = 0, .minor = 0, .uuid = "GPU-aaaa"};
	in.gpus[1] = (struct cdi_gpu){.index = 1, .minor = 3, .uuid = ""};
	json = cdi_render(&in);
	spec = json_tokener_parse(json);
	assert_non_null(spec);
	assert_true(json_object_object_get_ex(spec, "kind", &v));
	assert_string_equal(json_object_get_string(v), "nvidia.com/gpu");
	assert_true(json_object_object_get_ex(spec, "devices", &devices));
	/* 0, GPU-aaaa, 1 (no UUID known), all. */
	assert_int_equal(json_object_array_length(devices), 4);
	assert_string_equal(json_object_get_string(json_object_object_get(
				    json_object_array_get_idx(devices, 2), "name")),
			    "1");
	assert_non_null(strstr(json, "\"path\": \"/dev/nvidia3\""));
	assert_non_null(strstr(json, "\"hostPath\": \"/home/kubernetes/bin/nvidia/lib64\""));
	assert_non_null(strstr(json, "\"containerPath\": \"/usr/local/nvidia/bin\""));
	json_object_put(spec);
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_cdi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
