// SPDX-License-Identifier: Apache-2.0
/*
 * installer/expose/cuda.h: the judgement of what libcuda answered (802 on an NVSwitch node
 * and without one, a call failing on a device or not, GPUs missing), the probe's own
 * failures (a library that is not there, one that is not libcuda), and what CUDA is asked
 * on a node with MIG (the GPUs outside MIG mode together, each MIG device alone).
 * t_cuda_ready and t_cuda_mig run the probes against the stand-in libcuda.
 */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "expose/cuda.h"

static struct cuda_report ok_report(int n)
{
	struct cuda_report r;

	memset(&r, 0, sizeof(r));
	r.failed_device = -1;
	r.driver_version = 12020;
	r.n_devices = n;
	r.expect = n;
	return r;
}

static void test_all_good(void **state)
{
	struct cuda_report r = ok_report(8);
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(cuda_check(&r, NULL, &e), 0);
	assert_int_equal(e.code, 0);
}

static void test_802_names_the_fabric(void **state)
{
	struct cuda_report r = ok_report(0);
	struct err e;

	(void)state;
	r.result = CUDA_SYSTEM_NOT_READY;
	strcpy(r.call, "cuInit");
	strcpy(r.error, "CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized");
	assert_int_equal(cuda_check(&r, "6 NVSwitch(es)", &e), -1);
	assert_int_equal(e.code, EXIT_DRIVER_CHECK);
	assert_non_null(strstr(e.msg, "cuInit returned 802"));
	assert_non_null(strstr(e.msg, "6 NVSwitch(es)"));
	assert_non_null(strstr(e.msg, "fabric is not trained"));
	assert_non_null(strstr(e.hint, "Fabric Manager"));

	/* Without an NVSwitch, 802 is not the fabric's: the hint says so. */
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_null(strstr(e.msg, "NVSwitch"));
	assert_null(strstr(e.hint, "Fabric Manager"));
	assert_non_null(strstr(e.hint, "no NVSwitch"));
}

static void test_failed_call(void **state)
{
	struct cuda_report r = ok_report(2);
	struct err e;

	(void)state;
	r.result = 999;
	r.failed_device = 1;
	strcpy(r.call, "cuCtxCreate");
	strcpy(r.error, "CUDA_ERROR_UNKNOWN: unknown error");
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_int_equal(e.code, EXIT_DRIVER_CHECK);
	assert_string_equal(
		e.msg,
		"CUDA cuCtxCreate failed on device 1: CUDA_ERROR_UNKNOWN: unknown error (999)");

	/* The device's PCI address, where CUDA gave it before the call failed. */
	strcpy(r.bdf[1], "0000:3b:00.0");
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_string_equal(
		e.msg,
		"CUDA cuCtxCreate failed on device 1 (0000:3b:00.0): CUDA_ERROR_UNKNOWN: unknown error (999)");

	r.failed_device = -1;
	r.error[0] = '\0';
	strcpy(r.call, "cuInit");
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_string_equal(e.msg, "CUDA cuInit failed: no text (999)");

	/* A MIG device is asked alone: named by what was asked, not by its ordinal 0. */
	r.failed_device = 0;
	strcpy(r.call, "cuCtxCreate");
	strcpy(r.what, "MIG device MIG-abc (GPU 1, 1g.10gb, GPU instance 4, compute instance 0)");
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_string_equal(
		e.msg,
		"CUDA cuCtxCreate failed on MIG device MIG-abc (GPU 1, 1g.10gb, GPU instance 4, compute instance 0): no text (999)");
}

static void test_gpus_missing(void **state)
{
	struct cuda_report r = ok_report(7);
	struct err e;

	(void)state;
	r.expect = 8;
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_string_equal(e.msg, "CUDA sees 7 GPU(s), but 8 NVIDIA GPU(s) are on the PCI bus");

	/* Beside GPUs in MIG mode, those outside it are named by UUID. */
	strcpy(r.visible, "GPU-a,GPU-b");
	r.n_devices = 1;
	r.expect = 2;
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_string_equal(
		e.msg,
		"CUDA sees 1 of the 2 GPU(s) outside MIG mode (CUDA_VISIBLE_DEVICES=GPU-a,GPU-b)");
}

/* A node NVML describes: GPU I in MIG mode MODE[I] (-1: none), MIG devices on GPU MIGS_ON[K]. */
static struct nvml_report *node(const int *mode, unsigned n, const unsigned *migs_on,
				unsigned n_migs)
{
	struct nvml_report *nv = calloc(1, sizeof(*nv));

	assert_non_null(nv);
	nv->n_gpus = n;
	for (unsigned i = 0; i < n; i++) {
		nv->gpus[i].mig_mode = mode[i];
		snprintf(nv->gpus[i].uuid, sizeof(nv->gpus[i].uuid), "GPU-%u", i);
	}
	for (unsigned k = 0; k < n_migs; k++) {
		struct part_mig *m = &nv->migs[nv->n_migs++];

		m->gpu = migs_on[k];
		m->gi = 1 + k;
		snprintf(m->uuid, sizeof(m->uuid), "MIG-%u", k);
		snprintf(m->profile, sizeof(m->profile), "1g.10gb");
	}
	return nv;
}

