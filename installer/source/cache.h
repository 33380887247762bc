/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node-local cache under --cache-dir: packages by SHA-256 (complete
 * "<sha>.pkg", in progress "<sha>.part" kept for resume), the last index
 * that verified, so that a node can reinstall while the repository is
 * unreachable, and per repository (or signing key) the newest index
 * "generated" time accepted, so that a replayed older index cannot roll a
 * node back.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/source.h"

/* Keeps a verified index and its signature for offline runs. */
_must_check_ int cache_store_index(struct cache *c, const char *json, size_t len, const char *sig,
				   size_t sig_len, struct err *e);
/*
 * The newest "generated" time accepted from an index of identity FPR (repo_index_identity:
 * a key's 16 hex digits or "repository:ID", at most 159 characters): 0 with *RET_US and
 * its text, 1 when none is recorded, or -1.
 */
_must_check_ int cache_index_time_get(struct cache *c, const char *fpr, int64_t *ret_us, char *text,
				      size_t size, struct err *e);
/* Records US (TEXT as the index wrote it) for identity FPR, replacing what was there. */
_must_check_ int cache_index_time_put(struct cache *c, const char *fpr, int64_t us,
				      const char *text, struct err *e);
/* Loads the kept index; returns 0, 1 when there is none, or -1. */
_must_check_ int cache_load_index(struct cache *c, char **ret_json, size_t *ret_len, char **ret_sig,
				  size_t *ret_sig_len, struct err *e);

/* When and from where the kept index was fetched: what decides whether it is fresh. */
struct cache_index_fetch {
	int64_t fetched_s;  /* CLOCK_REALTIME seconds, >= 0 */
	unsigned max_age_s; /* the index's own "max_age" (not --index-max-age) */
	size_t served;	    /* which of the mirrors served it */
};
/*
 * Records F for the kept index, fetched with the mirror list MIRRORS (in order). The
 * record is written without being synced: one lost in a crash only means the next run
 * asks a mirror.
 */
_must_check_ int cache_index_fetch_put(struct cache *c, char *const *mirrors, size_t n,
				       const struct cache_index_fetch *f, struct err *e);
/* Removes the record (none is no error). */
_must_check_ int cache_index_fetch_drop(struct cache *c, struct err *e);

/*
 * The record of the last run that asked the mirrors and used the cached index instead (a
 * JSON object: why, when, the mirrors and their causes), for status and doctor. Put
 * replaces it (not synced: it is only a report); NULL JSON removes it (none is no error).
 */
_must_check_ int cache_fallback_put(struct cache *c, const char *json, struct err *e);
/*
 * The record, when there is one for exactly MIRRORS: 1 and *RET; 0 when there is none, it
 * names other mirrors, or it cannot be read (a damaged record is a missing one).
 */
int cache_index_fetch_get(struct cache *c, char *const *mirrors, size_t n,
			  struct cache_index_fetch *ret);

/*
 * The OCI manifest the kept index came from (source/oci_pull.c): REF, the mirror as
 * configured, its DIGEST and its BYTES, and AUTH, how the registry asked to be answered
 * (one line, the client's own words), so that a run whose HEAD answers the same digest
 * asks nothing else.
 */
struct cache_manifest {
	const char *ref; /* NULL to cache_manifest_put: remove the record */
	const char *digest;
	const char *auth; /* "" when the registry asked for nothing */
	const char *buf;
	size_t len;
};
/*
 * Keeps M: the bytes first, then the record; nothing is written when it is already there.
 * Not synced: a record lost in a crash only means the next run asks for the manifest.
 */
_must_check_ int cache_manifest_put(struct cache *c, const struct cache_manifest *m, struct err *e);

/* A kept record as read (cache_manifest_get). */
struct cache_manifest_kept {
	char digest[80];
	char auth[1536];
	char *buf; /* malloc'd */
	size_t len;
};
/*
 * The record for REF: 1 and *RET; 0 when there is none for REF or it cannot be read. The
 * caller checks the bytes against the digest.
 */
int cache_manifest_get(struct cache *c, const char *ref, struct cache_manifest_kept *ret);
