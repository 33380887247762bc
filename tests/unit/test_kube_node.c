// SPDX-License-Identifier: Apache-2.0
/*
 * kube/node.c: the condition's next value from the one the Node has (when
 * lastTransitionTime moves, what a change is, the reason's and the message's bounds), the
 * taint list's next value (added, its value replaced, every effect of a key removed, the
 * other taints as they were, nothing to do), then the writes against
 * tests/tools/kube-api.py: the status subresource's patch, and the 409s another writer
 * causes, met by reading again.
 */
#include "cmocka_prelude.h"
#include "kubestub.h"
#include "scratch.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kube/internal.h"
#include "util/jsonc.h"
#include "util/str.h"

#define T0 "2026-01-02T03:04:05Z"
#define NOW "2026-12-07T00:00:00Z"

static const char *get_str(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static json_object *parse(const char *text)
{
	json_object *o = json_tokener_parse(text);

	assert_non_null(o);
	return o;
}

static json_object *next(json_object *old, const char *status, const char *reason,
			 const char *message, struct kube_condition_result *r)
{
	const struct kube_condition c = {KUBE_CONDITION_TYPE, status, reason, message};
	struct err e;
	json_object *o;

	err_clear(&e);
	o = kube_condition_next(old, &c, NOW, r, &e);
	assert_non_null(o);
	assert_string_equal(get_str(o, "type"), KUBE_CONDITION_TYPE);
	assert_string_equal(get_str(o, "lastHeartbeatTime"), NOW);
	return o;
}

/* lastTransitionTime moves with the status only; a change is status, reason or message. */
static void test_condition_times(void **state)
{
	_cleanup_(json_object_putp) json_object *old =
		parse("{\"type\": \"" KUBE_CONDITION_TYPE "\", \"status\": \"False\", \"reason\": "
		      "\"Installing\", \"message\": \"m\", \"lastHeartbeatTime\": \"" T0 "\", "
		      "\"lastTransitionTime\": \"" T0 "\"}");
	_cleanup_(json_object_putp) json_object *bare =
		parse("{\"type\": \"" KUBE_CONDITION_TYPE "\", \"status\": \"False\"}");
	struct kube_condition_result r;
	json_object *o;

	(void)state;
	/* None yet: a transition, now. */
	o = next(NULL, "False", "Installing", "m", &r);
	assert_true(r.changed && r.transitioned);
	assert_string_equal(r.old_status, "");
	assert_string_equal(get_str(o, "lastTransitionTime"), NOW);
	json_object_put(o);
	/* The same again: a heartbeat, nothing changed, the transition kept. */
	o = next(old, "False", "Installing", "m", &r);
	assert_false(r.changed || r.transitioned);
	assert_string_equal(get_str(o, "lastTransitionTime"), T0);
	json_object_put(o);
	/* Another reason or message under the same status: changed, the transition kept. */
	o = next(old, "False", "WaitingForPackage", "m", &r);
	assert_true(r.changed);
	assert_false(r.transitioned);
	assert_string_equal(r.old_status, "False");
	assert_string_equal(r.old_reason, "Installing");
	assert_string_equal(get_str(o, "lastTransitionTime"), T0);
	assert_string_equal(get_str(o, "reason"), "WaitingForPackage");
	json_object_put(o);
	o = next(old, "False", "Installing", "other", &r);
	assert_true(r.changed && !r.transitioned);
	assert_string_equal(get_str(o, "lastTransitionTime"), T0);
	json_object_put(o);
	/* Another status: a transition, now. */
	o = next(old, "True", "CUDAReady", "m", &r);
	assert_true(r.changed && r.transitioned);
	assert_string_equal(get_str(o, "lastTransitionTime"), NOW);
	json_object_put(o);
	o = next(old, "Unknown", "AgentStopped", "m", &r);
	assert_true(r.transitioned);
	json_object_put(o);
	/* A condition without a reason or a transition time (another writer's): one is set. */
	o = next(bare, "False", "Installing", "", &r);
	assert_true(r.changed && !r.transitioned);
	assert_string_equal(get_str(o, "lastTransitionTime"), NOW);
	assert_string_equal(get_str(o, "message"), "");
	json_object_put(o);
}

/* A reason is one UpperCamelCase word of at most 128; a message is cut to 1024 bytes. */
static void test_condition_bounds(void **state)
{
	char reason[130], msg[3000];
	const char *bad_reasons[] = {reason, "", "installing", "Not Ready", "Waiting-For", NULL};
	struct kube_condition c = {KUBE_CONDITION_TYPE, "False", reason, msg};
	struct kube_condition_result r;
	struct err e;
	json_object *o;
	const char *m;

	(void)state;
	memset(reason, 'A', 128);
	reason[128] = '\0';
	/* Two-byte characters, so that byte 1021 (where "..." would go) is inside one. */
	memcpy(msg, "xy", 2);
	for (size_t i = 2; i + 2 < sizeof(msg); i += 2)
		memcpy(msg + i, "\xc3\xa9", 2);
	msg[sizeof(msg) - 2] = '\0';
	err_clear(&e);
	o = kube_condition_next(NULL, &c, NOW, &r, &e);
	assert_non_null(o);
	m = get_str(o, "message");
	assert_int_equal(strlen(m), 1023);
	assert_string_equal(m + strlen(m) - 3, "...");
	assert_int_equal((unsigned char)m[strlen(m) - 4], 0xa9);
	assert_string_equal(get_str(o, "reason"), reason);
	/* The Node holds the cut message: the same message again is no change. */
	c.reason = "Installing";
	json_object_object_add(o, "reason", json_object_new_string("Installing"));
	json_object_put(kube_condition_next(o, &c, NOW, &r, &e));
	assert_false(r.changed);
	json_object_put(o);
	reason[128] = 'A';
	reason[129] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(bad_reasons); i++) {
		c.reason = bad_reasons[i];
		assert_null(kube_condition_next(NULL, &c, NOW, &r, &e));
		assert_int_equal(e.code, EXIT_UNEXPECTED);
		assert_non_null(strstr(e.msg, "UpperCamelCase"));
	}
	c.reason = "Installing";
	c.status = "Maybe";
	assert_null(kube_condition_next(NULL, &c, NOW, &r, &e));
	assert_non_null(strstr(e.msg, "not True, False or Unknown"));
}

