// SPDX-License-Identifier: Apache-2.0
/*
 * agent/upgrade: a node's upgrade decided step by step (a whole upgrade, the deadline's two
 * policies, a rollout that goes back or moves on, a failed activation and validation, a
 * restart at each state), the GPU pods of a PodList, and the record on the node.
 */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "agent/upgrade.h"

static const struct upgrade_policy policy = {
	.cordon = true, .deadline_s = 600, .on_deadline = UPG_DEADLINE_WAIT, .validate_s = 300};

/* One step from R seen as V: the next record (into *R) and the action. */
static enum upgrade_action step(struct upgrade_record *r, const struct upgrade_view *v,
				const struct upgrade_policy *p)
{
	struct upgrade_step s = upgrade_decide(r, v, p);

	*r = s.next;
	return s.action;
}

static void test_whole_upgrade(void **state)
{
	struct upgrade_record r = {0};
	struct upgrade_view v = {.pending = "550.90.07",
				 .current = "535.261.03",
				 .gpu_pods = 1,
				 .evictable = 1,
				 .now = 1000};

	(void)state;
	/* Seen pending: recorded, then a slot asked for until one is had. */
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_PENDING);
	assert_string_equal(r.version, "550.90.07");
	assert_string_equal(r.from, "535.261.03");
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_TAKE_SLOT);
	assert_int_equal(r.state, UPG_PENDING);
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_TAKE_SLOT);
	v.slot = true;
	/* Cordoned by us: recorded so, and only then uncordoned by us. */
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_CORDON);
	assert_int_equal(r.state, UPG_CORDONED);
	assert_true(r.cordoned);
	v.unschedulable = true;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	assert_int_equal(r.wait_from, 1000);
	assert_non_null(strstr(r.reason, "1 GPU pod(s)"));
	/* The job ends; the kernel still sees a holder: wait. */
	v.gpu_pods = v.evictable = 0;
	v.holders = 1;
	v.now = 1100;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	v.holders = 0;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_ACTIVATE);
	assert_int_equal(r.state, UPG_ACTIVATING);
	/* Switched in: validating until a CUDA job can run. */
	v.pending = NULL;
	v.current = "550.90.07";
	v.now = 1110;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_VALIDATING);
	assert_int_equal(r.since, 1110);
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_VALIDATING);
	v.ready = true;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_UNCORDON);
	assert_false(r.cordoned);
	assert_int_equal(r.state, UPG_VALIDATING);
	v.unschedulable = false;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_RELEASE);
	v.slot = false;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_DONE);
	assert_string_equal(upgrade_state_name(r.state), "done");
	/* Done stays done, and does nothing. */
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_DONE);
}

static void test_someone_elses_cordon(void **state)
{
	struct upgrade_record r = {.state = UPG_PENDING, .version = "550.90.07"};
	struct upgrade_view v = {.pending = "550.90.07",
				 .current = "535.261.03",
				 .slot = true,
				 .unschedulable = true,
				 .now = 5};
	struct upgrade_policy no_cordon = policy;

	(void)state;
	/* Cordoned by a person already: not ours to lift at the end. */
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_CORDONED);
	assert_false(r.cordoned);
	/* Policy: no cordon. */
	r = (struct upgrade_record){.state = UPG_PENDING, .version = "550.90.07"};
	v.unschedulable = false;
	assert_int_equal(step(&r, &v, &no_cordon), UPG_ACT_CORDON);
	no_cordon.cordon = false;
	r = (struct upgrade_record){.state = UPG_PENDING, .version = "550.90.07"};
	assert_int_equal(step(&r, &v, &no_cordon), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_CORDONED);
	assert_false(r.cordoned);
	v.slot = false;
	assert_int_equal(step(&r, &v, &no_cordon), UPG_ACT_TAKE_SLOT); /* lease lapsed */
}

