// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mirror.h"
#include "cmd/session.h"
#include "source/source.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/out.h"

/* Whether DRIVER is wanted: no --driver-version given, or one of them matches it. */
static bool driver_wanted(const struct config *c, const struct repo_index *idx,
			  const struct repo_driver *d)
{
	if (c->mirror_versions.n == 0)
		return true;
	for (size_t i = 0; i < c->mirror_versions.n; i++) {
		const char *v = c->mirror_versions.v[i];

		if (strcmp(v, "latest") == 0 && d == &idx->drivers[0])
			return true;
		if (strcmp(v, "default") == 0 && repo_driver_has_tag(d, "default"))
			return true;
		if (strcmp(v, "latest") != 0 && strcmp(v, "default") != 0 &&
		    repo_driver_wanted(idx, d, v))
			return true;
	}
	return false;
}

static bool kernel_wanted(const struct config *c, const char *kernel)
{
	if (c->mirror_kernels.n == 0)
		return true;
	for (size_t i = 0; i < c->mirror_kernels.n; i++) {
		if (strcmp(c->mirror_kernels.v[i], kernel) == 0)
			return true;
	}
	return false;
}

/*
 * A --kernel that no package of the index is for is a typo or a kernel not built yet:
 * refused before anything is copied, naming the kernels the index has.
 */
static int kernels_known(const struct config *c, const struct repo_index *idx, struct err *e)
{
	for (size_t i = 0; i < c->mirror_kernels.n; i++) {
		struct repo_names all = {0};
		char list[1024];

		if (repo_has_kernel(idx, c->mirror_kernels.v[i]))
			continue;
		(void)repo_kernels(idx, NULL, NULL, &all);
		repo_names_join(&all, list, sizeof(list));
		repo_names_done(&all);
		err_set(e, EXIT_NO_MATCH,
			"mirror: the index has no package for kernel '%s'; it has kernels: %s",
			c->mirror_kernels.v[i], list);
		err_hint(
			e,
			"pass one of those to --kernel, or add packages for %s to the repository first",
			c->mirror_kernels.v[i]);
		return -1;
	}
	return 0;
}

/*
 * Whether PKG's flavour is wanted: auto copies both; open or proprietary that flavour,
 * and packages that state none (an index from before flavours: what those nodes take).
 */
static bool module_type_wanted(const struct config *c, const struct repo_package *pkg)
{
	enum repo_kmt_policy policy = session_kmt_policy(c);

	return policy == REPO_KMT_AUTO || pkg->module_type == REPO_MT_UNSTATED ||
	       pkg->module_type == (policy == REPO_KMT_OPEN ? REPO_MT_OPEN : REPO_MT_PROPRIETARY);
}

/* Whether the file at FD has PKG's size and digest. */
static bool is_package(int fd, const struct repo_package *pkg)
{
	_cleanup_(sha256_freep) struct sha256 *sha = sha256_new();
	char buf[1 << 16], got[65];
	struct stat st;
	ssize_t n;

	if (!sha || fstat(fd, &st) < 0 || (uint64_t)st.st_size != pkg->size)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sha256_update(sha, buf, (size_t)n);
	return n == 0 && sha256_final_hex(sha, got) == 0 && strcmp(got, pkg->sha256) == 0;
}

/* Whether DIR/PATH (resolved inside DIR, a regular file) already is PKG. */
static bool have_package(int dir_fd, const struct repo_package *pkg)
{
	struct err e;
	_cleanup_close_ int fd = fs_open_regular_in_root(dir_fd, pkg->path, FS_NOFOLLOW_LAST, &e);

	return fd >= 0 && is_package(fd, pkg);
}

/*
 * The partial file PART in DFD, for this run to write. One an interrupted run left is
 * resumed only when it is a regular file with no other link: the package's bytes go
 * into whatever inode the name holds, so a hard link planted there would have a file
 * outside the mirror receive them. Anything else at that name is removed (the name,
 * never what it links to), and the file made fresh.
 */