static const char *text(json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

/* TAINTS' next value for T; its text, or NULL when nothing is to change. */
static const char *taints_next(const char *taints, const char *key, const char *value,
			       const char *effect, bool add)
{
	static char buf[4096];
	_cleanup_(json_object_putp) json_object *in = taints ? parse(taints) : NULL;
	_cleanup_(json_object_putp) json_object *out = NULL;
	const struct kube_taint t = {key, value, effect};
	int r = kube_taints_next(in, &t, add, NOW, &out);

	assert_true(r == 0 || r == 1);
	if (r == 0) {
		assert_null(out);
		return NULL;
	}
	snprintf(buf, sizeof(buf), "%s", text(out));
	return buf;
}

#define SU "{\"key\":\"startup\",\"effect\":\"NoSchedule\"}"
/* Another writer's taint, with what this code never writes: kept as it is. */
#define OTHER                                                                                      \
	"{\"key\":\"other\",\"value\":\"x\",\"effect\":\"NoExecute\",\"timeAdded\":\"" T0          \
	"\",\"unknownField\":[1,{\"a\":null}]}"

static void test_taints(void **state)
{
	(void)state;
	/* Added to none, and beside others, at the end. */
	assert_string_equal(taints_next(NULL, "h", "FatalXid", "NoSchedule", true),
			    "[{\"key\":\"h\",\"value\":\"FatalXid\",\"effect\":\"NoSchedule\"}]");
	assert_string_equal(taints_next("[" OTHER "]", "h", NULL, "NoExecute", true),
			    "[" OTHER
			    ",{\"key\":\"h\",\"effect\":\"NoExecute\",\"timeAdded\":\"" NOW "\"}]");
	/* There already, value and effect: nothing to write (no value is an empty one). */
	assert_null(taints_next("[" OTHER "," SU "]", "startup", NULL, "NoSchedule", true));
	assert_null(taints_next("[" SU "]", "startup", "", "NoSchedule", true));
	assert_null(taints_next("[{\"key\":\"h\",\"value\":\"v\",\"effect\":\"NoSchedule\"}]", "h",
				"v", "NoSchedule", true));
	/* Another value: replaced where it was; the others and another effect of it kept. */
	assert_string_equal(
		taints_next("[" OTHER ",{\"key\":\"h\",\"value\":\"FatalXid\",\"effect\":"
			    "\"NoSchedule\"},{\"key\":\"h\",\"effect\":\"PreferNoSchedule\"}," SU
			    "]",
			    "h", "FabricNotReady", "NoSchedule", true),
		"[" OTHER ",{\"key\":\"h\",\"value\":\"FabricNotReady\",\"effect\":\"NoSchedule\"},"
		"{\"key\":\"h\",\"effect\":\"PreferNoSchedule\"}," SU "]");
	/* Two of one key and effect (not what the API server stores): one is left. */
	assert_string_equal(
		taints_next("[{\"key\":\"h\",\"value\":\"a\",\"effect\":\"NoSchedule\"},"
			    "{\"key\":\"h\",\"value\":\"b\",\"effect\":\"NoSchedule\"}]",
			    "h", "a", "NoSchedule", true),
		"[{\"key\":\"h\",\"value\":\"a\",\"effect\":\"NoSchedule\"}]");
	/* Removed: every effect and value of the key, the others as they were. */
	assert_string_equal(
		taints_next("[{\"key\":\"startup\",\"value\":\"1\",\"effect\":\"NoExecute\"}," OTHER
			    "," SU ",{\"key\":\"startup-x\",\"effect\":\"NoSchedule\"}]",
			    "startup", "1", "NoSchedule", false),
		"[" OTHER ",{\"key\":\"startup-x\",\"effect\":\"NoSchedule\"}]");
	assert_string_equal(taints_next("[" SU "]", "startup", NULL, NULL, false), "[]");
	/* None to remove: nothing to write. */
	assert_null(taints_next("[" OTHER "]", "startup", NULL, NULL, false));
	assert_null(taints_next(NULL, "startup", NULL, NULL, false));
	assert_null(taints_next("[]", "startup", NULL, NULL, false));
}

/* ---- against the stand-in (tests/tools/kube-api.py) --------------------------------------- */

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Another writer's taint, as the API server stores one. */
#define KEPT "{\"key\":\"other\",\"value\":\"x\",\"effect\":\"NoExecute\",\"timeAdded\":\"" T0 "\"}"

/* A Node with the kubelet's condition and another writer's taint. */
static const char initial[] =
	"{\"nodes\": [{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": "
	"\"gpu-1\", \"labels\": {\"keep\": \"me\"}}, \"spec\": {\"taints\": [" KEPT "]}, "
	"\"status\": {\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\", \"reason\": "
	"\"KubeletReady\", \"message\": \"kubelet is posting ready status\", "
	"\"lastHeartbeatTime\": \"" T0 "\", \"lastTransitionTime\": \"" T0 "\"}]}}]}\n";

static int stub_up(void **state)
{
	return kubestub_setup(state, "kube-node", "kube-system", initial);
}

/* The stored Node, parsed (the caller puts it). */
static json_object *stored_node(const struct kubestub_fixture *s)
{
	json_object *db = json_object_from_file(s->ks.state), *nodes, *n;

	assert_non_null(db);
	assert_true(json_object_object_get_ex(db, "nodes", &nodes));
	n = json_object_get(json_object_array_get_idx(nodes, 0));
	json_object_put(db);
	return n;
}

/* The stored Node's condition of TYPE (a reference taken), or NULL. */
static json_object *stored_condition(const struct kubestub_fixture *s, const char *type)
{
	_cleanup_(json_object_putp) json_object *n = stored_node(s);
	json_object *st, *list;

	if (!json_object_object_get_ex(n, "status", &st) ||
	    !json_object_object_get_ex(st, "conditions", &list))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *c = json_object_array_get_idx(list, i);

		if (strcmp(get_str(c, "type"), type) == 0)
			return json_object_get(c);
	}
	return NULL;
}

