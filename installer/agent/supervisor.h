/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver's daemons the node agent runs, as a table (agent/supervisor.c): one row per
 * daemon, in the order they start and the reverse of the order they stop, each with the
 * one function that decides at a look whether it runs, with which arguments, and starts it
 * when due (agent/daemons.h does the starting, the watching and the backoff), and, for a
 * daemon the node's readiness depends on, the function that says why it does not serve.
 * See docs/design.md, "Daemons and the installer", and docs/hacking.md, "A new agent
 * daemon".
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/daemons.h"
#include "agent/health.h"

/* The rows, in start order: the index of each in struct supervisor's daemons. */
enum { D_PERSISTENCED, D_NVLSM, D_FABRICMANAGER, D_MPS, N_DAEMONS };

/* What the daemons' state is: each row's daemon, and what its function keeps between looks. */
struct supervisor {
	struct daemon daemons[N_DAEMONS];
	/* The config Fabric Manager is started with ("": its default), and why it was not. */
	char fm_cfg[PATH_MAX + 64];
	char fm_refused[256];
	char fm_refused_for[64]; /* the driver version fm_refused was found for */
	char nvlsm_wait[256];	 /* on NVLink 5, why Fabric Manager waits for NVLSM, or "" */
	char nvlsm_cfg[PATH_MAX + 64];
	/*
	 * The FM-SM socket as it was just before NVLSM last started: one that a killed NVLSM
	 * left behind is not the next one serving.
	 */
	struct nvlsm_mark {
		bool present;
		dev_t dev;
		ino_t ino;
		struct timespec ctim;
	} nvlsm_before;
	/* MPS's directories on the host, resolved, as its environment gives them. */
	char mps_pipe_env[PATH_MAX + 32], mps_log_env[PATH_MAX + 32];
	/* Reaps every child of the agent (a daemon's, or another's): while daemons settle. */
	void (*reap)(void *arg);
	void *reap_arg;
};

/* What a row's function sees at a look. */
struct daemon_look {
	int root_fd;
	const char *install_dir; /* its host path */
	const char *dir;	 /* the install dir as it resolves now (supervisor_run) */
	const struct nodestate *s;
};

/* Each row's daemon as the table describes it, stopped; REAP(ARG) reaps the agent's children. */
void supervisor_init(struct supervisor *sv, void (*reap)(void *arg), void *arg);

/*
 * One look: with RUN false (the installed driver not loaded, an installer holding them)
 * every daemon stops; else each row's function decides, in the table's order. L->dir is
 * set here.
 */
void supervisor_run(struct supervisor *sv, struct daemon_look *l, bool run);

/* Stops every daemon, in the table's reverse order, those starting settled first. How many ran. */
unsigned supervisor_stop(struct supervisor *sv);

/* A child ended (PID, wait STATUS): true when it was a daemon's, or a daemon's first process. */
bool supervisor_reaped(struct supervisor *sv, pid_t pid, int status);

/*
 * Why the node is not ready for REASON because of a daemon (the first row of that reason
 * whose daemon does not serve), into BUF; NULL when every such daemon serves.
 */
const char *supervisor_not_ready(const struct supervisor *sv, const struct daemon_look *l,
				 enum health_reason reason, char *buf, size_t size);

/* The processes of the daemons (their first ones too) into PIDS (2 * N_DAEMONS). How many. */
size_t supervisor_pids(const struct supervisor *sv, pid_t *pids);

/* The daemons' Prometheus series, malloc'd, or NULL. */
char *supervisor_render(const struct supervisor *sv);
