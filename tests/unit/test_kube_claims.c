// SPDX-License-Identifier: Apache-2.0
/*
 * kube/api.c kube_resourceclaim_get against tests/tools/kube-api.py: a claim read in the
 * newest version served (resource.k8s.io/v1), a missing claim told apart from a version not
 * served (a Status NotFound of resourceclaims against kube-apiserver's "404 page not
 * found"), the fall back to v1beta1 on a server that serves only it and the version
 * remembered, a server with no version of the group, a refused call, a result's members
 * the agent does not read (adminAccess, tolerations) dropped; and the pods listed with
 * their claims (spec.resourceClaims, status.resourceClaimStatuses,
 * status.extendedResourceClaimStatus's claim) kept.
 */
#include "cmocka_prelude.h"
#include "kubestub.h"
#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"
#include "util/jsonc.h"

/* clang-format off */
#define CLAIM(name, driver) \
	"{\"metadata\": {\"name\": \"" name "\", \"namespace\": \"ml\", \"uid\": \"u-" name \
	"\"}, \"spec\": {\"devices\": {\"requests\": [{\"name\": \"gpu\", \"exactly\": " \
	"{\"deviceClassName\": \"gpu.nvidia.com\"}}]}}, \"status\": " \
	"{\"allocation\": {\"devices\": {\"results\": [{\"request\": \"gpu\", \"driver\": \"" \
	driver "\", \"pool\": \"n1\", \"device\": \"gpu-0\", \"adminAccess\": false, " \
	"\"tolerations\": []}]}}, \"devices\": [{\"driver\": \"" \
	driver "\", \"pool\": \"n1\", \"device\": \"gpu-0\", \"data\": {\"big\": \"x\"}}]}}"
#define CLAIMS "\"resourceclaims\": [" CLAIM("gpus", "gpu.nvidia.com") "]"
#define PODS                                                                                       \
	"\"pods\": [{\"metadata\": {\"name\": \"train\", \"namespace\": \"ml\"}, \"spec\": "        \
	"{\"nodeName\": \"n1\", \"containers\": [{\"name\": \"c\", \"env\": [{\"name\": \"E\"}]}], " \
	"\"resourceClaims\": [{\"name\": \"g\", \"resourceClaimName\": \"gpus\"}, {\"name\": "      \
	"\"c\", \"resourceClaimTemplateName\": \"ch\"}]}, \"status\": {\"phase\": \"Running\", "    \
	"\"resourceClaimStatuses\": [{\"name\": \"c\", \"resourceClaimName\": \"train-c-x\"}], " \
	"\"extendedResourceClaimStatus\": {\"requestMappings\": [{\"containerName\": \"c\"}], "  \
	"\"resourceClaimName\": \"train-extended-resources-x\"}}}]"
/* clang-format on */

static int stub_up(void **state)
{
	return kubestub_setup(state, "kube-claims", "ml", "{" CLAIMS ", " PODS "}");
}

static int stub_up_v1beta1(void **state)
{
	return kubestub_setup(state, "kube-claims", "ml",
			      "{\"resource_versions\": [\"v1beta1\"], " CLAIMS "}");
}

static int stub_up_none(void **state)
{
	return kubestub_setup(state, "kube-claims", "ml",
			      "{\"resource_versions\": [], " CLAIMS "}");
}

static int gets_of(struct kubestub_fixture *s, const char *version)
{
	char needle[128];

	snprintf(needle, sizeof(needle), "/apis/resource.k8s.io/%s/", version);
	return kubestub_logged(&s->ks, needle, NULL);
}

static void test_claim_v1(void **state)
{
	struct kubestub_fixture *s = *state;
	json_object *claim = NULL, *v;
	struct err e;

	assert_int_equal(kube_resourceclaim_get(s->k, "ml", "gpus", &claim, &e), 0);
	assert_non_null(claim);
	assert_true(json_object_object_get_ex(claim, "apiVersion", &v));
	assert_string_equal(json_object_get_string(v), "resource.k8s.io/v1");
	assert_string_equal(
		json_object_to_json_string_ext(claim, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE),
		"{\"apiVersion\":\"resource.k8s.io/v1\",\"metadata\":{\"name\":\"gpus\","
		"\"namespace\":\"ml\",\"uid\":\"u-gpus\"},\"status\":{\"allocation\":{"
		"\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.nvidia."
		"com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}}}}");
	json_object_put(claim);
	/* A claim that is not there: the served version's NotFound, no other version asked. */
	assert_int_equal(kube_resourceclaim_get(s->k, "ml", "gone", &claim, &e), 1);
	assert_null(claim);
	assert_int_equal(gets_of(s, "v1"), 2);
	assert_int_equal(gets_of(s, "v1beta2") + gets_of(s, "v1beta1"), 0);
	/* Not a name the API takes: refused before any call. */
	assert_int_equal(kube_resourceclaim_get(s->k, "ml", "A/b", &claim, &e), -1);
	assert_non_null(strstr(e.msg, "resourceclaim 'A/b' is not a Kubernetes name"));
}

static void test_claim_refused(void **state)
{
	struct kubestub_fixture *s = *state;
	json_object *claim = NULL;
	struct err e;

	/* An old ClusterRole without resourceclaims: get. */
	assert_int_equal(kubestub_put(s->ks.faults,
				      "{\"faults\": [{\"path\": \"/apis/resource.k8s.io/v1/.*\", "
				      "\"status\": 403, \"times\": 1}]}"),
			 0);
	assert_int_equal(kube_resourceclaim_get(s->k, "ml", "gpus", &claim, &e), -1);
	assert_null(claim);
	assert_non_null(strstr(e.msg, "403"));
	assert_int_equal(gets_of(s, "v1beta2"), 0);
}

