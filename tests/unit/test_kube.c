// SPDX-License-Identifier: Apache-2.0
/*
 * kube/: the decisions (backoff, Retry-After, what is retried, query escaping, the
 * in-cluster configuration), then every call against tests/tools/kube-api.py, an API
 * server stand-in on 127.0.0.1 with TLS, a bearer token, resourceVersions, Status errors
 * and injected faults, started for each test and stopped with it.
 */
#include "cmocka_prelude.h"
#include "kubestub.h"
#include "scratch.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/slots.h"
#include "agent/upgrade.h"
#include "kube/internal.h"
#include "util/interrupt.h"
#include "util/jsonc.h"
#include "util/log.h"

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(kube_backoff_ms(1), 100);
	assert_int_equal(kube_backoff_ms(2), 200);
	assert_int_equal(kube_backoff_ms(4), 800);
	assert_int_equal(kube_backoff_ms(7), 5000);
	assert_int_equal(kube_backoff_ms(100), 5000);
	assert_int_equal(kube_retry_after_ms(" 2\r\n"), 2000);
	assert_int_equal(kube_retry_after_ms("0"), 0);
	assert_int_equal(kube_retry_after_ms("3600"), 5000);
	assert_int_equal(kube_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
	assert_int_equal(kube_retry_after_ms("2x"), 0);
	assert_int_equal(kube_retry_after_ms(NULL), 0);
	assert_true(kube_retryable(0) && kube_retryable(429) && kube_retryable(503));
	assert_false(kube_retryable(404) || kube_retryable(409) || kube_retryable(401) ||
		     kube_retryable(422) || kube_retryable(200));
}

