// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "source/cache.h"
#include "source/fetch.h"
#include "source/oci_names.h"
#include "source/oci_pull.h"
#include "source/repo.h"
#include "source/verify.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/str.h"

/* What one index attempt produced. */
struct index_job {
	const struct keyset *keys;
	struct cache *cache; /* where the anti-rollback record is; NULL: none */
	bool allow_rollback;
	char *json, *sig;
	size_t json_len, sig_len;
	char fpr[17];
	struct repo_index *idx;
	struct oci_pull *oci; /* the oci:// and oci-layout: mirrors, or NULL */
};

static void index_job_clear(struct index_job *j)
{
	free(j->json);
	free(j->sig);
	repo_index_free(j->idx);
	j->json = j->sig = NULL;
	j->idx = NULL;
}

/*
 * The record an index without a repository is judged by: the newest of every trusted key's
 * (each key's record holds what that key signed). The keys this node trusts for its --repo
 * stand for one repository, so while a rotation trusts two, a replayed older index signed
 * by the other one is refused too. Returns 0 with the newest in IDENT, *RET_US and SEEN, 1
 * when no key has a record, or -1.
 */
static int index_newest_of_keys(struct index_job *j, char ident[REPO_IDENTITY_SIZE],
				int64_t *ret_us, char seen[40], struct err *e)
{
	int found = 1;

	for (size_t i = 0; i < verify_keys_count(j->keys); i++) {
		const char *fpr = verify_keys_fingerprint(j->keys, i);
		char text[40];
		int64_t us;
		int r = cache_index_time_get(j->cache, fpr, &us, text, sizeof(text), e);

		if (r < 0)
			return -1;
		if (r == 1 || (found == 0 && us <= *ret_us))
			continue;
		found = 0;
		*ret_us = us;
		snprintf(seen, 40, "%s", text);
		snprintf(ident, REPO_IDENTITY_SIZE, "%s", fpr);
	}
	return found;
}

/*
 * Anti-rollback: an index must not be older than the newest one this node accepted from
 * the same repository (repo_index_identity: the identity signed into the index, else the
 * trusted keys: index_newest_of_keys), or a replay of an old (validly signed) index could
 * downgrade it to a driver with known flaws.
 */