static int set(struct kubestub_fixture *s, const char *status, const char *reason,
	       struct kube_condition_result *r, struct err *e)
{
	const struct kube_condition c = {KUBE_CONDITION_TYPE, status, reason, "why"};

	err_clear(e);
	return kube_node_condition_set(s->k, "gpu-1", &c, r, e);
}

/*
 * Through the status subresource, a strategic merge patch with the resourceVersion read: the
 * kubelet's condition kept; the transition time kept while the status stays; another
 * writer between read and patch met by reading again, up to KUBE_CONFLICT_RETRIES.
 */
static void test_condition_write(void **state)
{
	struct kubestub_fixture *s = *state;
	_cleanup_(json_object_putp) json_object *ready = NULL, *node = NULL;
	struct kube_condition_result r;
	json_object *c, *meta, *labels;
	char since[STR_UTC_SIZE];
	struct err e;

	assert_int_equal(set(s, "False", "Installing", &r, &e), 0);
	assert_true(r.changed && r.transitioned && r.conflicts == 0);
	assert_int_equal(kubestub_logged(&s->ks, "\"PATCH\"", "/api/v1/nodes/gpu-1/status"), 1);
	assert_int_equal(kubestub_logged(&s->ks, "application/strategic-merge-patch+json",
					 "resourceVersion"),
			 1);
	c = stored_condition(s, KUBE_CONDITION_TYPE);
	assert_non_null(c);
	assert_string_equal(get_str(c, "reason"), "Installing");
	snprintf(since, sizeof(since), "%s", get_str(c, "lastTransitionTime"));
	json_object_put(c);
	ready = stored_condition(s, "Ready");
	assert_non_null(ready);
	assert_string_equal(get_str(ready, "lastHeartbeatTime"), T0);
	/* Two other writers, each between a read and its patch: read again, written. */
	put(s->ks.faults, "{\"faults\": [{\"method\": \"PATCH\", \"path\": "
			  "\"/api/v1/nodes/gpu-1/status\", \"race\": {\"labels\": {\"w\": \"2\"}}, "
			  "\"times\": 2}]}");
	assert_int_equal(set(s, "False", "WaitingForPackage", &r, &e), 0);
	assert_int_equal(r.conflicts, 2);
	assert_true(r.changed && !r.transitioned);
	assert_string_equal(r.old_reason, "Installing");
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 409", "/status"), 2);
	c = stored_condition(s, KUBE_CONDITION_TYPE);
	assert_string_equal(get_str(c, "reason"), "WaitingForPackage");
	assert_string_equal(get_str(c, "lastTransitionTime"), since);
	json_object_put(c);
	/* The other writer's label is there: the patch went onto what it wrote. */
	node = stored_node(s);
	assert_true(json_object_object_get_ex(node, "metadata", &meta) &&
		    json_object_object_get_ex(meta, "labels", &labels));
	assert_string_equal(get_str(labels, "w"), "2");
	/* One writer too many: the last 409 is the error, after 1 + KUBE_CONFLICT_RETRIES. */
	put(s->ks.faults, "{\"faults\": [{\"method\": \"PATCH\", \"path\": "
			  "\"/api/v1/nodes/gpu-1/status\", \"race\": {\"labels\": {\"w\": null}}, "
			  "\"times\": 100}]}");
	assert_int_equal(set(s, "True", "CUDAReady", &r, &e), -1);
	assert_non_null(strstr(e.msg, "another writer changed it each time, 6 tries"));
	assert_non_null(strstr(e.msg, "409"));
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 409", "/status"),
			 2 + KUBE_CONFLICT_RETRIES + 1);
	put(s->ks.faults, "{\"faults\": []}");
	assert_int_equal(set(s, "True", "CUDAReady", &r, &e), 0);
	assert_true(r.transitioned);
	c = stored_condition(s, KUBE_CONDITION_TYPE);
	assert_string_equal(get_str(c, "status"), "True");
	assert_string_equal(get_str(c, "lastTransitionTime"), get_str(c, "lastHeartbeatTime"));
	json_object_put(c);
}