static int open_part(int dfd, const char *part, struct err *e)
{
	struct stat st, fst;
	int fd;

	if (fstatat(dfd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_nlink == 1) {
		fd = openat(dfd, part, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		/* The same file as the one judged, and still alone. */
		if (fd >= 0 && fstat(fd, &fst) == 0 && fst.st_ino == st.st_ino &&
		    fst.st_dev == st.st_dev && S_ISREG(fst.st_mode) && fst.st_nlink == 1)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	if (unlinkat(dfd, part, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: remove '%s'", part);
	fd = openat(dfd, part, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: create '%s'", part);
	return fd;
}

static int copy_package(struct source *src, const char *to, int dir_fd,
			const struct repo_package *pkg, uint64_t *net, struct err *e)
{
	char dir[PATH_MAX], part[PATH_MAX];
	const char *slash = strrchr(pkg->path, '/');
	_cleanup_close_ int dfd = -1, fd = -1;
	uint64_t got = 0;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - pkg->path) : 1,
		 slash ? pkg->path : ".");
	dfd = fs_dir_in_root(dir_fd, dir, true, e);
	if (dfd < 0 && err_errnum(e) == ENOTDIR) {
		/*
		 * Something of --to's own is in the way: the fix is there, not in the repository.
		 */
		e->code = EXIT_USAGE;
		err_hint(
			e,
			"remove the file in '%s' that stands where '%s' needs a directory, then run mirror again",
			to, dir);
	}
	if (dfd < 0)
		return err_wrap(e, "mirror");
	snprintf(part, sizeof(part), "%s.part", slash ? slash + 1 : pkg->path);
	fd = open_part(dfd, part, e);
	if (fd < 0)
		return -1;
	if (source_download(src, pkg, fd, NULL, &got, e) < 0)
		return -1;
	*net += got;
	if (fsync(fd) < 0 || renameat(dfd, part, dfd, slash ? slash + 1 : pkg->path) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: publish '%s'", pkg->path);
	return 0;
}

/*
 * The mirror as a node reads it: TO/PATH opened as file:// (or a static HTTP server
 * serving TO) opens it, following every link in it as the file system does. What was
 * written inside TO is not what a node gets when a link planted in TO (packages/, a
 * kernel's directory) leads elsewhere: then the mirror cannot serve, and says so.
 */
static int served_as_written(const struct config *c, const struct repo_package *pkg, struct err *e)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	const char *why = "other bytes than the index's";
	struct err ie;

	if (snprintf(path, sizeof(path), "%s/%s", c->mirror_to, pkg->path) >= (int)sizeof(path))
		return err_set(e, EXIT_USAGE, "mirror: '%s/%s': path too long", c->mirror_to,
			       pkg->path);
	fd = fs_open_regular_at(AT_FDCWD, path, 0, &ie);
	if (fd >= 0 && is_package(fd, pkg))
		return 0;
	if (fd < 0)
		why = err_errnum(&ie) ? strerror(err_errnum(&ie)) : ie.msg;
	err_set(e, EXIT_USAGE,
		"mirror: '%s' does not read back as the package copied there (%s): a node would not get it from this mirror",
		path, why);
	err_hint(
		e,
		"remove the link planted in '%s' (a package's directory there leads outside it), then run mirror again",
		c->mirror_to);
	return -1;
}

/*
 * Anti-rollback for the mirror's own index: the one in DIR, when it verifies with the
 * trusted keys, is replaced only by one that is not older under the same identity
 * (repo_index_identity), or under the key that signed it when it names its repository
 * and the new one does not: what a node that accepted it holds a record of.
 */
static int mirror_not_older(const struct config *c, int dir_fd, const struct source *src,
			    struct err *e)
{
	_cleanup_free_ char *json = NULL, *sig = NULL;
	_cleanup_(repo_index_freep) struct repo_index *held = NULL;
	char fpr[17], ident[REPO_IDENTITY_SIZE], held_ident[REPO_IDENTITY_SIZE];
	size_t len = 0, sig_len = 0;
	struct err ie;

	err_clear(&ie);
	if (faccessat(dir_fd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 0;
	if (fs_read_at(dir_fd, "index.json", REPO_INDEX_MAX, &json, &len, &ie) < 0 ||
	    fs_read_at(dir_fd, "index.json.sig", VERIFY_SIG_MAX, &sig, &sig_len, &ie) < 0 ||
	    verify_index_signature(
		    src->keys,
		    &(struct verify_signed){
			    .data = json, .len = len, .sig = sig, .sig_len = sig_len},
		    fpr, &ie) < 0 ||
	    repo_index_parse(json, len, &held, &ie) < 0) {
		log_kv(LOG_WARN, "mirror", "replacing an index that does not verify", "to",
		       c->mirror_to, "reason", ie.msg, LOG_END);
		return 0;
	}
	if (!held->has_generated)
		return 0;
	repo_index_identity(src->idx, src->fingerprint, ident, sizeof(ident));
	repo_index_identity(held, fpr, held_ident, sizeof(held_ident));
	if (strcmp(ident, held_ident) != 0 &&
	    !(held->repository && !src->idx->repository && strcmp(fpr, src->fingerprint) == 0))
		return 0;
	if (repo_check_not_older(src->idx, ident, held->generated_us, held->generated,
				 "the mirror holds", e) == 0)
		return 0;
	if (!c->allow_index_rollback)
		return err_wrap(e, "mirror: '%s'", c->mirror_to);
	log_kv(LOG_WARN, "mirror", "replacing the mirror's index with an older one", "generated",
	       src->idx->has_generated ? src->idx->generated : "none", "held", held->generated,
	       "identity", ident, LOG_END);
	err_clear(e);
	return 0;
}

static json_object *package_json(const struct repo_driver *d, const struct repo_package *pkg,
				 bool copied)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(pkg->path));
	json_object_object_add(o, "driver_version", json_object_new_string(d->version));
	json_object_object_add(o, "kernel", json_object_new_string(pkg->kernel));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)pkg->size));
	json_object_object_add(o, "sha256", json_object_new_string(pkg->sha256));
	json_object_object_add(
		o, "module_type",
		repo_module_type_name(pkg->module_type)
			? json_object_new_string(repo_module_type_name(pkg->module_type))
			: NULL);
	json_object_object_add(o, "action", json_object_new_string(copied ? "copied" : "kept"));
	return o;
}

static int by_path(const void *a, const void *b)
{
	json_object *x, *y;

	json_object_object_get_ex(*(json_object *const *)a, "path", &x);
	json_object_object_get_ex(*(json_object *const *)b, "path", &y);
	return strcmp(json_object_get_string(x), json_object_get_string(y));
}

/* What a mirror run came to: the packages the mirror holds, and how many it copied. */
struct mirror_tally {
	json_object *pkgs; /* each package wanted, copied or kept (package_json) */
	unsigned copied, kept;
	uint64_t net; /* bytes downloaded */
};

/* What the mirror holds now: docs/json.md, "mirror --json". */
static void print_json(const struct config *c, const struct source *src,
		       const struct mirror_tally *t)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();

	json_object_array_sort(t->pkgs, by_path);
	json_object_object_add(o, "to", json_object_new_string(c->mirror_to));
	json_object_object_add(o, "index_generated",
			       src->idx->has_generated ? json_object_new_string(src->idx->generated)
						       : NULL);
	json_object_object_add(o, "copied", json_object_new_int64(t->copied));
	json_object_object_add(o, "kept", json_object_new_int64(t->kept));
	json_object_object_add(o, "network_bytes", json_object_new_int64((int64_t)t->net));
	json_object_object_add(o, "packages", json_object_get(t->pkgs));
	session_print_json(o);
}

