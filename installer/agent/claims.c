// SPDX-License-Identifier: Apache-2.0
/*
 * The DRA claims that make a pod a GPU pod (agent/claims.h). The fields read are core/v1's
 * and resource.k8s.io's (k8s.io/api as NVIDIA/k8s-dra-driver-gpu vendors it at 2240711):
 * core/v1 types.go:4450 PodSpec.resourceClaims, 4516-4558 PodResourceClaim (name, exactly
 * one of resourceClaimName and resourceClaimTemplateName), 4564-4583 and 5452
 * PodStatus.resourceClaimStatuses (name, resourceClaimName: "If this is unset, then
 * generating a ResourceClaim was not necessary"), 4586-4600 and 5456
 * PodStatus.extendedResourceClaimStatus.resourceClaimName (the claim the scheduler made for
 * the extended resources DRA backs, DRAExtendedResource, Kubernetes 1.34 on); resource/v1
 * types.go:1611 status.allocation, 1698 devices, 1730 results, 1775 driver (v1beta1 and
 * v1beta2 have the same path).
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/claims.h"
#include "kube/kube.h"
#include "util/jsonc.h"

bool claims_drivers_ok(const char *list, char *why, size_t size)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (!kube_subdomain_ok(p, n, 63)) {
			snprintf(
				why, size,
				"'%.*s' is not a DRA driver's name (a DNS subdomain in lower case, at most 63 characters, such as gpu.nvidia.com)",
				(int)(n > 80 ? 80 : n), p);
			return false;
		}
		p += n + (p[n] == ',');
		if (p[-1] == ',' && !*p) {
			snprintf(why, size, "the list ends with a comma");
			return false;
		}
	}
	return true;
}

bool claims_driver_listed(const char *list, const char *driver)
{
	size_t len = driver ? strlen(driver) : 0;

	if (!list || !len)
		return false;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (n == len && strncmp(p, driver, n) == 0)
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/*
 * A device allocated for admin access (adminAccess true) counts as any: a DCGM or validator
 * pod with such a claim keeps /dev/nvidia* open, so left out it would still hold the upgrade
 * as "process(es) outside pods" and never be evicted. The GPU Operator leaves those results
 * out (gpu-operator a22dbf6 controllers/nodelabeling_controller.go:355-387,
 * PodHasNVIDIAGPUClaim with includeAdminAccess false) only because its driver manager first
 * pauses those operands through their deploy labels, which this agent does not.
 */
bool claims_allocated_by(json_object *claim, const char *list)
{
	json_object *alloc = jsonc_get(jsonc_get(claim, "status"), "allocation");
	json_object *results = jsonc_get(jsonc_get(alloc, "devices"), "results");
	size_t n = jsonc_array_len(results);

	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(results, i);

		if (claims_driver_listed(list, jsonc_str(r, "driver")))
			return true;
	}
	return false;
}

/* The claim generated for POD's entry ENTRY (PodStatus.resourceClaimStatuses), or NULL. */
static const char *generated(json_object *pod, const char *entry)
{
	json_object *st = jsonc_get(jsonc_get(pod, "status"), "resourceClaimStatuses");
	size_t n = jsonc_array_len(st);

	for (size_t i = 0; entry && i < n; i++) {
		json_object *s = json_object_array_get_idx(st, i);
		const char *name = jsonc_str(s, "name");

		if (name && strcmp(name, entry) == 0)
			return jsonc_str(s, "resourceClaimName");
	}
	return NULL;
}

size_t claims_of_pod(json_object *pod, const char **names, size_t max)
{
	json_object *rc = jsonc_get(jsonc_get(pod, "spec"), "resourceClaims");
	size_t n = jsonc_array_len(rc), count = 0;
	const char *name;

	for (size_t i = 0; i < n; i++) {
		json_object *entry = json_object_array_get_idx(rc, i);

		name = jsonc_str(entry, "resourceClaimName");

		if (!name && jsonc_str(entry, "resourceClaimTemplateName"))
			name = generated(pod, jsonc_str(entry, "name"));
		if (!name || !*name)
			continue;
		if (count < max)
			names[count] = name;
		count++;
	}
	/* The claim of the extended resources DRA backs: the pod names it nowhere in its spec
	 * (its containers ask e.g. deviceclass.resource.kubernetes.io/CLASS in resources). */
	name = jsonc_str(jsonc_get(jsonc_get(pod, "status"), "extendedResourceClaimStatus"),
			 "resourceClaimName");
	if (name && *name) {
		if (count < max)
			names[count] = name;
		count++;
	}
	return count;
}

int claims_find(const struct claims *c, const char *ns, const char *name)
{
	size_t nl = strlen(ns);

	for (unsigned i = 0; i < c->n; i++) {
		const char *k = c->seen[i].key;

		if (strncmp(k, ns, nl) == 0 && k[nl] == '/' && strcmp(k + nl + 1, name) == 0)
			return (int)i;
	}
	return -1;
}

int claims_add(struct claims *c, const char *ns, const char *name, bool gpu)
{
	if (c->n >= CLAIMS_READ_MAX) {
		c->unread++;
		return -1;
	}
	snprintf(c->seen[c->n].key, sizeof(c->seen[c->n].key), "%s/%s", ns, name);
	c->seen[c->n++].gpu = gpu;
	return 0;
}

bool claims_pod_holds(const struct claims *c, json_object *pod)
{
	const char *names[CLAIMS_READ_MAX];
	const char *ns = jsonc_str(jsonc_get(pod, "metadata"), "namespace");
	size_t n;

	if (!c || !c->drivers || !c->drivers[0] || !ns)
		return false;
	n = claims_of_pod(pod, names, CLAIMS_READ_MAX);
	/* Past what NAMES holds: claims no look reads; a GPU pod, as any claim not read. */
	if (n > CLAIMS_READ_MAX)
		return true;
	for (size_t i = 0; i < n; i++) {
		int at = claims_find(c, ns, names[i]);

		if (at < 0 || c->seen[at].gpu)
			return true;
	}
	return false;
}
