// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/interrupt.h"

static volatile sig_atomic_t received;
static bool installed;
static unsigned held; /* interrupt_hold's depth */

static void on_signal(int sig)
{
	/* The first one tells why the run stops; a second one changes nothing. */
	if (!received)
		received = sig;
}

static int install(bool restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
		return -errno;
	return 0;
}

int interrupt_setup(void)
{
	int r = install(true);

	installed = r == 0;
	return r;
}

void interrupt_wakes(bool wakes)
{
	/* Cannot fail with this handler and these signals. */
	if (installed)
		(void)install(!wakes);
}

int interrupt_signal(void)
{
	sigset_t pending;

	/* Where a loop keeps them blocked (interrupt_fd), one sent waits here: it counts. */
	if (!received && sigpending(&pending) == 0) {
		if (sigismember(&pending, SIGTERM) == 1)
			received = SIGTERM;
		else if (sigismember(&pending, SIGINT) == 1)
			received = SIGINT;
	}
	return received;
}

void interrupt_hold(bool hold)
{
	if (hold)
		held++;
	else if (held > 0)
		held--;
}

bool interrupt_ends_waits(void)
{
	return held == 0 && interrupt_signal() != 0;
}

static void stop_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
}

void interrupt_wake_begin(sigset_t *ret_saved)
{
	sigset_t set;

	stop_set(&set);
	if (installed)
		pthread_sigmask(SIG_UNBLOCK, &set, ret_saved);
	else
		pthread_sigmask(SIG_SETMASK, NULL, ret_saved);
}

void interrupt_wake_end(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

int interrupt_waitpid(pid_t pid, int *status)
{
	/* A pidfd wakes the wait when the child ends; without one (Linux < 5.3), slices. */
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), r = 0;
	struct pollfd p = {.fd = pfd, .events = POLLIN};
	struct timespec slice = {.tv_nsec = 100 * 1000000};
	sigset_t set, saved;

	stop_set(&set);
	/*
	 * Blocked but inside ppoll, which SA_RESTART never restarts: a signal before ppoll
	 * ends it at once, one during it too (EINTR), and the flag is read after either.
	 */
	pthread_sigmask(SIG_BLOCK, &set, &saved);
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (interrupt_ends_waits()) {
			r = -EINTR;
			break;
		}
		ppoll(pfd >= 0 ? &p : NULL, pfd >= 0 ? 1 : 0, &slice, &saved);
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (pfd >= 0)
		close(pfd);
	return r;
}

int interrupt_sleep(uint64_t ms)
{
	struct timespec end, now, left;
	sigset_t set, saved;
	int r = 0;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)(ms / 1000u);
	end.tv_nsec += (long)(ms % 1000u) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	stop_set(&set);
	/* As interrupt_waitpid: blocked, then ppoll with the old mask, which no signal restarts. */
	pthread_sigmask(SIG_BLOCK, &set, &saved);
	for (;;) {
		if (interrupt_ends_waits()) {
			r = -EINTR;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		ppoll(NULL, 0, &left, &saved);
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return r;
}

int interrupt_check(struct err *e, const char *next)
{
	int sig = received;

	if (!sig)
		return 0;
	err_set(e, INTERRUPT_EXIT_BASE + sig, "stopped by %s before %s",
		sig == SIGINT ? "SIGINT" : "SIGTERM", next);
	err_hint(e, "none needed: the node keeps a state the next run completes");
	return -1;
}

/* The signals a process that waits takes in order: the two that stop it, and its children's. */
static void waited_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGCHLD);
}

int interrupt_fd(void)
{
	sigset_t set;
	int fd;

	waited_set(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int interrupt_read(int fd)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (!received && (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT))
			received = (int)si.ssi_signo;
	return received;
}

int interrupt_wait(void)
{
	sigset_t set;
	int sig;

	waited_set(&set);
	/* Blocked first, then waited for: a signal between the two is not lost. */
	sigprocmask(SIG_BLOCK, &set, NULL);
	while (!received) {
		sig = sigwaitinfo(&set, NULL);
		if (sig == SIGCHLD) {
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		} else if (sig > 0) {
			received = sig;
		}
	}
	return received;
}
