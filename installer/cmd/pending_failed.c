// SPDX-License-Identifier: Apache-2.0
/*
 * A pending version that failed and was withdrawn leaves a report: INSTALL_DIR's
 * .pending-failed.json and a label of its own, so that an operator sees afterwards which
 * version failed and why while the current one serves. The run that stages that version
 * (or a newer one) again, or installs one, clears it; uninstall removes it.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "expose/expose.h"
#include "stage/stage.h"
#include "util/log.h"
#include "util/str.h"

void pfail_record(int root_fd, int dir_fd, const struct driver_id *d, const struct err *cause)
{
	struct pending_failure f = {.exit_code = cause->code};
	struct err e;

	snprintf(f.driver_version, sizeof(f.driver_version), "%s", d->version);
	snprintf(f.module_type, sizeof(f.module_type), "%s", d->module_type ? d->module_type : "");
	str_fmt_cut(f.cause, sizeof(f.cause), "%s", cause->msg);
	str_utc_now(f.failed_at);
	err_clear(&e);
	if (pending_failure_write(dir_fd, &f, &e) < 0 ||
	    labels_pending_failed_write(root_fd, d->version, &e) < 0)
		log_msg(LOG_WARN, "install", "%s", e.msg);
}

int pfail_clear(int root_fd, int dir_fd, struct err *e)
{
	return pending_failure_clear(dir_fd, e) < 0 ||
			       labels_pending_failed_write(root_fd, NULL, e) < 0
		       ? -1
		       : 0;
}

int pfail_load(int root_fd, int dir_fd, struct pending_failure *ret)
{
	struct err e;
	int r;

	err_clear(&e);
	r = pending_failure_read(dir_fd, ret, &e);
	if (r >= 0)
		return r == 0;
	log_kv(LOG_WARN, "install", "the pending failure report is damaged: it is removed",
	       "reason", e.msg, LOG_END);
	err_clear(&e);
	if (pfail_clear(root_fd, dir_fd, &e) < 0)
		log_msg(LOG_WARN, "install", "%s", e.msg);
	return 0;
}

int pfail_read(const struct config *c, int root_fd, struct pending_failure *ret)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct err e;

	err_clear(&e);
	if (publish_open(root_fd, c->install_dir, false, &dir, &e) != 0)
		return 0;
	return pending_failure_read(publish_fd(dir), ret, &e) == 0;
}

json_object *pfail_json(const struct pending_failure *f)
{
	json_object *o;

	if (!f)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "driver_version", json_object_new_string(f->driver_version));
	json_object_object_add(o, "module_type", session_json_nonempty(f->module_type));
	json_object_object_add(o, "exit_code", json_object_new_int(f->exit_code));
	json_object_object_add(o, "cause", json_object_new_string(f->cause));
	json_object_object_add(o, "failed_at", session_json_nonempty(f->failed_at));
	return o;
}

void pfail_text(const struct pending_failure *f, char *buf, size_t size)
{
	str_fmt_cut(buf, size, "%s%s%s%s failed at %s (exit %d), withdrawn: %s", f->driver_version,
		    f->module_type[0] ? " (" : "", f->module_type,
		    f->module_type[0] ? " modules)" : "", f->failed_at[0] ? f->failed_at : "?",
		    f->exit_code, f->cause);
}
