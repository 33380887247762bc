// SPDX-License-Identifier: Apache-2.0
/*
 * agent/upgrade: a node's upgrade decided step by step (a whole upgrade, the deadline's two
 * policies, a rollout that goes back or moves on, a failed activation and validation, a
 * restart at each state), the GPU pods of a PodList, and the record on the node.
 */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "agent/labelsel.h"
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
	assert_int_equal(upgrade_gpu_pods(items, NULL, &evictable, names, sizeof(names)), 8);
	assert_int_equal(evictable, 4);
	assert_string_equal(names, "ml/train, ml/mig, ml/shared, ml/sidecar, mon/dcgm, "
				   "kube-system/static-a, kube-system/static-b, ml/leaving");
	assert_int_equal(upgrade_gpu_pods(items, NULL, &evictable, small, sizeof(small)), 8);
	assert_string_equal(small, "ml/train");
	assert_int_equal(upgrade_gpu_pods(NULL, NULL, &evictable, names, sizeof(names)), 0);
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

/* ---- the controls NVIDIA's upgrade policy has ------------------------------------------ */

static bool sel_matches(const char *sel, const char *labels)
{
	struct labelsel ls;
	json_object *l = labels ? parse(labels) : NULL;
	char why[200];
	bool m;

	assert_int_equal(labelsel_parse(sel, &ls, why, sizeof(why)), 0);
	m = labelsel_matches(&ls, l);
	labelsel_free(&ls);
	json_object_put(l);
	return m;
}

/* Whether SEL is refused, and its reason has WANT. */
static void sel_refused(const char *sel, const char *want)
{
	struct labelsel ls;
	char why[200] = "";

	assert_int_equal(labelsel_parse(sel, &ls, why, sizeof(why)), -1);
	assert_non_null(strstr(why, want));
	assert_int_equal(ls.n, 0);
	assert_int_equal(labelsel_check(sel, why, sizeof(why)), -1);
}

static void test_label_selector(void **state)
{
	const char *both = "{\"app\": \"train\", \"tier\": \"batch\", \"gen\": \"7\"}";

	(void)state;
	/* Equality: = == !=; != and notin also match a pod without the key. */
	assert_true(sel_matches("app=train", both));
	assert_true(sel_matches("app==train,tier=batch", both));
	assert_false(sel_matches("app=train,tier=web", both));
	assert_true(sel_matches("app!=serve", both));
	assert_false(sel_matches("app!=train", both));
	assert_true(sel_matches("app!=train", "{}"));
	assert_false(sel_matches("app=train", NULL));
	/* Set-based, with blanks between tokens as kubectl -l takes them. */
	assert_true(sel_matches(" tier in ( batch , web ) ", both));
	assert_false(sel_matches("tier in (web)", both));
	assert_true(sel_matches("tier notin (web)", both));
	assert_true(sel_matches("tier notin (web)", "{}"));
	assert_false(sel_matches("tier notin (batch,web)", both));
	assert_true(sel_matches("app", both));
	assert_false(sel_matches("!app", both));
	assert_true(sel_matches("!owner,app", both));
	/* An empty member of a set, and an empty value. */
	assert_true(sel_matches("x in (a,)", "{\"x\": \"\"}"));
	assert_true(sel_matches("x=", "{\"x\": \"\"}"));
	assert_false(sel_matches("x=", "{\"x\": \"a\"}"));
	/* Gt and Lt: integers; a value that is not one never matches. */
	assert_true(sel_matches("gen>6", both));
	assert_false(sel_matches("gen>7", both));
	assert_true(sel_matches("gen<8", both));
	assert_false(sel_matches("app>1", both));
	assert_false(sel_matches("gen>1", "{}"));
	/* A prefixed key; the empty selector matches every pod. */
	assert_true(sel_matches("example.com/team=ml", "{\"example.com/team\": \"ml\"}"));
	assert_true(sel_matches("", both));
	assert_true(sel_matches("  ", NULL));
	/* in and notin are identifiers where a key or a value is expected (labels.Parse reads
	 * those tokens in its Values context: lookahead and consume turn InToken and
	 * NotInToken into IdentifierToken), and "()" is the set {""} (parseValues). */
	assert_true(sel_matches("direction=in", "{\"direction\": \"in\"}"));
	assert_true(sel_matches("x in (in, notin)", "{\"x\": \"notin\"}"));
	assert_true(sel_matches("in=notin", "{\"in\": \"notin\"}"));
	assert_true(sel_matches("notin notin (in)", "{\"notin\": \"out\"}"));
	assert_true(sel_matches("in", "{\"in\": \"\"}"));
	assert_true(sel_matches("!in", "{}"));
	assert_true(sel_matches("app in ()", "{\"app\": \"\"}"));
	assert_false(sel_matches("app in ()", both));
	assert_true(sel_matches("app notin ()", both));
	/* What labels.Parse refuses. */
	sel_refused("app in (a", "',' or ')'");
	sel_refused("app in a", "'(' expected");
	sel_refused("app=a b", "',' or the end");
	sel_refused("app,", "a label key expected");
	sel_refused("=a", "a label key expected");
	sel_refused("!app=a", "!key takes no operator");
	sel_refused("gen>x", "integer");
	sel_refused("gen>", "integer");
	sel_refused("-app=a", "not a label key");
	sel_refused("Example.com/app=a", "not a label key");
	sel_refused("app=-a", "not a label value");
	sel_refused("app=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		    "not a label value");
	/* The key's prefix is a DNS-1123 subdomain: no empty label, none that begins or ends
	 * with '-' (IsQualifiedName, IsDNS1123Subdomain). */
	sel_refused("a..b/k=v", "not a label key");
	sel_refused("a.-b/k=v", "not a label key");
	sel_refused("a-.b/k=v", "not a label key");
	sel_refused(".a/k=v", "not a label key");
	assert_true(sel_matches("a-1.b/k=v", "{\"a-1.b/k\": \"v\"}"));
	sel_refused("x in in", "'(' expected");
	sel_refused("x = in in", "',' or the end");
	sel_refused("app<>1", "a value expected");
}

/* A pod of NS/NAME: META's members added to its metadata, SPEC's to its spec. */
static void add_pod(json_object *items, const char *ns, const char *name, const char *meta,
		    const char *spec, const char *phase)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"metadata\": {\"namespace\": \"%s\", \"name\": \"%s\"%s}, \"spec\": "
		 "{%s}, \"status\": {\"phase\": \"%s\"}}",
		 ns, name, meta, spec, phase);
	json_object_array_add(items, parse(buf));
}

