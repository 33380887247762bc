// SPDX-License-Identifier: Apache-2.0
/*
 * agent/draplugin: which of the node's pods of NVIDIA's DRA kubelet plugin still hold the
 * files of a version switched out (the selector, the earliest of its running containers,
 * the switch's own second) and which the switch waits for (a pod leaving, one not running
 * yet), whom the agent asks again (once per UID when
 * evicted, a doubling backoff after a refusal, the oldest forgotten first), its start's
 * refusals, and its series.
 */
#include "cmocka_prelude.h"

#include <string.h>

#include "agent/draplugin.h"
#include "util/jsonc.h"

/* 2026-12-07T03:00:00Z */
#define SWITCH 1796612400

/* A pod labelled LABELS (JSON members), with container statuses STATUSES (a JSON array). */
static json_object *pod(const char *labels, const char *extra_meta, const char *statuses)
{
	char text[2048];
	json_object *o;

	snprintf(text, sizeof(text),
		 "{\"metadata\": {\"namespace\": \"dra\", \"name\": \"kp-1\", \"uid\": \"u-1\", "
		 "\"labels\": {%s}%s}, \"status\": {\"phase\": \"Running\", "
		 "\"containerStatuses\": %s}}",
		 labels, extra_meta, statuses);
	o = json_tokener_parse(text);
	assert_non_null(o);
	return o;
}

#define PLUGIN "\"nvidia-dra-driver-gpu-component\": \"kubelet-plugin\""
#define RUNNING(name, at)                                                                          \
	"{\"name\": \"" name "\", \"state\": {\"running\": {\"startedAt\": \"" at "\"}}}"

static enum draplugin_verdict judge(const char *labels, const char *extra, const char *statuses,
				    char *why, size_t size)
{
	struct labelsel sel;
	char err[200];
	json_object *o = pod(labels, extra, statuses);
	enum draplugin_verdict r;

	assert_int_equal(labelsel_parse(DRAPLUGIN_DEFAULT_SELECTOR, &sel, err, sizeof(err)), 0);
	r = draplugin_judge(o, &sel, SWITCH, NULL, why, size);
	labelsel_free(&sel);
	json_object_put(o);
	return r;
}

#define NOW_LEAVING ", \"deletionTimestamp\": \"2026-12-07T03:01:00Z\""