static bool package_wanted(const struct config *c, const struct repo_index *idx,
			   const struct repo_driver *d, const struct repo_package *pkg)
{
	return driver_wanted(c, idx, d) && kernel_wanted(c, pkg->kernel) &&
	       module_type_wanted(c, pkg);
}

/* Copies what is wanted and not there yet; counts both into T. */
static int copy_wanted(const struct config *c, struct source *src, int dir_fd,
		       struct mirror_tally *t, struct err *e)
{
	for (size_t i = 0; i < src->idx->n_drivers; i++) {
		const struct repo_driver *d = &src->idx->drivers[i];

		for (size_t p = 0; p < d->n_pkgs; p++) {
			const struct repo_package *pkg = &d->pkgs[p];
			bool have;

			if (!package_wanted(c, src->idx, d, pkg))
				continue;
			have = have_package(dir_fd, pkg);
			if (!have && copy_package(src, c->mirror_to, dir_fd, pkg, &t->net, e) < 0)
				return -1;
			(*(have ? &t->kept : &t->copied))++;
			json_object_array_add(t->pkgs, package_json(d, pkg, !have));
		}
	}
	if (t->copied + t->kept == 0)
		return err_set(
			e, EXIT_NO_MATCH,
			"mirror: no package matches the --kernel, --driver-version and --kernel-module-type given");
	return 0;
}