#define GPU "\"containers\": [{\"resources\": {\"limits\": {\"nvidia.com/gpu\": \"1\"}}}]"
#define CPU "\"containers\": [{\"name\": \"c\"}]"
#define OWNED ", \"ownerReferences\": [{\"kind\": \"Job\", \"name\": \"j\", \"controller\": true}]"
#define EMPTYDIR ", \"volumes\": [{\"name\": \"cfg\"}, {\"name\": \"s\", \"emptyDir\": {}}]"

static void test_pods_the_options_name(void **state)
{
	json_object *items = json_object_new_array();
	struct labelsel wait_for, drain_sel;
	struct upgrade_pod_opts o = {0};
	struct upgrade_pods c;
	char why[200];

	(void)state;
	add_pod(items, "ml", "train", OWNED ", \"labels\": {\"app\": \"train\"}", GPU, "Running");
	add_pod(items, "ml", "lone", ", \"labels\": {\"app\": \"train\"}", GPU, "Running");
	add_pod(items, "ml", "scratch", OWNED, GPU EMPTYDIR, "Running");
	add_pod(items, "ml", "waitme", OWNED ", \"labels\": {\"upgrade\": \"wait\"}", CPU,
		"Pending");
	add_pod(items, "ml", "waitdone", OWNED ", \"labels\": {\"upgrade\": \"wait\"}", CPU,
		"Succeeded");
	add_pod(items, "web", "front", OWNED ", \"labels\": {\"drain\": \"yes\"}", CPU, "Running");
	add_pod(items, "web", "going",
		OWNED
		", \"labels\": {\"drain\": \"yes\"}, \"deletionTimestamp\": \"2026-12-02T15:04:05Z\"",
		CPU, "Running");
	add_pod(items, "web", "kept", OWNED ", \"labels\": {\"drain\": \"no\"}", CPU, "Running");
	add_pod(items, "mon", "exporter",
		", \"labels\": {\"drain\": \"yes\"}, \"ownerReferences\": [{\"kind\": "
		"\"DaemonSet\", \"name\": \"x\", \"controller\": true}]",
		CPU, "Running");
	add_pod(items, "kube-system", "static",
		", \"labels\": {\"drain\": \"yes\"}, \"annotations\": "
		"{\"kubernetes.io/config.mirror\": \"1\"}",
		CPU, "Running");
	add_pod(items, "web", "old", ", \"labels\": {\"drain\": \"yes\"}", CPU, "Failed");
	assert_int_equal(labelsel_parse("upgrade=wait", &wait_for, why, sizeof(why)), 0);
	assert_int_equal(labelsel_parse("drain in (yes)", &drain_sel, why, sizeof(why)), 0);
	/* No options: the GPU pod with no controller and the one with an emptyDir are kept,
	 * the first named with the option that moves it; nothing is waited for or drained. */
	upgrade_pods_count(items, &o, &c);
	assert_int_equal(c.gpu, 3);
	assert_int_equal(c.evictable, 3);
	assert_string_equal(c.blocked, "ml/lone has no controller, so nothing makes it again: "
				       "--upgrade-evict-force=yes moves it");
	assert_int_equal(c.wait_for, 0);
	assert_int_equal(c.drain_left, 0);
	assert_int_equal(upgrade_pod_kept(json_object_array_get_idx(items, 0), false, false), 0);
	assert_int_equal(upgrade_pod_kept(json_object_array_get_idx(items, 1), false, false), 'f');
	assert_int_equal(upgrade_pod_kept(json_object_array_get_idx(items, 2), false, false), 'e');
	assert_int_equal(upgrade_pod_kept(json_object_array_get_idx(items, 2), false, true), 0);
	o.evict_force = true;
	upgrade_pods_count(items, &o, &c);
	assert_string_equal(c.blocked, "ml/scratch has an emptyDir volume, whose data is lost when "
				       "it leaves: --upgrade-evict-emptydir=yes moves it");
	o.evict_emptydir = true;
	upgrade_pods_count(items, &o, &c);
	assert_string_equal(c.blocked, "");
	/* Waited for: matching, Running or Pending (the one that ended is not). */
	o.wait_for = &wait_for;
	upgrade_pods_count(items, &o, &c);
	assert_int_equal(c.wait_for, 1);
	assert_string_equal(c.wait_for_first, "ml/waitme");
	/* The drain with its selector: front asked, going waited for (leaving), kept not
	 * matching, the DaemonSet's, the mirror and the finished pod never. */
	o.drain = true;
	o.drain_select = &drain_sel;
	upgrade_pods_count(items, &o, &c);
	assert_int_equal(c.drain_left, 2);
	assert_int_equal(c.drain_movable, 1);
	assert_string_equal(c.drain_first, "web/front");
	assert_string_equal(c.drain_blocked, "");
	for (size_t i = 0; i < json_object_array_length(items); i++)
		assert_int_equal(upgrade_pod_drains(json_object_array_get_idx(items, i), &o),
				 i == 5);
	/* Without a selector every other pod is the drain's: lone has no controller. */
	o.drain_select = NULL;
	upgrade_pods_count(items, &o, &c);
	assert_string_equal(c.drain_blocked,
			    "ml/lone has no controller, so nothing makes it again: "
			    "--upgrade-drain-force=yes moves it");
	assert_false(upgrade_pod_drains(json_object_array_get_idx(items, 1), &o));
	o.drain_force = true;
	upgrade_pods_count(items, &o, &c);
	assert_non_null(strstr(c.drain_blocked, "--upgrade-drain-emptydir=yes"));
	o.drain_emptydir = true;
	upgrade_pods_count(items, &o, &c);
	assert_string_equal(c.drain_blocked, "");
	assert_int_equal(c.drain_left, 7);
	assert_int_equal(c.drain_movable, 6);
	labelsel_free(&wait_for);
	labelsel_free(&drain_sel);
	json_object_put(items);
}