static int index_not_older(struct index_job *j, struct err *e)
{
	const struct repo_index *idx = j->idx;
	char seen[40], ident[REPO_IDENTITY_SIZE];
	int64_t seen_us = 0;
	int r;

	if (!j->cache)
		return 0;
	repo_index_identity(idx, j->fpr, ident, sizeof(ident));
	if (idx->repository)
		r = cache_index_time_get(j->cache, ident, &seen_us, seen, sizeof(seen), e);
	else
		r = index_newest_of_keys(j, ident, &seen_us, seen, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	if (repo_check_not_older(idx, ident, seen_us, seen, "this node accepted before", e) == 0)
		return 0;
	if (!j->allow_rollback)
		return -1;
	log_kv(LOG_WARN, "index", "accepting an index older than one accepted before", "generated",
	       idx->has_generated ? idx->generated : "none", "accepted", seen, "identity", ident,
	       LOG_END);
	err_clear(e);
	return 0;
}

/* Verifies before parsing: no byte of an unsigned index reaches the JSON parser. */
static int index_accept(struct index_job *j, const char *where, struct err *e)
{
	if (verify_index_signature(j->keys,
				   &(struct verify_signed){.data = j->json,
							   .len = j->json_len,
							   .sig = j->sig,
							   .sig_len = j->sig_len},
				   j->fpr, e) < 0 ||
	    repo_index_parse(j->json, j->json_len, &j->idx, e) < 0 || index_not_older(j, e) < 0)
		return err_wrap(e, "%s", where);
	return 0;
}

/* Raises the record of IDENT to the accepted index's time when that is newer. */
static int index_record_one(struct index_job *j, const char *ident, struct err *e)
{
	char seen[40];
	int64_t seen_us;
	int r;

	r = cache_index_time_get(j->cache, ident, &seen_us, seen, sizeof(seen), e);
	if (r < 0 || (r == 0 && seen_us >= j->idx->generated_us))
		return r < 0 ? -1 : 0;
	return cache_index_time_put(j->cache, ident, j->idx->generated_us, j->idx->generated, e);
}

/*
 * Remembers the accepted index's time under its identity and, for an index that names its
 * repository, under its signing key too: the repository's own indexes from before it
 * named itself are judged by that key, and stay refused when older.
 */
static int index_record(struct index_job *j, struct err *e)
{
	char ident[REPO_IDENTITY_SIZE];

	if (!j->idx->has_generated)
		return 0;
	repo_index_identity(j->idx, j->fpr, ident, sizeof(ident));
	if (index_record_one(j, ident, e) < 0)
		return -1;
	return j->idx->repository ? index_record_one(j, j->fpr, e) : 0;
}

/* Whether J's signature verifies J's index with a trusted key (index_accept says why not). */
static bool index_signature_holds(const struct index_job *j)
{
	struct err ignored;
	char fpr[17];

	err_clear(&ignored);
	return verify_index_signature(j->keys,
				      &(struct verify_signed){.data = j->json,
							      .len = j->json_len,
							      .sig = j->sig,
							      .sig_len = j->sig_len},
				      fpr, &ignored) == 0;
}

/*
 * A repository switches index.json and its signature together, by one rename of the link
 * both go through (repository-format.md, "Publishing"), but a reader asks for them one
 * after the other: an index read before a switch and a signature read after it do not
 * match, and the index read again, after the signature, is the one it signs. So where the
 * pair does not verify, the index is asked for once more and, when it changed, takes the
 * place of the first. A failed request leaves J as it was: the first answer is judged.
 */
static void index_read_again(struct fetcher *f, const char *url, struct index_job *j)
{
	_cleanup_free_ char *json = NULL;
	struct err ignored;
	size_t len = 0;

	err_clear(&ignored);
	if (fetch_to_memory(f, url, REPO_INDEX_MAX, &json, &len, &ignored) != FETCH_OK ||
	    (len == j->json_len && memcmp(json, j->json, len) == 0))
		return;
	log_kv(LOG_INFO, "index", "the index changed while it was read; judging the new one", "url",
	       url, LOG_END);
	free(j->json);
	j->json = TAKE_PTR(json);
	j->json_len = len;
}

/* Whether mirror BASE is an OCI registry or layout (oci_pull.c serves it). */
static bool is_oci(const char *base)
{
	return oci_is_registry(base) || oci_is_layout(base);
}

/* index_attempt at an OCI mirror: the manifest, then the blobs it names. */
static enum fetch_result index_attempt_oci(struct fetcher *f, const char *base, struct index_job *j,
					   struct err *e)
{
	struct oci_index_read rd = {0};
	enum fetch_result r = oci_pull_index(j->oci, f, base, &rd, e);

	if (r != FETCH_OK)
		return r;
	j->json = rd.json;
	j->json_len = rd.json_len;
	j->sig = rd.sig;
	j->sig_len = rd.sig_len;
	return index_accept(j, base, e) < 0 ? FETCH_PERMANENT : FETCH_OK;
}

static enum fetch_result index_attempt(struct fetcher *f, const char *base, void *ud, struct err *e)
{
	_cleanup_free_ char *url = fetch_url_join(base, "index.json");
	_cleanup_free_ char *sig_url = fetch_url_join(base, "index.json.sig");
	struct index_job *j = ud;
	enum fetch_result r;

	index_job_clear(j);
	if (is_oci(base))
		return index_attempt_oci(f, base, j, e);
	if (!url || !sig_url) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
		return FETCH_PERMANENT;
	}
	r = fetch_to_memory(f, url, REPO_INDEX_MAX, &j->json, &j->json_len, e);
	if (r != FETCH_OK)
		return r;
	r = fetch_to_memory(f, sig_url, VERIFY_SIG_MAX, &j->sig, &j->sig_len, e);
	/* An index without its signature is a broken mirror, not a wrong URL. */
	if (r != FETCH_OK)
		return r == FETCH_MISSING ? FETCH_PERMANENT : r;
	if (!index_signature_holds(j))
		index_read_again(f, url, j);
	/* A mirror with a bad index is skipped for the run; another may serve a good one. */
	return index_accept(j, url, e) < 0 ? FETCH_PERMANENT : FETCH_OK;
}

