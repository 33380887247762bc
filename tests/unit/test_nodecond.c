// SPDX-License-Identifier: Apache-2.0
/*
 * agent/nodecond: the node agent's word on its Node decided look by look: the condition's
 * status, reason and message from the health judgement and the upgrade state, written on a
 * change and at its heartbeat; the startup taint looked for only while the node is judged
 * ready, on its own schedule; the health taint following a fatal Xid or a broken fabric; a
 * failed call's wait, doubling up to the heartbeat; the Event of each change; the taint
 * options' syntax.
 */
#include "cmocka_prelude.h"

#include <ctype.h>
#include <string.h>

#include "agent/nodecond.h"

static const struct nodecond_policy all = {
	.condition = true, .heartbeat_s = 60, .startup_taint = true, .health_taint = true};

/* What nodecond_look remembers of ST when its calls succeed. */
static void carried_out(struct nodecond_memory *m, const struct nodecond_step *st, uint64_t now)
{
	if (st->write) {
		m->written = true;
		snprintf(m->status, sizeof(m->status), "%s", st->status);
		snprintf(m->reason, sizeof(m->reason), "%s", st->reason);
		snprintf(m->message, sizeof(m->message), "%s", st->message);
		m->written_at = now;
	}
	if (strcmp(st->status, "True") != 0)
		m->startup_checked = false;
	if (st->check_startup) {
		m->startup_checked = true;
		m->startup_at = now;
	}
	if (st->health != NODECOND_TAINT_KEEP) {
		m->health_known = true;
		snprintf(m->health_value, sizeof(m->health_value), "%s", st->health_value);
	}
}

/* One look at V: its step, carried out into M. */
static struct nodecond_step look(struct nodecond_memory *m, const struct nodecond_view *v,
				 const struct nodecond_policy *p)
{
	struct nodecond_step st = nodecond_decide(m, v, p);

	carried_out(m, &st, v->now);
	return st;
}

static void test_life(void **state)
{
	struct nodecond_memory m = {0};
	struct nodecond_view v = {.health = HEALTH_NOT_INSTALLED,
				  .cause = "no driver is installed",
				  .version = "",
				  .upgrade = UPG_IDLE,
				  .now = 1000};
	struct nodecond_step st;

	(void)state;
	/* Nothing said before the first judgement. */
	st = look(&m, &v, &all);
	assert_false(st.write);
	assert_false(st.check_startup);
	assert_int_equal(st.health, NODECOND_TAINT_KEEP);
	v.judged = true;
	/* Not installed: False with the health reason and /readyz's cause; the health taint's
	 * state is not known yet: made sure there is none. */
	st = look(&m, &v, &all);
	assert_true(st.write);
	assert_string_equal(st.status, "False");
	assert_string_equal(st.reason, "DriverNotInstalled");
	assert_string_equal(st.message, "no driver is installed");
	assert_false(st.check_startup);
	assert_int_equal(st.health, NODECOND_TAINT_REMOVE);
	/* The same again before the heartbeat: nothing. */
	v.now = 1059;
	st = look(&m, &v, &all);
	assert_false(st.write);
	assert_int_equal(st.health, NODECOND_TAINT_KEEP);
	/* The heartbeat: written again, unchanged. */
	v.now = 1060;
	st = look(&m, &v, &all);
	assert_true(st.write);
	assert_string_equal(st.reason, "DriverNotInstalled");
	assert_false(st.check_startup);
	/* A new message alone is a write. */
	v.cause = "no driver is installed (still)";
	v.now = 1061;
	assert_true(look(&m, &v, &all).write);
	/* Ready: True, and the startup taint looked for, once. */
	v.health = HEALTH_READY;
	v.cause = "";
	v.version = "550.90.07";
	v.now = 1070;
	st = look(&m, &v, &all);
	assert_true(st.write);
	assert_string_equal(st.status, "True");
	assert_string_equal(st.reason, "CUDAReady");
	assert_string_equal(st.message, "a CUDA job can run (driver 550.90.07)");
	assert_true(st.check_startup);
	assert_int_equal(st.health, NODECOND_TAINT_KEEP);
	v.now = 1080;
	st = look(&m, &v, &all);
	assert_false(st.write);
	assert_false(st.check_startup);
	/* At the heartbeat, again: a startup taint put back is taken off again. */
	v.now = 1130;
	st = look(&m, &v, &all);
	assert_true(st.write);
	assert_true(st.check_startup);
}

