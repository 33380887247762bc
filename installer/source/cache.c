// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source/cache.h"
#include "source/repo.h"
#include "util/fs.h"
#include "source/verify.h"

struct cache {
	int fd;	    /* --cache-dir */
	int pkg_fd; /* --cache-dir/packages */
};

int cache_open(int root_fd, const char *dir, bool create, struct cache **ret, struct err *e)
{
	_cleanup_(cache_freep) struct cache *c = calloc(1, sizeof(*c));

	if (!c)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "cache");
	c->fd = c->pkg_fd = -1;
	c->fd = fs_dir_in_root(root_fd, dir, create, e);
	if (c->fd < 0 && !create && err_errnum(e) == ENOENT) {
		err_clear(e);
		return 1;
	}
	if (c->fd < 0)
		return err_wrap(e, "cache");
	c->pkg_fd = fs_dir_in_root(c->fd, "packages", create, e);
	if (c->pkg_fd < 0 && !create && err_errnum(e) == ENOENT) {
		err_clear(e);
		return 1;
	}
	if (c->pkg_fd < 0)
		return err_wrap(e, "cache");
	*ret = TAKE_PTR(c);
	return 0;
}

void cache_free(struct cache *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	if (c->pkg_fd >= 0)
		close(c->pkg_fd);
	free(c);
}

static void entry_name(char *buf, size_t size, const char *sha256, const char *suffix)
{
	snprintf(buf, size, "%s.%s", sha256, suffix);
}