const char *source_fallback_name(enum source_fallback f)
{
	switch (f) {
	case SOURCE_FALLBACK_UNREACHABLE:
		return "unreachable";
	case SOURCE_FALLBACK_UNVERIFIED:
		return "unverified";
	case SOURCE_FALLBACK_NOT_FOUND:
		return "not_found";
	default:
		return NULL;
	}
}

/*
 * The cached index, when the mirrors failed with E (FETCHED: fetch_mirrors' result). A
 * mirror must not be worse than no mirror: one that answers with something that does not
 * verify, or is older than what this node accepted, falls back as an unreachable one does.
 * Every mirror answering that it has no index.json is a likely wrong URL: the same, loudly,
 * and without a cache its error says to check the URL. Returns 0 and clears E, or -1.
 */
static int index_from_cache(struct index_job *j, struct cache *cache, struct source *s, int fetched,
			    struct err *e)
{
	enum source_fallback why;
	struct err ce;
	int r;

	if (fetched == FETCH_ALL_MISSING) {
		err_wrap(e, "index");
		snprintf(
			e->hint, sizeof(e->hint),
			"check the URL in --repo (NVIDIA_DRIVER_REPO): every mirror answered that it has no index.json, so the URL is likely mistyped or the repository moved; it must name the directory that holds index.json");
	}
	if (!cache)
		return -1;
	if (fetched == FETCH_ALL_MISSING)
		why = SOURCE_FALLBACK_NOT_FOUND;
	else if (e->code == EXIT_UNREACHABLE)
		why = SOURCE_FALLBACK_UNREACHABLE;
	else if (e->code == EXIT_VERIFY)
		why = SOURCE_FALLBACK_UNVERIFIED;
	else
		return -1;
	err_clear(&ce);
	index_job_clear(j);
	r = cache_load_index(cache, &j->json, &j->json_len, &j->sig, &j->sig_len, &ce);
	if (r != 0 || index_accept(j, "cached index", &ce) < 0) {
		if (r < 0 || err_is_set(&ce))
			log_msg(LOG_WARN, "index", "cached index unusable: %s", ce.msg);
		return -1;
	}
	/* The mirrors' cause and its fix, in the warning: the run itself succeeds. */
	s->fallback_err = *e;
	if (fetched != FETCH_ALL_MISSING) /* that one already says "index" */
		err_wrap(&s->fallback_err, "index");
	str_fmt_cut(s->fallback_reason, sizeof(s->fallback_reason), "%s%s%s", e->msg,
		    e->hint[0] ? "; fix: " : "", e->hint);
	if (why == SOURCE_FALLBACK_NOT_FOUND) {
		char repos[1024];
		size_t len = 0;

		repos[0] = '\0';
		for (size_t i = 0; i < s->n_mirrors && len < sizeof(repos); i++)
			len += (size_t)snprintf(repos + len, sizeof(repos) - len, "%s%s",
						i ? "," : "", s->mirrors[i]);
		/* Loud: this node is served, but every node without a cache fails. */
		log_kv(LOG_WARN, "index",
		       "every mirror answered that it has no index.json: the repository URL is likely wrong; serving this node from its cached index, but a node without one fails (exit 4)",
		       "repo", repos, "reason", s->fallback_reason, LOG_END);
	} else if (why == SOURCE_FALLBACK_UNVERIFIED)
		log_kv(LOG_WARN, "index",
		       "no mirror served an index that verifies and is current; using the cached index, the newest this node accepted",
		       "reason", s->fallback_reason, LOG_END);
	else
		log_kv(LOG_WARN, "index", "no repository answered; using the cached index",
		       "reason", s->fallback_reason, LOG_END);
	s->fallback = why;
	err_clear(e);
	return 0;
}

