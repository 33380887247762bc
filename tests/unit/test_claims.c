// SPDX-License-Identifier: Apache-2.0
/*
 * agent/claims: the DRA claims a pod uses (named, or generated from a template and named in
 * its status, or made for its extended resources), a claim's allocation by a listed driver
 * (admin access included: such a pod keeps the device files open), the driver list's
 * check, and the
 * GPU pods of a PodList counted with the claims a look read (agent/upgrade's
 * upgrade_gpu_pods), evictable as the device plugin's.
 */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "agent/claims.h"
#include "agent/upgrade.h"

static json_object *parse(const char *s)
{
	json_object *o = json_tokener_parse(s);

	assert_non_null(o);
	return o;
}

static void test_claims_of_pod(void **state)
{
	/* A claim by name, one from a template (generated), one from a template not generated
	 * yet, one whose status says none was needed, and an entry with neither. */
	json_object *pod = parse(
		"{\"metadata\": {\"namespace\": \"ml\", \"name\": \"train\"},"
		" \"spec\": {\"resourceClaims\": ["
		"  {\"name\": \"gpus\", \"resourceClaimName\": \"eight-gpus\"},"
		"  {\"name\": \"channel\", \"resourceClaimTemplateName\": \"imex-channel\"},"
		"  {\"name\": \"later\", \"resourceClaimTemplateName\": \"tmpl\"},"
		"  {\"name\": \"unneeded\", \"resourceClaimTemplateName\": \"tmpl\"},"
		"  {\"name\": \"odd\"}]},"
		" \"status\": {\"phase\": \"Running\", \"resourceClaimStatuses\": ["
		"  {\"name\": \"unneeded\"},"
		"  {\"name\": \"channel\", \"resourceClaimName\": \"train-channel-x7k2p\"}]}}");
	const char *names[4] = {0};

	(void)state;
	assert_int_equal(claims_of_pod(pod, names, 4), 2);
	assert_string_equal(names[0], "eight-gpus");
	assert_string_equal(names[1], "train-channel-x7k2p");
	/* The count past what NAMES holds. */
	names[1] = NULL;
	assert_int_equal(claims_of_pod(pod, names, 1), 2);
	assert_null(names[1]);
	assert_int_equal(claims_of_pod(NULL, names, 4), 0);
	json_object_put(pod);
}

/* A pod whose container asks an extended resource DRA backs (Kubernetes 1.34 on): no entry
 * in spec.resourceClaims, the scheduler's claim in status.extendedResourceClaimStatus. */
static void test_claims_of_pod_extended(void **state)
{
	json_object *pod = parse(
		"{\"metadata\": {\"namespace\": \"ml\", \"name\": \"train\"},"
		" \"spec\": {\"containers\": [{\"name\": \"c\", \"resources\": {\"limits\":"
		"  {\"deviceclass.resource.kubernetes.io/gpu.nvidia.com\": \"1\"}}}],"
		"  \"resourceClaims\": [{\"name\": \"ch\", \"resourceClaimName\": \"channel\"}]},"
		" \"status\": {\"extendedResourceClaimStatus\": {\"requestMappings\": [{"
		"  \"containerName\": \"c\", \"resourceName\":"
		"  \"deviceclass.resource.kubernetes.io/gpu.nvidia.com\", \"requestName\":"
		"  \"container-0-request-0\"}], \"resourceClaimName\": \"train-extended-resources-k2x9\"}}}");
	json_object *empty = parse("{\"status\": {\"extendedResourceClaimStatus\": "
				   "{\"resourceClaimName\": \"\"}}}");
	const char *names[4] = {0};
	struct claims c = {.drivers = CLAIMS_DRIVERS_DEFAULT};

	(void)state;
	assert_int_equal(claims_of_pod(pod, names, 4), 2);
	assert_string_equal(names[0], "channel");
	assert_string_equal(names[1], "train-extended-resources-k2x9");
	assert_int_equal(claims_of_pod(empty, names, 4), 0);
	/* Its claim read and allocated by gpu.nvidia.com: a GPU pod; by no listed driver: not. */
	assert_int_equal(claims_add(&c, "ml", "channel", false), 0);
	assert_int_equal(claims_add(&c, "ml", "train-extended-resources-k2x9", true), 0);
	assert_true(claims_pod_holds(&c, pod));
	c.seen[1].gpu = false;
	assert_false(claims_pod_holds(&c, pod));
	/* Not read (past the look's bound): a GPU pod, as any claim not read. */
	c.n = 1;
	assert_true(claims_pod_holds(&c, pod));
	json_object_put(pod);
	json_object_put(empty);
}

