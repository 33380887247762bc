/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What install changes on the node (install_switch.c): the installed version made live
 * (loaded, exposed), the switch to a staged version and its rollback, a change that waits
 * (the pending record), a reload with new module parameters.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cmd/install_record.h"

/* The installed version is the one wanted: links, then the kernel side. 0 or -1. */
_must_check_ int install_ensure(struct run *run, struct err *e);
/*
 * Loads the current version's modules from the install dir (the re-run and reboot path,
 * a rollback). A busy driver of another version is a failure here (exit 7): what waits
 * under --when-busy defer is a staged new version, not the installed one. Returns 0 or -1.
 */
_must_check_ int install_load_current(struct run *run, struct err *e);
/* US microseconds of the kernel stage that ended with KN's kernel_load, added to T: the
 * device nodes' part as their own stage, the kernel's insertion calls noted apart. When
 * the load failed (!DONE), the time counts as the kernel stage's without ending it. */
void install_time_load(struct timing *t, const struct kernel *kn, uint64_t us, bool done);
/* Makes VERSION usable and visible (expose_run); its time counts unless it failed. 0 or -1. */
_must_check_ int install_expose(struct run *run, const char *version, struct err *e);

/*
 * After a publication, a GPU layout that waits for idle GPUs is recorded
 * as pending (reason PENDING_MIG_LAYOUT), and a record of one that no longer waits (made,
 * or no longer asked for) is withdrawn. Returns 0 or -1.
 */
_must_check_ int install_layout_settle(struct run *run, struct err *e);

/*
 * The switch to a staged version, ST (NULL: the pending version already
 * under .versions/); IS_PENDING says the choice is the pending version, whose failure
 * falls back to the current one (install_pending_failed). Returns 0 or -1.
 */
_must_check_ int install_switch(struct run *run, const struct staged *st, bool is_pending,
				struct err *e);
/* The live driver runs with other module parameters (DIFF): reloads, or waits. 0 or -1. */
_must_check_ int install_reload_args(struct run *run, const char *diff, struct err *e);
/* Removes the pending record and its labels (the version goes at the next cleanup). 0 or -1. */
_must_check_ int install_pending_withdraw(struct run *run, struct err *e);
/* The pending version failed (E says how): withdrawn, the current one loads. Returns -1. */
int install_pending_failed(struct run *run, struct err *e);