/* The max_age that applies: --index-max-age when given, else the index's own. */
static unsigned max_age_for(const struct source_opts *o, unsigned index_max_age_s)
{
	return o->index_max_age_s != SOURCE_MAX_AGE_REPO ? o->index_max_age_s : index_max_age_s;
}

/*
 * The cached index, when it is fresh (see SOURCE_REUSE). Returns true with J filled and
 * S's mirror and age set, or false: ask the mirrors. The record gives the age; the index
 * itself is verified before its max_age (or anything else in it) is believed.
 */
static bool index_reuse(const struct source_opts *o, struct cache *cache, struct index_job *j,
			struct source *s)
{
	struct cache_index_fetch f;
	struct timespec now;
	unsigned max_age;
	struct err ce;
	uint64_t age;

	if (o->index_max_age_s == 0 ||
	    cache_index_fetch_get(cache, s->mirrors, s->n_mirrors, &f) != 1 ||
	    clock_gettime(CLOCK_REALTIME, &now) < 0)
		return false;
	/* A clock that went back makes the record's age unknown: not fresh. */
	if (now.tv_sec < f.fetched_s)
		return false;
	age = (uint64_t)now.tv_sec - (uint64_t)f.fetched_s; /* both >= 0: no overflow */
	if (age >= max_age_for(o, f.max_age_s))
		return false;
	err_clear(&ce);
	index_job_clear(j);
	if (cache_load_index(cache, &j->json, &j->json_len, &j->sig, &j->sig_len, &ce) != 0 ||
	    index_accept(j, "cached index", &ce) < 0) {
		if (err_is_set(&ce))
			log_msg(LOG_WARN, "index", "cached index unusable: %s", ce.msg);
		index_job_clear(j);
		return false;
	}
	/* The record's max_age was the index's then; the verified index's is the one now. */
	max_age = max_age_for(o, j->idx->max_age_s);
	if (age >= max_age) {
		index_job_clear(j);
		return false;
	}
	s->mirror = f.served;
	s->age_s = (int64_t)age;
	s->max_age_s = max_age;
	return true;
}

/*
 * Keeps a fetched index, the newest time seen from its key, and when it was fetched. The
 * record holds facts (the time, the index's own max_age); --index-max-age is applied when
 * it is read, so `--index-max-age 0` once does not make the next run ask again. Without
 * any max_age in play there is no record to write.
 */
static int index_store(const struct source_opts *o, struct cache *cache, struct index_job *j,
		       const struct source *s, struct err *e)
{
	struct cache_index_fetch f = {
		.fetched_s = time(NULL), .max_age_s = j->idx->max_age_s, .served = s->mirror};
	bool reusable = f.max_age_s > 0 ||
			(o->index_max_age_s != SOURCE_MAX_AGE_REPO && o->index_max_age_s > 0);

	/* The index first: a record must never describe an index that is not there. */
	if (cache_store_index(cache, j->json, j->json_len, j->sig, j->sig_len, e) < 0 ||
	    index_record(j, e) < 0 || oci_pull_store(s->oci, s->mirrors[s->mirror], cache, e) < 0)
		return -1;
	if (reusable)
		return cache_index_fetch_put(cache, s->mirrors, s->n_mirrors, &f, e);
	return cache_index_fetch_drop(cache, e);
}

