/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube/'s internal header: what the files of kube/ share and the unit tests reach, and
 * nothing outside kube/ calls (that is in the face, kube/kube.h).
 */
#pragma once

#include "kube/kube.h"

/* The wait before retry ATTEMPT (1 for the first retry): doubled from the first, capped. */
unsigned kube_backoff_ms(unsigned attempt);

/*
 * A Retry-After header's value as the API server sends it (delta seconds), in
 * milliseconds capped at KUBE_BACKOFF_MAX_MS; 0 for none, an HTTP date or garbage.
 */
unsigned kube_retry_after_ms(const char *value);

/* Whether an answer of STATUS (0: no answer at all) may differ when asked again later. */
bool kube_retryable(long status);

/* Percent-encodes S for a URL query value (RFC 3986 unreserved kept) into BUF. 0 or -1. */
int kube_query_escape(const char *s, char *buf, size_t size);

/*
 * TEXT (LEN bytes, a JSON object) with only what KEYS keeps of it parsed; the rest is
 * stepped over as text, so the memory it takes is that of what is kept. Returns the
 * object (the caller puts it) with *RET_KEPT the bytes kept whole, or NULL when TEXT is not
 * a JSON object where it was read.
 */
json_object *kube_keep_parse(const char *text, size_t len, const struct kube_keep *keys,
			     size_t *ret_kept);

/*
 * Where an agent in namespace NS records its Node's Events: NS when kube-apiserver takes
 * a cluster-scoped object's Event there (kube-system, with eventTime), else "default"
 * (kubernetes pkg/apis/core/validation/events.go, legacyValidateEvent).
 */
const char *kube_event_namespace(const char *ns);

/*
 * The condition C as it goes on a Node whose condition of C's type is OLD (a core/v1
 * NodeCondition, or NULL for none) at NOW (RFC 3339, metav1.Time): lastHeartbeatTime NOW,
 * lastTransitionTime OLD's unless the status changes (or OLD has none), the message cut to
 * 1024 bytes. *RET says what differs from OLD (its conflicts 0). Returns the
 * NodeCondition (the caller puts it), or NULL with E: a status or a reason the API
 * conventions do not take, or out of memory.
 */
json_object *kube_condition_next(json_object *old, const struct kube_condition *c, const char *now,
				 struct kube_condition_result *ret, struct err *e);

/*
 * TAINTS (a Node's spec.taints; NULL for none) made to carry T as kube_node_taint says, at
 * NOW (a NoExecute taint's timeAdded). Returns 1 with *RET the next list (the caller puts
 * it; the other taints are TAINTS' own objects, written as they were read), 0 when TAINTS
 * already is as asked (*RET NULL), -1 when out of memory.
 */
int kube_taints_next(json_object *taints, const struct kube_taint *t, bool add, const char *now,
		     json_object **ret);

/* Where client K remembers the index of resource.k8s.io's version that last answered a
 * kube_resourceclaim_get (0 at first: the newest). */
unsigned *kube_claim_version(struct kube *k);

/*
 * Whether BODY, a 404's answer, is the API server's word that the object asked for is not
 * there (a metav1.Status of reason NotFound naming RESOURCE in details.kind), rather than
 * that the path is not served at all (kube-apiserver's "404 page not found").
 */
bool kube_status_not_found(json_object *body, const char *resource);
