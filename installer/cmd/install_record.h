/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The install command's run record, below its three files: install.c makes one per run
 * and runs the pipeline over it, install_plan.c fills its plan, install_switch.c changes
 * the node by it. Only those files (and tests) include it.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/config.h"
#include "cmd/nodeask.h"
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
	/* dry run with --rdma other than off: what the load would decide (kernel_rdma_decide) */
	bool has_rdma;
	struct kernel_rdma_decision rdma;
	struct timing times; /* each stage's time, for the metrics file */
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
	uint64_t t0;		/* when the run began, for the durations it logs */
	struct nodeask *ask;	/* this node's Node, or NULL (cmd/nodeask.h) */
	char ask_off[512];	/* why ask is NULL */
	struct waiting waiting; /* --wait-for-package: what the run waits, or waited, for */
	bool is_waiting;	/* between two checks: the metrics say so */
	bool has_waited;	/* the choice came after a wait */
};

/* A fresh staging tree of the choice (stage_package): its name in the install dir, an fd on it. */
struct staged {
	const char *name;
	int fd;
};