static void test_judge(void **state)
{
	char why[300];

	(void)state;
	/* Started before the switch: stale, the container and both times named. */
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T02:59:59Z") "]", why,
			       sizeof(why)),
			 DRAPLUGIN_STALE);
	assert_non_null(strstr(why, "gpus started at 2026-12-07T02:59:59Z"));
	assert_non_null(strstr(why, "switch at 2026-12-07T03:00:00Z"));
	/* In the switch's own second: stale (whole seconds: it may have read the old files). */
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T03:00:00Z") "]", why,
			       sizeof(why)),
			 DRAPLUGIN_STALE);
	/* After it: fresh. */
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T03:00:01Z") "]", why,
			       sizeof(why)),
			 DRAPLUGIN_FRESH);
	assert_non_null(strstr(why, "after the switch"));
	/* The earliest running container decides: one restarted since does not make it new. */
	assert_int_equal(judge(PLUGIN, "",
			       "[" RUNNING("gpus", "2026-12-07T03:05:00Z") ", " RUNNING(
				       "compute-domains", "2026-12-07T02:00:00Z") "]",
			       why, sizeof(why)),
			 DRAPLUGIN_STALE);
	assert_non_null(strstr(why, "compute-domains started at 2026-12-07T02:00:00Z"));
	/* Old and one container crash-looping: still stale (evicted, not waited for). */
	assert_int_equal(
		judge(PLUGIN, "",
		      "[{\"name\": \"gpus\", \"state\": {\"waiting\": {\"reason\": \"X\"}}}, " RUNNING(
			      "compute-domains", "2026-12-07T02:00:00Z") "]",
		      why, sizeof(why)),
		DRAPLUGIN_STALE);
	/* New but a container not running yet: waited for, the container named. */
	assert_int_equal(
		judge(PLUGIN, "",
		      "[{\"name\": \"gpus\", \"state\": {\"waiting\": {\"reason\": \"X\"}}}, " RUNNING(
			      "compute-domains", "2026-12-07T03:00:02Z") "]",
		      why, sizeof(why)),
		DRAPLUGIN_WAIT);
	assert_string_equal(why, "not running yet (container gpus)");
	assert_int_equal(judge(PLUGIN, "", "[]", why, sizeof(why)), DRAPLUGIN_WAIT);
	assert_string_equal(why, "not running yet (container none)");
	/* Not the plugin's: left. */
	assert_int_equal(judge("\"app\": \"train\"", "",
			       "[" RUNNING("c", "2026-12-07T01:00:00Z") "]", why, sizeof(why)),
			 DRAPLUGIN_OTHER);
	assert_string_equal(why, "not selected");
	assert_int_equal(judge("\"nvidia-dra-driver-gpu-component\": \"controller\"", "",
			       "[" RUNNING("c", "2026-12-07T01:00:00Z") "]", why, sizeof(why)),
			 DRAPLUGIN_OTHER);
	/* The selector labels alone (kubeletplugin.yaml:40) are not the default's: a renamed
	 * chart changes them (_helpers.tpl:78-85), never the label of line 41. */
	assert_int_equal(judge("\"dra-driver-nvidia-gpu-component\": \"kubelet-plugin\"", "",
			       "[" RUNNING("c", "2026-12-07T01:00:00Z") "]", why, sizeof(why)),
			 DRAPLUGIN_OTHER);
	/* Leaving (evicted, its grace period running): waited for, not evicted again, never
	 * taken for settled, whether its containers started before the switch or after. */
	assert_int_equal(judge(PLUGIN, NOW_LEAVING, "[" RUNNING("gpus", "2026-12-07T01:00:00Z") "]",
			       why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	assert_non_null(strstr(why, "leaving: until it is gone"));
	assert_int_equal(judge(PLUGIN, NOW_LEAVING, "[" RUNNING("gpus", "2026-12-07T03:30:00Z") "]",
			       why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	/* A startedAt that is not an API server time is not taken as one: waited for. */
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "yesterday") "]", why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T01:00:00+01:00") "]",
			       why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	/* No status at all: not running yet. */
	assert_int_equal(judge(PLUGIN, "", "null", why, sizeof(why)), DRAPLUGIN_WAIT);
}

/* A container of the spec with no status yet, and a pod that finished. */
static void test_judge_spec_and_phase(void **state)
{
	struct labelsel sel;
	char err[200], why[300];
	json_object *o = json_tokener_parse(
		"{\"metadata\": {\"uid\": \"u-1\", \"labels\": {" PLUGIN "}}, "
		"\"spec\": {\"containers\": [{\"name\": \"gpus\"}, {\"name\": \"cd\"}]}, "
		"\"status\": {\"phase\": \"Pending\", \"containerStatuses\": [" RUNNING(
			"gpus", "2026-12-07T03:00:05Z") "]}}");

	(void)state;
	assert_non_null(o);
	assert_int_equal(labelsel_parse(DRAPLUGIN_DEFAULT_SELECTOR, &sel, err, sizeof(err)), 0);
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, NULL, why, sizeof(why)), DRAPLUGIN_WAIT);
	assert_string_equal(why, "not running yet (container of the spec without a status)");
	/* Failed (or Succeeded): its containers run no more, it holds no files. */
	json_object_object_add(jsonc_get(o, "status"), "phase", json_object_new_string("Failed"));
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, NULL, why, sizeof(why)), DRAPLUGIN_OTHER);
	assert_string_equal(why, "finished (Failed): no container runs");
	labelsel_free(&sel);
	json_object_put(o);
}

/* The known labels of the plugin's pods: the chart's, and the GPU Operator's alone. */
static void test_known_selector(void **state)
{
	json_object *chart = pod(PLUGIN, "", "[]");
	json_object *gpu_op =
		pod("\"app\": \"nvidia-dra-driver-kubelet-plugin\", "
		    "\"app.kubernetes.io/component\": \"nvidia-dra-driver-kubelet-plugin\"",
		    "", "[]");
	json_object *other = pod("\"app\": \"nvidia-dra-driver-controller\"", "", "[]");
	json_object *bare = json_tokener_parse("{}");

	(void)state;
	assert_string_equal(draplugin_known_selector(chart), DRAPLUGIN_DEFAULT_SELECTOR);
	assert_string_equal(draplugin_known_selector(gpu_op),
			    "app=nvidia-dra-driver-kubelet-plugin");
	assert_null(draplugin_known_selector(other));
	assert_null(draplugin_known_selector(bare));
	json_object_put(chart);
	json_object_put(gpu_op);
	json_object_put(other);
	json_object_put(bare);
}

/*
 * A clock stepped back after the switch dates the DaemonSet's new pod before it: a UID the
 * agent's first list after the switch did not hold is left; one it held is judged by its
 * start; a list too long to remember judges all by their start.
 */