static void test_startup_taint_never_while_not_ready(void **state)
{
	struct nodecond_memory m = {0};
	struct nodecond_view v = {.judged = true,
				  .health = HEALTH_CUDA,
				  .cause = "CUDA: cuInit failed",
				  .version = "550.90.07",
				  .now = 5};
	struct nodecond_step st;

	(void)state;
	/* CUDA fails at every look, heartbeats included: the taint is never looked for. */
	for (uint64_t t = 5; t < 1000; t += 10) {
		v.now = t;
		st = look(&m, &v, &all);
		assert_false(st.check_startup);
		assert_string_equal(st.reason, "CUDANotReady");
	}
	/* Ready, but the taint's call failed: asked again at the next look, without a write. */
	v.health = HEALTH_READY;
	v.now = 1000;
	st = nodecond_decide(&m, &v, &all);
	assert_true(st.write && st.check_startup);
	st.check_startup = false; /* what a failed call leaves */
	carried_out(&m, &st, v.now);
	v.now = 1010;
	st = look(&m, &v, &all);
	assert_false(st.write);
	assert_true(st.check_startup);
	v.now = 1020;
	assert_false(look(&m, &v, &all).check_startup);
	/* Not ready again, then ready: looked for once more. */
	v.health = HEALTH_NOT_LOADED;
	v.now = 1030;
	assert_false(look(&m, &v, &all).check_startup);
	v.health = HEALTH_READY;
	v.now = 1040;
	assert_true(look(&m, &v, &all).check_startup);
	/* Without a startup taint, never. */
	memset(&m, 0, sizeof(m));
	assert_false(look(&m, &v, &(struct nodecond_policy){.heartbeat_s = 60}).check_startup);
}

static void test_health_taint(void **state)
{
	struct nodecond_memory m = {0};
	struct nodecond_view v = {.judged = true, .health = HEALTH_READY, .version = "1", .now = 1};
	struct nodecond_step st;

	(void)state;
	assert_int_equal(look(&m, &v, &all).health, NODECOND_TAINT_REMOVE);
	/* A fatal Xid: added, valued as the condition's reason. */
	v.health = HEALTH_XID;
	v.cause = "Xid 79 on GPU 0000:3b:00";
	v.now = 2;
	st = look(&m, &v, &all);
	assert_string_equal(st.reason, "FatalXid");
	assert_string_equal(st.message, "Xid 79 on GPU 0000:3b:00");
	assert_int_equal(st.health, NODECOND_TAINT_ADD);
	assert_string_equal(st.health_value, "FatalXid");
	assert_false(st.check_startup);
	v.now = 3;
	assert_int_equal(look(&m, &v, &all).health, NODECOND_TAINT_KEEP);
	/* The cause changes (the fabric, once the Xid cleared): the value follows. */
	v.health = HEALTH_FABRIC;
	v.now = 4;
	st = look(&m, &v, &all);
	assert_int_equal(st.health, NODECOND_TAINT_ADD);
	assert_string_equal(st.health_value, "FabricNotReady");
	/* Another reason that is not the GPUs' health: taken off. */
	v.health = HEALTH_CUDA;
	v.now = 5;
	st = look(&m, &v, &all);
	assert_int_equal(st.health, NODECOND_TAINT_REMOVE);
	assert_string_equal(st.health_value, "");
	/* A failed call leaves the taint unknown: asked again. */
	v.health = HEALTH_XID;
	v.now = 6;
	st = nodecond_decide(&m, &v, &all);
	assert_int_equal(st.health, NODECOND_TAINT_ADD);
	v.now = 7;
	st = nodecond_decide(&m, &v, &all);
	assert_int_equal(st.health, NODECOND_TAINT_ADD);
	/* Without a health taint, never. */
	memset(&m, 0, sizeof(m));
	assert_int_equal(look(&m, &v, &(struct nodecond_policy){.heartbeat_s = 60}).health,
			 NODECOND_TAINT_KEEP);
}