/*
 * --ca-file as libcurl will read it, opened the installer's way: libcurl (OpenSSL's
 * file loader) opens it blocking, and a FIFO there would hold the first https transfer
 * past every timeout.
 */
static int ca_file_check(const char *path, struct err *e)
{
	struct err ie;
	int fd = fs_open_regular_at(AT_FDCWD, path, 0, &ie);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (err_errnum(&ie) != EINVAL)
		return err_errno(e, EXIT_USAGE, err_errnum(&ie), "--ca-file '%s'", path);
	err_set(e, EXIT_USAGE,
		"--ca-file '%s' is not a regular file (a FIFO, a device or a directory)", path);
	err_hint(e, "pass the PEM file of the CA certificates itself");
	return -1;
}

/*
 * Keeps (or, after a run that used a mirror's index, removes) the record of why the
 * cached index served, for status and doctor. Only a report: a failure is logged.
 */
static void fallback_record(struct cache *cache, const struct source *s)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	json_object *mirrors;
	char at[STR_UTC_SIZE];
	struct err e;

	err_clear(&e);
	if (!s->from_cache) {
		if (cache_fallback_put(cache, NULL, &e) < 0)
			log_msg(LOG_WARN, "cache", "%s", e.msg);
		return;
	}
	str_utc_now(at);
	o = json_object_new_object();
	mirrors = json_object_new_array();
	for (size_t i = 0; i < s->n_mirrors; i++)
		json_object_array_add(mirrors, json_object_new_string(s->mirrors[i]));
	json_object_object_add(o, "reason",
			       json_object_new_string(source_fallback_name(s->fallback)));
	json_object_object_add(o, "at", json_object_new_string(at));
	json_object_object_add(o, "mirrors", mirrors);
	json_object_object_add(o, "detail", json_object_new_string(s->fallback_reason));
	if (cache_fallback_put(cache,
			       json_object_to_json_string_ext(
				       o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			       &e) < 0)
		log_msg(LOG_WARN, "cache", "%s", e.msg);
}

static int source_fetcher(struct source *s, struct err *e)
{
	return s->fetcher ? 0 : fetcher_new(&s->fetch_opts, &s->fetcher, e);
}

static const char *index_origin(const struct source *s)
{
	if (s->fresh)
		return "cache (fresh)";
	return s->from_cache ? "cache" : s->mirrors[s->mirror];
}

/* The verified index, as a log line; and the warning when its keys share a record. */
static void index_log_verified(const struct source *s, uint64_t t0)
{
	const char *repository;

	/* Anti-rollback's identity: the signed name, else the keys (index_not_older). */
	repository = s->idx->repository ? s->idx->repository : "none (the key)";
	if (source_keys_share_record(s))
		log_kv(LOG_WARN, "index", SOURCE_KEYS_SHARE_RECORD,
		       U64("keys", verify_keys_count(s->keys)), "fix", SOURCE_KEYS_SHARE_FIX,
		       LOG_END);
	if (s->fresh)
		log_kv(LOG_INFO, "index", "index verified", "source", index_origin(s), "mirror",
		       s->mirrors[s->mirror], U64("age_s", (uint64_t)s->age_s),
		       U64("max_age_s", s->max_age_s), "key", s->fingerprint, "repository",
		       repository, U64("drivers", s->idx->n_drivers),
		       U64("duration_ms", ms_since(t0)), LOG_END);
	else
		log_kv(LOG_INFO, "index", "index verified", "source", index_origin(s), "key",
		       s->fingerprint, "repository", repository, U64("drivers", s->idx->n_drivers),
		       U64("duration_ms", ms_since(t0)), LOG_END);
}

int source_open(const struct source_opts *o, struct cache *cache, unsigned flags, struct source *s,
		struct err *e)
{
	struct index_job j = {0};
	uint64_t t0 = now_ns();
	int r;

