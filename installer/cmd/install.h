/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The install command's own header, internal to its three files: install.c runs the
 * pipeline over one run record (struct run); install_switch.c changes the node (the
 * switch, its rollback, a change that waits, a reload with new module parameters);
 * install_plan.c makes the plan, what install knows before it acts, and shows it for a
 * dry run, as text and as JSON (docs/json.md, "install --dry-run --json").
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/*
 * One install run, made once at its start: the stages' options, built from the
 * configuration there and nowhere else; what the run holds (the host root, the lock, the
 * install dir, the cache); and the plan. Every step of the run takes it. C stays for what
 * the command itself reads: the request, --skip-modules, --dry-run, the install dir's
 * path, the metrics file, the hand-over.
 */
struct run {
	const struct config *c;
	struct kernel_opts ko;
	struct expose_opts xo;
	struct expose_result xr; /* what xo's publication left waiting (xo.result) */
	struct source_opts so;
	struct hostpath_opts ho;
	int root_fd;
	int lock_fd;		/* -1 while the node lock is not held (always for a dry run) */
	struct installdir *dir; /* NULL: none yet (a dry run on a fresh node) */
	struct cache *cache;
	struct plan p;
	uint64_t t0; /* when the run began, for the durations it logs */
};

/* A fresh staging tree of the choice (stage_package): its name in the install dir, an fd on it. */
struct staged {
	const char *name;
	int fd;
};

/* The choice as the driver to load: its version and flavour, for the running kernel. */
struct driver_id install_chosen(const struct plan *p);
/* The current version as the driver to load: for the running kernel, not the manifest's. */
struct driver_id install_current(const struct plan *p);

/*
 * install_switch.c: after a publication, a GPU layout that waits for idle GPUs is recorded
 * as pending (reason PENDING_MIG_LAYOUT), and a record of one that no longer waits (made,
 * or no longer asked for) is withdrawn. Returns 0 or -1.
 */
_must_check_ int install_layout_settle(struct run *run, struct err *e);

/* install_plan.c: with the host probed, the index, the choice and what is installed. 0 or -1. */
_must_check_ int install_plan_make(struct run *run, struct err *e);
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

/* install.c: the installed version is the one wanted: links, then the kernel side. 0 or -1. */
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
 * install_switch.c: the switch to a staged version, ST (NULL: the pending version already
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