/* The node in the waiting state, the slot held, version 550 pending over 535. */
static struct upgrade_record waiting_record(void)
{
	return (struct upgrade_record){.state = UPG_WAITING,
				       .version = "550.90.07",
				       .from = "535.261.03",
				       .cordoned = true,
				       .since = 1000,
				       .wait_from = 1000,
				       .slot = 1,
				       .evented = UPG_WAITING};
}

static void test_wait_for(void **state)
{
	struct upgrade_pods pods = {.wait_for = 2, .wait_for_first = "ml/waitme"};
	struct upgrade_policy p = policy;
	struct upgrade_record r = waiting_record();
	struct upgrade_view v = {.pending = "550.90.07",
				 .current = "535.261.03",
				 .slot = true,
				 .unschedulable = true,
				 .now = 5000,
				 .pods = &pods};

	(void)state;
	/* No GPU pod, no holder: still the selected pods hold it. */
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	assert_string_equal(r.reason,
			    "waiting for 2 pod(s) matching --upgrade-wait-for (ml/waitme)");
	/* Past the deadline with the evict policy: the GPU pods are not touched yet. */
	p.deadline_s = 0;
	p.on_deadline = UPG_DEADLINE_EVICT;
	v.gpu_pods = v.evictable = 1;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	/* A timeout not reached yet: waited for. */
	p.wait_timeout_s = 4001;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_non_null(strstr(r.reason, "until its timeout"));
	/* Past it, as NVIDIA's: on without them, to the GPU pods' eviction. */
	p.wait_timeout_s = 4000;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_EVICT);
	assert_int_equal(r.state, UPG_EVICTING);
	/* Once they have ended, no timeout needed: activated. */
	r = waiting_record();
	p = policy;
	v.gpu_pods = v.evictable = 0;
	pods.wait_for = 0;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_ACTIVATE);
}