static void test_deadline(void **state)
{
	struct upgrade_record r = {
		.state = UPG_WAITING, .version = "550.90.07", .cordoned = true, .wait_from = 100};
	struct upgrade_view v = {.pending = "550.90.07",
				 .current = "535.261.03",
				 .slot = true,
				 .unschedulable = true,
				 .gpu_pods = 2,
				 .evictable = 1,
				 .now = 699};
	struct upgrade_policy evict = policy;

	(void)state;
	evict.on_deadline = UPG_DEADLINE_EVICT;
	assert_int_equal(step(&r, &v, &evict), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	/* Wait policy: past the deadline, still waiting, and saying so. */
	v.now = 700;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	assert_non_null(strstr(r.reason, "past the deadline, waiting as the policy says"));
	/* Evict policy: the evictable pod asked to leave, again at each look while it stays
	 * (a budget that forbids it now is asked again later, never forced). */
	assert_int_equal(step(&r, &v, &evict), UPG_ACT_EVICT);
	assert_int_equal(r.state, UPG_EVICTING);
	assert_int_equal(step(&r, &v, &evict), UPG_ACT_EVICT);
	/* Gone; a DaemonSet's GPU pod remains: no eviction moves it, so waited for. */
	v.evictable = 0;
	v.gpu_pods = 1;
	assert_int_equal(step(&r, &v, &evict), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_EVICTING);
	assert_non_null(strstr(r.reason, "1 GPU pod(s) no eviction moves"));
	v.gpu_pods = 0;
	assert_int_equal(step(&r, &v, &evict), UPG_ACT_ACTIVATE);
	/* A GPU user came back before the switch (the installer deferred again): waiting. */
	v.gpu_pods = 1;
	v.evictable = 1;
	v.now = 701;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	assert_int_equal(r.wait_from, 100); /* the deadline is not reset */
}

static void test_rollout_changes(void **state)
{
	struct upgrade_record r = {
		.state = UPG_WAITING, .version = "550.90.07", .cordoned = true, .wait_from = 1};
	struct upgrade_view v = {.pending = "550.100",
				 .current = "535.261.03",
				 .slot = true,
				 .unschedulable = true,
				 .gpu_pods = 1,
				 .now = 50};

	(void)state;
	/* A newer version replaced the pending one: that one now, the cordon kept as ours. */
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_PENDING);
	assert_string_equal(r.version, "550.100");
	assert_true(r.cordoned);
	/* The rollout went back (nothing pending): uncordon, give the slot back, idle. */
	v.pending = NULL;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_UNCORDON);
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_RELEASE);
	v.slot = false;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_IDLE);
	assert_string_equal(r.version, "");
	/* Pending, then switched in by a pod restart while idle: done without us. */
	r = (struct upgrade_record){.state = UPG_PENDING, .version = "550.90.07"};
	v.current = "550.90.07";
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_DONE);
	/* Idle with a slot (a record removed by a person): the slot goes back. */
	r = (struct upgrade_record){0};
	v.slot = true;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_RELEASE);
	assert_int_equal(r.state, UPG_IDLE);
}

static void test_failures(void **state)
{
	struct upgrade_record r = {.state = UPG_ACTIVATING,
				   .version = "550.90.07",
				   .from = "535.261.03",
				   .cordoned = true};
	struct upgrade_view v = {.current = "535.261.03",
				 .slot = true,
				 .unschedulable = true,
				 .failed = "module nvidia: Key was rejected by service",
				 .now = 9};

	(void)state;
	/* The installer withdrew the version and loaded the one before: failed, cordoned. */
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_FAILED);
	assert_true(r.cordoned);
	assert_non_null(strstr(r.reason, "activating 550.90.07 failed; 535.261.03 serves: module "
					 "nvidia: Key was rejected"));
	/* Stopped, the slot kept: the same version staged again changes nothing. */
	v.pending = "550.90.07";
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_FAILED);
	/* A rollout of another version begins again, keeping the cordon to lift. */
	v.pending = "550.100";
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_PENDING);
	assert_true(r.cordoned);
	assert_string_equal(r.from, "535.261.03");

	/* Validation: not ready in time, rolled back to the version before. */
	r = (struct upgrade_record){.state = UPG_VALIDATING,
				    .version = "550.90.07",
				    .from = "535.261.03",
				    .cordoned = true,
				    .since = 100};
	v = (struct upgrade_view){
		.current = "550.90.07", .slot = true, .not_ready = "cuda: ...", .now = 399};
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	v.now = 400;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_ROLLBACK);
	assert_int_equal(r.state, UPG_FAILED);
	assert_non_null(
		strstr(r.reason, "not ready within 300s: cuda: ...; rolled back to 535.261.03"));
	/* No version before (a first install went pending? never): failed, nothing to undo. */
	r = (struct upgrade_record){.state = UPG_VALIDATING, .version = "550.90.07", .since = 100};
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_FAILED);
	/* Another version installed while validating. */
	r = (struct upgrade_record){.state = UPG_VALIDATING, .version = "550.90.07", .since = 100};
	v.current = "535.261.03";
	v.now = 101;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_FAILED);
}

