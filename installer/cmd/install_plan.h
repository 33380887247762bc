/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What install knows before it acts (the plan), and its dry-run output: the text plan and
 * the JSON one (docs/json.md, "install --dry-run --json"). Internal to the install command.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "cmd/config.h"
#include "host/host.h"
#include "kernel/kernel.h"
#include "expose/expose.h"
#include "stage/stage.h"
#include "source/source.h"

struct plan {
	struct host host;
	struct source src;
	struct repo_choice choice;
	struct manifest current; /* valid when has_current */
	char current_id[NAME_MAX + 1];
	bool has_current;
	bool up_to_date; /* the chosen package is the current one */
	bool links_ok;
	bool cached;	   /* the package is in the node cache */
	bool stage_failed; /* downloading or unpacking the choice failed */
	bool has_mount;
	struct pending pending; /* valid when has_pending */
	bool has_pending;
	bool pending_damaged;	      /* a record that does not parse: cleared */
	char choice_id[NAME_MAX + 1]; /* the id the choice has (or would have) in .versions/ */
	struct mount_info mount;      /* of the install dir */
	struct kernel *kernel;	      /* trust and loaded state, for the plan */
	char not_writable[512];	      /* dry run: why install could not write, or "" */
	struct timing times;	      /* each stage's time, for the metrics file */
};

/* The loaded modules in one line: "nvidia 550.90.07, nouveau", "none", or "unknown" without module support. */
void install_describe_modules(const struct host *h, char *buf, size_t size);

/* The plan as text on stdout (install --dry-run). */
void install_plan_print(const struct config *c, const struct plan *p);

/* The plan as JSON on stdout (install --dry-run --json); T is the kernel's trust state. */
void install_plan_print_json(const struct config *c, const struct plan *p, const struct ktrust *t);
