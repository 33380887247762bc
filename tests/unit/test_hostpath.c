// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"
#include "scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/hostpath.h"
#include "util/fs.h"

/* A host: /usr/local, /home/kubernetes/bin, links to / and into /usr, a dangling one. */
static int setup(void **state)
{
	struct scratch_fixture *f;

	if (scratch_setup(state) < 0)
		return -1;
	f = *state;
	if (scratch_mkdirs(f->fd, "usr/local") < 0 ||
	    scratch_mkdirs(f->fd, "home/kubernetes/bin") < 0 || scratch_mkdirs(f->fd, "etc") < 0 ||
	    symlinkat("/", f->fd, "home/kubernetes/bin/toroot") < 0 ||
	    symlinkat("../../../usr", f->fd, "home/kubernetes/bin/tousr") < 0 ||
	    symlinkat("/nowhere/at/all", f->fd, "home/kubernetes/bin/dangling") < 0 ||
	    symlinkat("/etc", f->fd, "etc-link") < 0)
		return -1;
	return 0;
}

static void expect_resolves(struct scratch_fixture *f, const char *path, const char *want)
{
	char got[PATH_MAX];
	struct err e;

	err_clear(&e);
	if (hostpath_resolve(f->fd, path, got, sizeof(got), &e) < 0)
		fail_msg("'%s': %s", path, e.msg);
	if (strcmp(got, want) != 0)
		fail_msg("'%s' resolved to '%s', expected '%s'", path, got, want);
}

static void test_resolve_spellings(void **state)
{
	struct scratch_fixture *f = *state;

	expect_resolves(f, "/", "/");
	expect_resolves(f, "//", "/");
	expect_resolves(f, "/.", "/");
	expect_resolves(f, "///", "/");
	expect_resolves(f, "/./", "/");
	expect_resolves(f, "/usr//local/.", "/usr/local");
	expect_resolves(f, "/usr/local/nvidia", "/usr/local/nvidia");
	expect_resolves(f, "/new/./dir//x", "/new/dir/x");
	expect_resolves(f, "/home/kubernetes/bin/nvidia", "/home/kubernetes/bin/nvidia");
}

static void test_resolve_links(void **state)
{
	struct scratch_fixture *f = *state;
	char got[PATH_MAX];
	struct err e;

	expect_resolves(f, "/home/kubernetes/bin/toroot", "/");
	expect_resolves(f, "/home/kubernetes/bin/toroot/usr/local", "/usr/local");
	expect_resolves(f, "/home/kubernetes/bin/tousr/local/nvidia", "/usr/local/nvidia");
	expect_resolves(f, "/etc-link/cdi", "/etc/cdi");
	err_clear(&e);
	assert_int_equal(
		hostpath_resolve(f->fd, "/home/kubernetes/bin/dangling/x", got, sizeof(got), &e),
		-1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "a link to a place that does not exist"));
	err_clear(&e);
	assert_int_equal(hostpath_resolve(f->fd, "/usr/../etc", got, sizeof(got), &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
}

static void test_is_system(void **state)
{
	static const char *const refused[] = {"/",
					      "/usr",
					      "/usr/local",
					      "/etc",
					      "/var",
					      "/var/lib",
					      "/lib64",
					      "/bin",
					      "/lib/modules",
					      "/home",
					      "/var/run",
					      "/usr/lib",
					      "/home/kubernetes/bin",
					      "/proc/x",
					      "/sys/kernel/x",
					      "/dev/shm/x"};
	static const char *const accepted[] = {"/home/kubernetes/bin/nvidia",
					       "/usr/local/nvidia",
					       "/var/cache/nvidia-driver-installer",
					       "/var/run/cdi",
					       "/run/cdi",
					       "/etc/cdi",
					       "/var/lib/node_exporter",
					       "/opt/nvidia",
					       "/usrx",
					       "/proc2/x"};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		if (!hostpath_is_system(refused[i]))
			fail_msg("'%s' was not refused", refused[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(accepted); i++) {
		if (hostpath_is_system(accepted[i]))
			fail_msg("'%s' was refused", accepted[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_resolve_spellings, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_resolve_links, setup, scratch_teardown),
		cmocka_unit_test(test_is_system),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
