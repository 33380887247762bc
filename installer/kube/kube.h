/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The face of kube/: a Kubernetes API client for the node agent, only as much of it as the
 * agent needs. It runs in the agent's pod with the pod's service account (in-cluster
 * configuration, as client-go's rest.InClusterConfig reads it: KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT, and the account's token, ca.crt and namespace files), over
 * libcurl with the cluster's CA, JSON through json-c.
 *
 * A call is retried with a backoff, within KUBE_CALL_DEADLINE_S (or the config's), when the
 * API server may
 * answer differently later: a transport error, 429 and 5xx (Retry-After, when sent, sets
 * the wait). 401 re-reads the token, which the kubelet rotates in place (a projected
 * token: the file is replaced before it expires), and tries once more; the token is also
 * re-read whenever its file changed. Other answers are the caller's: 404 and 409 (a
 * resourceVersion conflict: re-read, then decide again) come back as errors with
 * kube_reply.status set, and an eviction's 429 (a disruption budget forbids it now) is
 * not retried here: the caller retries it later, and never forces it.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "util/cleanup.h"
#include "util/err.h"

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_CALL_DEADLINE_S 30
#define KUBE_BACKOFF_FIRST_MS 100
#define KUBE_BACKOFF_MAX_MS 5000
/* The most of an answer the client reads: past it the call fails, not retried. A Node or
 * a page of pods is well under it (etcd keeps an object to 1.5 MiB). */
#define KUBE_BODY_MAX (8u << 20)
#define KUBE_PODS_KEPT_MAX (4u << 20)
/* What kube_daemonset_nodes keeps of the DaemonSet's Nodes: about 1 KiB each (a name, the
 * record, a dozen conditions' type and status), so some 16,000 nodes. */
#define KUBE_DS_NODES_KEPT_MAX (16u << 20)
/* The longest labelSelector made of a DaemonSet's selector. */
#define KUBE_SELECTOR_MAX 2048

struct kube_config {
	char server[300]; /* "https://10.96.0.1:443", "https://[fd00::1]:443" */
	char ca_file[PATH_MAX];
	char token_file[PATH_MAX];
	char namespace[256]; /* the pod's, from the account's namespace file */
	unsigned deadline_s; /* a call's retries end within it; 0: KUBE_CALL_DEADLINE_S */
};

/*
 * The in-cluster configuration: the API server from KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT, the token, CA and namespace from SA_DIR (KUBE_SA_DIR in a pod).
 * Returns 0, or -1 with EXIT_USAGE and a message naming what is missing.
 */
_must_check_ int kube_config_in_cluster(const char *sa_dir, struct kube_config *c, struct err *e);

/* Whether S is a Kubernetes object name (a DNS subdomain: lower case, digits, '-', '.'). */
bool kube_name_ok(const char *s);

/*
 * Whether the N bytes at S are a DNS subdomain of at most MAX bytes: dot-separated DNS-1123
 * labels, [a-z0-9]([-a-z0-9]*[a-z0-9])? each (apimachinery's
 * pkg/util/validation/validation.go IsDNS1123Subdomain has MAX 253).
 */
bool kube_subdomain_ok(const char *s, size_t n, size_t max);

/*
 * Whether the N bytes at S are a qualified name, as apimachinery's
 * pkg/util/validation/validation.go IsQualifiedName has it: an optional prefix, a DNS-1123
 * subdomain (IsDNS1123Subdomain: at most 253, dot-separated [a-z0-9]([-a-z0-9]*[a-z0-9])?),
 * and '/', then a name of at most 63 of [-A-Za-z0-9_.] that begins and ends alphanumeric:
 * a label's key.
 */
bool kube_qualified_name_ok(const char *s, size_t n);

struct kube;

/* A client for C (copied). Returns NULL with E set (out of memory, libcurl missing). */
struct kube *kube_new(const struct kube_config *c, struct err *e);
void kube_free(struct kube *k);
DEFINE_POINTER_CLEANUP(struct kube, kube_free)

struct kube_reply {
	long status;	   /* the last HTTP status, 0 when none came */
	unsigned attempts; /* requests made */
	json_object *body; /* the answer parsed, or NULL; the caller puts it */
	bool too_large;	   /* the answer was past KUBE_BODY_MAX (the call failed) */
	size_t kept;	   /* with a request's KEEP: the bytes of the answer kept */
};
void kube_reply_done(struct kube_reply *r);

