// SPDX-License-Identifier: Apache-2.0
/*
 * The kernel stage at its boundary: kernel_prepare with its own options (struct
 * kernel_opts), on a scratch host root, deciding before anything changes. The
 * driver's modules are relocatable objects with a .modinfo section, as a .ko is;
 * "loaded" modules are /sys/module/NAME directories with initstate and refcnt,
 * as the kernel shows them.
 */
#include "cmocka_prelude.h"
#include "scratch.h"
#include "testcert.h"
#include "testko.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kargs.h"
#include "kernel/kernel.h"

#define RELEASE "6.1.0-57-amd64"
#define VERSION "550.90.07"

/* drivers/NAME.ko: a relocatable object whose modinfo names its version, deps and vermagic. */
static int make_module(struct scratch_fixture *f, const char *name, const char *depends,
		       const char *vermagic)
{
	return make_ko(f->root, name, VERSION, "NVIDIA", depends, vermagic, NULL);
}

/* A host: no driver loaded, signatures not enforced, the driver's two modules built for RELEASE. */
static int setup(void **state)
{
	struct scratch_fixture *f;

	if (scratch_setup(state) < 0)
		return -1;
	f = *state;
	if (make_ko_host(f, RELEASE) < 0 ||
	    scratch_write(f->fd, "sys/kernel/security/lockdown", "[none] integrity\n") < 0 ||
	    make_module(f, "nvidia", "", RELEASE) < 0 ||
	    make_module(f, "nvidia-uvm", "nvidia", RELEASE) < 0)
		return -1;
	return 0;
}

/* A module live in the scratch kernel: initstate, refcnt and (for nvidia) its version. */
static void load(struct scratch_fixture *f, const char *name, const char *version, int refs)
{
	char p[256], n[16];

	snprintf(p, sizeof(p), "sys/module/%s/initstate", name);
	assert_int_equal(scratch_write(f->fd, p, "live\n"), 0);
	snprintf(p, sizeof(p), "sys/module/%s/refcnt", name);
	snprintf(n, sizeof(n), "%d\n", refs);
	assert_int_equal(scratch_write(f->fd, p, n), 0);
	snprintf(p, sizeof(p), "sys/module/%s/holders", name);
	assert_int_equal(scratch_mkdirs(f->fd, p), 0);
	if (version) {
		snprintf(p, sizeof(p), "sys/module/%s/version", name);
		assert_int_equal(scratch_write(f->fd, p, version), 0);
	}
}

static char m_nvidia[] = "nvidia", m_uvm[] = "nvidia-uvm";
static char *const two[] = {m_nvidia, m_uvm};

static int prepare(struct scratch_fixture *f, const struct kernel_opts *o, const char *release,
		   struct kernel **kn, struct err *e)
{
	_cleanup_close_ int drivers = openat(f->fd, "drivers", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	err_clear(e);
	return kernel_prepare(
		&(struct kernel_request){.opts = o,
					 .root_fd = f->fd,
					 .drivers_fd = drivers,
					 .driver = {.version = VERSION, .kernel = release}},
		kn, e);
}

static void test_ready_to_load(void **state)
{
	struct scratch_fixture *f = *state;
	struct kernel_opts o = {.modules = two, .n_modules = 2};
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	struct err e;

	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), 0);
	assert_non_null(kn);
	/* Nothing loaded: a first load, not a reload. */
	assert_false(kernel_will_reload(kn));
}

static void test_wrong_kernel(void **state)
{
	struct scratch_fixture *f = *state;
	struct kernel_opts o = {.modules = two, .n_modules = 2};
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	struct err e;

	/* Built for RELEASE, asked for another: the kernel would refuse them. */
	assert_int_equal(scratch_mkdirs(f->fd, "lib/modules/6.1.0-58-amd64"), 0);
	assert_int_equal(prepare(f, &o, "6.1.0-58-amd64", &kn, &e), -1);
	assert_int_equal(e.code, EXIT_KERNEL_REFUSED);
	assert_non_null(strstr(e.msg, RELEASE));
	assert_null(kn);
}

static void test_argument_for_another_module(void **state)
{
	struct scratch_fixture *f = *state;
	static char arg[] = "nvidia-drm.modeset=1";
	static char *const args[] = {arg};
	struct kernel_opts o = {
		.modules = two, .n_modules = 2, .module_args = args, .n_module_args = 1};
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	struct err e;

	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "nvidia-drm"));
}

static void test_unsigned_with_a_certificate(void **state)
{
	struct scratch_fixture *f = *state;
	char cert[512];
	char *certs[1];
	struct kernel_opts o = {.modules = two, .n_modules = 2, .n_module_certs = 1};
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	struct err e;

	/* A certificate the modules must be signed with; these carry no signature. */
	snprintf(cert, sizeof(cert), "%s/mod.crt", f->root);
	make_cert(cert);
	certs[0] = cert;
	o.module_certs = certs;
	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);
	assert_non_null(strstr(e.msg, "nvidia"));
}

static void test_conflict_refused(void **state)
{
	struct scratch_fixture *f = *state;
	struct kernel_opts o = {.modules = two, .n_modules = 2, .no_unload_conflicts = true};
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	struct err e;

	load(f, "nouveau", NULL, 0);
	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), -1);
	assert_int_equal(e.code, EXIT_IN_USE);
	assert_non_null(strstr(e.msg, "nouveau"));
	/* Allowed to unload it (idle), the stage goes on. */
	o.no_unload_conflicts = false;
	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), 0);
}