static void test_allocated_by(void **state)
{
	json_object *gpu = parse(
		"{\"status\": {\"allocation\": {\"devices\": {\"results\": ["
		" {\"request\": \"nic\", \"driver\": \"rdma.example.com\", \"pool\": \"n1\", \"device\": \"mlx5_0\"},"
		" {\"request\": \"gpu\", \"driver\": \"gpu.nvidia.com\", \"pool\": \"n1\", \"device\": \"gpu-0\"}]}}}}");
	json_object *other = parse("{\"status\": {\"allocation\": {\"devices\": {\"results\": ["
				   " {\"driver\": \"gpu.nvidia.com.example\"}]}}}}");
	json_object *pending = parse("{\"status\": {}}");
	/* Allocated for admin access (a DCGM or validator pod, which keeps /dev/nvidia* open:
	 * left out, its processes would hold the upgrade as ones outside pods), then mixed. */
	json_object *admin = parse("{\"status\": {\"allocation\": {\"devices\": {\"results\": ["
				   " {\"driver\": \"gpu.nvidia.com\", \"adminAccess\": true}]}}}}");
	json_object *mixed =
		parse("{\"status\": {\"allocation\": {\"devices\": {\"results\": ["
		      " {\"driver\": \"gpu.nvidia.com\", \"adminAccess\": true},"
		      " {\"driver\": \"gpu.nvidia.com\", \"adminAccess\": false}]}}}}");
	const char *def = CLAIMS_DRIVERS_DEFAULT;

	(void)state;
	assert_true(claims_allocated_by(gpu, def));
	assert_false(claims_allocated_by(gpu, "compute-domain.nvidia.com"));
	assert_true(claims_allocated_by(gpu, "rdma.example.com"));
	assert_false(claims_allocated_by(other, def)); /* a whole name, not a prefix */
	assert_false(claims_allocated_by(pending, def));
	assert_false(claims_allocated_by(gpu, ""));
	assert_true(claims_driver_listed(def, "compute-domain.nvidia.com"));
	assert_false(claims_driver_listed(def, "nvidia.com"));
	assert_false(claims_driver_listed(def, ""));
	assert_true(claims_allocated_by(admin, def));
	assert_true(claims_allocated_by(mixed, def));
	json_object_put(gpu);
	json_object_put(other);
	json_object_put(pending);
	json_object_put(admin);
	json_object_put(mixed);
}

static void test_drivers_ok(void **state)
{
	char why[200];

	(void)state;
	assert_true(claims_drivers_ok(CLAIMS_DRIVERS_DEFAULT, why, sizeof(why)));
	assert_true(claims_drivers_ok("", why, sizeof(why)));
	assert_true(claims_drivers_ok("gpu.nvidia.com", why, sizeof(why)));
	assert_false(claims_drivers_ok("GPU.nvidia.com", why, sizeof(why)));
	assert_non_null(strstr(why, "'GPU.nvidia.com' is not a DRA driver's name"));
	assert_false(claims_drivers_ok("gpu.nvidia.com,,x.y", why, sizeof(why)));
	assert_false(claims_drivers_ok("gpu.nvidia.com,", why, sizeof(why)));
	assert_string_equal(why, "the list ends with a comma");
	assert_false(claims_drivers_ok("a..b", why, sizeof(why)));
	assert_false(claims_drivers_ok("-a.b", why, sizeof(why)));
	/* 63 characters at most (DriverNameMaxLength) */
	assert_true(
		claims_drivers_ok("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
				  why, sizeof(why)));
	assert_false(claims_drivers_ok(
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", why,
		sizeof(why)));
}

/* A pod NAME in NS with claims (a JSON array of PodResourceClaim), status members ST. */
#define POD(ns, name, owner, claims, st)                                                           \
	"{\"metadata\": {\"namespace\": \"" ns "\", \"name\": \"" name "\"" owner "},"             \
	" \"spec\": {\"containers\": [{\"name\": \"c\"}], \"resourceClaims\": " claims "},"        \
	" \"status\": {" st "}}"
#define DS ", \"ownerReferences\": [{\"kind\": \"DaemonSet\", \"name\": \"cd\"}]"
#define RUNNING "\"phase\": \"Running\""

