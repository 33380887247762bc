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

static void mig(struct nvml_report *r, unsigned gpu, const char *profile, unsigned slices)
{
	struct part_mig *m = &r->migs[r->n_migs++];

	*m = (struct part_mig){.gpu = gpu,
			       .memory_mib = 9984 * slices,
			       .sms = 16 * slices,
			       .gi_slices = slices,
			       .ci_slices = slices,
			       .copy = slices,
			       .decoders = slices,
			       .jpegs = slices};
	snprintf(m->profile, sizeof(m->profile), "%s", profile);
}

/* MIG's labels: GFD's single strategy when one profile fills every GPU, else mixed. */
static void test_mig_labels(void **state)
{
	struct nvml_report r = {.driver_version = "550.90.07", .cuda_version = 12040, .n_gpus = 2};
	char *l;

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		snprintf(r.gpus[i].name, sizeof(r.gpus[i].name), "NVIDIA H100 80GB HBM3");
		r.gpus[i].memory_mib = 81559;
		r.gpus[i].mig_mode = 1;
	}
	mig(&r, 0, "1g.10gb", 1);
	mig(&r, 0, "1g.10gb", 1);
	mig(&r, 1, "1g.10gb", 1);
	l = labels_render(&(struct driver_id){.version = "550.90.07"}, &r, 2);
	assert_true(has_line(l, "nvidia.com/mig.capable=true"));
	assert_true(has_line(l, "nvidia.com/mig.strategy=single"));
	assert_true(has_line(l, "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"));
	assert_true(has_line(l, "nvidia.com/gpu.count=3"));
	assert_false(has_line(l, "nvidia.com/gpu.count=2"));
	assert_true(has_line(l, "nvidia.com/gpu.memory=9984"));
	assert_false(has_line(l, "nvidia.com/gpu.memory=81559"));
	assert_true(has_line(l, "nvidia.com/gpu.multiprocessors=16"));
	assert_true(has_line(l, "nvidia.com/gpu.engines.decoder=1"));
	free(l);

	/* Two profiles: one set of labels each, the whole GPUs' as they are. */
	mig(&r, 1, "3g.40gb", 3);
	mig(&r, 1, "1g.10gb+me", 1);
	l = labels_render(&(struct driver_id){.version = "550.90.07"}, &r, 2);
	assert_true(has_line(l, "nvidia.com/mig.strategy=mixed"));
	assert_true(has_line(l, "nvidia.com/gpu.count=2"));
	assert_true(has_line(l, "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"));
	assert_true(has_line(l, "nvidia.com/mig-1g.10gb.count=3"));
	assert_true(has_line(l, "nvidia.com/mig-3g.40gb.count=1"));
	assert_true(has_line(l, "nvidia.com/mig-3g.40gb.memory=29952"));
	assert_true(has_line(l, "nvidia.com/mig-3g.40gb.slices.gi=3"));
	assert_true(
		has_line(l, "nvidia.com/mig-3g.40gb.product=NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"));
	/* '+' is no character of a label: GFD writes '.'. */
	assert_true(has_line(
		l, "nvidia.com/mig-1g.10gb.me.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me"));
	assert_true(has_line(l, "nvidia.com/mig-1g.10gb.me.count=1"));
	assert_null(strstr(l, "+"));
	free(l);

	/* No GPU in MIG mode: capable, and no strategy. */
	r.n_migs = 0;
	r.gpus[0].mig_mode = r.gpus[1].mig_mode = 0;
	l = labels_render(&(struct driver_id){.version = "550.90.07"}, &r, 2);
	assert_true(has_line(l, "nvidia.com/mig.capable=true"));
	assert_null(strstr(l, "mig.strategy"));
	free(l);
	r.gpus[0].mig_mode = r.gpus[1].mig_mode = -1;
	l = labels_render(&(struct driver_id){.version = "550.90.07"}, &r, 2);
	assert_true(has_line(l, "nvidia.com/mig.capable=false"));
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
		cmocka_unit_test(test_mig_labels),
		cmocka_unit_test(test_cdi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
