// SPDX-License-Identifier: Apache-2.0
/*
 * The narrowed stage boundaries, driven without a configuration: each stage gets only its
 * own options (hostpath_opts, source_opts, expose_opts) and a scratch host root; the
 * metrics file gets its timing record.
 */
#include "cmocka_prelude.h"
#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_info.h"
#include "expose/expose.h"
#include "host/hostpath.h"
#include "expose/nodeinfo.h"
#include "source/source.h"
#include "expose/timing.h"
#include "util/fs.h"

static void put(struct scratch_fixture *f, const char *rel, const char *text)
{
	assert_int_equal(scratch_write(f->fd, rel, text), 0);
}

static bool exists(struct scratch_fixture *f, const char *rel)
{
	struct stat st;

	return fstatat(f->fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Each host path of the options is judged, and named when refused. */
static void test_hostpath_opts(void **state)
{
	struct scratch_fixture *f = *state;
	char usr[] = "/usr/local", mine[] = "/opt/mounts";
	char *mounts[] = {mine, usr};
	struct hostpath_opts o = {.install_dir = "/home/kubernetes/bin/nvidia",
				  .cache_dir = "/var/cache/ndi",
				  .cdi_dir = "/var/run/cdi",
				  .host_mounts = mounts,
				  .n_host_mounts = 1};
	struct err e;

	err_clear(&e);
	assert_int_equal(hostpath_check_config(&o, f->fd, &e), 0);
	o.n_host_mounts = 2; /* the second is a system directory */
	assert_int_equal(hostpath_check_config(&o, f->fd, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--host-mount"));
	assert_non_null(strstr(e.msg, "/usr/local"));
	o.n_host_mounts = 1;
	o.cache_dir = "/etc";
	err_clear(&e);
	assert_int_equal(hostpath_check_config(&o, f->fd, &e), -1);
	assert_non_null(strstr(e.msg, "--cache-dir"));
	o.cache_dir = "/var/cache/ndi";
	put(f, "var/lib/node_exporter/other.prom", "someone_else 1\n");
	o.metrics_file = "/var/lib/node_exporter/other.prom";
	err_clear(&e);
	assert_int_equal(hostpath_check_config(&o, f->fd, &e), -1);
	assert_non_null(strstr(e.msg, "is not a metrics file of ours"));
}

/* source_open refuses what its options cannot serve, before any transfer. */
static void test_source_opts(void **state)
{
	struct scratch_fixture *f = *state;
	char url[128], key[] = "/nonexistent/key.pem";
	char *mirrors[] = {url}, *keys[] = {key};
	struct source_opts o = {.index_max_age_s = SOURCE_MAX_AGE_REPO};
	struct source s;
	struct err e;

	err_clear(&e);
	assert_int_equal(source_open(&o, NULL, 0, &s, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "no repository configured"));

	snprintf(url, sizeof(url), "file://%s/repo", f->root);
	o.mirrors = mirrors;
	o.n_mirrors = 1;
	o.fetch.ca_file = "/nonexistent/ca.pem";
	err_clear(&e);
	assert_int_equal(source_open(&o, NULL, 0, &s, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--ca-file '/nonexistent/ca.pem'"));

	/* A key that is not there: the keys of the options are the ones loaded. */
	o.fetch.ca_file = NULL;
	o.keys = keys;
	o.n_keys = 1;
	err_clear(&e);
	assert_int_equal(source_open(&o, NULL, 0, &s, &e), -1);
	assert_non_null(strstr(e.msg, "/nonexistent/key.pem"));
}

/* Withdrawing the notices takes the marker, the labels and our CDI spec, nothing else. */
static void test_expose_withdraw(void **state)
{
	struct scratch_fixture *f = *state;
	struct expose_opts o = {.root = f->root,
				.install_dir = "/home/kubernetes/bin/nvidia",
				.cdi_dir = "/var/run/cdi",
				.cdi_kind = "nvidia.com/gpu"};
	struct err e;

	put(f, READY_FILE + 1, "IS_HOST_DRIVER=false\n");
	put(f, LABELS_FILE + 1, "nvidia.com/gpu.present=true\n");
	put(f, "var/run/cdi/other.json", "{}\n");
	err_clear(&e);
	assert_int_equal(expose_withdraw_notices(&o, f->fd, &e), 0);
	assert_false(exists(f, READY_FILE + 1));
	assert_false(exists(f, LABELS_FILE + 1));
	assert_true(exists(f, "var/run/cdi/other.json"));
}

/* The metrics file test_metrics_* wrote, /m/x.prom under F's root, into TEXT. */
static void read_metrics(const struct scratch_fixture *f, char *text, size_t size)
{
	char path[160];
	FILE *in;
	size_t n;

	snprintf(path, sizeof(path), "%s/m/x.prom", f->root);
	in = fopen(path, "r");
	assert_non_null(in);
	n = fread(text, 1, size - 1, in);
	fclose(in);
	text[n] = '\0';
}

/* The stages that ran to their end, in pipeline order, with their summed seconds. */
static void test_metrics_timing(void **state)
{
	struct scratch_fixture *f = *state;
	struct timing t = {0};
	char text[8192];
	const char *p, *q;
	struct err e;

	timing_add(&t, TIMING_EXPOSE, 5000);
	timing_add(&t, TIMING_INDEX, 1200000);
	timing_add(&t, TIMING_INDEX, 34001); /* asked again: sums */
	timing_add(&t, TIMING_HOST, 0);
	timing_add(NULL, TIMING_KERNEL, 1);
	t.insert_us = 777; /* not reported without the kernel stage */
	err_clear(&e);
	assert_int_equal(mkdirat(f->fd, "m", 0755), 0);
	assert_int_equal(
		metrics_write(f->fd, "/m/x.prom",
			      &(struct metrics_report){.driver = {.version = "550.90",
								  .module_type = "proprietary",
								  .kernel = "6.1"},
						       .times = &t},
			      &e),
		0);
	read_metrics(f, text, sizeof(text));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_driver_info{version=\"550.90\",kernel=\"6.1\",module_type=\"proprietary\"} 1\n"));
	/* The installer's own release and commit, whatever the run did. */
	assert_non_null(strstr(text,
			       "nvidia_driver_installer_build_info{version=\"" INSTALLER_VERSION
			       "\",commit=\"" INSTALLER_COMMIT "\"} 1\n"));
	p = strstr(text,
		   "nvidia_driver_installer_stage_duration_seconds{stage=\"host\"} 0.000000\n"
		   "nvidia_driver_installer_stage_duration_seconds{stage=\"index\"} 1.234001\n"
		   "nvidia_driver_installer_stage_duration_seconds{stage=\"expose\"} 0.005000\n");
	if (!p)
		fail_msg("stage lines: %s", text);
	q = strstr(text, "stage=\"kernel\"");
	assert_null(q);
	assert_null(strstr(text, "module_insert"));
	assert_string_equal(p + strlen(p) - strlen("0.005000\n"),
			    "0.005000\n"); /* the last lines */
}

/* With the kernel stage, its part in the kernel's insertion calls follows the stages. */
static void test_metrics_insert(void **state)
{
	struct scratch_fixture *f = *state;
	struct timing t = {0};
	char text[8192];
	struct err e;

	timing_add(&t, TIMING_KERNEL, 250000);
	timing_add(&t, TIMING_DEVICES, 1500);
	t.insert_us = 200125;
	err_clear(&e);
	assert_int_equal(mkdirat(f->fd, "m", 0755), 0);
	assert_int_equal(
		metrics_write(f->fd, "/m/x.prom", &(struct metrics_report){.times = &t}, &e), 0);
	read_metrics(f, text, sizeof(text));
	if (!strstr(text,
		    "nvidia_driver_installer_stage_duration_seconds{stage=\"kernel\"} 0.250000\n"
		    "nvidia_driver_installer_stage_duration_seconds{stage=\"devices\"} 0.001500\n"
		    "# HELP nvidia_driver_installer_module_insert_duration_seconds ") ||
	    !strstr(text, "\nnvidia_driver_installer_module_insert_duration_seconds 0.200125\n"))
		fail_msg("kernel lines: %s", text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_hostpath_opts),	 scratch_unit_test(test_source_opts),
		scratch_unit_test(test_expose_withdraw), scratch_unit_test(test_metrics_timing),
		scratch_unit_test(test_metrics_insert),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