static void test_evict_options(void **state)
{
	struct upgrade_pods pods = {.blocked = "ml/lone has no controller, so nothing makes it "
					       "again: --upgrade-evict-force=yes moves it"};
	struct upgrade_policy p = policy;
	struct upgrade_record r = waiting_record();
	struct upgrade_view v = {.pending = "550.90.07",
				 .current = "535.261.03",
				 .slot = true,
				 .unschedulable = true,
				 .gpu_pods = 2,
				 .evictable = 2,
				 .now = 5000,
				 .pods = &pods};

	(void)state;
	p.deadline_s = 60;
	p.on_deadline = UPG_DEADLINE_EVICT;
	/* One pod the options keep: none is evicted, the reason names it and the option. */
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	assert_string_equal(r.reason, "past the 60s deadline, no GPU pod evicted: ml/lone has no "
				      "controller, so nothing makes it again: "
				      "--upgrade-evict-force=yes moves it");
	/* ... and says it blocks (the evictions_blocked metric). */
	assert_true(upgrade_decide(&r, &v, &p).evict_blocked);
	/* Before the deadline it is an ordinary wait. */
	r = waiting_record();
	v.now = 1010;
	assert_false(upgrade_decide(&r, &v, &p).evict_blocked);
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_non_null(strstr(r.reason, "2 GPU pod(s) and 0 process(es)"));
	/* Allowed: evicted. */
	pods.blocked[0] = '\0';
	v.now = 5000;
	assert_false(upgrade_decide(&r, &v, &p).evict_blocked);
	assert_int_equal(step(&r, &v, &p), UPG_ACT_EVICT);
	assert_int_equal(r.state, UPG_EVICTING);
}

static void test_drain(void **state)
{
	struct upgrade_pods pods = {.drain_left = 2, .drain_movable = 1, .drain_first = "web/a"};
	struct upgrade_policy p = policy;
	struct upgrade_record r = waiting_record(), back;
	struct upgrade_view v = {.pending = "550.90.07",
				 .current = "535.261.03",
				 .slot = true,
				 .unschedulable = true,
				 .gpu_pods = 1,
				 .evictable = 1,
				 .now = 2000,
				 .pods = &pods};
	struct err e;
	char *s;

	(void)state;
	p.drain = true;
	p.drain_timeout_s = 300;
	/* Not while a GPU pod runs. */
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	/* The GPU pods gone: draining, the movable pods asked. */
	v.gpu_pods = v.evictable = 0;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_DRAIN);
	assert_int_equal(r.state, UPG_DRAINING);
	assert_int_equal(r.since, 2000);
	assert_string_equal(r.reason, "draining: 2 pod(s) left, web/a first");
	/* Only pods already leaving: waited for, not asked again. */
	pods.drain_movable = 0;
	v.now = 2100;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_DRAINING);
	assert_int_equal(r.since, 2000);
	/* Recorded mid-drain, restarted: the record says so. */
	s = upgrade_record_format(&r);
	assert_int_equal(upgrade_record_parse(s, &back, &e), 0);
	free(s);
	assert_int_equal(back.state, UPG_DRAINING);
	assert_true(upgrade_record_claims(&back, 0));
	/* Drained: activated, and not drained again after a restart at activating. */
	pods.drain_left = 0;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_ACTIVATE);
	assert_true(r.drained);
	s = upgrade_record_format(&r);
	assert_int_equal(upgrade_record_parse(s, &back, &e), 0);
	free(s);
	assert_true(back.drained);
	pods.drain_left = 3;
	assert_int_equal(step(&back, &v, &p), UPG_ACT_ACTIVATE);
	/* Drained with a process outside pods left: waited for. */
	r = waiting_record();
	pods.drain_left = 0;
	v.holders = 1;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_WAITING);
	assert_true(r.drained);
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	v.holders = 0;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_ACTIVATE);
	/* Past the timeout with pods left: failed, as NVIDIA's drain fails the upgrade. */
	r = waiting_record();
	pods.drain_left = pods.drain_movable = 1;
	v.now = 3000;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_DRAIN);
	v.now = 3300;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_FAILED);
	assert_string_equal(r.reason, "the drain did not end within 300s "
				      "(--upgrade-drain-timeout): 1 pod(s) left, web/a first");
	/* No timeout (0): drained as long as it takes. */
	r = waiting_record();
	p.drain_timeout_s = 0;
	v.now = 999999;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_DRAIN);
	assert_int_equal(step(&r, &v, &p), UPG_ACT_DRAIN);
	assert_int_equal(r.state, UPG_DRAINING);
	/* A pod the drain may not move fails it at once, naming the pod and the option. */
	snprintf(pods.drain_blocked, sizeof(pods.drain_blocked), "web/lone has no controller");
	assert_int_equal(step(&r, &v, &p), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_FAILED);
	assert_string_equal(r.reason, "the drain refused: web/lone has no controller");
	/* Drain off: none of it. */
	r = waiting_record();
	p.drain = false;
	assert_int_equal(step(&r, &v, &p), UPG_ACT_ACTIVATE);
	/* An older agent's record (no "drained") parses as not drained. */
	assert_int_equal(
		upgrade_record_parse("{\"state\": \"activating\", \"slot\": 1}", &back, &e), 0);
	assert_false(back.drained);
}

