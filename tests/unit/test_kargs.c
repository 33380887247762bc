// SPDX-License-Identifier: Apache-2.0
/*
 * installer/kernel/kargs.h: the record of the module parameters a load gave, and the comparison
 * of a request with it (a set: order aside, a key added, changed or no longer asked for).
 */
#include "cmocka_prelude.h"
#include "scratch.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kargs.h"
#include "kernel/kmods.h"
#include "util/jsonc.h"

static bool diff(char *const *old, size_t n_old, char *const *new, size_t n_new, char *buf)
{
	return kargs_diff(old, n_old, new, n_new, buf, 512);
}

static void test_same_set_in_any_order(void **state)
{
	static char a[] = "nvidia.NVreg_A=1", b[] = "nvidia_uvm.uvm_B=2",
		    b2[] = "nvidia-uvm.uvm_B=2";
	char *const old[] = {a, b}, *const new[] = {b2, a};
	char buf[512];

	(void)state;
	assert_false(diff(old, 2, new, 2, buf));
	assert_string_equal(buf, "");
	assert_false(diff(NULL, 0, NULL, 0, buf));
}

static void test_added_changed_removed(void **state)
{
	static char x[] = "nvidia.NVreg_X=1", z[] = "nvidia.NVreg_Z=3", z4[] = "nvidia.NVreg_Z=4",
		    y[] = "nvidia.NVreg_Y=2";
	char *const old[] = {x, z}, *const new[] = {z4, y};
	char buf[512];

	(void)state;
	assert_true(diff(old, 2, new, 2, buf));
	assert_string_equal(buf, "nvidia.NVreg_X: 1 -> (default), nvidia.NVreg_Z: 3 -> 4, "
				 "nvidia.NVreg_Y: (default) -> 2");
	/* Each alone. */
	assert_true(diff(old, 1, NULL, 0, buf));
	assert_string_equal(buf, "nvidia.NVreg_X: 1 -> (default)");
	assert_true(diff(NULL, 0, new + 1, 1, buf));
	assert_string_equal(buf, "nvidia.NVreg_Y: (default) -> 2");
}

/* A key given twice is what the kernel takes: the last value. */
static void test_repeated_key(void **state)
{
	static char x1[] = "nvidia.NVreg_X=1", x2[] = "nvidia.NVreg_X=2";
	char *const old[] = {x2}, *const new[] = {x1, x2};
	char buf[512];

	(void)state;
	assert_false(diff(old, 1, new, 2, buf));
	assert_true(diff(new, 2, new, 1, buf));
	assert_string_equal(buf, "nvidia.NVreg_X: 2 -> 1");
}

/* A buffer too small for the text still says that the sets differ. */
static void test_small_buffer(void **state)
{
	static char x[] = "nvidia.NVreg_X=1";
	char *const old[] = {x};
	char buf[8];

	(void)state;
	assert_true(kargs_diff(old, 1, NULL, 0, buf, sizeof(buf)));
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
}