static void test_gpu_pods_by_claims(void **state)
{
	json_object *items = parse(
		"["
		/* a GPU claim by name */
		POD("ml", "train", "", "[{\"name\": \"g\", \"resourceClaimName\": \"gpus\"}]",
		    RUNNING) ","
		/* a claim of another driver */
		POD("ml", "nic", "", "[{\"name\": \"n\", \"resourceClaimName\": \"rdma\"}]",
		    RUNNING) ","
		/* the GPU claim shared, by a pod that has finished */
		POD("ml", "done", "", "[{\"name\": \"g\", \"resourceClaimName\": \"gpus\"}]",
		    "\"phase\": \"Succeeded\"") ","
		/* a template's claim, generated */
		POD("ml", "tmpl", "",
		    "[{\"name\": \"c\", \"resourceClaimTemplateName\": \"channel\"}]",
		    RUNNING ", \"resourceClaimStatuses\": [{\"name\": \"c\", "
			    "\"resourceClaimName\": \"tmpl-c-abcde\"}]") ","
		/* a template's claim not generated yet */
		POD("ml", "young", "",
		    "[{\"name\": \"c\", \"resourceClaimTemplateName\": \"channel\"}]",
		    "\"phase\": \"Pending\"") ","
		/* the compute-domain daemon: a DaemonSet's, counted, not evictable */
		POD("nvidia-dra", "cd-daemon", DS,
		    "[{\"name\": \"d\", \"resourceClaimTemplateName\": \"cd-daemon\"}]",
		    RUNNING ", \"resourceClaimStatuses\": [{\"name\": \"d\", "
			    "\"resourceClaimName\": \"cd-daemon-d-q9x\"}]") ","
		/* a claim gone (read: none), and one the look did not read (past its bound) */
		POD("ml", "gone", "", "[{\"name\": \"g\", \"resourceClaimName\": \"deleted\"}]",
		    RUNNING) "," POD("ml", "unread", "",
				     "[{\"name\": \"g\", \"resourceClaimName\": \"later\"}]",
				     RUNNING) "]");
	struct claims c = {.drivers = CLAIMS_DRIVERS_DEFAULT};
	unsigned evictable = 0;
	char names[512];

	(void)state;
	assert_int_equal(claims_add(&c, "ml", "gpus", true), 0);
	assert_int_equal(claims_add(&c, "ml", "rdma", false), 0);
	assert_int_equal(claims_add(&c, "ml", "tmpl-c-abcde", true), 0);
	assert_int_equal(claims_add(&c, "nvidia-dra", "cd-daemon-d-q9x", true), 0);
	assert_int_equal(claims_add(&c, "ml", "deleted", false), 0);
	assert_int_equal(claims_find(&c, "ml", "rdma"), 1);
	assert_int_equal(claims_find(&c, "m", "l/rdma"), -1);
	assert_int_equal(claims_find(&c, "ml", "later"), -1);
	assert_int_equal(upgrade_gpu_pods(items, &c, &evictable, names, sizeof(names)), 4);
	assert_int_equal(evictable, 3);
	assert_string_equal(names, "ml/train, ml/tmpl, nvidia-dra/cd-daemon, ml/unread");
	/* Without claims, or with no driver listed, none of them is a GPU pod. */
	assert_int_equal(upgrade_gpu_pods(items, NULL, &evictable, names, sizeof(names)), 0);
	c.drivers = "";
	assert_int_equal(upgrade_gpu_pods(items, &c, &evictable, names, sizeof(names)), 0);
	json_object_put(items);
}

static void test_bound(void **state)
{
	struct claims *c = calloc(1, sizeof(*c));
	char name[16];

	(void)state;
	assert_non_null(c);
	for (unsigned i = 0; i < CLAIMS_READ_MAX; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		assert_int_equal(claims_add(c, "ns", name, false), 0);
	}
	assert_int_equal(claims_add(c, "ns", "one-more", false), -1);
	assert_int_equal(c->unread, 1);
	assert_int_equal(claims_find(c, "ns", "c63"), 63);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_claims_of_pod),
					   cmocka_unit_test(test_claims_of_pod_extended),
					   cmocka_unit_test(test_allocated_by),
					   cmocka_unit_test(test_drivers_ok),
					   cmocka_unit_test(test_gpu_pods_by_claims),
					   cmocka_unit_test(test_bound)};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