/* The agent restarted after recording each state: the same observation, the same step. */
static void test_restart_at_each_state(void **state)
{
	struct upgrade_view v = {.pending = "550.90.07",
				 .current = "535.261.03",
				 .slot = true,
				 .unschedulable = true,
				 .now = 10};

	(void)state;
	for (int s = UPG_PENDING; s < UPG_N_STATES; s++) {
		struct upgrade_record r = {.state = (enum upgrade_state)s,
					   .version = "550.90.07",
					   .cordoned = true,
					   .wait_from = 1,
					   .since = 1};
		struct upgrade_step a = upgrade_decide(&r, &v, &policy),
				    b = upgrade_decide(&r, &v, &policy);

		assert_int_equal(a.action, b.action);
		assert_memory_equal(&a.next, &b.next, sizeof(a.next));
		/* Nothing done twice: an action's effect seen, it is not asked again. */
		if (a.action == UPG_ACT_CORDON) {
			struct upgrade_record n = a.next;

			assert_int_not_equal(upgrade_decide(&n, &v, &policy).action,
					     UPG_ACT_CORDON);
		}
	}
	/* Activating, switched in by the run the agent started before it was killed. */
	{
		struct upgrade_record r = {.state = UPG_ACTIVATING, .version = "550.90.07"};
		struct upgrade_view done = {.current = "550.90.07", .slot = true, .now = 20};

		assert_int_equal(step(&r, &done, &policy), UPG_ACT_NONE);
		assert_int_equal(r.state, UPG_VALIDATING);
	}
	/* Activating, not switched yet and idle: activated again (the installer's switch is
	 * idempotent under its lock). */
	{
		struct upgrade_record r = {.state = UPG_ACTIVATING, .version = "550.90.07"};

		v.unschedulable = false;
		assert_int_equal(step(&r, &v, &policy), UPG_ACT_ACTIVATE);
	}
}

static json_object *parse(const char *s)
{
	json_object *o = json_tokener_parse(s);

	assert_non_null(o);
	return o;
}

