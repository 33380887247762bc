// SPDX-License-Identifier: Apache-2.0
/*
 * installer/expose/cuda.h: the judgement of what libcuda answered (802 on an NVSwitch node
 * and without one, a call failing on a device or not, GPUs missing), and the probe's own
 * failures (a library that is not there, one that is not libcuda). t_cuda_ready runs the
 * probe against the stand-in libcuda.
 */
#include "cmocka_prelude.h"

#include <string.h>

#include "expose/cuda.h"

static struct cuda_report ok_report(int n)
{
	struct cuda_report r;

	memset(&r, 0, sizeof(r));
	r.failed_device = -1;
	r.driver_version = 12020;
	r.n_devices = n;
	return r;
}

static void test_all_good(void **state)
{
	struct cuda_report r = ok_report(8);
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(cuda_check(&r, 8, NULL, &e), 0);
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
	assert_int_equal(cuda_check(&r, 8, "6 NVSwitch(es)", &e), -1);
	assert_int_equal(e.code, EXIT_DRIVER_CHECK);
	assert_non_null(strstr(e.msg, "cuInit returned 802"));
	assert_non_null(strstr(e.msg, "6 NVSwitch(es)"));
	assert_non_null(strstr(e.msg, "fabric is not trained"));
	assert_non_null(strstr(e.hint, "Fabric Manager"));

	/* Without an NVSwitch, 802 is not the fabric's: the hint says so. */
	assert_int_equal(cuda_check(&r, 8, NULL, &e), -1);
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
	assert_int_equal(cuda_check(&r, 2, NULL, &e), -1);
	assert_int_equal(e.code, EXIT_DRIVER_CHECK);
	assert_string_equal(
		e.msg,
		"CUDA cuCtxCreate failed on device 1: CUDA_ERROR_UNKNOWN: unknown error (999)");

	r.failed_device = -1;
	r.error[0] = '\0';
	strcpy(r.call, "cuInit");
	assert_int_equal(cuda_check(&r, 2, NULL, &e), -1);
	assert_string_equal(e.msg, "CUDA cuInit failed: no text (999)");
}

static void test_gpus_missing(void **state)
{
	struct cuda_report r = ok_report(7);
	struct err e;

	(void)state;
	assert_int_equal(cuda_check(&r, 8, NULL, &e), -1);
	assert_string_equal(e.msg, "CUDA sees 7 GPU(s), but 8 NVIDIA GPU(s) are on the PCI bus");
}

static void test_probe_without_libcuda(void **state)
{
	struct cuda_report r;
	struct err e;

	(void)state;
	/* Not there: the child says so, the probe itself succeeded. */
	assert_int_equal(cuda_probe("/nonexistent/libcuda.so.1", 10, &r, &e), 0);
	assert_int_equal(r.result, -1);
	assert_string_equal(r.call, "dlopen");
	assert_int_equal(cuda_check(&r, 1, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "CUDA dlopen failed: "));

	/* A library that is not libcuda. */
	assert_int_equal(cuda_probe("libc.so.6", 10, &r, &e), 0);
	assert_int_equal(r.result, -1);
	assert_string_equal(r.call, "dlsym");
	assert_string_equal(r.error, "libcuda.so.1 lacks cuInit");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_good),
		cmocka_unit_test(test_802_names_the_fabric),
		cmocka_unit_test(test_failed_call),
		cmocka_unit_test(test_gpus_missing),
		cmocka_unit_test(test_probe_without_libcuda),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