static int taint(struct kubestub_fixture *s, const char *key, const char *value, const char *effect,
		 bool add, bool *changed)
{
	const struct kube_taint t = {key, value, effect};
	struct err e;

	err_clear(&e);
	return kube_node_taint(s->k, "gpu-1", &t, add, changed, &e);
}

/* Whether the stored Node's taints are EXPECTED (JSON text; "null": none), as objects. */
static bool taints_are(const struct kubestub_fixture *s, const char *expected)
{
	_cleanup_(json_object_putp) json_object *n = stored_node(s);
	_cleanup_(json_object_putp) json_object *want = json_tokener_parse(expected);
	json_object *spec, *list = NULL;

	if (json_object_object_get_ex(n, "spec", &spec))
		json_object_object_get_ex(spec, "taints", &list);
	if (!json_object_equal(list, want))
		print_error("stored taints: %s\n", list ? text(list) : "none");
	return json_object_equal(list, want);
}

/* A merge patch of spec.taints with the resourceVersion; no write when nothing changes. */
static void test_taint_write(void **state)
{
	struct kubestub_fixture *s = *state;
	bool changed;

	assert_int_equal(taint(s, "startup", NULL, "NoSchedule", true, &changed), 0);
	assert_true(changed);
	assert_true(taints_are(s, "[" KEPT "," SU "]"));
	assert_int_equal(kubestub_logged(&s->ks, "application/merge-patch+json", "resourceVersion"),
			 1);
	/* There already: read, not written. */
	assert_int_equal(taint(s, "startup", NULL, "NoSchedule", true, &changed), 0);
	assert_false(changed);
	assert_int_equal(kubestub_logged(&s->ks, "\"PATCH\"", NULL), 1);
	/* Another writer adds the same taint between the read and the patch: 409, read
	 * again, nothing left to write. */
	put(s->ks.faults,
	    "{\"faults\": [{\"method\": \"PATCH\", \"path\": \"/api/v1/nodes/gpu-1\", "
	    "\"race\": {\"taints\": [" KEPT ",{\"key\": \"h\", \"value\": \"FatalXid\", "
	    "\"effect\": \"NoSchedule\"}]}, \"times\": 1}]}");
	assert_int_equal(taint(s, "h", "FatalXid", "NoSchedule", true, &changed), 0);
	assert_false(changed);
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 409", NULL), 1);
	assert_true(taints_are(s, "[" KEPT ",{\"key\":\"h\",\"value\":\"FatalXid\","
				  "\"effect\":\"NoSchedule\"}]"));
	/* Removed while another writer adds its own: the other's stays. */
	put(s->ks.faults,
	    "{\"faults\": [{\"method\": \"PATCH\", \"path\": \"/api/v1/nodes/gpu-1\", "
	    "\"race\": {\"taints\": [" KEPT ",{\"key\": \"h\", \"value\": \"FatalXid\", "
	    "\"effect\": \"NoSchedule\"},{\"key\": \"y\", \"effect\": "
	    "\"NoSchedule\"}]}, \"times\": 1}]}");
	assert_int_equal(taint(s, "h", NULL, NULL, false, &changed), 0);
	assert_true(changed);
	assert_true(taints_are(s, "[" KEPT ",{\"key\":\"y\",\"effect\":\"NoSchedule\"}]"));
	put(s->ks.faults, "{\"faults\": []}");
	/* The last of them: spec.taints goes. */
	assert_int_equal(taint(s, "y", NULL, NULL, false, &changed), 0);
	assert_int_equal(taint(s, "other", NULL, NULL, false, &changed), 0);
	assert_true(taints_are(s, "null"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_condition_times),
		cmocka_unit_test(test_condition_bounds),
		cmocka_unit_test(test_taints),
		cmocka_unit_test_setup_teardown(test_condition_write, stub_up, kubestub_teardown),
		cmocka_unit_test_setup_teardown(test_taint_write, stub_up, kubestub_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
