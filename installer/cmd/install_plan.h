/* SPDX-License-Identifier: Apache-2.0 */
/*
 * install's plan (install_plan.c), what install knows before it acts, and the plan shown
 * for a dry run, as text and as JSON (docs/json.md, "install --dry-run --json").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cmd/install_record.h"

/* The choice as the driver to load: its version and flavour, for the running kernel. */
struct driver_id install_chosen(const struct plan *p);
/* The current version as the driver to load: for the running kernel, not the manifest's. */
struct driver_id install_current(const struct plan *p);

/*
 * With the host probed, the index, the choice and what is installed. REUSE: the node's
 * fresh copy of the index may serve (false: the mirrors are asked, a wait's next check).
 * 0 or -1.
 */
_must_check_ int install_plan_make(struct run *run, bool reuse, struct err *e);
/*
 * The index and the choice (again, after a failed package: REUSE false asks the mirrors).
 * Returns 0 or -1.
 */
_must_check_ int install_plan_source(struct run *run, bool reuse, struct err *e);
/* Whether the choice is what is installed, and whether its package is in the cache. */
void install_plan_compare(struct run *run);
/* The plan on stdout, as text or (--json) as JSON; nothing changes. Returns 0 or -1. */
_must_check_ int install_dry_run(struct run *run, struct err *e);
/* The loaded modules in one line: "nvidia 550.90.07, nouveau", "none", or "unknown" without module support. */
void install_describe_modules(const struct host *h, char *buf, size_t size);