static void test_plan_without_mig(void **state)
{
	static const int modes[] = {-1, 0};
	struct nvml_report *nv = node(modes, 2, NULL, 0);
	struct cuda_plan p;
	struct cuda_report r;

	(void)state;
	cuda_plan_node(nv, &p);
	assert_int_equal(p.whole, 2);
	assert_int_equal(p.migs + p.idle, 0);
	assert_int_equal(p.n, 1);
	/* Every device CUDA enumerates, as before MIG: the variable is left unset. */
	cuda_plan_ask(nv, &p, 0, &r);
	assert_string_equal(r.visible, "");
	assert_string_equal(r.what, "");
	assert_int_equal(r.expect, 2);
	free(nv);
}

static void test_plan_with_mig(void **state)
{
	/* GPU 0 partitioned in two, GPU 1 whole, GPU 2 in MIG mode without an instance. */
	static const int modes[] = {1, 0, 1};
	static const unsigned on[] = {0, 0};
	struct nvml_report *nv = node(modes, 3, on, 2);
	struct cuda_plan p;
	struct cuda_report r;

	(void)state;
	cuda_plan_node(nv, &p);
	assert_int_equal(p.whole, 1);
	assert_int_equal(p.migs, 2);
	assert_int_equal(p.idle, 1);
	assert_int_equal(p.n, 3);
	/* Unset would enumerate a MIG device beside GPU 1: it is named instead. */
	cuda_plan_ask(nv, &p, 0, &r);
	assert_string_equal(r.visible, "GPU-1");
	assert_int_equal(r.expect, 1);
	assert_int_equal(r.failed_device, -1);
	cuda_plan_ask(nv, &p, 2, &r);
	assert_string_equal(r.visible, "MIG-1");
	assert_string_equal(
		r.what, "MIG device MIG-1 (GPU 0, 1g.10gb, GPU instance 2, compute instance 0)");
	assert_int_equal(r.expect, 1);
	free(nv);

	/* Every GPU in MIG mode: only MIG devices, the first ask is one. */
	static const int all_mig[] = {1, 1};
	static const unsigned on1[] = {1};
	nv = node(all_mig, 2, on1, 1);
	cuda_plan_node(nv, &p);
	assert_int_equal(p.whole, 0);
	assert_int_equal(p.idle, 1);
	assert_int_equal(p.n, 1);
	cuda_plan_ask(nv, &p, 0, &r);
	assert_string_equal(r.visible, "MIG-0");
	free(nv);

	/* MIG mode on and no instance anywhere: nothing CUDA could open. */
	nv = node(all_mig, 2, NULL, 0);
	cuda_plan_node(nv, &p);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.idle, 2);
	free(nv);
}

static void test_probe_node_stops_at_a_failure(void **state)
{
	static const int modes[] = {1};
	static const unsigned on[] = {0, 0, 0, 0, 0, 0};
	struct nvml_report *nv = node(modes, 1, on, 6);
	struct cuda_plan p;
	struct cuda_report r;
	struct err e;

	(void)state;
	/* No libcuda: the first MIG device's process says so, and no more are asked. */
	assert_int_equal(cuda_probe_node("/nonexistent/libcuda.so.1", nv, 10, &p, &r, &e), 0);
	assert_int_equal(p.n, 6);
	assert_int_equal(r.result, -1);
	assert_string_equal(r.visible, "MIG-0");
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "CUDA dlopen failed on MIG device MIG-0 (GPU 0, "));
	free(nv);
}

static void test_probe_without_libcuda(void **state)
{
	struct cuda_report r;
	struct err e;

	(void)state;
	/* Not there: the child says so, the probe itself succeeded. */
	assert_int_equal(cuda_probe("/nonexistent/libcuda.so.1", NULL, 10, &r, &e), 0);
	assert_int_equal(r.result, -1);
	assert_string_equal(r.call, "dlopen");
	assert_int_equal(cuda_check(&r, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "CUDA dlopen failed: "));

	/* A library that is not libcuda. */
	assert_int_equal(cuda_probe("libc.so.6", "MIG-1", 10, &r, &e), 0);
	assert_int_equal(r.result, -1);
	assert_string_equal(r.call, "dlsym");
	assert_string_equal(r.error, "libcuda.so.1 lacks cuInit");
	assert_string_equal(r.visible, "MIG-1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_good),
		cmocka_unit_test(test_802_names_the_fabric),
		cmocka_unit_test(test_failed_call),
		cmocka_unit_test(test_gpus_missing),
		cmocka_unit_test(test_probe_without_libcuda),
		cmocka_unit_test(test_plan_without_mig),
		cmocka_unit_test(test_plan_with_mig),
		cmocka_unit_test(test_probe_node_stops_at_a_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
