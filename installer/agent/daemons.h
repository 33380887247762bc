/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver's daemons, run and watched by the node agent: NVIDIA's persistence daemon
 * (nvidia-persistenced) from the installed bin/. Such a daemon forks into the background
 * and its first process exits: the agent is a child subreaper (PR_SET_CHILD_SUBREAPER),
 * so the daemon becomes its child all the same, and its end is seen (SIGCHLD). A daemon
 * that ends is started again after a backoff: 1 s, doubled after each failure up to
 * DAEMON_BACKOFF_MAX_S, back to 1 s once it stayed up DAEMON_STABLE_S.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/cleanup.h"
#include "util/err.h"

#define DAEMON_BACKOFF_MAX_S 60
#define DAEMON_STABLE_S 60
#define DAEMON_MAX_ARGS 8

enum daemon_state {
	DAEMON_STOPPED,	 /* not started, or stopped on purpose */
	DAEMON_STARTING, /* its first process runs (the daemon forks from it) */
	DAEMON_RUNNING,	 /* the daemon runs: PID */
	DAEMON_BACKOFF,	 /* ended; started again at NEXT_START_NS */
};

struct daemon {
	const char *name;		   /* "nvidia-persistenced" */
	const char *args[DAEMON_MAX_ARGS]; /* after the program, NULL-ended */
	const char *env[4];		   /* "NAME=VALUE" added to its environment, NULL-ended */
	bool foreground;		   /* runs as started (NVLSM), or forks (the others) */
	enum daemon_state state;
	pid_t launcher; /* the process started, while STARTING */
	pid_t pid;	/* the daemon, while RUNNING */
	uint64_t started_ns, next_start_ns;
	unsigned backoff_s;
	uint64_t restarts; /* starts after the first */
	uint64_t starts;
	char last_end[96]; /* how it last ended: "exit 1", "signal 9" */
};

/* The next backoff after one of BACKOFF_S, for a daemon that ran UP_S seconds. */
unsigned daemon_next_backoff(unsigned backoff_s, uint64_t up_s);

/* "exit N" or "signal N" for a wait status. */
void daemon_describe_status(int status, char *buf, size_t size);

/*
 * In a child of the agent, after fork: the signals the agent blocks unblocked, stdin from
 * /dev/null (its other descriptors are close-on-exec), then PATH exec'd with ARGV
 * (NULL-terminated, ARGV[0] its name). If the exec fails, says so on stderr and exits 127.
 */
_noreturn_ void daemon_exec_child(const char *path, const char *const *argv);

/*
 * Starts D from the program at PATH (an executable's path this process can exec: the
 * installed bin/, through /proc/self/fd). Returns 0, or -1 with E set.
 */
_must_check_ int daemon_start(struct daemon *d, const char *path, struct err *e);

/*
 * A child ended (PID, wait STATUS): updates D when it was D's. Returns true when it was.
 * NEW_CHILD is a child of ours not known to any daemon, or 0: the daemon D's first
 * process left behind when it exited 0.
 */
bool daemon_reaped(struct daemon *d, pid_t pid, int status, pid_t new_child);

/* Stops D (SIGTERM, then SIGKILL after TIMEOUT_S) and reaps it. Returns true when it ran. */
bool daemon_stop(struct daemon *d, unsigned timeout_s);

/* Whether D is due to be started (stopped, or its backoff over). */
bool daemon_due(const struct daemon *d, uint64_t now_ns);

/* The daemons' Prometheus series (docs/metrics.md, "The node agent"), malloc'd, or NULL. */
char *daemon_render(const struct daemon *const *ds, size_t n);

/*
 * Runs PATH --version (at most TIMEOUT_S seconds, its output capped at 4 KiB) and puts the
 * first dotted version in what it printed ("Fabric Manager version is : 535.261.03") into
 * BUF. Returns 0, or -1 when it could not be run, did not answer in time, or printed none.
 */
int daemon_version(const char *path, unsigned timeout_s, char *buf, size_t size);

/* The first "N.N[.N...]" token of TEXT into BUF. Returns 0, or -1 when there is none. */
int daemon_parse_version(const char *text, char *buf, size_t size);

/* Whether process PID runs the program NAME (its executable's file name). */
bool daemon_runs(pid_t pid, const char *name);
