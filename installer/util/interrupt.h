/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SIGTERM and SIGINT, handled: the kubelet stops a pod with SIGTERM, and in the pod the
 * installer is its container's PID 1, for which the kernel has no default action (the
 * signal would be dropped, and the kubelet would wait out the grace period, then kill).
 * The handler only records the signal; the run stops at its next safe point
 * (interrupt_check), where what it leaves is a state the next run completes. Between two
 * safe points (an unload and the load that follows it) the signal waits.
 *
 * Restartable where it must be, waking where it must not: the handler has SA_RESTART, so
 * that the run's own and its libraries' I/O between two safe points (libkmod's
 * finit_module, whose wait for a module of the same name is interruptible, a write to a
 * full pipe) completes instead of failing half-way with EINTR. No wait that may last
 * relies on it: each is a safe point of its own, made of calls that SA_RESTART never
 * restarts (poll, ppoll, nanosleep: signal(7)), that looks at the signal when it wakes: a
 * child's end (interrupt_waitpid: ldconfig) or answer (the CUDA check's pipe), a
 * transfer (libcurl's progress callback; interrupt_wake_begin where a loop blocks the
 * signals), a backoff; flock, which has no such form, drops SA_RESTART for its wait
 * (interrupt_wakes). A path that must run whole (a restore) holds them (interrupt_hold).
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/cleanup.h"
#include "util/err.h"

/* A run stopped by signal N exits 128 + N (143 for SIGTERM, 130 for SIGINT), as a shell says. */
#define INTERRUPT_EXIT_BASE 128

/*
 * Installs the handler for SIGTERM and SIGINT (SA_RESTART: no call that may be restarted
 * sees EINTR for it; see above for the waits). Returns 0, or -errno.
 */
_must_check_ int interrupt_setup(void);

/*
 * The signal received since interrupt_setup (SIGTERM, SIGINT), or 0; also one sent while
 * blocked (an event loop's, interrupt_fd) and not read yet. Async-signal-safe.
 */
int interrupt_signal(void);

/*
 * Around a blocking call of a library that checks interrupt_signal() whenever it wakes
 * (libcurl's progress callback): SIGTERM and SIGINT reach this thread's handler for the
 * call's length, also where a loop keeps them blocked (interrupt_fd), so that the wait the
 * library is in ends at once with EINTR (poll and its kind are never restarted, SA_RESTART
 * or not). interrupt_wake_end(SAVED) puts back the mask interrupt_wake_begin saved. Before
 * interrupt_setup nothing changes (no handler: the signal would kill).
 */
void interrupt_wake_begin(sigset_t *ret_saved);
void interrupt_wake_end(const sigset_t *saved);

/*
 * HOLD true, until as many interrupt_hold(false): a signal waits even in the waits that
 * would end on it (interrupt_ends_waits), for a path whose steps must all run and whose
 * outcome is the run's own (the restore of the previous module parameters, the fallback to
 * the current version): the run stops at the next safe point after it.
 */
void interrupt_hold(bool hold);

/* Whether a wait that may last ends now: a signal came (interrupt_signal), none held. */
bool interrupt_ends_waits(void);

/*
 * waitpid(PID) that SIGTERM and SIGINT end (interrupt_ends_waits): the child's status into
 * *STATUS and 0, or
 * -EINTR when a signal came first (the child still runs: the caller ends it), or -errno.
 * With the handler's SA_RESTART a plain waitpid would wait for the child whatever came.
 */
_must_check_ int interrupt_waitpid(pid_t pid, int *status);

/*
 * Sleeps MS milliseconds, a wait that SIGTERM and SIGINT end at once (interrupt_ends_waits):
 * 0 when the time passed, -EINTR when a signal came first (also one that came before).
 */
_must_check_ int interrupt_sleep(uint64_t ms);

/*
 * WAKES true: SIGTERM and SIGINT end a blocking call with EINTR (no SA_RESTART), for a wait
 * that may last (another run's lock), whose loop checks interrupt_signal() before each
 * call; false: back to SA_RESTART. A signal between that check and the call is seen once
 * the call returns. Does nothing before interrupt_setup (a command that does not handle
 * the signals dies of it, waiting or not).
 */
void interrupt_wakes(bool wakes);

/*
 * A safe point, before NEXT (the step the run would take now: "the download", "the switch").
 * Returns 0 when no signal came, else -1 with E set: code 128 + the signal, a message naming
 * the signal and NEXT, and a hint saying that the next run completes what this one began.
 */
_must_check_ int interrupt_check(struct err *e, const char *next);

/*
 * For an event loop: blocks SIGTERM, SIGINT and SIGCHLD and returns a signalfd for them
 * (non-blocking, close-on-exec), or -errno. One that came before the block was taken by the
 * handler: interrupt_signal() tells, and the loop checks it before its first wait.
 */
_must_check_ int interrupt_fd(void);

/*
 * Reads what FD (from interrupt_fd) holds: records the first SIGTERM or SIGINT as the
 * handler would, consumes SIGCHLD (the caller reaps). Returns interrupt_signal().
 */
int interrupt_read(int fd);

/*
 * Waits, doing nothing, for SIGTERM or SIGINT and returns it; children that end meanwhile
 * are reaped (a PID 1 inherits orphans). For a process that only holds its container open.
 */
int interrupt_wait(void);