static void test_record_round_trip(void **state)
{
	struct scratch_fixture *f = *state;
	struct kargs_record w = {.driver_version = "535.261.03", .module_type = "open"};
	struct kargs_record r = {.driver_version = ""};
	char text[1024];
	struct err e;

	err_clear(&e);
	assert_int_equal(kargs_read(f->fd, &r, &e), 1);
	assert_int_equal(strv_push(&w.args, "nvidia.NVreg_X=1"), 0);
	assert_int_equal(strv_push(&w.args, "nvidia_uvm.uvm_Y=2"), 0);
	assert_int_equal(kargs_write(f->fd, &w, &e), 0);
	assert_int_equal(kargs_read(f->fd, &r, &e), 0);
	assert_string_equal(r.driver_version, "535.261.03");
	assert_string_equal(r.module_type, "open");
	assert_int_equal(r.args.n, 2);
	assert_string_equal(r.args.v[0], "nvidia.NVreg_X=1");
	assert_string_equal(r.args.v[1], "nvidia_uvm.uvm_Y=2");
	assert_int_equal(r.gpudirect, 0);
	kargs_record_done(&r);
	/* An empty set is a record too: a load given no parameters. With GDRCopy's and GDS's
	 * modules this load inserted (gpudirect_modules), which alone count as the driver's. */
	strv_clear(&w.args);
	w.gpudirect = KMODS_GDRDRV | KMODS_NVIDIA_FS;
	assert_int_equal(kargs_write(f->fd, &w, &e), 0);
	assert_int_equal(kargs_read(f->fd, &r, &e), 0);
	assert_int_equal(r.args.n, 0);
	assert_int_equal(r.gpudirect, KMODS_GDRDRV | KMODS_NVIDIA_FS);
	kargs_record_done(&r);
	w.gpudirect = KMODS_GDRDRV;
	assert_int_equal(kargs_write(f->fd, &w, &e), 0);
	assert_int_equal(kargs_read(f->fd, &r, &e), 0);
	assert_int_equal(r.gpudirect, KMODS_GDRDRV);
	kargs_record_done(&r);
	assert_int_equal(kargs_remove(f->fd, &e), 0);
	assert_int_equal(kargs_read(f->fd, &r, &e), 1);
	assert_int_equal(kargs_remove(f->fd, &e), 0);
	/* Damaged: said, not taken. */
	snprintf(text, sizeof(text), "%s/%s", KARGS_RECORD_DIR + 1, KARGS_RECORD_NAME);
	assert_int_equal(
		scratch_write(f->fd, text, "{\"driver_version\": \"1\", \"module_args\": [1]}"), 0);
	assert_int_equal(kargs_read(f->fd, &r, &e), -1);
	assert_non_null(strstr(e.msg, "damaged, removed"));
	/* Removed when found: said once, not at every run. */
	err_clear(&e);
	assert_int_equal(kargs_read(f->fd, &r, &e), 1);
	assert_int_equal(scratch_write(f->fd, text, "not json"), 0);
	assert_int_equal(kargs_read(f->fd, &r, &e), -1);
	assert_non_null(strstr(e.msg, "damaged, removed"));
	assert_int_equal(kargs_read(f->fd, &r, &e), 1);
	/* Unreadable (a link in its place): told apart from damaged, and removed too. */
	snprintf(text, sizeof(text), "%s%s/%s", f->root, KARGS_RECORD_DIR, KARGS_RECORD_NAME);
	assert_int_equal(symlink("/etc/passwd", text), 0);
	err_clear(&e);
	assert_int_equal(kargs_read(f->fd, &r, &e), -1);
	assert_non_null(strstr(e.msg, "unreadable, removed"));
	assert_null(strstr(e.msg, "damaged"));
	assert_int_equal(kargs_read(f->fd, &r, &e), 1);
}

/* A directory that resolves outside /run (a planted link) gets no record. */
static void test_record_outside_run(void **state)
{
	struct scratch_fixture *f = *state;
	struct kargs_record w = {.driver_version = "535.261.03"};
	struct kargs_record r = {.driver_version = ""};
	char link[1024];
	struct err e;

	err_clear(&e);
	assert_int_equal(scratch_mkdirs(f->fd, "run"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "var/lib/x"), 0);
	snprintf(link, sizeof(link), "%s%s", f->root, KARGS_RECORD_DIR);
	assert_int_equal(symlink("/var/lib/x", link), 0);
	assert_int_equal(kargs_write(f->fd, &w, &e), -1);
	assert_non_null(strstr(e.msg, "outside the host's /run"));
	snprintf(link, sizeof(link), "%s/var/lib/x/%s", f->root, KARGS_RECORD_NAME);
	assert_int_equal(access(link, F_OK), -1);
	/* One found where the link leads is neither taken nor removed. */
	assert_int_equal(scratch_write(f->fd, "var/lib/x/" KARGS_RECORD_NAME,
				       "{\"driver_version\": \"1\", \"module_args\": []}"),
			 0);
	assert_int_equal(kargs_read(f->fd, &r, &e), 1);
	assert_int_equal(kargs_remove(f->fd, &e), 0);
	assert_int_equal(access(link, F_OK), 0);
	/* A link that leads nowhere: none there either, and nothing to remove. */
	snprintf(link, sizeof(link), "%s%s", f->root, KARGS_RECORD_DIR);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("/run/gone", link), 0);
	assert_int_equal(kargs_read(f->fd, &r, &e), 1);
	assert_int_equal(kargs_remove(f->fd, &e), 0);
	assert_int_equal(kargs_write(f->fd, &w, &e), -1);
}

/*
 * An entry --module-arg would refuse is damaged: no load of ours gave it, and a restore that
 * gave it would fail. Said once, naming the entry, and removed.
 */