/* Every package copied or kept, read back as a node would, before the index says it is there. */
static int mirror_serves(const struct config *c, const struct repo_index *idx, struct err *e)
{
	for (size_t i = 0; i < idx->n_drivers; i++) {
		for (size_t p = 0; p < idx->drivers[i].n_pkgs; p++) {
			const struct repo_package *pkg = &idx->drivers[i].pkgs[p];

			if (package_wanted(c, idx, &idx->drivers[i], pkg) &&
			    served_as_written(c, pkg, e) < 0)
				return -1;
		}
	}
	return 0;
}

/* --to, a path of this process's (not of the host root), made when missing. */
static int open_to(const struct config *c, struct err *e)
{
	_cleanup_close_ int base =
		open(c->mirror_to[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd;

	if (base < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror");
	fd = fs_dir_in_root(base, c->mirror_to, true, e);
	return fd < 0 ? err_wrap(e, "mirror: --to") : fd;
}

int mirror_run(const struct config *c, struct err *e)
{
	_cleanup_(json_object_putp) json_object *pkgs = json_object_new_array();
	_cleanup_close_ int dir_fd = -1;
	struct source_opts so = session_source_opts(c);
	struct source src;
	struct mirror_tally t = {.pkgs = pkgs};
	uint64_t t0 = now_ns();
	int r = -1;

	if (!c->mirror_to)
		return err_set(e, EXIT_USAGE, "mirror: --to DIR is required");
	dir_fd = open_to(c, e);
	if (dir_fd < 0)
		return -1;
	if (source_open(&so, NULL, 0, &src, e) < 0)
		return -1;
	if (kernels_known(c, src.idx, e) < 0 || mirror_not_older(c, dir_fd, &src, e) < 0 ||
	    copy_wanted(c, &src, dir_fd, &t, e) < 0 || mirror_serves(c, src.idx, e) < 0)
		goto out;
	/* The index last, byte for byte: its signature is the original's. */
	if (fs_write_atomic_at(dir_fd, "index.json", src.index_json, src.index_len, 0644, e) < 0 ||
	    fs_write_atomic_at(dir_fd, "index.json.sig", src.index_sig, src.sig_len, 0644, e) < 0) {
		err_wrap(e, "mirror");
		goto out;
	}
	log_kv(LOG_INFO, "mirror", "mirror complete", "to", c->mirror_to, U64("copied", t.copied),
	       U64("kept", t.kept), U64("network_bytes", t.net), U64("duration_ms", ms_since(t0)),
	       LOG_END);
	if (c->json)
		print_json(c, &src, &t);
	else
		out_line(stdout, "mirrored %u package(s), %u already present, to %s", t.copied,
			 t.kept, c->mirror_to);
	r = 0;
out:
	source_done(&src);
	return r;
}
