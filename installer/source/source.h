/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the driver comes from: the signed index, fetched from the first
 * mirror that serves one that verifies (or, when none answers, the last
 * verified copy in the node's cache), and the package, downloaded into the
 * cache and checked against the index.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <limits.h>

#include "source/cache.h"
#include "source/fetch.h"
#include "source/repo.h"
#include "util/err.h"

/*
 * The face of source/, the only header of it that other folders include: the index and
 * the transfers above (with the cache, fetch and repo headers), signatures and digests,
 * version numbers, and the fleet list.
 */
#include "source/fleet.h"
#include "source/repo_kmt.h"
#include "source/verify.h"
#include "source/version.h"

struct tail;

/* source_opts.index_max_age_s unset: the index's own "max_age" decides. */
#define SOURCE_MAX_AGE_REPO UINT_MAX

/* What the source stage reads of the configuration. The strings are the caller's. */
struct source_opts {
	char *const *mirrors; /* repository URLs, in the order they are asked */
	size_t n_mirrors;
	char *const *keys; /* public keys the index may be signed with (more in VERIFY_KEYS_DIR) */
	size_t n_keys;
	struct fetch_opts fetch;  /* transfers: timeouts, retries, the speed floor, more CAs */
	bool allow_rollback;	  /* accept an index older than one this node accepted */
	unsigned index_max_age_s; /* reuse a cached index this young; SOURCE_MAX_AGE_REPO */
};

/* Why the index is the node's cached copy although the mirrors were asked. */
enum source_fallback {
	SOURCE_FALLBACK_NONE = 0,
	SOURCE_FALLBACK_UNREACHABLE, /* no mirror answered: an outage */
	/*
	 * Mirrors answered, but none with an index that verifies and is current: a captive
	 * portal, a proxy's error page, a key not pinned yet, a mirror behind this node.
	 */
	SOURCE_FALLBACK_UNVERIFIED,
	/*
	 * Every mirror answered that it has no index.json (HTTP 403/404/410, no such file://
	 * path): a wrong URL, likely a typo in --repo, not an outage.
	 */
	SOURCE_FALLBACK_NOT_FOUND,
};

/*
 * "unreachable", "unverified", "not_found" (the names of status --json and the metric),
 * or NULL.
 */
const char *source_fallback_name(enum source_fallback f);

struct source {
	struct repo_index *idx;
	char *const *mirrors;
	size_t n_mirrors;
	size_t mirror;	 /* the one that served the index */
	bool from_cache; /* the index is the cached copy: no mirror served a usable one */
	enum source_fallback fallback; /* from_cache: why */
	char fallback_reason[ERR_MSG_MAX +
			     ERR_HINT_MAX]; /* from_cache: the mirrors' causes, and the fix */
	struct err
		fallback_err; /* from_cache: the mirrors' error, as it would have ended the run */
	bool fresh;	      /* the index is the cached copy, still fresh: no mirror asked */
	int64_t age_s;	      /* fresh: seconds since it was fetched */
	unsigned max_age_s;   /* fresh: how old it may be */
	char fingerprint[17]; /* the key that signed the index */
	struct fetch_opts fetch_opts;
	struct fetcher *fetcher; /* made on first use: a fresh index needs no network */
	struct keyset *keys;
	char *index_json, *index_sig; /* the verified bytes, as served */
	size_t index_len, sig_len;
};

enum {
	SOURCE_STORE = 1 << 0, /* keep the fetched index in the cache, and its time */
	/*
	 * Use the cached index without asking a mirror while it is fresh: fetched from these
	 * same mirrors less than max_age seconds ago (--index-max-age, else the index's own
	 * "max_age"). It is verified, and checked against rollback, like a fetched one.
	 */
	SOURCE_REUSE = 1 << 1,
};

/*
 * Loads the trusted keys and gets a verified index. CACHE (may be NULL) is the fallback
 * when no mirror answers, and serves SOURCE_REUSE; FLAGS are SOURCE_*. Returns 0, or -1
 * with e set.
 */
_must_check_ int source_open(const struct source_opts *o, struct cache *cache, unsigned flags,
			     struct source *ret, struct err *e);
void source_done(struct source *s);

/*
 * Whether S's index names no repository while several keys are trusted: anti-rollback then
 * judges it by the newest record of all those keys (docs/repository-format.md), which holds
 * only while they all sign this one repository. Logged by source_open, checked by doctor.
 */
bool source_keys_share_record(const struct source *s);
#define SOURCE_KEYS_SHARE_RECORD                                                                   \
	"the index names no repository and several keys are trusted: anti-rollback judges it by the newest index any of them signed, so they must all sign this one repository"
#define SOURCE_KEYS_SHARE_FIX                                                                      \
	"name the repository in its index ('make-repo sign --repository ID'), then each index is judged by its own repository's record"

/*
 * For E, a request that S's index cannot serve (repo_select's no match): when that index is
 * the node's cached copy, the cause is the mirrors' failure, not the older copy's lack. E
 * becomes the mirrors' error (its exit code and fix), saying that the cached index, the
 * fallback, cannot serve the request and why. Returns -1; E is unchanged when the index came
 * from a mirror or is the fresh copy.
 */
int source_fallback_failed(const struct source *s, struct err *e);

/*
 * Downloads PKG into FD (a partial file, resumed), from the mirror that served
 * the index first, checking size and digest. TAIL (may be NULL) follows the
 * file's length for a concurrent reader. Returns 0 and the bytes fetched in
 * *ret_net_bytes, or -1.
 */
_must_check_ int source_download(struct source *s, const struct repo_package *pkg, int fd,
				 struct tail *tail, uint64_t *ret_net_bytes, struct err *e);

/*
 * Whether a mirror carries PKG (a partial mirror keeps the full signed index but not every
 * package): a HEAD request, or a stat for file://, to each mirror in turn from the one
 * that served the index, once, without retries. Returns 1 and the mirror's index in
 * *RET_MIRROR; 0 when every mirror answered that it does not; -1 with e set when it is not
 * known (a mirror did not answer, or the index came from the node's cache).
 */
_must_check_ int source_probe_package(struct source *s, const struct repo_package *pkg,
				      size_t *ret_mirror, struct err *e);
