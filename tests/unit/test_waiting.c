// SPDX-License-Identifier: Apache-2.0
/*
 * install --wait-for-package: the backoff between two checks (cmd/install_wait.h) and the
 * wait's record, INSTALL_DIR/.waiting.json (stage/waiting.c): written and read back (the
 * writer's pid too, which status does not show), and every damaged record refused with the
 * field it names.
 */
#include "cmocka_prelude.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/install_wait.h"
#include "stage/waiting.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "scratch.h"

/* 5 s, doubling, never past the cap; a cap under 5 s is every wait. */
static void test_backoff(void **state)
{
	static const uint64_t want[] = {5000, 10000, 20000, 30000, 30000};
	uint64_t ms = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		ms = install_wait_next_ms(ms, 30);
		assert_int_equal(ms, want[i]);
	}
	assert_int_equal(install_wait_next_ms(0, 1), 1000);
	assert_int_equal(install_wait_next_ms(1000, 1), 1000);
	assert_int_equal(install_wait_next_ms(0, 3600), WAIT_FIRST_MS);
	assert_int_equal(install_wait_next_ms(40000, 60), 60000);
	/* A long wait stays at the cap, whatever it doubled from. */
	assert_int_equal(install_wait_next_ms(UINT64_C(1) << 40, 3600), 3600000);
}

static struct waiting rec(void)
{
	struct waiting w;

	memset(&w, 0, sizeof(w));
	snprintf(w.kernel, sizeof(w.kernel), "6.1.0-58-amd64");
	snprintf(w.arch, sizeof(w.arch), "x86_64");
	snprintf(w.os, sizeof(w.os), "debian");
	snprintf(w.driver_version, sizeof(w.driver_version), "535.261.03");
	snprintf(w.flavour, sizeof(w.flavour), "proprietary");
	snprintf(w.reason, sizeof(w.reason), "select: the default driver has no package");
	w.since = 1796580000;
	w.last_check = 1796580005;
	w.next_check = 1796580015;
	return w;
}

/* Written, read back whole; os_build "" is null; cleared, and a second clear is no error. */
static void test_record(void **state)
{
	struct scratch_fixture *f = *state;
	struct waiting w = rec(), r;
	_cleanup_free_ char *text = NULL;
	size_t len;
	struct err e;

	err_clear(&e);
	assert_int_equal(waiting_read(f->fd, &r, &e), 1);
	assert_int_equal(waiting_write(f->fd, &w, &e), 0);
	assert_int_equal(fs_read_at(f->fd, WAITING_FILE, 1 << 16, &text, &len, &e), 0);
	assert_non_null(strstr(text, "\"os_build\": null"));
	assert_non_null(strstr(text, "\"since\": \"2026-12-06T18:00:00Z\""));
	assert_int_equal(waiting_read(f->fd, &r, &e), 0);
	assert_memory_equal(&r, &w, sizeof(w));
	snprintf(w.os_build, sizeof(w.os_build), "18244.151.14");
	assert_int_equal(waiting_write(f->fd, &w, &e), 0);
	assert_int_equal(waiting_read(f->fd, &r, &e), 0);
	assert_string_equal(r.os_build, "18244.151.14");
	/* The writer's pid is in the file, read back (which run may clear it), not in status. */
	w.pid = 4242;
	assert_int_equal(waiting_write(f->fd, &w, &e), 0);
	assert_int_equal(waiting_read(f->fd, &r, &e), 0);
	assert_int_equal(r.pid, 4242);
	{
		_cleanup_(json_object_putp) json_object *o = waiting_json(&w);

		assert_non_null(o);
		assert_false(json_object_object_get_ex(o, "pid", NULL));
	}
	assert_int_equal(waiting_clear(f->fd, &e), 0);
	assert_int_equal(waiting_read(f->fd, &r, &e), 1);
	assert_int_equal(waiting_clear(f->fd, &e), 0);
}

#define GOOD_HEAD "{\"format\": 1, \"kernel\": \"k\", \"arch\": \"x86_64\", \"os\": \"cos\", "
#define GOOD_MID "\"driver_version\": \"1.2.3\", \"flavour\": \"open\", \"reason\": \"r\", "
#define GOOD_TIMES                                                                                 \
	"\"since\": \"2026-12-06T18:00:00Z\", \"last_check\": \"2026-12-06T18:00:05Z\", "          \
	"\"next_check\": \"2026-12-06T18:00:15Z\""

