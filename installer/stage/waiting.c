// SPDX-License-Identifier: Apache-2.0
/*
 * The record of an install that waits for the repository to serve a package for this node
 * (install --wait-for-package, docs/design.md, "A kernel nobody built for"):
 * INSTALL_DIR/.waiting.json, written atomically by the waiting run at each check and removed
 * when its wait ends, so that status, doctor and the metrics say what the node waits for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stage/waiting.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/jsonfile.h"
#include "util/str.h"

/* The record's strings: each one required but os_build (null for an image without one). */
#define WAITING_STRINGS(X)                                                                         \
	X(kernel, true)                                                                            \
	X(arch, true)                                                                              \
	X(os, true)                                                                                \
	X(os_build, false)                                                                         \
	X(driver_version, true)                                                                    \
	X(flavour, true)                                                                           \
	X(reason, true)

/* The record's times: RFC 3339 in UTC, to the second ("2026-12-06T18:00:00Z"). */
#define WAITING_TIMES(X)                                                                           \
	X(since)                                                                                   \
	X(last_check)                                                                              \
	X(next_check)

int waiting_time_format(int64_t t, char buf[STR_UTC_SIZE])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t < 0 || !gmtime_r(&tt, &tm) ||
	    strftime(buf, STR_UTC_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

int waiting_time_parse(const char *s, int64_t *ret)
{
	struct tm tm;
	const char *end;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -1;
	t = timegm(&tm);
	if (t == (time_t)-1 || t < 0)
		return -1;
	*ret = (int64_t)t;
	return 0;
}

static int get_string(json_object *o, const char *key, bool required, char *out, size_t size,
		      struct err *e)
{
	json_object *v;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return required ? err_set(e, EXIT_UNEXPECTED, "missing \"%s\"", key) : 0;
	if (!json_object_is_type(v, json_type_string))
		return err_set(e, EXIT_UNEXPECTED, "\"%s\" is not a string", key);
	if (str_fmt(out, size, "%s", json_object_get_string(v)) < 0)
		return err_set(e, EXIT_UNEXPECTED, "\"%s\" is too long", key);
	if (required && !out[0])
		return err_set(e, EXIT_UNEXPECTED, "\"%s\" is empty", key);
	return 0;
}

static int get_time(json_object *o, const char *key, int64_t *out, struct err *e)
{
	char s[STR_UTC_SIZE];

	if (get_string(o, key, true, s, sizeof(s), e) < 0)
		return -1;
	if (waiting_time_parse(s, out) < 0)
		return err_set(e, EXIT_UNEXPECTED, "\"%s\": '%s' is not a UTC time (RFC 3339)", key,
			       s);
	return 0;
}

int waiting_parse(const char *buf, struct waiting *ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = json_tokener_parse(buf);
	struct waiting w;
	json_object *v;

	memset(&w, 0, sizeof(w));
	if (!o || !json_object_is_type(o, json_type_object))
		return err_set(e, EXIT_UNEXPECTED, "not a JSON object");
	if (!json_object_object_get_ex(o, "format", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) != 1)
		return err_set(e, EXIT_UNEXPECTED, "\"format\" is not 1");
#define READ_STRING(name, req)                                                                     \
	if (get_string(o, #name, req, w.name, sizeof(w.name), e) < 0)                              \
		return -1;
	WAITING_STRINGS(READ_STRING)
#undef READ_STRING
#define READ_TIME(name)                                                                            \
	if (get_time(o, #name, &w.name, e) < 0)                                                    \
		return -1;
	WAITING_TIMES(READ_TIME)
#undef READ_TIME
	/* "pid", the run that writes the record (which run may clear it): a record without is 0. */
	if (json_object_object_get_ex(o, "pid", &v) && !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0)
			return err_set(e, EXIT_UNEXPECTED, "\"pid\" is not a process id");
		w.pid = json_object_get_int64(v);
	}
	if (w.last_check < w.since || w.next_check < w.last_check)
		return err_set(e, EXIT_UNEXPECTED,
			       "the times are out of order (since, last_check, next_check)");
	*ret = w;
	return 0;
}

int waiting_read(int dir_fd, struct waiting *ret, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (fs_read_at(dir_fd, WAITING_FILE, 16 << 10, &buf, &len, e) < 0)
		return err_errnum(e) == ENOENT ? (err_clear(e), 1) : err_wrap(e, "waiting record");
	if (strlen(buf) != len || waiting_parse(buf, ret, e) < 0)
		return err_wrap(e, "waiting record '%s'", WAITING_FILE);
	return 0;
}

static json_object *time_json(int64_t t)
{
	char s[STR_UTC_SIZE];

	return waiting_time_format(t, s) < 0 ? NULL : json_object_new_string(s);
}

static void add_fields(json_object *o, const struct waiting *w)
{
#define ADD_STRING(name, req)                                                                      \
	json_object_object_add(o, #name, w->name[0] ? json_object_new_string(w->name) : NULL);
	WAITING_STRINGS(ADD_STRING)
#undef ADD_STRING
#define ADD_TIME(name) json_object_object_add(o, #name, time_json(w->name));
	WAITING_TIMES(ADD_TIME)
#undef ADD_TIME
}

json_object *waiting_json(const struct waiting *w)
{
	json_object *o = json_object_new_object();

	if (o)
		add_fields(o, w);
	return o;
}

int waiting_write(int dir_fd, const struct waiting *w, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	_cleanup_free_ char *s = NULL;

	if (!o)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "waiting record");
	json_object_object_add(o, "format", json_object_new_int(1));
	add_fields(o, w);
	if (w->pid > 0)
		json_object_object_add(o, "pid", json_object_new_int64(w->pid));
	s = jsonfile_text(o);
	if (!s)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "waiting record");
	if (fs_write_atomic_at(dir_fd, WAITING_FILE, s, strlen(s), 0644, e) < 0)
		return err_wrap(e, "waiting record");
	return 0;
}

int waiting_clear(int dir_fd, struct err *e)
{
	if (unlinkat(dir_fd, WAITING_FILE, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "remove '%s'", WAITING_FILE);
	return 0;
}