/*
 * What of an answer to keep (a row per key of an object; a table ends with a NULL key): the
 * value whole (KEYS NULL), an object with the keys KEYS names, or (EACH) an array of such
 * objects.
 */
struct kube_keep {
	const char *key;
	const struct kube_keep *keys;
	bool each;
};

struct kube_request {
	const char *method;	  /* "GET", "PATCH", ... */
	const char *path;	  /* "/api/v1/nodes/n1", with its query */
	const char *content_type; /* of BODY, or NULL */
	json_object *body;	  /* sent as JSON, or NULL */
	bool no_retry_429;	  /* an eviction: a 429 is the budget's answer, the caller's */
	/* What of a 2xx answer is parsed (kube_keep_parse), or NULL for all of it. */
	const struct kube_keep *keep;
};

/*
 * Makes request Q, retried as said above. Returns 0 for a 2xx answer, R holding it; else
 * -1 with E naming the call, the status and the API server's message (its Status), and
 * R->status set (0 when no answer came).
 */
_must_check_ int kube_call(struct kube *k, const struct kube_request *q, struct kube_reply *r,
			   struct err *e);

/* ---- the calls the agent makes (kube/api.c) --------------------------------------------- */

/* The Node NAME into *RET (the caller puts it). 0 or -1 (404: R status). */
_must_check_ int kube_node_get(struct kube *k, const char *name, json_object **ret, struct err *e);

/* A JSON merge patch (RFC 7386: null deletes) of Node NAME: labels, annotations, unschedulable. */
_must_check_ int kube_node_patch(struct kube *k, const char *name, json_object *patch,
				 struct err *e);

/*
 * The pods bound to Node NAME (a PodList's items) into *RET (the caller puts it), each with
 * only what the agent reads: metadata's name, namespace, labels, annotations,
 * ownerReferences, deletionTimestamp and uid, its containers' and init containers' name,
 * resources and restartPolicy, its volumes as whether each is an emptyDir, its
 * spec.resourceClaims and status.resourceClaimStatuses (name, resourceClaimName,
 * resourceClaimTemplateName), status.phase, and status.containerStatuses' name and
 * state.running.startedAt. Listed in pages (limit, continue), a page made smaller when it
 * is past KUBE_BODY_MAX. 0, or -1 when a single pod is past it or what is kept of the list
 * is past KUBE_PODS_KEPT_MAX (E names the bound).
 */
_must_check_ int kube_pods_on_node(struct kube *k, const char *node, json_object **ret,
				   struct err *e);

/*
 * The Nodes DaemonSet NS/NAME has a pod on, into *RET (a JSON array, the caller puts it),
 * each with only metadata.name, the annotation ANNOTATION, spec.unschedulable and
 * status.conditions' type and status: what --upgrade-max-unavailable counts. Reads the
 * DaemonSet; lists its pods by its spec.selector (as a labelSelector), those whose
 * controller (ownerReferences) it is kept, each only with its spec.nodeName (bounded by
 * KUBE_PODS_KEPT_MAX: some 20,000 pods); lists the Nodes by its template's nodeSelector,
 * keeping only those its pods are on (bounded by KUBE_DS_NODES_KEPT_MAX). Both read in
 * pages as kube_pods_on_node's. 0; 1 when there is no such DaemonSet; -1; -2 when a bound
 * is passed (E says which, and the fix).
 */
_must_check_ int kube_daemonset_nodes(struct kube *k, const char *ns, const char *name,
				      const char *annotation, json_object **ret, struct err *e);

/* The nodes DaemonSet NS/NAME runs on (status.desiredNumberScheduled) into *RET. 0 or -1. */
_must_check_ int kube_daemonset_desired(struct kube *k, const char *ns, const char *name,
					unsigned *ret, struct err *e);

/*
 * Evicts pod NS/NAME through the Eviction API (policy/v1), so that its disruption budgets
 * hold. Returns 0 when evicted (or already gone), 1 when a budget forbids it now (429: ask
 * again later), -1 otherwise.
 */
_must_check_ int kube_evict(struct kube *k, const char *ns, const char *name, struct err *e);

/*
 * Lease NS/NAME (coordination.k8s.io/v1) into *RET; 1 with *RET NULL when there is none,
 * 0 when found, -1 on error.
 */
_must_check_ int kube_lease_get(struct kube *k, const char *ns, const char *name, json_object **ret,
				struct err *e);