static void test_old_driver(void **state)
{
	struct scratch_fixture *f = *state;
	struct kernel_opts o = {.modules = two, .n_modules = 2};
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	struct err e;

	/* Another version loaded and idle: a reload. */
	load(f, "nvidia", "535.261.03", 0);
	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), 0);
	assert_true(kernel_will_reload(kn));
	kernel_free(kn);
	kn = NULL;
	/* ... and in use: refused before anything changes. */
	load(f, "nvidia", "535.261.03", 2);
	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), -1);
	assert_int_equal(e.code, EXIT_IN_USE);
	assert_non_null(strstr(e.msg, "535.261.03"));
}

/*
 * Without a record, the live driver's parameters, as kernel_args_differ compares them and
 * kernel_previous_args gives them back for a restore: from /sys/module/MODULE/parameters,
 * for nvidia's NVreg_ keys also /proc/driver/nvidia/params; one the kernel does not show
 * is left out.
 */
static void test_live_args(void **state)
{
	struct scratch_fixture *f = *state;
	static char a_mode[] = "nvidia.NVreg_DeviceFileMode=abc",
		    a_gid[] = "nvidia.NVreg_DeviceFileGID=7", a_unseen[] = "nvidia.NVreg_Unseen=1";
	static char *const args[] = {a_mode, a_gid, a_unseen};
	struct kernel_opts o = {
		.modules = two, .n_modules = 2, .module_args = args, .n_module_args = 3};
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_(strv_clear) struct strv live = {0};
	char diff[256];
	struct err e;

	load(f, "nvidia", VERSION, 0);
	assert_int_equal(
		scratch_write(f->fd, "sys/module/nvidia/parameters/NVreg_DeviceFileGID", "44\n"),
		0);
	assert_int_equal(scratch_write(f->fd, "proc/driver/nvidia/params",
				       "ModifyDeviceFiles: 1\nDeviceFileMode: 432\n"),
			 0);
	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), 0);
	assert_true(kernel_args_differ(kn, VERSION, diff, sizeof(diff)));
	assert_string_equal(diff, "nvidia.NVreg_DeviceFileMode: 432 -> abc, "
				  "nvidia.NVreg_DeviceFileGID: 44 -> 7");
	assert_int_equal(kernel_previous_args(kn, &live), 0);
	assert_int_equal(live.n, 2);
	assert_string_equal(live.v[0], "nvidia.NVreg_DeviceFileMode=432");
	assert_string_equal(live.v[1], "nvidia.NVreg_DeviceFileGID=44");
}

/*
 * With the record of the load (kargs.h), the request is compared with the whole recorded
 * set, a parameter no longer asked for included, and the restore gets the whole set; a
 * record of another version describes another load and is not taken.
 */
static void test_recorded_args(void **state)
{
	struct scratch_fixture *f = *state;
	static char a_mode[] = "nvidia.NVreg_DeviceFileMode=432";
	static char *const args[] = {a_mode};
	struct kernel_opts o = {
		.modules = two, .n_modules = 2, .module_args = args, .n_module_args = 1};
	struct kargs_record rec = {.driver_version = VERSION};
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_(strv_clear) struct strv before = {0};
	char diff[256];
	struct err e;

	load(f, "nvidia", VERSION, 0);
	/* What the kernel shows agrees with the request: only the record tells the change. */
	assert_int_equal(scratch_write(f->fd, "proc/driver/nvidia/params", "DeviceFileMode: 432\n"),
			 0);
	assert_int_equal(strv_push(&rec.args, "nvidia.NVreg_DeviceFileMode=432"), 0);
	assert_int_equal(strv_push(&rec.args, "nvidia.NVreg_DeviceFileGID=44"), 0);
	err_clear(&e);
	assert_int_equal(kargs_write(f->fd, &rec, &e), 0);
	assert_int_equal(prepare(f, &o, RELEASE, &kn, &e), 0);
	assert_true(kernel_args_differ(kn, VERSION, diff, sizeof(diff)));
	assert_string_equal(diff, "nvidia.NVreg_DeviceFileGID: 44 -> (default)");
	assert_int_equal(kernel_previous_args(kn, &before), 0);
	assert_int_equal(before.n, 2);
	assert_string_equal(before.v[1], "nvidia.NVreg_DeviceFileGID=44");
	/* Another version's record: the live comparison, which cannot tell a dropped one. */
	snprintf(rec.driver_version, sizeof(rec.driver_version), "%s", "535.261.03");
	assert_int_equal(kargs_write(f->fd, &rec, &e), 0);
	kargs_record_done(&rec);
	assert_false(kernel_args_differ(kn, VERSION, diff, sizeof(diff)));
}

/* The default set is written twice (a string for help and docs, a list for kmods): the same. */
static void test_default_set(void **state)
{
	char joined[256] = "";

	(void)state;
	for (size_t i = 0; i < kernel_n_default_modules; i++) {
		if (i)
			strcat(joined, ",");
		strcat(joined, kernel_default_modules[i]);
	}
	assert_string_equal(joined, KERNEL_DEFAULT_MODULES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_set),
		cmocka_unit_test_setup_teardown(test_ready_to_load, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_wrong_kernel, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_argument_for_another_module, setup,
						scratch_teardown),
		cmocka_unit_test_setup_teardown(test_unsigned_with_a_certificate, setup,
						scratch_teardown),
		cmocka_unit_test_setup_teardown(test_conflict_refused, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_old_driver, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_live_args, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_recorded_args, setup, scratch_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
