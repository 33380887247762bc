// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "util/interrupt.h"

static volatile sig_atomic_t received;
static bool installed;

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
	return received;
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

int interrupt_wait(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
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