/* Each damaged record refused, naming what is wrong; RET untouched. */
static void test_parse(void **state)
{
	static const struct {
		const char *text, *needle;
	} bad[] = {
		{"[]", "not a JSON object"},
		{"{\"format\": 1", "not a JSON object"},
		{"{\"format\": 2}", "\"format\" is not 1"},
		{"{\"format\": \"1\"}", "\"format\" is not 1"},
		{"{\"format\": 1, \"arch\": \"x\"}", "missing \"kernel\""},
		{GOOD_HEAD "\"flavour\": \"open\", \"reason\": \"r\", " GOOD_TIMES "}",
		 "missing \"driver_version\""},
		{GOOD_HEAD
		 "\"driver_version\": 5, \"flavour\": \"open\", \"reason\": \"r\", " GOOD_TIMES "}",
		 "\"driver_version\" is not a string"},
		{GOOD_HEAD
		 "\"driver_version\": \"\", \"flavour\": \"open\", \"reason\": \"r\", " GOOD_TIMES
		 "}",
		 "\"driver_version\" is empty"},
		{GOOD_HEAD "\"os_build\": 7, " GOOD_MID GOOD_TIMES "}",
		 "\"os_build\" is not a string"},
		{GOOD_HEAD GOOD_MID
		 "\"since\": \"yesterday\", \"last_check\": \"2026-12-06T18:00:05Z\", "
		 "\"next_check\": \"2026-12-06T18:00:15Z\"}",
		 "\"since\": 'yesterday' is not a UTC time"},
		{GOOD_HEAD GOOD_MID
		 "\"since\": \"2026-12-06T18:00:00+01:00\", \"last_check\": "
		 "\"2026-12-06T18:00:05Z\", \"next_check\": \"2026-12-06T18:00:15Z\"}",
		 "is not a UTC time"},
		{GOOD_HEAD GOOD_MID
		 "\"since\": \"2026-12-06T18:00:10Z\", \"last_check\": "
		 "\"2026-12-06T18:00:05Z\", \"next_check\": \"2026-12-06T18:00:15Z\"}",
		 "out of order"},
		{GOOD_HEAD GOOD_MID "\"since\": \"2026-12-06T18:00:00Z\", \"last_check\": "
				    "\"2026-12-06T18:00:05Z\"}",
		 "missing \"next_check\""},
		{GOOD_HEAD GOOD_MID GOOD_TIMES ", \"pid\": 0}", "\"pid\" is not a process id"},
		{GOOD_HEAD GOOD_MID GOOD_TIMES ", \"pid\": \"7\"}", "\"pid\" is not a process id"},
	};
	struct waiting w = rec(), before = w;
	struct err e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err_clear(&e);
		if (waiting_parse(bad[i].text, &w, &e) == 0)
			fail_msg("accepted: %s", bad[i].text);
		if (!strstr(e.msg, bad[i].needle))
			fail_msg("%s: '%s' lacks '%s'", bad[i].text, e.msg, bad[i].needle);
		assert_memory_equal(&w, &before, sizeof(w));
	}
	err_clear(&e);
	assert_int_equal(waiting_parse(GOOD_HEAD GOOD_MID GOOD_TIMES "}", &w, &e), 0);
	assert_string_equal(w.kernel, "k");
	assert_string_equal(w.os_build, "");
	assert_int_equal(w.next_check - w.since, 15);
}

/* A record that is not a regular file's text (a NUL inside) is damaged, not cut short. */
static void test_read_damaged(void **state)
{
	struct scratch_fixture *f = *state;
	static const char text[] = "{\"format\": 1}\0{\"kernel\": \"k\"}";
	struct waiting r;
	struct err e;
	int fd;

	err_clear(&e);
	fd = openat(f->fd, WAITING_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	assert_int_equal(waiting_read(f->fd, &r, &e), -1);
	assert_non_null(strstr(e.msg, "waiting record '" WAITING_FILE "'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff),
		scratch_unit_test(test_record),
		cmocka_unit_test(test_parse),
		scratch_unit_test(test_read_damaged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