static void test_claim_fallback(void **state)
{
	struct kubestub_fixture *s = *state;
	json_object *claim = NULL, *v;
	struct err e;

	assert_int_equal(kube_resourceclaim_get(s->k, "ml", "gpus", &claim, &e), 0);
	assert_true(json_object_object_get_ex(claim, "apiVersion", &v));
	assert_string_equal(json_object_get_string(v), "resource.k8s.io/v1beta1");
	json_object_put(claim);
	assert_int_equal(gets_of(s, "v1") + gets_of(s, "v1beta2") + gets_of(s, "v1beta1"), 3);
	assert_int_equal(kubestub_logged(&s->ks, "\"status\": 404", NULL), 2);
	/* Remembered: the next claims are asked of v1beta1 alone, found or not. */
	assert_int_equal(kube_resourceclaim_get(s->k, "ml", "gpus", &claim, &e), 0);
	json_object_put(claim);
	assert_int_equal(kube_resourceclaim_get(s->k, "ml", "gone", &claim, &e), 1);
	assert_int_equal(gets_of(s, "v1beta1"), 3);
	assert_int_equal(gets_of(s, "v1") + gets_of(s, "v1beta2"), 2);
}

static void test_claim_no_version(void **state)
{
	struct kubestub_fixture *s = *state;
	json_object *claim = NULL;
	struct err e;

	/* No version of resource.k8s.io answers with its NotFound: nothing says the claim is
	 * gone (a pod naming claims on such a server is an anomaly), so an error, never 1. */
	assert_int_equal(kube_resourceclaim_get(s->k, "ml", "gpus", &claim, &e), -1);
	assert_null(claim);
	assert_non_null(strstr(e.msg, "no version of resource.k8s.io"));
	assert_int_equal(gets_of(s, "v1") + gets_of(s, "v1beta2") + gets_of(s, "v1beta1"), 3);
}

static void test_pods_keep_claims(void **state)
{
	struct kubestub_fixture *s = *state;
	json_object *pods = NULL;
	struct err e;

	assert_int_equal(kube_pods_on_node(s->k, "n1", &pods, &e), 0);
	assert_string_equal(
		json_object_to_json_string_ext(pods, JSON_C_TO_STRING_PLAIN),
		"[{\"metadata\":{\"name\":\"train\",\"namespace\":\"ml\"},\"spec\":{\"containers\":"
		"[{\"name\":\"c\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":"
		"\"gpus\"},{\"name\":\"c\",\"resourceClaimTemplateName\":\"ch\"}]},\"status\":{"
		"\"phase\":\"Running\",\"resourceClaimStatuses\":[{\"name\":\"c\","
		"\"resourceClaimName\":\"train-c-x\"}],\"extendedResourceClaimStatus\":{"
		"\"resourceClaimName\":\"train-extended-resources-x\"}}}]");
	json_object_put(pods);
}

static void test_not_found_status(void **state)
{
	json_object *b;

	(void)state;
	b = json_tokener_parse("{\"kind\": \"Status\", \"reason\": \"NotFound\", \"details\": "
			       "{\"kind\": \"resourceclaims\", \"name\": \"x\"}}");
	assert_true(kube_status_not_found(b, "resourceclaims"));
	assert_false(kube_status_not_found(b, "pods"));
	json_object_put(b);
	/* The bare NotFound of a path with no resource (the stand-in's own, older servers'). */
	b = json_tokener_parse("{\"kind\": \"Status\", \"reason\": \"NotFound\", \"details\": {}}");
	assert_false(kube_status_not_found(b, "resourceclaims"));
	json_object_put(b);
	/* "404 page not found" as json-c reads it: the number 404. */
	b = json_tokener_parse("404 page not found\n");
	assert_false(kube_status_not_found(b, "resourceclaims"));
	json_object_put(b);
	assert_false(kube_status_not_found(NULL, "resourceclaims"));
	/* JSON nulls where the strings go: no match, no crash. */
	b = json_tokener_parse("{\"kind\": null, \"reason\": \"NotFound\"}");
	assert_false(kube_status_not_found(b, "resourceclaims"));
	json_object_put(b);
	b = json_tokener_parse("{\"kind\": \"Status\", \"reason\": null}");
	assert_false(kube_status_not_found(b, "resourceclaims"));
	json_object_put(b);
	b = json_tokener_parse("{\"kind\": \"Status\", \"reason\": \"NotFound\", \"details\": "
			       "{\"kind\": null}}");
	assert_false(kube_status_not_found(b, "resourceclaims"));
	json_object_put(b);
	b = json_tokener_parse("{\"kind\": \"Status\", \"reason\": \"NotFound\", \"details\": "
			       "null}");
	assert_false(kube_status_not_found(b, "resourceclaims"));
	json_object_put(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_found_status),
		cmocka_unit_test_setup_teardown(test_claim_v1, stub_up, kubestub_teardown),
		cmocka_unit_test_setup_teardown(test_claim_refused, stub_up, kubestub_teardown),
		cmocka_unit_test_setup_teardown(test_pods_keep_claims, stub_up, kubestub_teardown),
		cmocka_unit_test_setup_teardown(test_claim_fallback, stub_up_v1beta1,
						kubestub_teardown),
		cmocka_unit_test_setup_teardown(test_claim_no_version, stub_up_none,
						kubestub_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
