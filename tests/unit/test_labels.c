// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia.com/gpu.product as GPU feature discovery writes it, for the same NVML name.
 *
 * GFD's rule, from NVIDIA/k8s-device-plugin (where GFD lives since v0.15) at
 * 1b826acc6af3079d8923bac395c3124b8861a9a6, internal/lm/resource.go: getProductName()
 * passes the NVML name through sanitise(), which (1) deletes every character outside
 * [A-Za-z0-9-_. ] (regexp "[^A-Za-z0-9-_. ]", so a multi-byte character goes whole), then
 * (2) splits the rest on runs of blanks (strings.Fields: leading and trailing blanks
 * vanish, runs collapse) and joins the words with '-'. There is no length cut and no trim
 * of other characters: a leading or trailing '-' stays. sanitise() came with 3344b51
 * ("strip parentheses from the gpu product name", first in v0.16.0); before it GFD only
 * replaced each ' ' with '-'. The "-SHARED" and "-MIG-<profile>" suffixes depend on the
 * device plugin's sharing and MIG configuration, which we do not see: with GFD running,
 * its file wins for those keys (t_labels_gfd).
 *
 * NFD then checks every label (node-feature-discovery pkg/apis/nfd/validate/validate.go,
 * Label(): k8s IsValidLabelValue, at most 63 characters of [-A-Za-z0-9_.] that begin and
 * end with [A-Za-z0-9]) and ignores one that fails (pkg/nfd-master/nfd-master.go,
 * filterFeatureLabels()). Where GFD's value fails, the node gets no gpu.product from GFD,
 * so we write none either: the same node selectors match with GFD and without it.
 *
 * The expected values below are GFD's rule applied by hand.
 */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expose/nodeinfo.h"

/* The gpu.product value labels_render writes for NAME, or NULL when it writes none. */
static char *product_for(const char *name)
{
	struct nvml_report r = {.driver_version = "550.90.07", .cuda_version = 12040, .n_gpus = 1};
	static const char key[] = "nvidia.com/gpu.product=";
	char *l, *p, *v = NULL;

	snprintf(r.gpus[0].name, sizeof(r.gpus[0].name), "%s", name);
	l = labels_render(&(struct driver_id){.version = "550.90.07"}, &r, 1);
	assert_non_null(l);
	for (p = l; (p = strstr(p, key)); p++) {
		if (p == l || p[-1] == '\n') {
			p += strlen(key);
			v = strndup(p, strcspn(p, "\n"));
			break;
		}
	}
	free(l);
	return v;
}

static void test_gfd_product_table(void **state)
{
	static const struct {
		const char *nvml_name, *gfd_value; /* NULL: GFD's value is no valid label */
	} table[] = {
		/* Real NVML names. */
		{"NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"},
		{"NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"},
		{"Tesla T4", "Tesla-T4"},
		{"Tesla V100-SXM2-16GB", "Tesla-V100-SXM2-16GB"},
		{"NVIDIA RTX A6000", "NVIDIA-RTX-A6000"},
		{"NVIDIA A10G", "NVIDIA-A10G"},
		{"NVIDIA TITAN X (Pascal)", "NVIDIA-TITAN-X-Pascal"},
		{"NVIDIA GeForce RTX\u2122 4090", "NVIDIA-GeForce-RTX-4090"},
		/* Runs of blanks collapse; leading and trailing blanks vanish. */
		{"NVIDIA  A100   PCIe", "NVIDIA-A100-PCIe"},
		{"  Tesla T4", "Tesla-T4"},
		{"Tesla T4  ", "Tesla-T4"},
		/* A deleted character can leave two blanks, which then collapse. */
		{"NVIDIA A100 / 80GB", "NVIDIA-A100-80GB"},
		/* A tab is deleted, not a blank: the words join. */
		{"Tesla\tT4", "TeslaT4"},
		/* '-', '_' and '.' stay where they are, also at the ends: invalid then. */
		{"NVIDIA A100_80GB.v2", "NVIDIA-A100_80GB.v2"},
		{"-NVIDIA A10", NULL},	       /* GFD: "-NVIDIA-A10" */
		{" - NVIDIA A10", NULL},       /* GFD: "--NVIDIA-A10" */
		{"NVIDIA A10 -", NULL},	       /* GFD: "NVIDIA-A10--" */
		{"NVIDIA A10 (rev 1.)", NULL}, /* GFD: "NVIDIA-A10-rev-1." */
		/* No cut: 63 characters are a label, 64 are not. */
		{"NVIDIA A100 SXM4 80GB MIG 1g.10gb with a name far longer than s",
		 "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-with-a-name-far-longer-than-s"},
		{"NVIDIA A100 SXM4 80GB MIG 1g.10gb with a name far longer than sx", NULL},
		{"NVIDIA A100-SXM4-80GB (MIG 1g.10gb) / with a name far longer than sixty-three",
		 NULL}, /* GFD: 73 characters */
		/* Nothing left: GFD writes an empty product, a valid label value. */
		{"()", ""},
	};

	size_t bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		char *v = product_for(table[i].nvml_name);

		if (table[i].gfd_value == NULL
			    ? v != NULL
			    : (v == NULL || strcmp(v, table[i].gfd_value) != 0)) {
			print_error("'%s': we write %s, GFD %s\n", table[i].nvml_name,
				    v ? v : "no gpu.product",
				    table[i].gfd_value ? table[i].gfd_value : "no valid label");
			bad++;
		}
		free(v);
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gfd_product_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
