/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "cmd/config.h"
#include "stage/stage.h"
#include "util/err.h"

/*
 * The report of a pending version that failed and was withdrawn (installer/stage/pending.h,
 * struct pending_failure), installer/cmd/pending_failed.c. pfail_record: writes it for
 * driver D (its version and flavour, NULL when not stated) failed with CAUSE, and its
 * label; best effort (logged), the failure stays the run's error. pfail_clear: the
 * version or a newer one was staged or installed: removes both; 0 or -1. pfail_load: 1
 * and RET filled, 0 when none; a damaged report is logged once and removed with its
 * label. pfail_read: the same for the commands that only read (status, doctor): a damaged
 * one is none.
 */
void pfail_record(int root_fd, int dir_fd, const struct driver_id *d, const struct err *cause);
_must_check_ int pfail_clear(int root_fd, int dir_fd, struct err *e);
int pfail_load(int root_fd, int dir_fd, struct pending_failure *ret);
int pfail_read(const struct config *c, int root_fd, struct pending_failure *ret);
/* RET as docs/json.md's "pending_failure" object, or null for NULL. */
json_object *pfail_json(const struct pending_failure *f);
/* "550.90.07 (open modules) failed at T (exit 5): CAUSE" for the text forms, into BUF. */
void pfail_text(const struct pending_failure *f, char *buf, size_t size);