static void test_gpu_pods(void **state)
{
	json_object *items = parse(
		"[{\"metadata\": {\"namespace\": \"ml\", \"name\": \"train\"}, \"spec\": {\"containers\": "
		"[{\"name\": \"a\"}, {\"name\": \"b\", \"resources\": {\"limits\": {\"nvidia.com/gpu\": "
		"\"8\"}}}]}, \"status\": {\"phase\": \"Running\"}},"
		/* finished */
		" {\"metadata\": {\"namespace\": \"ml\", \"name\": \"done\"}, \"spec\": {\"containers\": "
		"[{\"resources\": {\"limits\": {\"nvidia.com/gpu\": \"1\"}}}]}, \"status\": {\"phase\": "
		"\"Succeeded\"}},"
		/* a CPU pod; a zero GPU request */
		" {\"metadata\": {\"namespace\": \"ml\", \"name\": \"cpu\"}, \"spec\": {\"containers\": "
		"[{\"resources\": {\"requests\": {\"cpu\": \"1\", \"nvidia.com/gpu\": \"0\"}}}]}, "
		"\"status\": {\"phase\": \"Running\"}},"
		/* MIG and a renamed shared GPU, in requests */
		" {\"metadata\": {\"namespace\": \"ml\", \"name\": \"mig\"}, \"spec\": {\"containers\": "
		"[{\"resources\": {\"requests\": {\"nvidia.com/mig-1g.18gb\": \"1\"}}}]}, \"status\": "
		"{\"phase\": \"Pending\"}},"
		" {\"metadata\": {\"namespace\": \"ml\", \"name\": \"shared\"}, \"spec\": {\"containers\": "
		"[{\"resources\": {\"limits\": {\"nvidia.com/gpu.shared\": 1}}}]}, \"status\": {}},"
		/* an init container that ran, and a sidecar that runs */
		" {\"metadata\": {\"namespace\": \"ml\", \"name\": \"init-ran\"}, \"spec\": "
		"{\"initContainers\": [{\"resources\": {\"limits\": {\"nvidia.com/gpu\": \"1\"}}}], "
		"\"containers\": [{}]}, \"status\": {\"phase\": \"Running\"}},"
		" {\"metadata\": {\"namespace\": \"ml\", \"name\": \"sidecar\"}, \"spec\": "
		"{\"initContainers\": [{\"restartPolicy\": \"Always\", \"resources\": {\"limits\": "
		"{\"nvidia.com/gpu\": \"1\"}}}], \"containers\": [{}]}, \"status\": {\"phase\": "
		"\"Running\"}},"
		/* a DaemonSet's: counted, not evictable */
		" {\"metadata\": {\"namespace\": \"mon\", \"name\": \"dcgm\", \"ownerReferences\": "
		"[{\"kind\": \"DaemonSet\", \"name\": \"dcgm\"}]}, \"spec\": {\"containers\": "
		"[{\"resources\": {\"limits\": {\"nvidia.com/gpu\": \"1\"}}}]}, \"status\": {\"phase\": "
		"\"Running\"}},"
		/* a static pod's mirror (kubectl drain's mirrorPodFilter skips it: evicting it
		 * leaves the static pod running), by its annotation or its Node owner */
		" {\"metadata\": {\"namespace\": \"kube-system\", \"name\": \"static-a\", "
		"\"annotations\": {\"kubernetes.io/config.mirror\": \"5f0c\"}}, \"spec\": "
		"{\"containers\": [{\"resources\": {\"limits\": {\"nvidia.com/gpu\": \"1\"}}}]}, "
		"\"status\": {\"phase\": \"Running\"}},"
		" {\"metadata\": {\"namespace\": \"kube-system\", \"name\": \"static-b\", "
		"\"ownerReferences\": [{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"name\": "
		"\"gpu-1\"}]}, \"spec\": {\"containers\": [{\"resources\": {\"limits\": "
		"{\"nvidia.com/gpu\": \"1\"}}}]}, \"status\": {\"phase\": \"Running\"}},"
		/* already leaving (an eviction accepted): waited for, not asked again */
		" {\"metadata\": {\"namespace\": \"ml\", \"name\": \"leaving\", \"deletionTimestamp\": "
		"\"2026-12-02T15:04:05Z\"}, \"spec\": {\"containers\": [{\"resources\": {\"limits\": "
		"{\"nvidia.com/gpu\": \"1\"}}}]}, \"status\": {\"phase\": \"Running\"}},"
		/* not a GPU resource of NVIDIA's */
		" {\"metadata\": {\"namespace\": \"ml\", \"name\": \"amd\"}, \"spec\": {\"containers\": "
		"[{\"resources\": {\"limits\": {\"amd.com/gpu\": \"1\", \"nvidia.com/gpux\": \"1\"}}}]}, "
		"\"status\": {\"phase\": \"Running\"}}]");
	unsigned evictable = 0;
	char names[512], small[12];

	(void)state;
	assert_int_equal(upgrade_gpu_pods(items, &evictable, names, sizeof(names)), 8);
	assert_int_equal(evictable, 4);
	assert_string_equal(names, "ml/train, ml/mig, ml/shared, ml/sidecar, mon/dcgm, "
				   "kube-system/static-a, kube-system/static-b, ml/leaving");
	assert_int_equal(upgrade_gpu_pods(items, &evictable, small, sizeof(small)), 8);
	assert_string_equal(small, "ml/train");
	assert_int_equal(upgrade_gpu_pods(NULL, &evictable, names, sizeof(names)), 0);
	assert_string_equal(names, "");
	json_object_put(items);
}

