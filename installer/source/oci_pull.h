/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oci:// and oci-layout: mirrors as the source stage asks them (oci_pull.c): the manifest,
 * then the index and its signature as blobs, a package as a blob; the manifest digest
 * kept beside the cached index, so that a warm re-run asks the registry once. Internal to
 * source/ (mirrors.c calls it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "source/fetch.h"
#include "source/source.h"

struct oci_pull;
struct cache;

/* What the source stage hands over. The strings are the caller's. */
struct oci_pull_opts {
	char *const *mirrors; /* every mirror; those that are not OCI are skipped */
	size_t n_mirrors;
	const struct source_registry *registry; /* --registry-* */
	struct cache *cache; /* where the manifest digest is kept beside the index, or NULL */
};

/*
 * Parses the OCI mirrors of O and loads the credentials. Returns 0 and *RET (NULL when
 * no mirror is OCI), or -1: EXIT_USAGE for a bad reference or auth file.
 */
_must_check_ int oci_pull_new(const struct oci_pull_opts *o, struct oci_pull **ret, struct err *e);
void oci_pull_free(struct oci_pull *p);

/*
 * The mirror list the source stage asks, in order: the configured one, each oci:// entry
 * expanded by --registry-hosts into its hosts ("oci://HOST/NAME via https://MIRROR"). Valid
 * while P is.
 */
char *const *oci_pull_mirrors(const struct oci_pull *p, size_t *ret_n);

/* The index and its signature as fetch_mirrors' attempt at OCI mirror BASE reads them. */
struct oci_index_read {
	char *json, *sig; /* malloc'd on FETCH_OK */
	size_t json_len, sig_len;
	bool from_cache; /* the manifest is the cached one's: the index is the cached copy */
};

/*
 * Reads the manifest from BASE (HEAD then GET; the cached index when the HEAD answers
 * the digest it came from), then the index and signature blobs it lists, each checked
 * against its descriptor. Returns a fetch_result.
 */
_must_check_ enum fetch_result oci_pull_index(struct oci_pull *p, struct fetcher *f,
					      const char *base, struct oci_index_read *r,
					      struct err *e);

/*
 * After the index read from BASE was accepted: keeps its manifest (digest and bytes)
 * beside it in CACHE for the next run's HEAD, or, BASE not OCI, removes the record.
 */
_must_check_ int oci_pull_store(struct oci_pull *p, const char *base, struct cache *cache,
				struct err *e);

/*
 * The package PKG from OCI mirror BASE into FF. FETCH_MISSING (a partial mirror) when the
 * manifest does not list it.
 */
_must_check_ enum fetch_result oci_pull_package(struct oci_pull *p, struct fetcher *f,
						const char *base, const struct repo_package *pkg,
						struct fetch_file *ff, struct err *e);

/* Whether OCI mirror BASE carries PKG (fetch_probe's answers). */
_must_check_ enum fetch_result oci_pull_probe(struct oci_pull *p, struct fetcher *f,
					      const char *base, const struct repo_package *pkg,
					      struct err *e);
