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
