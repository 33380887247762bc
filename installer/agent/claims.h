/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUs that pods hold through Dynamic Resource Allocation (docs/design.md, "Upgrades that
 * finish by themselves"): with NVIDIA's DRA driver a pod asks for no nvidia.com/gpu; it
 * names ResourceClaims (core/v1 PodSpec.resourceClaims), and the scheduler allocates each
 * claim's devices from a driver (resource.k8s.io ResourceClaim
 * status.allocation.devices.results[].driver). A pod that uses a claim allocated by one of
 * --upgrade-dra-drivers holds GPUs as one with a device plugin's resource does: the upgrade
 * waits for it, and evicts it by the same rules.
 *
 * Pure: the claims a pod names, whether a claim's allocation names a listed driver, and the
 * set of claims a look has read (agent/upgrader.c reads them only in the states that count
 * GPU pods, at most CLAIMS_READ_MAX a look within the look's time, and nothing is kept from
 * one look to the next).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

/* NVIDIA's DRA drivers: GPUs and MIG devices (k8s-dra-driver-gpu at 2240711,
 * cmd/gpu-kubelet-plugin/main.go:42), IMEX channels and the compute-domain daemon's device
 * (cmd/compute-domain-kubelet-plugin/main.go:42). */
#define CLAIMS_DRIVERS_DEFAULT "gpu.nvidia.com,compute-domain.nvidia.com"

/*
 * The claims a look reads at most. A node has a few GPU pods, each with a claim or two (a
 * GPU claim, a ComputeDomain's channel claim), and the compute-domain daemon's: 64 GETs
 * of some hundred bytes each. A slow API server could still make them outlast the look (each
 * GET may take a call's deadline, 5 s): agent/upgrader.c also stops reading once the look's
 * time for it (its evictions', at most 60 s) is spent. A claim past either, or whose read
 * failed, is not read and counts as a GPU claim: its pod is waited for (and evicted as the
 * others), never taken for idle on a guess.
 */
#define CLAIMS_READ_MAX 64

/* "NAMESPACE/NAME" of a claim: a namespace is a DNS label (63), a claim a DNS subdomain. */
#define CLAIMS_KEY_SIZE (63 + 1 + 253 + 1)

struct claims {
	const char *drivers; /* --upgrade-dra-drivers: comma-separated; "" or NULL: none count */
	unsigned n;	     /* claims read this look */
	struct {
		char key[CLAIMS_KEY_SIZE];
		bool gpu; /* allocated by a listed driver (false: gone, unallocated, another's) */
	} seen[CLAIMS_READ_MAX];
	unsigned unread; /* the claims past the look's bound or time (counted as GPU claims) */
	unsigned failed; /* the claims whose read failed this look (counted as GPU claims) */
};

/* Whether DRIVER is one of LIST's (a whole name, compared exactly). */
bool claims_driver_listed(const char *list, const char *driver);

/*
 * Whether CLAIM (a ResourceClaim as kube_resourceclaim_get reads it) is allocated with a
 * device of a driver of LIST: one of status.allocation.devices.results[].driver, those
 * allocated for admin access (adminAccess true: a DCGM or validator pod, which keeps the
 * device files open) included. A claim not yet allocated holds no device.
 */
bool claims_allocated_by(json_object *claim, const char *list);

/*
 * The names of the ResourceClaims POD uses (core/v1 PodSpec.resourceClaims: an entry's
 * resourceClaimName, or for a resourceClaimTemplateName the claim generated from it, whose
 * name PodStatus.resourceClaimStatuses gives under the entry's name; a template's claim not
 * generated yet, or that needed none, is left out: nothing is allocated to the pod through
 * it yet), then the claim of the extended resources DRA backs
 * (PodStatus.extendedResourceClaimStatus.resourceClaimName, Kubernetes 1.34 on: a container
 * asks nvidia.com/gpu or deviceclass.resource.kubernetes.io/CLASS and the scheduler makes
 * the claim). The first MAX go into NAMES (pointers into POD). Returns how many there are.
 */
size_t claims_of_pod(json_object *pod, const char **names, size_t max);

/* Claim NS/NAME's entry in C, or -1 when the look has not read it. */
int claims_find(const struct claims *c, const char *ns, const char *name);

/* Records what the look read of claim NS/NAME (GPU: allocated by a listed driver). 0, or
 * -1 when C is full (counted in C->unread). */
int claims_add(struct claims *c, const char *ns, const char *name, bool gpu);

/*
 * Whether POD holds GPUs through its claims as C has read them: one of its claims is a GPU
 * claim, or was not read (past CLAIMS_READ_MAX). False when C is NULL or lists no driver.
 */
bool claims_pod_holds(const struct claims *c, json_object *pod);