	memset(s, 0, sizeof(*s));
	s->mirrors = o->mirrors;
	s->n_mirrors = o->n_mirrors;
	s->fetch_opts = o->fetch;
	if (s->n_mirrors == 0) {
		err_set(e, EXIT_USAGE, "no repository configured");
		err_hint(
			e,
			"pass --repo URL (NVIDIA_DRIVER_REPO), e.g. file:///mnt/repo or https://...");
		return -1;
	}
	/* Checked on every run, not when a transfer first needs it (a fresh index needs none). */
	if (o->fetch.ca_file && ca_file_check(o->fetch.ca_file, e) < 0)
		goto fail;
	if (verify_keys_load(o->keys, o->n_keys, VERIFY_KEYS_DIR, &s->keys, e) < 0)
		goto fail;
	if (oci_pull_new(&(struct oci_pull_opts){.mirrors = s->mirrors,
						 .n_mirrors = s->n_mirrors,
						 .registry = &o->registry,
						 .cache = cache},
			 &s->oci, e) < 0)
		goto fail;
	if (s->oci)
		s->mirrors = oci_pull_mirrors(s->oci, &s->n_mirrors);
	j.oci = s->oci;
	j.keys = s->keys;
	j.cache = cache;
	j.allow_rollback = o->allow_rollback;
	if (cache && (flags & SOURCE_REUSE) && index_reuse(o, cache, &j, s)) {
		s->fresh = true;
	} else {
		if (source_fetcher(s, e) < 0)
			goto fail;
		r = fetch_mirrors(s->fetcher,
				  &(struct fetch_request){.bases = s->mirrors,
							  .n_bases = s->n_mirrors,
							  .first = 0,
							  .attempt = index_attempt,
							  .userdata = &j},
				  &s->mirror, e);
		if (r < 0 && index_from_cache(&j, cache, s, r, e) < 0)
			goto fail;
		s->from_cache = r < 0;
		if ((flags & SOURCE_STORE) && !s->from_cache && cache &&
		    index_store(o, cache, &j, s, e) < 0)
			goto fail;
		if ((flags & SOURCE_STORE) && cache)
			fallback_record(cache, s);
	}
	memcpy(s->fingerprint, j.fpr, sizeof(s->fingerprint));
	s->idx = TAKE_PTR(j.idx);
	s->index_json = TAKE_PTR(j.json);
	s->index_sig = TAKE_PTR(j.sig);
	s->index_len = j.json_len;
	s->sig_len = j.sig_len;
	index_job_clear(&j);
	index_log_verified(s, t0);
	return 0;
fail:
	index_job_clear(&j);
	source_done(s);
	return -1;
}

bool source_keys_share_record(const struct source *s)
{
	return s->idx && !s->idx->repository && verify_keys_count(s->keys) > 1;
}

int source_fallback_failed(const struct source *s, struct err *e)
{
	char why[ERR_MSG_MAX];

	if (!s->from_cache)
		return -1;
	snprintf(why, sizeof(why), "%s", e->msg);
	*e = s->fallback_err;
	str_fmt_cut(e->msg, sizeof(e->msg),
		    "%s; the node's cached index, the fallback, cannot serve the request: %s",
		    s->fallback_err.msg, why);
	return -1;
}

void source_done(struct source *s)
{
	free(s->index_json);
	free(s->index_sig);
	repo_index_free(s->idx);
	fetcher_free(s->fetcher);
	verify_keys_free(s->keys);
	oci_pull_free(s->oci);
	memset(s, 0, sizeof(*s));
}

struct package_job {
	const struct repo_package *pkg;
	struct oci_pull *oci;
	struct fetch_file ff; /* the partial file and who wrote its bytes, across attempts */
};

static enum fetch_result package_attempt(struct fetcher *f, const char *base, void *ud,
					 struct err *e)
{
	struct package_job *j = ud;
	_cleanup_free_ char *url = fetch_url_join(base, j->pkg->path);

	enum fetch_result r;