/*
 * Creates LEASE in NS (1 when one of its name exists: 409 AlreadyExists), or replaces it
 * when REPLACE (1 when its metadata.resourceVersion is not the stored one any more: 409
 * Conflict, re-read and decide again). 0 when done, with *RET (may be NULL) the stored
 * object; -1 on error.
 */
_must_check_ int kube_lease_put(struct kube *k, const char *ns, json_object *lease, bool replace,
				json_object **ret, struct err *e);

/*
 * ResourceClaim NS/NAME (resource.k8s.io, the newest version the API server serves: v1,
 * v1beta2, v1beta1) into *RET (the caller puts it), with only its metadata's name,
 * namespace and uid and the status.allocation.devices.results' request, driver, pool and
 * device. The version that answered is remembered in K and asked first the next time; a
 * 404 that says the version is not served (not a Status NotFound of resourceclaims) moves
 * on to the next. 0 when found, 1 when a version answered that there is no such claim, -1
 * on error, and when no version answered so (none of resource.k8s.io is served, or a proxy's
 * 404): only the API server's own NotFound says a claim is gone.
 */
_must_check_ int kube_resourceclaim_get(struct kube *k, const char *ns, const char *name,
					json_object **ret, struct err *e);

struct kube_event {
	const char *node;      /* the Node it is about */
	const char *type;      /* "Normal" or "Warning" */
	const char *reason;    /* "UpgradeCordoned": UpperCamelCase, as the API convention says */
	const char *message;   /* a sentence for people */
	const char *component; /* the source and reporting controller: a qualified name */
	const char *action;    /* what was done ("DriverUpgrade"), at most 128; NULL: REASON */
};

/*
 * Records event V about its node (core/v1 Event, with eventTime and the reporting fields)
 * in NS when kube-apiserver takes a cluster-scoped object's Event there (kube-system,
 * with eventTime), else in "default"; a message past the server's 1024 characters is cut.
 * 0 or -1.
 */
_must_check_ int kube_event(struct kube *k, const char *ns, const struct kube_event *v,
			    struct err *e);

/* ---- Node status and taints (kube/node.c) ----------------------------------------------- */

/* The installer's and the agent's condition on the Node (a domain-prefixed type, as
 * node-readiness-controller's examples name theirs: projectcalico.org/CalicoReady). */
#define KUBE_CONDITION_TYPE "nvidia.com/GPUDriverReady"

struct kube_condition {
	const char *type;    /* KUBE_CONDITION_TYPE */
	const char *status;  /* "True", "False", "Unknown" */
	const char *reason;  /* UpperCamelCase, at most 128 */
	const char *message; /* for people; cut to 1024 */
};

/* What a write found and did. */
struct kube_condition_result {
	bool changed;	   /* status, reason or message differ from what the Node had */
	bool transitioned; /* status differs (lastTransitionTime set now) */
	char old_status[16], old_reason[129];
	unsigned conflicts; /* 409s met and retried */
};

/*
 * Sets condition C on Node NAME through its status subresource (PATCH nodes/NAME/status,
 * application/strategic-merge-patch+json, conditions merged by type): read first, then
 * lastTransitionTime kept unless the status changes, lastHeartbeatTime now; the patch
 * carries metadata.resourceVersion, so a write between read and patch is a 409 Conflict:
 * read again and decide again (at most KUBE_CONFLICT_RETRIES). 0, or -1 with E.
 */
#define KUBE_CONFLICT_RETRIES 5
_must_check_ int kube_node_condition_set(struct kube *k, const char *name,
					 const struct kube_condition *c,
					 struct kube_condition_result *ret, struct err *e);

struct kube_taint {
	const char *key;
	const char *value;  /* NULL: none */
	const char *effect; /* "NoSchedule", "PreferNoSchedule", "NoExecute" */
};

/*
 * Makes Node NAME carry taint T (ADD: exactly one taint of T's key and effect, with T's
 * value) or carry no taint of T's key (!ADD: every effect; T's value and effect unused).
 * Read, the Node's spec.taints changed, written with a JSON merge patch of spec.taints with
 * metadata.resourceVersion (409: read again, at most KUBE_CONFLICT_RETRIES); other taints
 * are kept as they are. *CHANGED: a write was made. 0, or -1 with E.
 */
_must_check_ int kube_node_taint(struct kube *k, const char *name, const struct kube_taint *t,
				 bool add, bool *changed, struct err *e);