static void test_seen(void **state)
{
	struct draplugin_seen seen = {0};
	struct labelsel sel;
	char err[200], why[300];
	json_object *o = pod(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T02:00:00Z") "]");

	(void)state;
	assert_int_equal(labelsel_parse(DRAPLUGIN_DEFAULT_SELECTOR, &sel, err, sizeof(err)), 0);
	draplugin_seen_add(&seen, "u-0");
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, &seen, why, sizeof(why)),
			 DRAPLUGIN_FRESH);
	assert_non_null(strstr(why, "made after the agent first listed the pods"));
	draplugin_seen_add(&seen, "u-1");
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, &seen, why, sizeof(why)),
			 DRAPLUGIN_STALE);
	memset(&seen, 0, sizeof(seen));
	for (unsigned i = 0; i <= DRAPLUGIN_MEMORY; i++)
		draplugin_seen_add(&seen, "u-other");
	assert_true(seen.full);
	assert_int_equal(seen.n, DRAPLUGIN_MEMORY);
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, &seen, why, sizeof(why)),
			 DRAPLUGIN_STALE);
	labelsel_free(&sel);
	json_object_put(o);
}

static void test_memory(void **state)
{
	struct draplugin_memory m;
	char uid[16];

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_true(draplugin_may_ask(&m, "u-1", 100));
	/* Evicted: never asked again. */
	draplugin_note(&m, "u-1", 0, 100);
	assert_false(draplugin_may_ask(&m, "u-1", 100));
	assert_false(draplugin_may_ask(&m, "u-1", 100000));
	/* Refused: asked again after 10 s, then 20, 40, ... at most 300. */
	draplugin_note(&m, "u-2", 1, 100);
	assert_false(draplugin_may_ask(&m, "u-2", 109));
	assert_true(draplugin_may_ask(&m, "u-2", 110));
	draplugin_note(&m, "u-2", 1, 110);
	assert_false(draplugin_may_ask(&m, "u-2", 129));
	assert_true(draplugin_may_ask(&m, "u-2", 130));
	for (unsigned i = 0; i < 10; i++)
		draplugin_note(&m, "u-2", -1, 1000);
	assert_false(draplugin_may_ask(&m, "u-2", 1299));
	assert_true(draplugin_may_ask(&m, "u-2", 1300));
	/* Then evicted: done with it. */
	draplugin_note(&m, "u-2", 0, 1300);
	assert_false(draplugin_may_ask(&m, "u-2", 5000));
	/* Full: the oldest entry makes room, the newest are kept. */
	for (unsigned i = 0; i < DRAPLUGIN_MEMORY; i++) {
		snprintf(uid, sizeof(uid), "n-%u", i);
		draplugin_note(&m, uid, 0, 2000);
	}
	assert_int_equal(m.n, DRAPLUGIN_MEMORY);
	assert_true(draplugin_may_ask(&m, "u-1", 2000));
	assert_true(draplugin_may_ask(&m, "u-2", 2000));
	assert_false(draplugin_may_ask(&m, "n-0", 2000));
	snprintf(uid, sizeof(uid), "n-%u", DRAPLUGIN_MEMORY - 1);
	assert_false(draplugin_may_ask(&m, uid, 2000));
}

static void test_start_and_series(void **state)
{
	struct draplugin p;
	struct err e;
	char *text;

	(void)state;
	/* Off: its gauge 0, no counters. */
	assert_int_equal(draplugin_start(&p, NULL, NULL, "n1", &e), 0);
	assert_false(p.on);
	text = draplugin_render(&p);
	assert_non_null(text);
	assert_non_null(
		strstr(text, "nvidia_driver_installer_agent_dra_plugin_restarts_enabled 0\n"));
	assert_null(strstr(text, "evictions_total"));
	free(text);
	draplugin_stop(&p);
	/* No client: off as well. */
	assert_int_equal(draplugin_start(&p, DRAPLUGIN_DEFAULT_SELECTOR, NULL, "n1", &e), 0);
	assert_false(p.on);
	draplugin_stop(&p);
	/* A selector that is not one: refused, whatever the client. */
	assert_int_equal(draplugin_start(&p, "a in (", NULL, "n1", &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--dra-plugin-selector: 'a in (' is not a label selector"));
	/* On: the counters by answer. */
	memset(&p, 0, sizeof(p));
	p.on = true;
	p.evicted = 2;
	p.refused = 1;
	text = draplugin_render(&p);
	assert_non_null(text);
	assert_non_null(
		strstr(text, "nvidia_driver_installer_agent_dra_plugin_restarts_enabled 1\n"));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_agent_dra_plugin_evictions_total{result=\"evicted\"} 2\n"));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_agent_dra_plugin_evictions_total{result=\"refused\"} 1\n"));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_agent_dra_plugin_evictions_total{result=\"failed\"} 0\n"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judge),	       cmocka_unit_test(test_judge_spec_and_phase),
		cmocka_unit_test(test_known_selector), cmocka_unit_test(test_seen),
		cmocka_unit_test(test_memory),	       cmocka_unit_test(test_start_and_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