int cache_package_open(struct cache *c, const char *sha256)
{
	char name[80];

	entry_name(name, sizeof(name), sha256, "pkg");
	return openat(c->pkg_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

int cache_partial_open(struct cache *c, const char *sha256, struct err *e)
{
	char name[80];
	int fd;

	entry_name(name, sizeof(name), sha256, "part");
	fd = openat(c->pkg_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cache: open '%s'", name);
	return fd;
}

int cache_commit(struct cache *c, const char *sha256, struct err *e)
{
	char part[80], pkg[80];

	entry_name(part, sizeof(part), sha256, "part");
	entry_name(pkg, sizeof(pkg), sha256, "pkg");
	/*
	 * No fsync: a cached package is hashed again whenever it is used, so a copy a
	 * crash damaged is found and fetched again. The kernel writes it back in its own
	 * time; the install's sync covers only the tree it publishes.
	 */
	if (renameat(c->pkg_fd, part, c->pkg_fd, pkg) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cache: rename '%s'", part);
	(void)fsync(c->pkg_fd);
	return 0;
}

void cache_drop(struct cache *c, const char *sha256)
{
	char name[80];

	entry_name(name, sizeof(name), sha256, "pkg");
	(void)unlinkat(c->pkg_fd, name, 0);
}

int cache_prune(struct cache *c, const char *keep_sha256, struct err *e)
{
	_cleanup_closedir_ DIR *d = fs_opendir_at(c->pkg_fd, ".", e);
	struct dirent *de;

	if (!d)
		return err_wrap(e, "cache: packages");
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strncmp(de->d_name, keep_sha256, 64) == 0)
			continue;
		if (unlinkat(c->pkg_fd, de->d_name, 0) < 0 && errno != ENOENT)
			return err_errno(e, EXIT_UNEXPECTED, errno, "cache: remove '%s'",
					 de->d_name);
	}
	return 0;
}

/* Whether NAME under dirfd holds exactly BUF. */
static bool file_equals(int dirfd, const char *name, const char *buf, size_t len)
{
	_cleanup_free_ char *old = NULL;
	size_t old_len;
	struct err e;

	return fs_read_at(dirfd, name, len, &old, &old_len, &e) == 0 && old_len == len &&
	       memcmp(old, buf, len) == 0;
}

int cache_store_index(struct cache *c, const char *json, size_t len, const char *sig,
		      size_t sig_len, struct err *e)
{
	/* The common re-run: the same index again. Two reads beat two fsyncs. */
	if (file_equals(c->fd, "index.json", json, len) &&
	    file_equals(c->fd, "index.json.sig", sig, sig_len))
		return 0;
	/* The signature goes last: a crash in between leaves a pair that fails verification. */
	if (fs_write_atomic_at(c->fd, "index.json", json, len, 0644, e) < 0 ||
	    fs_write_atomic_at(c->fd, "index.json.sig", sig, sig_len, 0644, e) < 0)
		return err_wrap(e, "cache");
	return 0;
}

int cache_load_index(struct cache *c, char **ret_json, size_t *ret_len, char **ret_sig,
		     size_t *ret_sig_len, struct err *e)
{
	_cleanup_free_ char *json = NULL;

	if (faccessat(c->fd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 1;
	if (fs_read_at(c->fd, "index.json", REPO_INDEX_MAX, &json, ret_len, e) < 0 ||
	    fs_read_at(c->fd, "index.json.sig", VERIFY_SIG_MAX, ret_sig, ret_sig_len, e) < 0)
		return err_wrap(e, "cache");
	*ret_json = TAKE_PTR(json);
	return 0;
}

/* ---- freshness ------------------------------------------------------------------ */

/*
 * "fetched SECONDS\nmax_age SECONDS\nserved N\nmirror URL\n..." (one mirror line per
 * mirror, in order). URLs hold no whitespace (RFC 3986), so a line is a key and a value.
 */
#define INDEX_FETCH "index-fetched"
#define INDEX_FETCH_MAX (1 << 16)

int cache_index_fetch_put(struct cache *c, char *const *mirrors, size_t n,
			  const struct cache_index_fetch *f, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	FILE *m;

	m = open_memstream(&buf, &len);
	if (!m)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cache");
	fprintf(m, "fetched %lld\nmax_age %u\nserved %zu\n", (long long)f->fetched_s, f->max_age_s,
		f->served);
	for (size_t i = 0; i < n; i++)
		fprintf(m, "mirror %s\n", mirrors[i]);
	if (fclose(m) != 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "cache");
	if (fs_replace_at(c->fd, INDEX_FETCH, buf, len, 0644, e) < 0)
		return err_wrap(e, "cache");
	return 0;
}

#define FALLBACK "index-fallback.json"

int cache_fallback_put(struct cache *c, const char *json, struct err *e)
{
	if (!json) {
		if (unlinkat(c->fd, FALLBACK, 0) < 0 && errno != ENOENT)
			return err_errno(e, EXIT_UNEXPECTED, errno, "cache: remove '%s'", FALLBACK);
		return 0;
	}
	if (fs_replace_at(c->fd, FALLBACK, json, strlen(json), 0644, e) < 0)
		return err_wrap(e, "cache");
	return 0;
}

int cache_fallback_get(struct cache *c, char **ret_json, struct err *e)
{
	size_t len;

	if (faccessat(c->fd, FALLBACK, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 1;
	if (fs_read_at(c->fd, FALLBACK, 64 * 1024, ret_json, &len, e) < 0)
		return err_wrap(e, "cache");
	return 0;
}

int cache_index_fetch_drop(struct cache *c, struct err *e)
{
	if (unlinkat(c->fd, INDEX_FETCH, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cache: remove '%s'", INDEX_FETCH);
	return 0;
}

/* "KEY N", N decimal digits only, at most MAX: true and *RET. */
static bool record_number(const char *line, const char *key, uint64_t max, uint64_t *ret)
{
	size_t n = strlen(key);
	unsigned long long v;
	char *end;

	if (strncmp(line, key, n) != 0 || line[n] != ' ' || !isdigit((unsigned char)line[n + 1]))
		return false;
	errno = 0;
	v = strtoull(line + n + 1, &end, 10);
	if (errno != 0 || *end || v > max)
		return false;
	*ret = v;
	return true;
}

int cache_index_fetch_get(struct cache *c, char *const *mirrors, size_t n,
			  struct cache_index_fetch *ret)
{
	_cleanup_free_ char *buf = NULL;
	uint64_t fetched = 0, max_age = 0, served = 0;
	char *line, *save = NULL;
	size_t len, i = 0;
	int fields = 0;
	struct err e;

	if (fs_read_at(c->fd, INDEX_FETCH, INDEX_FETCH_MAX, &buf, &len, &e) < 0 ||
	    strlen(buf) != len)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (record_number(line, "fetched", INT64_MAX, &fetched)) {
			fields |= 1;
		} else if (record_number(line, "max_age", UINT_MAX, &max_age)) {
			fields |= 2;
		} else if (record_number(line, "served", SIZE_MAX, &served)) {
			fields |= 4;
		} else if (strncmp(line, "mirror ", 7) == 0) {
			if (i >= n || strcmp(line + 7, mirrors[i]) != 0)
				return 0;
			i++;
		} else {
			return 0;
		}
	}
	if (fields != 7 || i != n || served >= n)
		return 0;
	ret->fetched_s = (int64_t)fetched;
	ret->max_age_s = (unsigned)max_age;
	ret->served = (size_t)served;
	return 1;
}

/* ---- the OCI manifest of the kept index ------------------------------------------ */

/* "ref REF\ndigest sha256:HEX\nauth AUTH\n", REF as configured: --repo values hold no newline. */
#define MANIFEST_RECORD "oci-manifest"
#define MANIFEST_BYTES "oci-manifest.json"
#define MANIFEST_RECORD_MAX 4096

int cache_manifest_put(struct cache *c, const struct cache_manifest *m, struct err *e)
{
	_cleanup_free_ char *rec = NULL, *old = NULL;
	size_t old_len = 0;
	struct err ie;
	int n;

	if (!m->ref) {
		if (unlinkat(c->fd, MANIFEST_RECORD, 0) < 0 && errno != ENOENT)
			return err_errno(e, EXIT_UNEXPECTED, errno, "cache: remove '%s'",
					 MANIFEST_RECORD);
		return 0;
	}
	if (strpbrk(m->ref, "\n") || strpbrk(m->auth, "\n"))
		return 0; /* not kept: the next run asks */
	if ((n = asprintf(&rec, "ref %s\ndigest %s\nauth %s\n", m->ref, m->digest, m->auth)) < 0) {
		rec = NULL;
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "cache");
	}
	if (n >= MANIFEST_RECORD_MAX)
		return 0;
	/* The warm re-run: the same record again, nothing written. */
	if (fs_read_at(c->fd, MANIFEST_RECORD, MANIFEST_RECORD_MAX, &old, &old_len, &ie) == 0 &&
	    old_len == (size_t)n && memcmp(old, rec, old_len) == 0 &&
	    file_equals(c->fd, MANIFEST_BYTES, m->buf, m->len))
		return 0;
	if (fs_replace_at(c->fd, MANIFEST_BYTES, m->buf, m->len, 0644, e) < 0 ||
	    fs_replace_at(c->fd, MANIFEST_RECORD, rec, (size_t)n, 0644, e) < 0)
		return err_wrap(e, "cache");
	return 0;
}

/* Line KEY of REC ("KEY VALUE\n") into BUF (SIZE bytes): true when there and it fits. */
static bool record_line(const char *rec, const char *key, char *buf, size_t size)
{
	size_t k = strlen(key), n;
	const char *p = rec, *end;

	for (; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, k) != 0 || p[k] != ' ')
			continue;
		end = strchr(p + k + 1, '\n');
		n = end ? (size_t)(end - (p + k + 1)) : 0;
		if (!end || n >= size)
			return false;
		memcpy(buf, p + k + 1, n);
		buf[n] = '\0';
		return true;
	}
	return false;
}

int cache_manifest_get(struct cache *c, const char *ref, struct cache_manifest_kept *ret)
{
	_cleanup_free_ char *rec = NULL, *want = NULL;
	size_t len;
	struct err e;

	if (asprintf(&want, "ref %s\n", ref) < 0) {
		want = NULL;
		return 0;
	}
	if (fs_read_at(c->fd, MANIFEST_RECORD, MANIFEST_RECORD_MAX, &rec, &len, &e) < 0 ||
	    strlen(rec) != len || strncmp(rec, want, strlen(want)) != 0 ||
	    !record_line(rec, "digest", ret->digest, sizeof(ret->digest)) ||
	    !record_line(rec, "auth", ret->auth, sizeof(ret->auth)))
		return 0;
	if (fs_read_at(c->fd, MANIFEST_BYTES, 4u << 20, &ret->buf, &ret->len, &e) < 0)
		return 0;
	return 1;
}

/* ---- anti-rollback -------------------------------------------------------------- */

/* One line per identity (repo_index_identity: a key or a repository): "ID MICROSECONDS TEXT". */
#define INDEX_TIMES "index-times"
#define INDEX_TIMES_MAX (1 << 16)

static int index_times_read(struct cache *c, char **ret, struct err *e)
{
	size_t len;

	*ret = NULL;
	if (faccessat(c->fd, INDEX_TIMES, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 0;
	if (fs_read_at(c->fd, INDEX_TIMES, INDEX_TIMES_MAX, ret, &len, e) < 0)
		return err_wrap(e, "cache");
	return 0;
}

int cache_index_time_get(struct cache *c, const char *fpr, int64_t *ret_us, char *text, size_t size,
			 struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;

	if (index_times_read(c, &buf, e) < 0)
		return -1;
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char f[160], t[40];
		long long us;

		if (sscanf(line, "%159s %lld %39s", f, &us, t) == 3 && strcmp(f, fpr) == 0) {
			*ret_us = us;
			snprintf(text, size, "%s", t);
			return 0;
		}
	}
	return 1;
}

int cache_index_time_put(struct cache *c, const char *fpr, int64_t us, const char *text,
			 struct err *e)
{
	_cleanup_free_ char *buf = NULL, *out = NULL;
	char *line, *save = NULL;
	size_t len = 0, cap;

	if (index_times_read(c, &buf, e) < 0)
		return -1;
	cap = (buf ? strlen(buf) : 0) + 128;
	if (!(out = malloc(cap)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "cache");
	out[0] = '\0';
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, fpr, strlen(fpr)) == 0 && line[strlen(fpr)] == ' ')
			continue;
		len += (size_t)snprintf(out + len, cap - len, "%s\n", line);
	}
	len += (size_t)snprintf(out + len, cap - len, "%s %lld %s\n", fpr, (long long)us, text);
	if (fs_write_atomic_at(c->fd, INDEX_TIMES, out, len, 0644, e) < 0)
		return err_wrap(e, "cache");
	return 0;
}