static void test_record_entry_refused(void **state)
{
	static const char *const refused[] = {"nvidia.NVreg_X=a b", "nvidia.NVreg_X=\"a\"",
					      "nvidia.NVreg_X=", "nvidia", "nvidia.X Y=1"};
	struct scratch_fixture *f = *state;
	struct kargs_record r = {.driver_version = ""};
	char path[256], text[512];
	struct err e;

	snprintf(path, sizeof(path), "%s/%s", KARGS_RECORD_DIR + 1, KARGS_RECORD_NAME);
	assert_int_equal(scratch_mkdirs(f->fd, KARGS_RECORD_DIR + 1), 0);
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		_cleanup_(json_object_putp) json_object *arg = json_object_new_string(refused[i]);

		snprintf(text, sizeof(text),
			 "{\"driver_version\": \"1\", \"module_args\": [\"nvidia.NVreg_Y=1\", %s]}",
			 json_object_to_json_string(arg));
		assert_int_equal(scratch_write(f->fd, path, text), 0);
		err_clear(&e);
		assert_int_equal(kargs_read(f->fd, &r, &e), -1);
		assert_non_null(strstr(e.msg, "damaged, removed: module argument"));
		assert_non_null(strstr(e.msg, refused[i]));
		assert_int_equal(r.args.n, 0);
		err_clear(&e);
		assert_int_equal(kargs_read(f->fd, &r, &e), 1);
	}
}

/*
 * The package's defaults, then --module-arg: a default the request gives too (in either
 * spelling of the module) is replaced, not repeated; the rest keep their order.
 */
static void test_merge_defaults(void **state)
{
	static char d1[] = "nvidia.NVreg_A=1", d2[] = "nvidia_uvm.uvm_B=2",
		    d3[] = "nvidia.NVreg_C=3", r1[] = "nvidia-uvm.uvm_B=5",
		    r2[] = "nvidia.NVreg_D=4";
	char *const defaults[] = {d1, d2, d3}, *const requested[] = {r1, r2};
	struct strv out = {0};
	size_t overridden;

	(void)state;
	assert_int_equal(kargs_merge(defaults, 3, requested, 2, &out, &overridden), 0);
	assert_int_equal(overridden, 1);
	assert_int_equal(out.n, 4);
	assert_string_equal(out.v[0], "nvidia.NVreg_A=1");
	assert_string_equal(out.v[1], "nvidia.NVreg_C=3");
	assert_string_equal(out.v[2], "nvidia-uvm.uvm_B=5");
	assert_string_equal(out.v[3], "nvidia.NVreg_D=4");
	strv_clear(&out);
	assert_int_equal(kargs_merge(NULL, 0, requested, 2, &out, &overridden), 0);
	assert_int_equal(overridden, 0);
	assert_int_equal(out.n, 2);
	strv_clear(&out);
	assert_int_equal(kargs_merge(defaults, 3, NULL, 0, &out, &overridden), 0);
	assert_int_equal(out.n, 3);
	strv_clear(&out);
}

/*
 * The package's defaults split by the modules a load gives (--modules nvidia,nvidia-uvm):
 * those of modules left out are set apart, in order; module names in either spelling.
 */
static void test_defaults_for_modules(void **state)
{
	static char d1[] = "nvidia.NVreg_A=1", d2[] = "nvidia_drm.modeset=1",
		    d3[] = "nvidia-uvm.uvm_B=2", d4[] = "nvidia-drm.fbdev=1",
		    d5[] = "nvidia_modeset.x=3", m1[] = "nvidia", m2[] = "nvidia_uvm",
		    m3[] = "nvidia-modeset";
	char *const defaults[] = {d1, d2, d3, d4, d5}, *const modules[] = {m1, m2, m3};
	struct strv kept = {0}, ignored = {0};

	(void)state;
	assert_int_equal(kargs_for_modules(defaults, 5, modules, 2, &kept, &ignored), 0);
	assert_int_equal(kept.n, 2);
	assert_string_equal(kept.v[0], "nvidia.NVreg_A=1");
	assert_string_equal(kept.v[1], "nvidia-uvm.uvm_B=2");
	assert_int_equal(ignored.n, 3);
	assert_string_equal(ignored.v[0], "nvidia_drm.modeset=1");
	assert_string_equal(ignored.v[1], "nvidia-drm.fbdev=1");
	assert_string_equal(ignored.v[2], "nvidia_modeset.x=3");
	strv_clear(&kept);
	strv_clear(&ignored);
	/* nvidia-modeset in the set, spelled with '-': its default is kept. */
	assert_int_equal(kargs_for_modules(defaults, 5, modules, 3, &kept, &ignored), 0);
	assert_int_equal(kept.n, 3);
	assert_string_equal(kept.v[2], "nvidia_modeset.x=3");
	assert_int_equal(ignored.n, 2);
	strv_clear(&kept);
	strv_clear(&ignored);
	/* A module name that only begins like a loaded one is another module. */
	assert_int_equal(kargs_for_modules(defaults, 5, (char *const[]){m1}, 1, &kept, &ignored),
			 0);
	assert_int_equal(kept.n, 1);
	assert_int_equal(ignored.n, 4);
	strv_clear(&kept);
	strv_clear(&ignored);
}