/* The states where a step depends on the GPU pods are the ones upgrade_state_counts_pods
 * names (elsewhere the agent reads no claims): each state decided with and without GPU pods,
 * of every policy of the deadline and drain, a version pending or not, the slot held or not. */
static void test_states_counting_pods(void **state)
{
	struct upgrade_pods pods = {.drain_left = 1, .drain_movable = 1, .wait_for = 1};
	bool differs[UPG_N_STATES] = {false};

	(void)state;
	snprintf(pods.wait_for_first, sizeof(pods.wait_for_first), "ml/a");
	snprintf(pods.drain_first, sizeof(pods.drain_first), "ml/a");
	for (unsigned s = 0; s < UPG_N_STATES; s++) {
		for (unsigned k = 0; k < 16; k++) {
			struct upgrade_record r = {.state = (enum upgrade_state)s,
						   .version = "550.90.07",
						   .cordoned = true,
						   .wait_from = 100,
						   .since = 100};
			struct upgrade_view idle = {.pending = k & 1 ? NULL : "550.90.07",
						    .current = k & 8 ? "550.90.07" : "535.261.03",
						    .slot = !(k & 2),
						    .unschedulable = true,
						    .ready = true,
						    .now = 1000};
			struct upgrade_view busy = idle;
			struct upgrade_policy p = policy;
			struct upgrade_step a, b;

			p.on_deadline = k & 4 ? UPG_DEADLINE_EVICT : UPG_DEADLINE_WAIT;
			p.drain = k & 4;
			p.deadline_s = 10;
			busy.gpu_pods = busy.evictable = 2;
			busy.pods = &pods;
			a = upgrade_decide(&r, &idle, &p);
			b = upgrade_decide(&r, &busy, &p);
			if (a.action != b.action || a.next.state != b.next.state ||
			    strcmp(a.next.reason, b.next.reason) != 0)
				differs[s] = true;
		}
		assert_int_equal(differs[s], upgrade_state_counts_pods((enum upgrade_state)s));
	}
}

/* JSON nulls where the API server sends strings (a phase, a namespace): no crash, and a pod
 * whose phase is not known is not taken for finished. */
static void test_null_members(void **state)
{
	struct claims c = {.drivers = CLAIMS_DRIVERS_DEFAULT};
	json_object *pod = json_tokener_parse(
		"{\"metadata\": {\"name\": \"a\", \"namespace\": null}, \"status\": {\"phase\": null},"
		" \"spec\": {\"resourceClaims\": [{\"name\": \"g\", \"resourceClaimName\": \"x\"}],"
		" \"containers\": [{\"name\": \"c\"}]}}");
	bool evictable;

	(void)state;
	assert_non_null(pod);
	assert_false(upgrade_pod_finished(pod));
	assert_false(upgrade_pod_holds_gpu(pod, &c, &evictable));
	json_object_put(pod);
}