/* A call the API server refuses at every look (an old ClusterRole, an admission policy). */
static void test_failed_calls_wait(void **state)
{
	const struct nodecond_policy p = {.condition = true,
					  .heartbeat_s = 60,
					  .look_s = 10,
					  .startup_taint = true,
					  .health_taint = true};
	struct nodecond_memory m = {0};
	struct nodecond_view v = {
		.judged = true, .health = HEALTH_READY, .version = "1", .now = 100};
	/* The condition's write fails at each try: tried after 10, 20, 40, 60, 60 s. */
	const uint64_t tries[] = {100, 110, 130, 170, 230, 290};
	struct nodecond_step st;
	size_t n = 0;

	(void)state;
	for (uint64_t t = 100; t <= 290; t++) {
		v.now = t;
		st = nodecond_decide(&m, &v, &p);
		assert_int_equal(st.write, n < 6 && t == tries[n]);
		/* The startup taint keeps its own schedule: when judged ready, then each 60 s. */
		assert_int_equal(st.check_startup, t == 100 || t == 160 || t == 220 || t == 280);
		if (st.write) {
			n++;
			st.write = false;
			nodecond_failed(&m, NODECOND_CONDITION, t, &p);
		}
		carried_out(&m, &st, t); /* the taints' calls succeed */
	}
	assert_int_equal(n, 6);
	/* A change waits for the failed call's turn too; an answer ends the waits. */
	v.health = HEALTH_XID;
	v.now = 300;
	st = nodecond_decide(&m, &v, &p);
	assert_false(st.write);
	assert_int_equal(st.health, NODECOND_TAINT_ADD);
	v.now = 350;
	st = look(&m, &v, &p);
	assert_true(st.write);
	nodecond_answered(&m, NODECOND_CONDITION);
	nodecond_failed(&m, NODECOND_CONDITION, 351, &p);
	assert_int_equal(m.retry_at[NODECOND_CONDITION], 361);
	/* The taints' calls wait as theirs failed: the health taint, and the startup taint. */
	v.health = HEALTH_READY;
	v.now = 400;
	m.retry_at[NODECOND_CONDITION] = 0;
	nodecond_failed(&m, NODECOND_TAINTS, 399, &p);
	st = nodecond_decide(&m, &v, &p);
	assert_true(st.write);
	assert_false(st.check_startup);
	assert_int_equal(st.health, NODECOND_TAINT_KEEP);
	v.now = 409;
	assert_true(nodecond_decide(&m, &v, &p).check_startup);
	assert_int_equal(nodecond_decide(&m, &v, &p).health, NODECOND_TAINT_REMOVE);
}

static void test_upgrade_wins(void **state)
{
	struct nodecond_memory m = {0};
	struct nodecond_view v = {.judged = true,
				  .health = HEALTH_READY,
				  .version = "535.261.03",
				  .upgrade = UPG_WAITING,
				  .upgrade_version = "550.90.07",
				  .upgrade_reason = "1 GPU pod(s)",
				  .now = 1};
	struct nodecond_step st;

	(void)state;
	/* Waiting for the pods: the driver still serves. */
	st = look(&m, &v, &all);
	assert_string_equal(st.status, "True");
	v.upgrade = UPG_ACTIVATING;
	v.now = 2;
	st = look(&m, &v, &all);
	assert_string_equal(st.status, "False");
	assert_string_equal(st.reason, "DriverUpgrading");
	assert_string_equal(st.message, "driver upgrade to 550.90.07: activating");
	v.upgrade = UPG_VALIDATING;
	v.health = HEALTH_CUDA;
	v.now = 3;
	st = look(&m, &v, &all);
	assert_string_equal(st.reason, "DriverUpgrading");
	assert_string_equal(st.message, "driver upgrade to 550.90.07: validating");
	assert_int_equal(st.health, NODECOND_TAINT_KEEP); /* none since the first look */
	/* Failed: its reason, whatever the health. */
	v.upgrade = UPG_FAILED;
	v.health = HEALTH_READY;
	v.upgrade_reason = "not ready in 600 s";
	v.now = 4;
	st = look(&m, &v, &all);
	assert_string_equal(st.status, "False");
	assert_string_equal(st.reason, "DriverUpgradeFailed");
	assert_string_equal(st.message, "driver upgrade to 550.90.07 failed: not ready in 600 s");
	assert_false(st.check_startup);
	/* A fatal Xid during an upgrade still puts the health taint on. */
	v.health = HEALTH_XID;
	v.now = 5;
	st = look(&m, &v, &all);
	assert_string_equal(st.reason, "DriverUpgradeFailed");
	assert_int_equal(st.health, NODECOND_TAINT_ADD);
	assert_string_equal(st.health_value, "FatalXid");
}