/* drivers/module-params.conf: modprobe.d's "options" lines, comments and blank lines. */
static void test_package_defaults(void **state)
{
	struct scratch_fixture *f = *state;
	struct strv out = {0};
	struct err e;

	err_clear(&e);
	assert_int_equal(kargs_package_defaults(f->fd, &out, &e), 0);
	assert_int_equal(out.n, 0);
	assert_int_equal(scratch_write(f->fd, KARGS_PACKAGE_FILE,
				       "# what the platform needs\n"
				       "\n"
				       "options nvidia NVreg_A=1 NVreg_B=two\n"
				       "  options\tnvidia-uvm uvm_C=0 # trailing comment\n"),
			 0);
	assert_int_equal(kargs_package_defaults(f->fd, &out, &e), 0);
	assert_int_equal(out.n, 3);
	assert_string_equal(out.v[0], "nvidia.NVreg_A=1");
	assert_string_equal(out.v[1], "nvidia.NVreg_B=two");
	assert_string_equal(out.v[2], "nvidia-uvm.uvm_C=0");
	strv_clear(&out);
}

/* What a package may not say refuses it (exit 5), naming the line. */
static void test_package_defaults_refused(void **state)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
		{"options nvidia NVreg_A=1\ninstall nvidia /bin/sh\n",
		 "line 2: 'install': a package may give only 'options MODULE KEY=VALUE...'"},
		{"blacklist nouveau\n", "line 1: 'blacklist'"},
		{"options\n", "line 1: 'options' without a module"},
		{"options nvidia\n", "line 1: 'options nvidia' gives no KEY=VALUE"},
		{"options nvidia NVreg_A\n", "'nvidia NVreg_A' is not a module parameter"},
		{"options nvidia NVreg_A=\"x\"\n",
		 "'nvidia NVreg_A=\"x\"' is not a module parameter"},
		{"options nvidia NVreg_A=\n", "'nvidia NVreg_A=' is not a module parameter"},
		{"options nv/idia NVreg_A=1\n", "is not a module parameter"},
	};
	struct scratch_fixture *f = *state;
	struct strv out = {0};
	struct err e;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(scratch_write(f->fd, KARGS_PACKAGE_FILE, bad[i].text), 0);
		err_clear(&e);
		assert_int_equal(kargs_package_defaults(f->fd, &out, &e), -1);
		assert_int_equal(e.code, EXIT_VERIFY);
		if (!strstr(e.msg, bad[i].says))
			fail_msg("'%s': got '%s'", bad[i].text, e.msg);
		strv_clear(&out);
	}
	/* Not a regular file: refused too, not followed. */
	assert_int_equal(unlinkat(f->fd, KARGS_PACKAGE_FILE, 0), 0);
	assert_int_equal(symlinkat("/etc/passwd", f->fd, KARGS_PACKAGE_FILE), 0);
	err_clear(&e);
	assert_int_equal(kargs_package_defaults(f->fd, &out, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);
	assert_int_equal(out.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_set_in_any_order),
		cmocka_unit_test(test_added_changed_removed),
		cmocka_unit_test(test_repeated_key),
		cmocka_unit_test(test_small_buffer),
		scratch_unit_test(test_record_round_trip),
		scratch_unit_test(test_record_outside_run),
		scratch_unit_test(test_record_entry_refused),
		cmocka_unit_test(test_merge_defaults),
		cmocka_unit_test(test_defaults_for_modules),
		scratch_unit_test(test_package_defaults),
		scratch_unit_test(test_package_defaults_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