static void test_max_unavailable(void **state)
{
	json_object *nodes = parse(
		"[{\"metadata\": {\"name\": \"self\"}, \"spec\": {\"unschedulable\": true}},"
		" {\"metadata\": {\"name\": \"fine\"}, \"status\": {\"conditions\": [{\"type\": "
		"\"Ready\", \"status\": \"True\"}]}},"
		" {\"metadata\": {\"name\": \"no-cond\"}},"
		" {\"metadata\": {\"name\": \"cordoned\"}, \"spec\": {\"unschedulable\": true}},"
		" {\"metadata\": {\"name\": \"sick\"}, \"status\": {\"conditions\": [{\"type\": "
		"\"Ready\", \"status\": \"Unknown\"}]}},"
		" {\"metadata\": {\"name\": \"slot\", \"annotations\": {\"" UPGRADE_ANNOTATION
		"\": "
		"\"{\\\"state\\\": \\\"pending\\\", \\\"slot\\\": 2}\"}}},"
		" {\"metadata\": {\"name\": \"queued\", \"annotations\": {\"" UPGRADE_ANNOTATION
		"\": "
		"\"{\\\"state\\\": \\\"pending\\\"}\"}}},"
		" {\"metadata\": {\"name\": \"done\", \"annotations\": {\"" UPGRADE_ANNOTATION
		"\": "
		"\"{\\\"state\\\": \\\"done\\\", \\\"slot\\\": 1}\"}}}]");
	struct upgrade_record r = {.state = UPG_PENDING, .version = "550.90.07", .since = 1};
	struct upgrade_view v = {.pending = "550.90.07", .current = "535.261.03", .now = 10};
	char names[64], small[15];
	unsigned n;

	(void)state;
	/* Cordoned, not Ready, or holding a slot and not cordoned; this node left out. */
	assert_int_equal(upgrade_unavailable(nodes, "self", names, sizeof(names)), 3);
	assert_string_equal(names, "cordoned, sick, slot");
	assert_int_equal(upgrade_unavailable(nodes, "fine", small, sizeof(small)), 4);
	assert_string_equal(small, "self, cordoned");
	assert_int_equal(upgrade_unavailable(NULL, "self", names, sizeof(names)), 0);
	/* N, or P% rounded up of the DaemonSet's nodes. */
	assert_int_equal(upgrade_max_unavailable("3", 100, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(upgrade_max_unavailable("25%", 9, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(upgrade_max_unavailable("25%", 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(upgrade_max_unavailable("1%", 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(upgrade_max_unavailable("100%", 5000, &n), 0);
	assert_int_equal(n, 5000);
	for (const char *const *bad = (const char *const[]){"0", "0%", "101%", "%", "", "-1", "1.5",
							    "x", "12345678", NULL};
	     *bad; bad++)
		assert_int_equal(upgrade_max_unavailable(*bad, 10, &n), -1);
	/* The budget reached: no slot asked for, the reason says why; below it, asked. */
	v.max_unavailable = 3;
	v.unavailable = 3;
	v.unavailable_names = "cordoned, sick, slot";
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_NONE);
	assert_int_equal(r.state, UPG_PENDING);
	assert_string_equal(r.reason, "waiting: 3 of the DaemonSet's other nodes unavailable "
				      "(cordoned, sick, slot), --upgrade-max-unavailable allows 3");
	v.unavailable = 2;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_TAKE_SLOT);
	assert_string_equal(r.reason, "waiting for a slot of the fleet's limit");
	/* Once under way, a lapsed slot is taken again whatever the budget: the node is
	 * already out. */
	r.state = UPG_WAITING;
	v.unavailable = 9;
	assert_int_equal(step(&r, &v, &policy), UPG_ACT_TAKE_SLOT);
	json_object_put(nodes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_upgrade),
		cmocka_unit_test(test_someone_elses_cordon),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_rollout_changes),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_restart_at_each_state),
		cmocka_unit_test(test_gpu_pods),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_label_selector),
		cmocka_unit_test(test_pods_the_options_name),
		cmocka_unit_test(test_wait_for),
		cmocka_unit_test(test_evict_options),
		cmocka_unit_test(test_drain),
		cmocka_unit_test(test_max_unavailable),
		cmocka_unit_test(test_states_counting_pods),
		cmocka_unit_test(test_null_members),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
