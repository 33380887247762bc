/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The repository index (docs/repository-format.md): parsing the signed
 * index.json and choosing the driver and package for a host. The index's data
 * model is source/index.h; its module flavours, source/repo_kmt.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h"
#include "source/index.h"
#include "util/err.h"

/*
 * Parses an RFC 3339 time in UTC, "2026-11-30T04:13:03Z" with optional fractional
 * seconds (up to microseconds kept), into microseconds since the epoch. 0, or -1 when
 * it is not exactly that form or not a real date.
 */
int repo_parse_time(const char *s, int64_t *ret_us);

/*
 * Parses index.json. Every field the format defines is validated; unknown
 * fields are ignored. Returns 0 and a new index in *ret, or -1 with e set
 * (code EXIT_VERIFY: a signed but malformed index is as bad as a forged one).
 */
_must_check_ int repo_index_parse(const char *buf, size_t len, struct repo_index **ret,
				  struct err *e);
void repo_index_free(struct repo_index *idx);
DEFINE_POINTER_CLEANUP(struct repo_index, repo_index_free)

/*
 * The identity anti-rollback keeps its record under (docs/repository-format.md): for an
 * index that names its repository, "repository:ID"; else FPR, the fingerprint of the key
 * that signed it. Writes it to BUF (REPO_IDENTITY_SIZE bytes).
 */
void repo_index_identity(const struct repo_index *idx, const char *fpr, char *buf, size_t size);

/*
 * Anti-rollback: IDX may replace an index of the same identity that was generated SEEN_US
 * (SEEN as it was written) and is held by HOLDER ("this node accepted before", "the
 * mirror holds"). Returns 0 when IDX is not older; -1 with EXIT_VERIFY and the fix when
 * it is older or has no "generated" time. The caller decides about an override.
 */
_must_check_ int repo_check_not_older(const struct repo_index *idx, const char *ident,
				      int64_t seen_us, const char *seen, const char *holder,
				      struct err *e);

/* Whether DRIVER carries TAG. */
bool repo_driver_has_tag(const struct repo_driver *d, const char *tag);

/*
 * Judges DRIVER for HOST under POLICY (--kernel-module-type) and fills *RET. On
 * REPO_OK ret->pkg is the package to install: of the flavour repo_kmt_decide takes
 * when the driver states flavours for the host, the most specific (first listed of
 * equals) of it. Returns ret->verdict.
 */
enum repo_verdict repo_driver_judge(const struct repo_driver *d, const struct host *h,
				    enum repo_kmt_policy policy, struct repo_judgement *ret);

/*
 * Resolves REQUEST ("default", "latest", "550" or "550.90.07") for HOST under
 * POLICY. Returns 0 and fills *ret, or -1 with EXIT_NO_MATCH (or EXIT_USAGE for a
 * malformed request) and a message naming what is missing.
 */
_must_check_ int repo_select(const struct repo_index *idx, const struct host *h,
			     const char *request, enum repo_kmt_policy policy,
			     struct repo_choice *ret, struct err *e);

/* The driver "default" and "latest" resolve to on HOST under POLICY, or NULL. */
const struct repo_driver *repo_resolve_tag(const struct repo_index *idx, const struct host *h,
					   enum repo_kmt_policy policy, const char *request);

/*
 * Whether DRIVER of IDX answers REQUEST: "latest" every driver, "default" the drivers
 * tagged so; a version that IDX lists (numerically equal: "550.90.7" is "550.90.07")
 * means that driver alone; any other version is a prefix ("550", "550.90").
 */
bool repo_driver_wanted(const struct repo_index *idx, const struct repo_driver *d,
			const char *request);

/* Whether REQUEST is a valid --driver-version value. */
bool repo_request_is_valid(const char *request);

/* ---- what the index offers: list-versions, coverage, mirror and the messages ---- */

/* Names borrowed from an index (valid while it is): V[0..N). */
struct repo_names {
	const char **v;
	size_t n;
};
void repo_names_done(struct repo_names *n);

/* How many names a message shows before "and N more". */
#define REPO_NAMES_SHOWN 8

/*
 * Adds to RET the distinct kernels of IDX's packages, in index order: of the drivers
 * REQUEST wants (NULL: all), for HOST's architecture, OS and build whatever its kernel
 * (HOST NULL: every package). Returns 0, or -1 on ENOMEM (RET keeps what was added).
 */
int repo_kernels(const struct repo_index *idx, const struct host *h, const char *request,
		 struct repo_names *ret);

/*
 * Adds to RET the versions, newest first, that have a package fitting HOST (kernel,
 * architecture, OS and build; GPUs are not judged). 0, or -1 on ENOMEM.
 */
int repo_versions_for_host(const struct repo_index *idx, const struct host *h,
			   struct repo_names *ret);

/* Whether any package of IDX is for KERNEL. */
bool repo_has_kernel(const struct repo_index *idx, const char *kernel);

/* "a, b, c and 4 more" (at most REPO_NAMES_SHOWN shown), or "none", into BUF. */
void repo_names_join(const struct repo_names *n, char *buf, size_t size);

/*
 * One clause for a message about a request that matched no driver: "it has versions ...
 * (branches ...; tags ...), of which these have a package for kernel K: ...".
 */
void repo_describe_offer(const struct repo_index *idx, const struct host *h, char *buf,
			 size_t size);