static void test_escape(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(kube_query_escape("spec.nodeName=gpu-1", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "spec.nodeName%3Dgpu-1");
	assert_int_equal(kube_query_escape("a b&c/~", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a%20b%26c%2F~");
	assert_int_equal(kube_query_escape("====", buf, 12), -1);
	assert_int_equal(kube_query_escape("===", buf, 10), 0);
}

/* kube_keep_parse: only the fields named, whatever surrounds them; not JSON is NULL. */
static void test_keep(void **state)
{
	static const struct kube_keep c_keep[] = {{"name"}, {"resources"}, {NULL}};
	const struct kube_keep keep[] = {{"kind"},
					 {"meta", (const struct kube_keep[]){{"continue"}, {NULL}}},
					 {"items", c_keep, true},
					 {NULL}};
	const char *text =
		"{\"skip\": {\"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]"
		"]]]]]]]]]]]]]]]]]]]]]]], \"q\": \"}]\\\"{\"}, \"kind\" : \"PodList\", \"meta\": "
		"{\"continue\": \"abc\", \"resourceVersion\": \"7\"},\n \"items\": [{\"name\": "
		"\"c\", \"env\": [{\"name\": \"E0\"}], \"resources\": {\"limits\": {\"g\": 1}}}, 3, "
		"{\"name\": \"d\"}], \"n\": -1.5e3}";
	const char *bad[] = {"",
			     "[]",
			     "{\"kind\": \"x\"",
			     "{\"kind\": \"x\"}}",
			     "{\"skip\": ]}",
			     "{\"skip\": [1,}",
			     "{\"skip\": [1}, \"kind\": 1}",
			     "{\"items\": [{\"name\": }]}",
			     "{\"kind\": \"x\\\"}",
			     "{kind: 1}"};
	/* What is stepped over is JSON too (util/jtext.h). */
	const char *bad_skipped[] = {"{\"skip\": [1 2]}", "{\"skip\": {\"a\" 1}}", "{\"skip\": 01}",
				     "{\"skip\": \"a\tb\"}", "{\"items\": [{\"env\": [\"\\x\"]}]}"};
	json_object *o, *v;
	size_t kept = 0;

	(void)state;
	o = kube_keep_parse(text, strlen(text), keep, &kept);
	assert_non_null(o);
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			    "{\"kind\":\"PodList\",\"meta\":{\"continue\":\"abc\"},\"items\":"
			    "[{\"name\":\"c\",\"resources\":{\"limits\":{\"g\":1}}},{\"name\":"
			    "\"d\"}]}");
	/* The bytes kept whole (each with the character after it): "PodList", "abc", "c", the
	 * resources, "d". */
	assert_int_equal(kept, 10 + 6 + 4 + 21 + 4);
	json_object_put(o);
	/* A shape not asked for is left out, not refused. */
	text = "{\"meta\": [1], \"items\": {\"name\": 1}}";
	o = kube_keep_parse(text, strlen(text), keep, NULL);
	assert_non_null(o);
	assert_false(json_object_object_get_ex(o, "meta", &v) ||
		     json_object_object_get_ex(o, "items", &v));
	json_object_put(o);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_null(kube_keep_parse(bad[i], strlen(bad[i]), keep, NULL));
	for (size_t i = 0; i < sizeof(bad_skipped) / sizeof(*bad_skipped); i++)
		assert_null(kube_keep_parse(bad_skipped[i], strlen(bad_skipped[i]), keep, NULL));
	/* Nesting past 512 in what is skipped is refused; 500 is crossed. */
	{
		static char deep[2 * 600 + 32];
		size_t n;

		for (int depth = 500; depth <= 600; depth += 100) {
			n = (size_t)snprintf(deep, sizeof(deep), "{\"skip\": ");
			memset(deep + n, '[', (size_t)depth);
			memset(deep + n + (size_t)depth, ']', (size_t)depth);
			snprintf(deep + n + 2 * (size_t)depth, sizeof(deep) - n - 2 * (size_t)depth,
				 "}");
			o = kube_keep_parse(deep, strlen(deep), keep, NULL);
			assert_true((o != NULL) == (depth == 500));
			json_object_put(o);
		}
	}
	/* LEN bounds the text, whatever follows it. */
	assert_null(kube_keep_parse("{\"kind\": \"x\"}", 12, keep, NULL));
}

/* ---- against the stand-in ---------------------------------------------------------------- */

struct stub {
	struct scratch_fixture f;
	struct kubestub ks;
	struct kube_config c;
};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char initial[] =
	"{\"nodes\": [{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": "
	"\"gpu-1\", \"labels\": {\"keep\": \"me\"}}, \"spec\": {}}],\n"
	" \"pods\": [{\"metadata\": {\"name\": \"train\", \"namespace\": \"ml\"}, \"spec\": "
	"{\"nodeName\": \"gpu-1\"}},\n"
	"  {\"metadata\": {\"name\": \"serve\", \"namespace\": \"ml\", \"annotations\": "
	"{\"test.invalid/pdb-blocks\": \"true\"}}, \"spec\": {\"nodeName\": \"gpu-1\"}},\n"
	"  {\"metadata\": {\"name\": \"other\", \"namespace\": \"ml\"}, \"spec\": {\"nodeName\": "
	"\"gpu-2\"}}]}\n";

static int stub_up(void **state)
{
	struct stub *s = calloc(1, sizeof(*s));
	struct err e;

	assert_non_null(s);
	assert_int_equal(scratch_init(&s->f, "kube"), 0);
	assert_int_equal(kubestub_start(&s->ks, s->f.root, "gpu-operator", initial), 0);
	err_clear(&e);
	assert_int_equal(kube_config_in_cluster(s->ks.sa, &s->c, &e), 0);
	/* A call's deadline, where it is not what a test is about: long enough for a loaded
	 * machine (the tests run at nice 19, under ASan and under qemu-user too). */
	s->c.deadline_s = 30;
	*state = s;
	return 0;
}

static int stub_down(void **state)
{
	struct stub *s = *state;

	kubestub_stop(&s->ks);
	scratch_fini(&s->f);
	free(s);
	return 0;
}

/* The stand-in's store after the calls, as text. */
static char *stored(const struct stub *s)
{
	static char buf[65536];
	FILE *f = fopen(s->ks.state, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void test_config(void **state)
{
	struct stub *s = *state;
	struct kube_config c;
	struct err e;

	assert_string_equal(s->c.namespace, "gpu-operator");
	assert_non_null(strstr(s->c.server, "https://127.0.0.1:"));
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_in_cluster(s->ks.sa, &c, &e), 0);
	assert_string_equal(c.server, "https://[fd00::1]:443");
	setenv("KUBERNETES_SERVICE_PORT", "443/evil", 1);
	assert_int_equal(kube_config_in_cluster(s->ks.sa, &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(kube_config_in_cluster(s->ks.sa, &c, &e), -1);
	assert_non_null(strstr(e.msg, "not in a Kubernetes pod"));
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_in_cluster("/nonexistent", &c, &e), -1);
	assert_non_null(strstr(e.hint, "automountServiceAccountToken"));
}

static void test_node_and_pods(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	json_object *node = NULL, *pods = NULL, *patch, *labels, *v;
	struct err e;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	assert_int_equal(kube_node_get(k, "gpu-1", &node, &e), 0);
	assert_true(json_object_object_get_ex(node, "metadata", &v));
	json_object_put(node);
	/* Cordoned and labelled in one merge patch; a label set to null goes. */
	patch = json_object_new_object();
	labels = json_object_new_object();
	json_object_object_add(labels, "nvidia.com/upgrade-state",
			       json_object_new_string("cordoned"));
	json_object_object_add(labels, "keep", NULL);
	v = json_object_new_object();
	json_object_object_add(v, "labels", labels);
	json_object_object_add(patch, "metadata", v);
	v = json_object_new_object();
	json_object_object_add(v, "unschedulable", json_object_new_boolean(1));
	json_object_object_add(patch, "spec", v);
	assert_int_equal(kube_node_patch(k, "gpu-1", patch, &e), 0);
	json_object_put(patch);
	assert_non_null(strstr(stored(s), "\"nvidia.com/upgrade-state\": \"cordoned\""));
	assert_non_null(strstr(stored(s), "\"unschedulable\": true"));
	assert_null(strstr(stored(s), "\"keep\""));
	assert_int_equal(
		kubestub_logged(&s->ks, "\"content_type\": \"application/merge-patch+json\"", NULL),
		1);
	/* The node's pods, by field selector; not another node's. */
	assert_int_equal(kube_pods_on_node(k, "gpu-1", &pods, &e), 0);
	assert_int_equal(json_object_array_length(pods), 2);
	json_object_put(pods);
	assert_int_equal(kubestub_logged(&s->ks, "fieldSelector=spec.nodeName%3Dgpu-1", NULL), 1);
	/* A node that is not there: 404, with the API server's message. */
	assert_int_equal(kube_node_get(k, "gpu-9", &node, &e), -1);
	assert_non_null(strstr(e.msg, "404: nodes \"gpu-9\" not found"));
	assert_null(node);
	/* A name that is not one never reaches the server. */
	assert_int_equal(kube_node_get(k, "../secrets", &node, &e), -1);
	assert_int_equal(kubestub_logged(&s->ks, "secrets", NULL), 0);
}

/* Makes pod NAME on gpu-1 through the stand-in, with ENV environment entries (0: none). */
static void add_pod(struct kube *k, const char *name, unsigned env)
{
	char text[512];
	json_object *o;
	struct kube_reply r;
	struct kube_request q = {.method = "POST", .path = "/api/v1/namespaces/ml/pods"};
	struct err e;

	snprintf(text, sizeof(text),
		 "{\"metadata\": {\"name\": \"%s\", \"namespace\": \"ml\", \"annotations\": "
		 "{\"test.invalid/env-entries\": \"%u\"}}, \"spec\": {\"nodeName\": \"gpu-1\", "
		 "\"containers\": [{\"name\": \"c\", \"resources\": {\"limits\": "
		 "{\"nvidia.com/gpu\": \"1\"}}}]}, \"status\": {\"phase\": \"Running\"}}",
		 name, env);
	o = json_tokener_parse(text);
	assert_non_null(o);
	q.body = o;
	assert_int_equal(kube_call(k, &q, &r, &e), 0);
	kube_reply_done(&r);
	json_object_put(o);
}

/*
 * The node's pods in pages (limit, continue), each pod with only what the agent reads; a
 * page past the client's bound asked again smaller; a single pod past it fails the call,
 * naming the bound, the answer never parsed.
 */
static void test_pods_paged(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	json_object *pods = NULL, *pod, *c;
	const char *text;
	char name[32];
	int lists;
	struct err e;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	for (int i = 0; i < 110; i++) {
		snprintf(name, sizeof(name), "p%03d", i);
		add_pod(k, name, 0);
	}
	assert_int_equal(kube_pods_on_node(k, "gpu-1", &pods, &e), 0);
	assert_int_equal(json_object_array_length(pods), 112);
	json_object_put(pods);
	/* 112 pods: pages of 50, 50 and 12. */
	assert_int_equal(kubestub_logged(&s->ks, "&limit=50", NULL), 3);
	assert_int_equal(kubestub_logged(&s->ks, "&limit=50&continue=", NULL), 2);
	/* Two pods of 5 MB each (300,000 entries): no page of 50, 25, 12, 6 or 3 holds both
	 * ... unless they are apart; each of them is read, neither's environment kept. */
	add_pod(k, "big1", 300000);
	add_pod(k, "big2", 300000);
	lists = kubestub_logged(&s->ks, "\"path\": \"/api/v1/pods\"", NULL);
	assert_int_equal(kube_pods_on_node(k, "gpu-1", &pods, &e), 0);
	/* Pages of 50, 25, 12, 6 and 3 refused; then 1 (big1), 2 (big2 and p000), and
	 * doubled again: 4, 8, 16, 32, 50, 1. */
	assert_int_equal(kubestub_logged(&s->ks, "\"path\": \"/api/v1/pods\"", NULL) - lists, 13);
	assert_int_equal(json_object_array_length(pods), 114);
	pod = json_object_array_get_idx(pods, 0);
	text = json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE);
	assert_string_equal(text,
			    "{\"metadata\":{\"name\":\"big1\",\"namespace\":\"ml\",\"annotations\":"
			    "{\"test.invalid/env-entries\":\"300000\"}},\"spec\":{\"containers\":"
			    "[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
			    "\"1\"}}}]},\"status\":{\"phase\":\"Running\"}}");
	assert_true(json_object_object_get_ex(pod, "spec", &c));
	json_object_put(pods);
	assert_true(kubestub_logged(&s->ks, "&limit=25", NULL) >= 1);
	/* One pod past the bound (600,000 entries, 11 MB): the call fails, the bound named. */
	add_pod(k, "huge", 600000);
	assert_int_equal(kube_pods_on_node(k, "gpu-1", &pods, &e), -1);
	assert_null(pods);
	assert_non_null(strstr(e.msg, "&limit=1&continue="));
	assert_non_null(strstr(e.msg, ": the answer is larger than the client's bound of 8 MiB"));
	assert_int_equal(e.code, EXIT_UNEXPECTED);
}

/* What is kept of the list is bounded too: 22 pods with 200 kB of annotations each. */
static void test_pods_kept_bound(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	_cleanup_free_ char *big = malloc(200001);
	json_object *pods = NULL;
	struct err e;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	assert_non_null(big);
	memset(big, 'a', 200000);
	big[200000] = '\0';
	for (int i = 0; i < 22; i++) {
		_cleanup_(json_object_putp) json_object *pod = json_object_new_object();
		json_object *meta = json_object_new_object(), *ann = json_object_new_object(),
			    *spec = json_object_new_object();
		struct kube_request q = {
			.method = "POST", .path = "/api/v1/namespaces/ml/pods", .body = pod};
		struct kube_reply r;
		char name[16];

		snprintf(name, sizeof(name), "a%02d", i);
		json_object_object_add(ann, "note", json_object_new_string(big));
		json_object_object_add(meta, "name", json_object_new_string(name));
		json_object_object_add(meta, "annotations", ann);
		json_object_object_add(spec, "nodeName", json_object_new_string("gpu-1"));
		json_object_object_add(pod, "metadata", meta);
		json_object_object_add(pod, "spec", spec);
		assert_int_equal(kube_call(k, &q, &r, &e), 0);
		kube_reply_done(&r);
		/* Under the bound with 20 of them (4.0 MB), past it with 22. */
		if (i == 19) {
			assert_int_equal(kube_pods_on_node(k, "gpu-1", &pods, &e), 0);
			json_object_put(pods);
		}
	}
	assert_int_equal(kube_pods_on_node(k, "gpu-1", &pods, &e), -1);
	assert_null(pods);
	assert_non_null(strstr(e.msg, "what the agent reads of the node's pods is past its bound "
				      "of 4 MiB"));
}

static void test_evict(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	struct err e;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	assert_int_equal(kube_evict(k, "ml", "train", &e), 0);
	assert_null(strstr(stored(s), "\"train\""));
	assert_int_equal(kubestub_logged(&s->ks, "Eviction", NULL), 1);
	/* A disruption budget forbids it: 1, asked once, not retried here. */
	assert_int_equal(kube_evict(k, "ml", "serve", &e), 1);
	assert_int_equal(kubestub_logged(&s->ks, "/pods/serve/eviction", NULL), 1);
	assert_non_null(strstr(stored(s), "\"serve\""));
	/* Gone already: done. */
	assert_int_equal(kube_evict(k, "ml", "train", &e), 0);
}

static void test_leases(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	json_object *lease, *got = NULL, *stale, *meta, *spec;
	struct err e;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	assert_int_equal(kube_lease_get(k, "gpu-operator", "upgrade-slot-0", &got, &e), 1);
	assert_null(got);
	lease = json_object_new_object();
	meta = json_object_new_object();
	spec = json_object_new_object();
	json_object_object_add(meta, "name", json_object_new_string("upgrade-slot-0"));
	json_object_object_add(spec, "holderIdentity", json_object_new_string("gpu-1"));
	json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(60));
	json_object_object_add(lease, "apiVersion",
			       json_object_new_string("coordination.k8s.io/v1"));
	json_object_object_add(lease, "kind", json_object_new_string("Lease"));
	json_object_object_add(lease, "metadata", meta);
	json_object_object_add(lease, "spec", spec);
	assert_int_equal(kube_lease_put(k, "gpu-operator", lease, false, NULL, &e), 0);
	/* Created once only: the second node to try learns it is taken. */
	assert_int_equal(kube_lease_put(k, "gpu-operator", lease, false, NULL, &e), 1);
	json_object_put(lease);
	assert_int_equal(kube_lease_get(k, "gpu-operator", "upgrade-slot-0", &got, &e), 0);
	stale = json_object_get(got);
	/* Renewed by its holder with the resourceVersion it read: stored, a new version. */
	assert_int_equal(kube_lease_put(k, "gpu-operator", got, true, &lease, &e), 0);
	assert_non_null(lease);
	json_object_put(lease);
	/* Taken over with the version read before: a conflict, not an overwrite. */
	assert_true(json_object_object_get_ex(stale, "spec", &spec));
	json_object_object_add(spec, "holderIdentity", json_object_new_string("gpu-2"));
	assert_int_equal(kube_lease_put(k, "gpu-operator", stale, true, NULL, &e), 1);
	assert_null(strstr(stored(s), "\"holderIdentity\": \"gpu-2\""));
	json_object_put(stale);
	json_object_put(got);
}

/* Records R on Node gpu-1 as its agent does. */
static void record_on_node(struct kube *k, const struct upgrade_record *r)
{
	json_object *patch = upgrade_node_patch(r, -1);
	struct err e;

	assert_non_null(patch);
	assert_int_equal(kube_node_patch(k, "gpu-1", patch, &e), 0);
	json_object_put(patch);
}

/*
 * A lapsed lease is free unless its holder's Node records an upgrade under way in that
 * slot: A (gpu-1, the stand-in's node) and C (gpu-3, a node the API server does not know)
 * taking slot 0 from each other.
 */
static void test_slot_claimed_by_record(struct kube *k, struct slots *a, struct slots *c)
{
	struct upgrade_record r = {.state = UPG_ACTIVATING,
				   .version = "550.90.07",
				   .cordoned = true,
				   .slot = 1,
				   .evented = UPG_ACTIVATING};
	struct err e;

	/* C's node is gone (404): its lapsed lease is free. */
	assert_int_equal(slots_take(a, 1, 2000, &e), 0);
	assert_int_equal(slots_take(a, 1, 2030, &e), 1);
	assert_int_equal(a->held, 0);
	/* Renewed a third of its duration after it was written, whatever the agent does. */
	assert_int_equal(slots_renew_at(a), 2040);
	assert_int_equal(slots_renew(a, 2040, &e), 1);
	assert_int_equal(slots_renew_at(a), 2050);
	/* A's agent dies while A is activating, cordoned: its lease lapses, its slot does not. */
	record_on_node(k, &r);
	assert_int_equal(slots_take(c, 1, 3000, &e), 0);
	assert_int_equal(slots_take(c, 1, 3030, &e), 0);
	assert_int_equal(slots_take(c, 1, 9000, &e), 0);
	assert_int_equal(c->held, -1);
	assert_int_equal(slots_renew_at(c), 0);
	/* Failed (the slot kept), or pending with the cordon of a failed upgrade: still held. */
	r.state = UPG_FAILED;
	record_on_node(k, &r);
	assert_int_equal(slots_take(c, 1, 9001, &e), 0);
	r.state = UPG_PENDING;
	record_on_node(k, &r);
	assert_int_equal(slots_take(c, 1, 9002, &e), 0);
	/* Not cordoned and only pending, or a record of another slot: claims nothing. */
	r.cordoned = false;
	record_on_node(k, &r);
	assert_int_equal(slots_take(c, 1, 9003, &e), 1);
	assert_int_equal(slots_release(c, 1, &e), 0);
	r.state = UPG_WAITING;
	r.slot = 2;
	record_on_node(k, &r);
	assert_int_equal(slots_take(a, 1, 9004, &e), 1); /* released: free, no node asked */
	assert_int_equal(slots_take(c, 1, 9010, &e), 0);
	assert_int_equal(slots_take(c, 1, 9040, &e), 1);
	assert_int_equal(slots_release(c, 1, &e), 0);
	/* A person removed the record (runbook 2): nothing claims the slot. */
	r.slot = 1;
	record_on_node(k, &r);
	assert_int_equal(slots_take(a, 1, 9041, &e), 1);
	assert_int_equal(slots_take(c, 1, 9050, &e), 0);
	assert_int_equal(slots_take(c, 1, 9080, &e), 0);
	r = (struct upgrade_record){0};
	record_on_node(k, &r);
	assert_int_equal(slots_take(c, 1, 9081, &e), 1);
}

/* The fleet's upgrade slots (agent/slots.c) on the stand-in's leases. */
static void test_slots(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	struct slots a = {.ns = "gpu-operator", .holder = "gpu-1", .duration_s = 30, .held = -1},
		     b = {.ns = "gpu-operator", .holder = "gpu-2", .duration_s = 30, .held = -1},
		     c = {.ns = "gpu-operator", .holder = "gpu-3", .duration_s = 30, .held = -1};
	unsigned n;
	struct err e;

	(void)state;
	assert_int_equal(slots_limit("1", 0, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(slots_limit("25%", 10, &n), 0); /* 2.5 rounded up */
	assert_int_equal(n, 3);
	assert_int_equal(slots_limit("1%", 3, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(slots_limit("0", 3, &n), 0); /* at least one */
	assert_int_equal(n, 1);
	assert_true(slots_limit("101%", 3, &n) < 0 && slots_limit("x", 3, &n) < 0 &&
		    slots_limit("", 3, &n) < 0 && slots_limit("%", 3, &n) < 0 &&
		    slots_limit("-1", 3, &n) < 0);
	assert_true(slots_limit_is_percent("5%") && !slots_limit_is_percent("5"));

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	a.k = b.k = c.k = k;
	/* A limit of one: the first node takes it, the second waits. */
	assert_int_equal(slots_take(&a, 1, 100, &e), 1);
	assert_int_equal(a.held, 0);
	assert_non_null(strstr(stored(s), "\"holderIdentity\": \"gpu-1\""));
	assert_int_equal(slots_take(&b, 1, 100, &e), 0);
	assert_int_equal(b.held, -1);
	/* Taking again renews the one held, not a second one. */
	assert_int_equal(slots_take(&a, 2, 101, &e), 1);
	assert_int_equal(a.held, 0);
	assert_int_equal(slots_renew(&a, 101, &e), 1);
	/* A limit of two: the second node gets the second slot. */
	assert_int_equal(slots_take(&b, 2, 102, &e), 1);
	assert_int_equal(b.held, 1);
	assert_int_equal(slots_take(&c, 2, 102, &e), 0);
	/* Given back: free for the next node at once. */
	assert_int_equal(slots_release(&a, 2, &e), 0);
	assert_int_equal(a.held, -1);
	assert_null(strstr(stored(s), "\"holderIdentity\": \"gpu-1\""));
	assert_int_equal(slots_take(&c, 2, 103, &e), 1);
	assert_int_equal(c.held, 0);
	/* A node that died holding a slot: free once its lease has not changed for its
	 * duration, by this agent's own clock from when it first saw that version. */
	assert_int_equal(slots_take(&a, 2, 200, &e), 0);
	assert_int_equal(slots_take(&a, 2, 229, &e), 0);
	assert_int_equal(slots_take(&a, 2, 230, &e), 1);
	assert_int_equal(a.held, 0);
	assert_non_null(strstr(stored(s), "\"leaseTransitions\": 2"));
	/* The node that lost it learns so when it renews, and holds nothing. */
	assert_int_equal(slots_renew(&c, 231, &e), 0);
	assert_int_equal(c.held, -1);
	/* A renewal is a new version: another node's clock starts again from it. */
	assert_int_equal(slots_renew(&a, 232, &e), 1);
	assert_int_equal(slots_renew(&b, 232, &e), 1);
	assert_int_equal(slots_take(&c, 2, 1000, &e), 0);
	assert_int_equal(slots_take(&c, 2, 1029, &e), 0);
	assert_int_equal(slots_renew(&b, 1029, &e), 1);
	assert_int_equal(slots_take(&c, 2, 1030, &e), 1); /* a's, not renewed since */
	assert_int_equal(c.held, 0);
	test_slot_claimed_by_record(k, &a, &c);
}

/* POSTs BODY as an Event into NS; the HTTP status (0 when none came). */
static long post_event(struct kube *k, const char *ns, const char *body)
{
	_cleanup_(json_object_putp) json_object *o = json_tokener_parse(body);
	char path[200];
	struct kube_request q = {.method = "POST", .path = path, .body = o};
	struct kube_reply r;
	struct err e;

	assert_non_null(o);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
	if (kube_call(k, &q, &r, &e) < 0 && r.status == 422)
		assert_non_null(strstr(e.msg, "is invalid"));
	kube_reply_done(&r);
	return r.status;
}

static void test_event(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	const struct kube_event v = {.node = "gpu-1",
				     .type = "Normal",
				     .reason = "UpgradeCordoned",
				     .message = "cordoned for driver 550.90.07",
				     .component = "nvidia-driver-installer",
				     .action = "DriverUpgrade"};
	const char *legacy = "{\"metadata\": {\"generateName\": \"gpu-1.\"}, \"involvedObject\": "
			     "{\"kind\": \"Node\", \"name\": \"gpu-1\"}, \"reason\": \"R\", "
			     "\"type\": \"Normal\"}";
	const char *timed = "{\"metadata\": {\"generateName\": \"gpu-1.\"}, \"involvedObject\": "
			    "{\"kind\": \"Node\", \"name\": \"gpu-1\"}, \"reason\": \"R\", "
			    "\"type\": \"Normal\", \"eventTime\": \"2026-01-02T03:04:05.000006Z\", "
			    "\"reportingComponent\": \"x\", \"reportingInstance\": \"i\", "
			    "\"action\": \"A\"}";
	struct err e;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	/* The stand-in answers as kube-apiserver's validation does (events.go,
	 * legacyValidateEvent): a Node's Event without eventTime only in "default"; with it,
	 * in "default" or "kube-system", never in another namespace. */
	assert_int_equal(post_event(k, "kube-system", legacy), 422);
	assert_int_equal(post_event(k, "gpu-operator", legacy), 422);
	assert_int_equal(post_event(k, "default", legacy), 201);
	assert_int_equal(post_event(k, "gpu-operator", timed), 422);
	assert_int_equal(post_event(k, "kube-system", timed), 201);
	/* ... and without the reporting fields an Event with eventTime is refused too. */
	assert_int_equal(
		post_event(k, "kube-system",
			   "{\"metadata\": {\"generateName\": \"gpu-1.\"}, "
			   "\"involvedObject\": {\"kind\": \"Node\", \"name\": \"gpu-1\"}, "
			   "\"reason\": \"R\", \"eventTime\": \"2026-01-02T03:04:05.000006Z\"}"),
		422);
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 422", NULL), 4);
	/* The agent's namespace here (gpu-operator) takes no Node Event: it goes to default. */
	assert_string_equal(kube_event_namespace("gpu-operator"), "default");
	assert_string_equal(kube_event_namespace("kube-system"), "kube-system");
	assert_int_equal(kube_event(k, "gpu-operator", &v, &e), 0);
	assert_int_equal(kubestub_logged(&s->ks,
					 "/api/v1/namespaces/default/events\", \"query\": \"\", "
					 "\"content_type\": \"application/json\", \"user_agent\": "
					 "\"nvidia-driver-installer/",
					 NULL),
			 2);
	assert_non_null(strstr(stored(s), "\"reason\": \"UpgradeCordoned\""));
	assert_non_null(strstr(stored(s), "\"generateName\": \"gpu-1.\""));
	assert_non_null(strstr(stored(s), "\"reportingComponent\": \"nvidia-driver-installer\""));
	assert_non_null(strstr(stored(s), "\"reportingInstance\": \"gpu-1\""));
	assert_non_null(strstr(stored(s), "\"action\": \"DriverUpgrade\""));
	/* In kube-system, where the shipped manifests run the agent, it stays there. */
	assert_int_equal(kube_event(k, "kube-system", &v, &e), 0);
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 422", NULL), 4);
}

/*
 * How much sooner than the deadline libcurl may end an attempt cut by it: it counts its
 * timeout in whole milliseconds (seen: 0.5 ms before).
 */
#define CURL_EARLY_NS 50000000ull

/*
 * The times ("at", the stand-in's monotonic seconds) of the requests its log holds with
 * NEEDLE, in order, into AT (up to MAX): how many.
 */
static size_t logged_at(const struct stub *s, const char *needle, double *at, size_t max)
{
	char line[65536];
	size_t n = 0;
	FILE *f = fopen(s->ks.log, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		_cleanup_(json_object_putp) json_object *o = NULL;

		if (!strstr(line, needle))
			continue;
		o = json_tokener_parse(line);
		assert_non_null(jsonc_get(o, "at"));
		assert_true(n < max);
		at[n++] = json_object_get_double(jsonc_get(o, "at"));
	}
	fclose(f);
	return n;
}

/*
 * A GET of gpu-1 answered 500 until past its DEADLINE_S, begun at T0 and ended at T1 with
 * reply R and error E: each wait the backoff's, in the times the stand-in saw the attempts;
 * given up only once the next wait would cross the deadline; the error names the last
 * answer's status, or, where the deadline cut the last attempt short, says so.
 */
static void check_past_deadline(const struct stub *s, unsigned deadline_s,
				const struct kube_reply *r, const struct err *e, uint64_t t0,
				uint64_t t1)
{
	const uint64_t deadline_ns = deadline_s * 1000000000ull;
	double at[64];
	size_t n = logged_at(s, "\"status\": 500", at, 64);

	assert_true(r->attempts >= 2);
	assert_int_equal(e->code, EXIT_UNREACHABLE);
	if (r->status == 500) {
		assert_int_equal(n, r->attempts);
		assert_non_null(
			strstr(e->msg, "kube: GET /api/v1/nodes/gpu-1: 500: injected by the test"));
	} else {
		/* Cut at the deadline, the answer read by the stand-in or not. */
		assert_int_equal(r->status, 0);
		assert_true(n + 1 == r->attempts || n == r->attempts);
		assert_true(t1 - t0 >= deadline_ns - CURL_EARLY_NS);
		assert_non_null(strstr(e->msg, "attempts)"));
	}
	for (size_t i = 1; i < n; i++)
		assert_true(at[i] - at[i - 1] >= kube_backoff_ms((unsigned)i) / 1000.0);
	/* Given up only when the next wait would have crossed the deadline. */
	assert_true(t1 - t0 >= deadline_ns - kube_backoff_ms(r->attempts) * 1000000ull);
	/* ... and not long after it: without a deadline, the retries would go on. */
	assert_true(t1 - t0 < 30000000000ull);
}

static void test_retries(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL, *k5 = NULL;
	struct kube_config c5 = s->c;
	json_object *node = NULL;
	struct kube_reply r;
	const struct kube_request q = {.method = "GET", .path = "/api/v1/nodes/gpu-1"};
	struct err e;
	uint64_t t0;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	c5.deadline_s = 5;
	k5 = kube_new(&c5, &e);
	assert_non_null(k5);
	/* Two 503s, then the answer: three requests, backoff 100 then 200 ms. */
	put(s->ks.faults, "{\"faults\": [{\"method\": \"GET\", \"path\": \"/api/v1/nodes/gpu-1\", "
			  "\"status\": 503, \"times\": 2}]}");
	t0 = now_ns();
	assert_int_equal(kube_call(k, &q, &r, &e), 0);
	assert_int_equal(r.attempts, 3);
	assert_true(now_ns() - t0 >= 300000000ull);
	kube_reply_done(&r);
	/* 429 with Retry-After 1: the wait is the server's. */
	put(s->ks.faults, "{\"faults\": [{\"path\": \"/api/v1/nodes/gpu-1\", \"status\": 429, "
			  "\"times\": 1, \"retry_after\": 1}]}");
	t0 = now_ns();
	assert_int_equal(kube_node_get(k, "gpu-1", &node, &e), 0);
	assert_true(now_ns() - t0 >= 1000000000ull);
	json_object_put(node);
	/* Failing past the deadline (5 s, k5's): an error naming the status. */
	put(s->ks.faults, "{\"faults\": [{\"path\": \"/api/v1/nodes/gpu-1\", \"status\": 500, "
			  "\"times\": 1000}]}");
	t0 = now_ns();
	assert_int_equal(kube_call(k5, &q, &r, &e), -1);
	check_past_deadline(s, c5.deadline_s, &r, &e, t0, now_ns());
	kube_reply_done(&r);
	/* A conflict is the caller's: not retried. */
	put(s->ks.faults, "{\"faults\": [{\"path\": \"/api/v1/nodes/gpu-1\", \"status\": 409, "
			  "\"times\": 5}]}");
	assert_int_equal(kube_call(k, &q, &r, &e), -1);
	assert_int_equal(r.attempts, 1);
	assert_int_equal(r.status, 409);
	kube_reply_done(&r);
}

/*
 * A slow API server: an answer byte by byte, or none at all. Each call ends at its deadline
 * (3 s here), not after an attempt's own 15 s: under 14 s, what a loaded machine may add.
 */
static void test_slow_server(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	struct kube_reply r;
	const struct kube_request q = {.method = "GET", .path = "/api/v1/nodes/gpu-1"};
	struct err e;
	uint64_t t0;

	err_clear(&e);
	s->c.deadline_s = 3;
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	put(s->ks.faults, "{\"faults\": [{\"path\": \"/api/v1/nodes/gpu-1\", \"trickle\": 0.5, "
			  "\"times\": 1}]}");
	t0 = now_ns();
	assert_int_equal(kube_call(k, &q, &r, &e), -1);
	t0 = now_ns() - t0;
	assert_true(t0 >= 3000000000ull - CURL_EARLY_NS && t0 < 14000000000ull);
	assert_int_equal(e.code, EXIT_UNREACHABLE);
	kube_reply_done(&r);
	put(s->ks.faults, "{\"faults\": [{\"path\": \"/api/v1/nodes/gpu-1\", \"stall\": 60, "
			  "\"times\": 10}]}");
	t0 = now_ns();
	assert_int_equal(kube_call(k, &q, &r, &e), -1);
	t0 = now_ns() - t0;
	assert_true(t0 >= 3000000000ull - CURL_EARLY_NS && t0 < 14000000000ull);
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": \"trickle\"", NULL), 1);
	assert_true(kubestub_logged(&s->ks, "\"status\": \"stall\"", NULL) >= 1);
	kube_reply_done(&r);
}

/*
 * SIGTERM while a call waits for a server that never answers, kept pending as the agent's
 * loop keeps it (blocked, for its signalfd): the call ends at once, exit 143, not at its
 * deadline (the fixture's 30 s: under 20 s, what a loaded machine may add to "at once").
 * Last: the signal stays recorded for the rest of the process.
 */
static void test_sigterm_ends_call(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	struct kube_reply r;
	const struct kube_request q = {.method = "GET", .path = "/api/v1/nodes/gpu-1"};
	sigset_t term, saved;
	struct err e;
	uint64_t t0;
	pid_t sender;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	assert_int_equal(sigprocmask(SIG_BLOCK, &term, &saved), 0);
	put(s->ks.faults, "{\"faults\": [{\"path\": \"/api/v1/nodes/gpu-1\", \"stall\": 60, "
			  "\"times\": 10}]}");
	/* The signal once the server holds the request: the call is in its wait then. */
	sender = fork();
	assert_true(sender >= 0);
	if (sender == 0) {
		while (kubestub_logged(&s->ks, "\"status\": \"stall\"", NULL) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
		kill(getppid(), SIGTERM);
		_exit(0);
	}
	t0 = now_ns();
	assert_int_equal(kube_call(k, &q, &r, &e), -1);
	assert_int_equal(waitpid(sender, NULL, 0), sender);
	/* Taken, as the loop's signalfd would: a failed assertion then says what failed. */
	assert_int_equal(sigtimedwait(&term, NULL, &(struct timespec){0}), SIGTERM);
	assert_int_equal(sigprocmask(SIG_SETMASK, &saved, NULL), 0);
	assert_true(now_ns() - t0 < 20000000000ull);
	assert_int_equal(e.code, 143);
	assert_non_null(strstr(
		e.msg,
		"kube: GET /api/v1/nodes/gpu-1: stopped by SIGTERM before the API server answered"));
	assert_int_equal(r.attempts, 1);
	kube_reply_done(&r);
}

/*
 * After it, with the signals held (interrupt_hold), a call runs whole, as the agent's last
 * write on its Node does; let go, a call stops at once again.
 */
static void test_held_call_after_sigterm(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	struct kube_reply r;
	const struct kube_request q = {.method = "GET", .path = "/api/v1/nodes/gpu-1"};
	struct err e;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	assert_int_equal(interrupt_signal(), SIGTERM);
	interrupt_hold(true);
	assert_int_equal(kube_call(k, &q, &r, &e), 0);
	interrupt_hold(false);
	assert_int_equal(r.status, 200);
	kube_reply_done(&r);
	assert_int_equal(kube_call(k, &q, &r, &e), -1);
	assert_int_equal(e.code, 143);
	assert_int_equal(r.attempts, 0);
	kube_reply_done(&r);
}

static void test_token(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	json_object *node = NULL;
	char path[200];
	struct stat st;
	struct timespec times[2];
	struct err e;

	err_clear(&e);
	k = kube_new(&s->c, &e);
	assert_non_null(k);
	assert_int_equal(kube_node_get(k, "gpu-1", &node, &e), 0);
	json_object_put(node);
	/* Rotated, the file replaced: the next call reads it first. */
	snprintf(path, sizeof(path), "%s/token", s->ks.sa);
	put(path, "token-two\n");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(kube_node_get(k, "gpu-1", &node, &e), 0);
	json_object_put(node);
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 401", NULL), 0);
	/* Rotated with the old time on the file: 401, read again, asked once more. */
	put(path, "token-three\n");
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
	assert_int_equal(kube_node_get(k, "gpu-1", &node, &e), 0);
	json_object_put(node);
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 401", NULL), 1);
	/* The token gone: the call fails before any request, naming it. */
	unlink(path);
	assert_int_equal(kube_node_get(k, "gpu-1", &node, &e), -1);
	assert_non_null(strstr(e.msg, "service account's token"));
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 401", NULL), 1);
}

static void test_tls(void **state)
{
	struct stub *s = *state;
	_cleanup_(kube_freep) struct kube *k = NULL;
	struct kube_config c = s->c;
	json_object *node = NULL;
	struct err e;

	/* Another CA than the one that issued the server's certificate: refused at once. */
	snprintf(c.ca_file, sizeof(c.ca_file), "/etc/ssl/certs/ca-certificates.crt");
	err_clear(&e);
	k = kube_new(&c, &e);
	assert_non_null(k);
	assert_int_equal(kube_node_get(k, "gpu-1", &node, &e), -1);
	assert_non_null(strstr(e.msg, "certificate"));
	assert_non_null(strstr(e.msg, "(1 attempt)"));
	assert_int_equal(kubestub_logged(&s->ks, "nodes", NULL), 0);
}

/*
 * Only the cluster's CA is trusted: a server whose issuer is in the machine's trust store
 * (/etc/ssl/certs, libcurl's default CURLOPT_CAPATH in Debian's build) but is not the
 * account's ca.crt is refused. The issuer goes into a private /etc/ssl/certs, a directory
 * bind-mounted in a mount namespace of a child's own, hashed as OpenSSL looks it up.
 */
static void test_tls_trust_store(void **state)
{
	struct stub *s = *state;
	char dir[200], cmd[2048];
	int status;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/store", s->f.root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s' && cp '%s/sa/ca.crt' '%s/' && openssl rehash '%s' && "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
		 "-subj /CN=cluster-ca -keyout '%s/other.key' -out '%s/other.crt' 2>/dev/null",
		 dir, s->f.root, dir, dir, s->f.root, s->f.root);
	assert_int_equal(system(cmd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		_cleanup_(kube_freep) struct kube *k = NULL;
		struct kube_config c = s->c;
		json_object *node = NULL;
		struct err e;

		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		if (mount(dir, "/etc/ssl/certs", NULL, MS_BIND, NULL) < 0)
			_exit(78);
		/* The cluster's CA is another one: only the store could make it verify. */
		snprintf(c.ca_file, sizeof(c.ca_file), "%s/other.crt", s->f.root);
		err_clear(&e);
		k = kube_new(&c, &e);
		if (!k)
			_exit(3);
		if (kube_node_get(k, "gpu-1", &node, &e) == 0)
			_exit(1); /* the store was trusted */
		_exit(strstr(e.msg, "certificate") ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77 || WEXITSTATUS(status) == 78) {
		print_message("no mount namespace here (not root?): not tested\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(kubestub_logged(&s->ks, "nodes", NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_keep),
		cmocka_unit_test_setup_teardown(test_config, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_node_and_pods, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_pods_paged, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_pods_kept_bound, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_evict, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_leases, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_slots, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_event, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_retries, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_token, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_tls, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_tls_trust_store, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_slow_server, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_sigterm_ends_call, stub_up, stub_down),
		cmocka_unit_test_setup_teardown(test_held_call_after_sigterm, stub_up, stub_down),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
