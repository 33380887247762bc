// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stage/pending.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/jsonfile.h"
#include "util/str.h"

#define PENDING_FIELDS(X)                                                                          \
	X(id, true)                                                                                \
	X(driver_version, true)                                                                    \
	X(module_type, false)                                                                      \
	X(reason, true)                                                                            \
	X(requested, false)                                                                        \
	X(module_args, false)                                                                      \
	X(since, false)                                                                            \
	X(waiting_for, false)                                                                      \
	X(mig_layout, false)

static int field(json_object *o, const char *key, bool required, char *out, size_t size,
		 struct err *e)
{
	json_object *v;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return required ? err_set(e, EXIT_UNEXPECTED, "missing \"%s\"", key) : 0;
	if (str_fmt(out, size, "%s", json_object_get_string(v)) < 0)
		return err_set(e, EXIT_UNEXPECTED, "\"%s\" is too long", key);
	return 0;
}

int pending_read(int dir_fd, struct pending *ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	_cleanup_free_ char *buf = NULL;
	struct pending p;
	size_t len;

	memset(&p, 0, sizeof(p));
	if (fs_read_at(dir_fd, PENDING_FILE, 64 << 10, &buf, &len, e) < 0)
		return err_errnum(e) == ENOENT ? (err_clear(e), 1)
					       : err_wrap(e, "pending upgrade record");
	o = json_tokener_parse(buf);
	if (!o || !json_object_is_type(o, json_type_object))
		return err_set(e, EXIT_UNEXPECTED, "pending upgrade record '%s': not a JSON object",
			       PENDING_FILE);
#define READ_FIELD(name, req)                                                                      \
	if (field(o, #name, req, p.name, sizeof(p.name), e) < 0)                                   \
		return err_wrap(e, "pending upgrade record '%s'", PENDING_FILE);
	PENDING_FIELDS(READ_FIELD)
#undef READ_FIELD
	if (strcmp(p.reason, PENDING_DRIVER_IN_USE) != 0 &&
	    strcmp(p.reason, PENDING_MODULE_ARGS) != 0 && strcmp(p.reason, PENDING_MIG_LAYOUT) != 0)
		return err_set(e, EXIT_UNEXPECTED,
			       "pending upgrade record '%s': unknown reason '%s'", PENDING_FILE,
			       p.reason);
	/* An id names a directory under .versions/: nothing that could leave it. */
	if (!p.id[0] || p.id[0] == '.' || strchr(p.id, '/'))
		return err_set(e, EXIT_UNEXPECTED, "pending upgrade record '%s': bad id '%s'",
			       PENDING_FILE, p.id);
	*ret = p;
	return 0;
}

int pending_write(int dir_fd, const struct pending *p, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	_cleanup_free_ char *s = NULL;

	if (!o)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "pending upgrade record");
	json_object_object_add(o, "format", json_object_new_int(1));
#define ADD_FIELD(name, req) json_object_object_add(o, #name, json_object_new_string(p->name));
	PENDING_FIELDS(ADD_FIELD)
#undef ADD_FIELD
	s = jsonfile_text(o);
	if (!s)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "pending upgrade record");
	if (fs_write_atomic_at(dir_fd, PENDING_FILE, s, strlen(s), 0644, e) < 0)
		return err_wrap(e, "pending upgrade record");
	return 0;
}

int pending_clear(int dir_fd, struct err *e)
{
	if (unlinkat(dir_fd, PENDING_FILE, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "remove '%s'", PENDING_FILE);
	return 0;
}

#define FAILURE_FIELDS(X)                                                                          \
	X(driver_version, true)                                                                    \
	X(module_type, false)                                                                      \
	X(cause, true)                                                                             \
	X(failed_at, false)

int pending_failure_read(int dir_fd, struct pending_failure *ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	_cleanup_free_ char *buf = NULL;
	struct pending_failure f;
	json_object *v;
	size_t len;

	memset(&f, 0, sizeof(f));
	if (fs_read_at(dir_fd, PENDING_FAILED_FILE, 16 << 10, &buf, &len, e) < 0)
		return err_errnum(e) == ENOENT ? (err_clear(e), 1)
					       : err_wrap(e, "pending failure report");
	o = json_tokener_parse(buf);
	if (!o || !json_object_is_type(o, json_type_object))
		return err_set(e, EXIT_UNEXPECTED, "pending failure report '%s': not a JSON object",
			       PENDING_FAILED_FILE);
#define READ_FIELD(name, req)                                                                      \
	if (field(o, #name, req, f.name, sizeof(f.name), e) < 0)                                   \
		return err_wrap(e, "pending failure report '%s'", PENDING_FAILED_FILE);
	FAILURE_FIELDS(READ_FIELD)
#undef READ_FIELD
	if (!json_object_object_get_ex(o, "exit_code", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1 ||
	    json_object_get_int64(v) > 255)
		return err_set(e, EXIT_UNEXPECTED,
			       "pending failure report '%s': \"exit_code\" is not an exit code",
			       PENDING_FAILED_FILE);
	f.exit_code = (int)json_object_get_int64(v);
	*ret = f;
	return 0;
}

int pending_failure_write(int dir_fd, const struct pending_failure *f, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	_cleanup_free_ char *s = NULL;

	if (!o)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "pending failure report");
	json_object_object_add(o, "format", json_object_new_int(1));
#define ADD_FIELD(name, req) json_object_object_add(o, #name, json_object_new_string(f->name));
	FAILURE_FIELDS(ADD_FIELD)
#undef ADD_FIELD
	json_object_object_add(o, "exit_code", json_object_new_int(f->exit_code));
	s = jsonfile_text(o);
	if (!s)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "pending failure report");
	if (fs_write_atomic_at(dir_fd, PENDING_FAILED_FILE, s, strlen(s), 0644, e) < 0)
		return err_wrap(e, "pending failure report");
	return 0;
}

int pending_failure_clear(int dir_fd, struct err *e)
{
	if (unlinkat(dir_fd, PENDING_FAILED_FILE, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "remove '%s'", PENDING_FAILED_FILE);
	return 0;
}

struct pending_plan pending_decide(bool is_current, const char *current_id, const struct pending *p,
				   const char *choice_id, bool args_differ)
{
	struct pending_plan r = {.action = PENDING_STAGE, .clear = false};

	if (is_current) {
		/*
		 * A version pending is obsolete: the request is the current version again. A
		 * parameter change pending stays only while the parameters still differ.
		 */
		r.action = args_differ ? PENDING_RELOAD_ARGS : PENDING_ENSURE;
		r.clear = p && (strcmp(p->reason, PENDING_DRIVER_IN_USE) == 0 ||
				(strcmp(p->reason, PENDING_MODULE_ARGS) == 0 &&
				 (!args_differ || strcmp(p->id, current_id) != 0)));
		/* A layout that waits is settled by the publication that follows (expose). */
		return r;
	}
	if (p && strcmp(p->reason, PENDING_DRIVER_IN_USE) == 0 && strcmp(p->id, choice_id) == 0)
		r.action = PENDING_USE_STAGED;
	/* Any other record stays until a new one replaces it or the switch clears it. */
	return r;
}