	if (!url) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "download");
		return FETCH_PERMANENT;
	}
	if (is_oci(base))
		return oci_pull_package(j->oci, f, base, j->pkg, &j->ff, e);
	r = fetch_to_file(f, base, url, &j->ff, e);
	/* The index lists it, this mirror has not got it: a partial mirror. The next may. */
	if (r == FETCH_MISSING)
		snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg), "%s",
			 ": this mirror does not carry that package");
	return r;
}

/* The driver whose package PKG is (for naming its version), or NULL. */
static const struct repo_driver *driver_of(const struct repo_index *idx,
					   const struct repo_package *pkg)
{
	for (size_t i = 0; i < idx->n_drivers; i++)
		if (pkg >= idx->drivers[i].pkgs &&
		    pkg < idx->drivers[i].pkgs + idx->drivers[i].n_pkgs)
			return &idx->drivers[i];
	return NULL;
}

int source_probe_package(struct source *s, const struct repo_package *pkg, size_t *ret_mirror,
			 struct err *e)
{
	bool unknown = false;

	if (s->from_cache || s->fresh)
		return err_set(e, EXIT_UNREACHABLE,
			       "not asked: the index came from the node's cache");
	if (source_fetcher(s, e) < 0)
		return -1;
	for (size_t k = 0; k < s->n_mirrors; k++) {
		size_t i = (s->mirror + k) % s->n_mirrors;
		_cleanup_free_ char *url = fetch_url_join(s->mirrors[i], pkg->path);
		enum fetch_result r;
		struct err pe;

		if (!url)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "probe");
		err_clear(&pe);
		if (is_oci(s->mirrors[i]))
			r = oci_pull_probe(s->oci, s->fetcher, s->mirrors[i], pkg, &pe);
		else
			r = fetch_probe(s->fetcher, url, pkg->size, &pe);
		if (r == FETCH_OK) {
			*ret_mirror = i;
			return 1;
		}
		log_kv(LOG_DEBUG, "fetch", pe.msg, "mirror", s->mirrors[i], LOG_END);
		if (r != FETCH_MISSING && !unknown) {
			unknown = true;
			*e = pe;
		}
	}
	return unknown ? -1 : 0;
}

int source_download(struct source *s, const struct repo_package *pkg, int fd, struct tail *tail,
		    uint64_t *ret_net_bytes, struct err *e)
{
	struct package_job j = {
		.pkg = pkg,
		.oci = s->oci,
		.ff = {.fd = fd, .size = pkg->size, .sha256 = pkg->sha256, .tail = tail}};
	uint64_t t0 = now_ns();
	size_t used;
	int r;

	if (source_fetcher(s, e) < 0)
		return err_wrap(e, "download: package '%s'", pkg->path);
	r = fetch_mirrors(s->fetcher,
			  &(struct fetch_request){.bases = s->mirrors,
						  .n_bases = s->n_mirrors,
						  .first = s->mirror,
						  .attempt = package_attempt,
						  .userdata = &j},
			  &used, e);
	*ret_net_bytes = j.ff.net;
	if (r == FETCH_ALL_MISSING) {
		const struct repo_driver *d = s->idx ? driver_of(s->idx, pkg) : NULL;

		err_wrap(e, "download: no mirror carries package '%s'", pkg->path);
		snprintf(
			e->hint, sizeof(e->hint),
			"the mirrors keep the signed index but not this package (a partial mirror): add it with 'nvidia-driver-installer mirror --kernel %s --driver-version %s', or ask for a version they carry ('list-versions' shows which)",
			pkg->kernel, d ? d->version : "V");
		return -1;
	}
	if (r < 0)
		return err_wrap(e, "download: package '%s'", pkg->path);
	log_kv(LOG_INFO, "download", "package downloaded and verified", "mirror", s->mirrors[used],
	       U64("bytes", pkg->size), U64("network_bytes", j.ff.net),
	       U64("duration_ms", ms_since(t0)), LOG_END);
	return 0;
}