static void test_reasons_and_events(void **state)
{
	const char *type = NULL;

	(void)state;
	for (int r = 0; r < HEALTH_N_REASONS; r++) {
		const char *s = nodecond_reason((enum health_reason)r);

		assert_non_null(s);
		assert_true(isupper((unsigned char)s[0]));
		assert_true(strlen(s) <= 128);
		assert_int_equal(strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
				 strlen(s));
	}
	assert_string_equal(nodecond_reason(HEALTH_XID), "FatalXid");
	assert_string_equal(nodecond_reason(HEALTH_NVML), "NVMLNotAnswering");
	assert_string_equal(nodecond_reason(HEALTH_CDI), "CDIConflict");
	/* A first write, and each change of status or reason; not of the message alone. */
	assert_string_equal(nodecond_event("", "", "False", "Installing", &type),
			    "GPUDriverNotReady");
	assert_string_equal(type, "Warning");
	assert_string_equal(nodecond_event("False", "Installing", "True", "CUDAReady", &type),
			    "GPUDriverReady");
	assert_string_equal(type, "Normal");
	assert_null(nodecond_event("True", "CUDAReady", "True", "CUDAReady", &type));
	assert_string_equal(nodecond_event("False", "FatalXid", "False", "FabricNotReady", &type),
			    "GPUDriverNotReady");
	assert_string_equal(nodecond_event("True", "CUDAReady", "Unknown", "AgentStopped", &type),
			    "GPUDriverUnknown");
	assert_string_equal(type, "Normal");
	assert_null(nodecond_event("Unknown", "AgentStopped", "Unknown", "AgentStopped", &type));
}

static void test_taint_syntax(void **state)
{
	(void)state;
	assert_true(nodecond_taint_ok(
		"startup-taint.cluster-autoscaler.kubernetes.io/nvidia-driver", false));
	assert_true(nodecond_taint_ok("gpu-not-ready", false));
	assert_true(nodecond_taint_ok("example.com/A_b.c-D", false));
	assert_false(nodecond_taint_ok("", false));
	assert_false(nodecond_taint_ok("Example.com/x", false)); /* prefix lower case */
	assert_false(nodecond_taint_ok("-a.com/x", false));
	assert_false(nodecond_taint_ok("a..com/x", false));
	assert_false(nodecond_taint_ok("a.com/", false));
	assert_false(nodecond_taint_ok("a.com/x-", false));
	assert_false(nodecond_taint_ok("a/b/c", false));
	assert_false(nodecond_taint_ok("x y", false));
	assert_false(nodecond_taint_ok(
		"a.com/0123456789012345678901234567890123456789012345678901234567890123", false));
	assert_true(nodecond_taint_ok(
		"a.com/012345678901234567890123456789012345678901234567890123456789012", false));
	assert_true(nodecond_taint_ok("nvidia.com/gpu-unhealthy:NoSchedule", true));
	assert_true(nodecond_taint_ok("nvidia.com/gpu-unhealthy:PreferNoSchedule", true));
	assert_true(nodecond_taint_ok("nvidia.com/gpu-unhealthy:NoExecute", true));
	assert_false(nodecond_taint_ok("nvidia.com/gpu-unhealthy:noschedule", true));
	assert_false(nodecond_taint_ok("nvidia.com/gpu-unhealthy", true));
	assert_false(nodecond_taint_ok("nvidia.com/gpu-unhealthy:", true));
	assert_false(nodecond_taint_ok(":NoSchedule", true));
	assert_false(nodecond_taint_ok("nvidia.com/gpu-unhealthy:NoSchedule", false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_life),
		cmocka_unit_test(test_startup_taint_never_while_not_ready),
		cmocka_unit_test(test_health_taint),
		cmocka_unit_test(test_failed_calls_wait),
		cmocka_unit_test(test_upgrade_wins),
		cmocka_unit_test(test_reasons_and_events),
		cmocka_unit_test(test_taint_syntax),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