static void test_record(void **state)
{
	struct upgrade_record r = {.state = UPG_EVICTING,
				   .version = "550.90.07",
				   .from = "535.261.03",
				   .cordoned = true,
				   .since = 1733150000,
				   .wait_from = 1733149000,
				   .reason = "evicting \"2\" pods",
				   .slot = 3,
				   .evented = UPG_WAITING},
			      back;
	char *s = upgrade_record_format(&r);
	json_object *patch, *meta, *x;
	struct err e;

	(void)state;
	assert_non_null(s);
	err_clear(&e);
	assert_int_equal(upgrade_record_parse(s, &back, &e), 0);
	assert_memory_equal(&r, &back, sizeof(r));
	free(s);
	assert_int_equal(upgrade_record_parse(NULL, &back, &e), 0);
	assert_int_equal(back.state, UPG_IDLE);
	assert_int_equal(upgrade_record_parse("{\"state\": \"exploded\"}", &back, &e), -1);
	assert_non_null(strstr(e.msg, "no known state"));
	/* Killed between the state's record and its Event: the Event is due. */
	assert_true(upgrade_event_due(&r));
	r.evented = UPG_EVICTING;
	assert_false(upgrade_event_due(&r));
	/* A record from before "event" was recorded: its agent posted the Event at once. */
	assert_int_equal(upgrade_record_parse("{\"state\": \"waiting\"}", &back, &e), 0);
	assert_false(upgrade_event_due(&back));
	assert_int_equal(
		upgrade_record_parse("{\"state\": \"waiting\", \"event\": \"\"}", &back, &e), 0);
	assert_true(upgrade_event_due(&back));
	assert_false(upgrade_event_due(&(struct upgrade_record){0}));
	assert_int_equal(upgrade_record_parse("[1]", &back, &e), -1);
	assert_int_equal(upgrade_record_parse("{\"state\": \"\"}", &back, &e), -1);

	/* The patch: the label, the annotation, the cordon. */
	patch = upgrade_node_patch(&r, 1);
	assert_non_null(patch);
	assert_true(json_object_object_get_ex(patch, "metadata", &meta));
	assert_true(json_object_object_get_ex(meta, "labels", &x));
	assert_string_equal(json_object_get_string(json_object_object_get(x, UPGRADE_LABEL)),
			    "evicting");
	assert_true(json_object_object_get_ex(patch, "spec", &x));
	assert_true(json_object_get_boolean(json_object_object_get(x, "unschedulable")));
	json_object_put(patch);
	/* Idle: both removed (null), the cordon as it is. */
	r.state = UPG_IDLE;
	patch = upgrade_node_patch(&r, -1);
	assert_string_equal(json_object_to_json_string_ext(
				    patch, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			    "{\"metadata\":{\"labels\":{\"nvidia.com/gpu.driver-installer.upgrade-"
			    "state\":null},\"annotations\":{\"nvidia.com/gpu.driver-installer."
			    "upgrade\":null}}}");
	json_object_put(patch);
	for (int i = 0; i < UPG_N_STATES; i++)
		assert_true(strlen(upgrade_state_name((enum upgrade_state)i)) <= 63);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_upgrade), cmocka_unit_test(test_someone_elses_cordon),
		cmocka_unit_test(test_deadline),      cmocka_unit_test(test_rollout_changes),
		cmocka_unit_test(test_failures),      cmocka_unit_test(test_restart_at_each_state),
		cmocka_unit_test(test_gpu_pods),      cmocka_unit_test(test_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
