// SPDX-License-Identifier: Apache-2.0
/* util/interrupt.h: SIGTERM and SIGINT are recorded, not obeyed, until a safe point asks. */
#include "cmocka_prelude.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/interrupt.h"
#include "util/log.h"

/* Before any signal a safe point lets the run go on; after SIGTERM it stops it, exit 143. */
static void test_sigterm_stops_at_check(void **state)
{
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(interrupt_setup(), 0);
	assert_int_equal(interrupt_signal(), 0);
	assert_int_equal(interrupt_check(&e, "the switch"), 0);
	assert_false(err_is_set(&e));
	/* The default action would end this test here. */
	assert_int_equal(raise(SIGTERM), 0);
	assert_int_equal(interrupt_signal(), SIGTERM);
	assert_int_equal(interrupt_check(&e, "the switch"), -1);
	assert_int_equal(e.code, 143);
	assert_string_equal(e.msg, "stopped by SIGTERM before the switch");
	assert_non_null(strstr(e.hint, "the next run completes"));
	/* A second signal, another one even, does not change why the run stops. */
	assert_int_equal(raise(SIGINT), 0);
	assert_int_equal(interrupt_signal(), SIGTERM);
	/* pause: a signal already received ends the wait at once. */
	assert_int_equal(interrupt_wait(), SIGTERM);
}

/* In a process of its own (the signal stays recorded): what interrupt_waitpid returns. */
static int waitpid_scenario(void)
{
	pid_t child, sender;
	int status;

	if (interrupt_setup() < 0)
		return 10;
	child = fork();
	if (child == 0) {
		/* Gone with the scenario however it ends: it holds the test's stdout. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	sender = fork();
	if (sender == 0) {
		kill(getppid(), SIGTERM);
		_exit(0);
	}
	waitpid(sender, NULL, 0);
	/* SA_RESTART would resume a plain waitpid until the child ended: never. */
	if (interrupt_waitpid(child, &status) != -EINTR)
		return 11;
	kill(child, SIGKILL);
	/* Held (a restore that must run whole): the wait is for the child after all. */
	interrupt_hold(true);
	if (interrupt_waitpid(child, &status) != 0 || !WIFSIGNALED(status))
		return 12;
	interrupt_hold(false);
	return interrupt_ends_waits() ? 0 : 13;
}

/*
 * SIGTERM ends the wait for a child that does not end (with SA_RESTART a waitpid would
 * go on), except where a path holds the signal; the child is the caller's to end.
 */
static void test_waitpid_ends_on_sigterm(void **state)
{
	/* A hang is what this catches: a minute, whatever a loaded machine adds to "at once". */
	uint64_t deadline = now_ns() + 60000000000ull;
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(waitpid_scenario());
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ns() > deadline) {
			kill(pid, SIGKILL);
			fail_msg("interrupt_waitpid did not end on SIGTERM within 60 s");
		}
		nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: its process inherits nothing recorded. */
		cmocka_unit_test(test_waitpid_ends_on_sigterm),
		cmocka_unit_test(test_sigterm_stops_at_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
