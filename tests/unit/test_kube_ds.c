// SPDX-License-Identifier: Apache-2.0
/*
 * kube/api.c kube_daemonset_nodes, what --upgrade-max-unavailable counts, against
 * tests/tools/kube-api.py: the DaemonSet's own pods listed by its spec.selector (matchLabels
 * and matchExpressions as a labelSelector), its controller reference still checked, the
 * Nodes listed by its template's nodeSelector and only those it is on kept; no DaemonSet;
 * and what is kept of its pods past KUBE_PODS_KEPT_MAX, said with the fix.
 */
#include "cmocka_prelude.h"
#include "kubestub.h"
#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"
#include "util/jsonc.h"

/* DaemonSet drv (its pods app=drv, tier not canary or test; its nodes gpu=true): its pods on
 * n1 and n2, a canary of it on n3 that its selector leaves out, another DaemonSet's pod with
 * its labels on n4, a pod of no DaemonSet on n1; n5 is no GPU node. */
#define OWNER(name)                                                                                \
	"\"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": \"DaemonSet\", "            \
	"\"name\": \"" name "\", \"uid\": \"1\", \"controller\": true}]"
#define POD(name, node, labels, owner)                                                             \
	"{\"metadata\": {\"name\": \"" name "\", \"namespace\": \"ns\", \"labels\": {" labels      \
	"}, " OWNER(owner) "}, \"spec\": {\"nodeName\": \"" node "\"}}"
#define NODE(name, labels)                                                                         \
	"{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"" name            \
	"\", \"labels\": {" labels "}}, \"spec\": {\"unschedulable\": true}}"
#define GPU "\"gpu\": \"true\""
/* One object or so a line: clang-format 14 packs the macros past 100 columns. */
/* clang-format off */
static const char initial[] =
	"{\"daemonsets\": [{\"apiVersion\": \"apps/v1\", \"kind\": \"DaemonSet\", "
	"\"metadata\": {\"name\": \"drv\", \"namespace\": \"ns\"}, \"spec\": {"
	"\"selector\": {\"matchLabels\": {\"app\": \"drv\"}, \"matchExpressions\": "
	"[{\"key\": \"tier\", \"operator\": \"NotIn\", \"values\": [\"canary\", \"test\"]}]}, "
	"\"template\": {\"spec\": {\"nodeSelector\": {" GPU "}}}}}],\n"
	"\"pods\": [" POD("drv-1", "n1", "\"app\": \"drv\"", "drv") ",\n"
	POD("drv-2", "n2", "\"app\": \"drv\"", "drv") ",\n"
	POD("drv-3", "n3", "\"app\": \"drv\", \"tier\": \"canary\"", "drv") ",\n"
	POD("x-4", "n4", "\"app\": \"drv\"", "x") ",\n"
	"{\"metadata\": {\"name\": \"web\", \"namespace\": \"ns\"}, "
	"\"spec\": {\"nodeName\": \"n1\"}}],\n"
	"\"nodes\": [" NODE("n1", GPU) ", " NODE("n2", GPU) ", " NODE("n3", GPU) ",\n"
	NODE("n4", GPU) ", " NODE("n5", "") "]}\n";
/* clang-format on */

static int stub_up(void **state)
{
	return kubestub_setup(state, "kube-ds", "ns", initial);
}

static void test_daemonset_nodes(void **state)
{
	struct kubestub_fixture *s = *state;
	json_object *nodes = NULL;
	const char *text;
	struct err e;

	err_clear(&e);
	/* Its pods by its selector, its nodes by its nodeSelector, those it is on kept. */
	assert_int_equal(kube_daemonset_nodes(s->k, "ns", "drv", "a.b/c", &nodes, &e), 0);
	text = json_object_to_json_string(nodes);
	assert_int_equal(json_object_array_length(nodes), 2);
	assert_non_null(strstr(text, "\"n1\""));
	assert_non_null(strstr(text, "\"n2\""));
	json_object_put(nodes);
	assert_int_equal(
		kubestub_logged(&s->ks,
				"labelSelector=app%3Ddrv%2Ctier%20notin%20%28canary%2Ctest%29",
				NULL),
		1);
	assert_int_equal(kubestub_logged(&s->ks, "labelSelector=gpu%3Dtrue", NULL), 1);
	/* No such DaemonSet: 1. */
	assert_int_equal(kube_daemonset_nodes(s->k, "ns", "none", "a.b/c", &nodes, &e), 1);
	assert_null(nodes);
}

/* 22 more pods of drv, each with an owner reference of 200,000 bytes: 4.4 MB kept. */
static void test_daemonset_pods_bound(void **state)
{
	struct kubestub_fixture *s = *state;
	_cleanup_free_ char *big = malloc(200001);
	json_object *nodes = NULL;
	struct err e;

	err_clear(&e);
	assert_non_null(big);
	memset(big, 'a', 200000);
	big[200000] = '\0';
	for (int i = 0; i < 22; i++) {
		_cleanup_(json_object_putp) json_object *pod = NULL;
		struct kube_request q = {.method = "POST", .path = "/api/v1/namespaces/ns/pods"};
		json_object *owners;
		struct kube_reply r;
		char text[512];

		snprintf(text, sizeof(text),
			 "{\"metadata\": {\"name\": \"big-%d\", \"labels\": {\"app\": \"drv\"}, "
			 "\"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": "
			 "\"DaemonSet\", \"name\": \"drv\", \"uid\": \"1\", \"controller\": true}, "
			 "{\"kind\": \"X\"}]}, \"spec\": {\"nodeName\": \"n1\"}}",
			 i);
		pod = json_tokener_parse(text);
		assert_non_null(pod);
		owners = json_object_object_get(json_object_object_get(pod, "metadata"),
						"ownerReferences");
		json_object_object_add(json_object_array_get_idx(owners, 1), "name",
				       json_object_new_string(big));
		q.body = pod;
		assert_int_equal(kube_call(s->k, &q, &r, &e), 0);
		kube_reply_done(&r);
	}
	assert_int_equal(kube_daemonset_nodes(s->k, "ns", "drv", "a.b/c", &nodes, &e), -2);
	assert_null(nodes);
	assert_non_null(strstr(e.msg, "what the agent reads of the DaemonSet's pods is past its "
				      "bound of 4 MiB; leave --upgrade-max-unavailable unset"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_daemonset_nodes, stub_up, kubestub_teardown),
		cmocka_unit_test_setup_teardown(test_daemonset_pods_bound, stub_up,
						kubestub_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
