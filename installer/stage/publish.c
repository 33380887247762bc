// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/host.h"
#include "source/source.h"
#include "stage/carry.h"
#include "stage/libexec.h"
#include "stage/locate.h"
#include "stage/pending.h"
#include "stage/publish.h"
#include "stage/wrap.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/jsonfile.h"
#include "util/log.h"

#define VERSIONS ".versions"
#define CURRENT ".current"
#define STAGING_PREFIX ".staging"
/* Where what an earlier install left that is not the driver's is kept. */
#define TAKEN_OVER ".taken-over"

static const char *const subdirs[] = {"bin",	  "lib64", "drivers",
				      "firmware", "share", LOCATE_SUBDIRS};

struct installdir {
	int fd;
};

/* ---- manifest ----------------------------------------------------------- */

#define MANIFEST_STRINGS(X)                                                                        \
	X(driver_version, true)                                                                    \
	X(kernel_release, true)                                                                    \
	X(package_sha256, true)                                                                    \
	X(package_path, false)                                                                     \
	X(repository, false)                                                                       \
	X(requested_version, false)                                                                \
	X(installed_at, true)                                                                      \
	X(os_id, false)                                                                            \
	X(arch, false)                                                                             \
	X(key_fingerprint, false)                                                                  \
	X(module_type, false)                                                                      \
	X(capabilities, false)

void manifest_done(struct manifest *m)
{
#define FREE_FIELD(name, req) free(m->name);
	MANIFEST_STRINGS(FREE_FIELD)
#undef FREE_FIELD
	memset(m, 0, sizeof(*m));
}

static int manifest_string(json_object *o, const char *key, bool required, char **ret,
			   struct err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return required ? err_set(e, EXIT_UNEXPECTED, "manifest: missing \"%s\"", key) : 0;
	if (!(*ret = strdup(json_object_get_string(v))))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "manifest");
	return 0;
}

int manifest_parse(const char *buf, size_t len, struct manifest *m, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	json_object *v;

	(void)len;
	memset(m, 0, sizeof(*m));
	o = json_tokener_parse(buf);
	if (!o || !json_object_is_type(o, json_type_object))
		return err_set(e, EXIT_UNEXPECTED, "manifest: not a JSON object");
#define PARSE_FIELD(name, req)                                                                     \
	if (manifest_string(o, #name, req, &m->name, e) < 0) {                                     \
		manifest_done(m);                                                                  \
		return -1;                                                                         \
	}
	MANIFEST_STRINGS(PARSE_FIELD)
#undef PARSE_FIELD
	if (json_object_object_get_ex(o, "package_size", &v))
		m->package_size = (uint64_t)json_object_get_int64(v);
	return 0;
}

char *manifest_to_json(const struct manifest *m)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "format", json_object_new_int(1));
#define ADD_FIELD(name, req)                                                                       \
	if (m->name)                                                                               \
		json_object_object_add(o, #name, json_object_new_string(m->name));
	MANIFEST_STRINGS(ADD_FIELD)
#undef ADD_FIELD
	json_object_object_add(o, "package_size", json_object_new_int64((int64_t)m->package_size));
	return jsonfile_text(o);
}

struct driver_id manifest_driver(const struct manifest *m)
{
	return (struct driver_id){.version = m->driver_version,
				  .module_type = m->module_type,
				  .kernel = m->kernel_release};
}

/* ---- the directory ------------------------------------------------------- */

int publish_open(int root_fd, const char *install_dir, bool create, struct installdir **ret,
		 struct err *e)
{
	_cleanup_free_ struct installdir *d = calloc(1, sizeof(*d));

	if (!d)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "install dir");
	d->fd = fs_dir_in_root(root_fd, install_dir, create, e);
	if (d->fd < 0) {
		if (!create && err_errnum(e) == ENOENT) {
			err_clear(e);
			return 1;
		}
		return err_wrap(e, "install dir");
	}
	*ret = TAKE_PTR(d);
	return 0;
}

void publish_free(struct installdir *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

int publish_fd(const struct installdir *d)
{
	return d->fd;
}

/* The name under .versions/ that .current points to, or "" when none. */
static void current_target(struct installdir *d, char *buf, size_t size)
{
	char link[PATH_MAX];
	ssize_t n = readlinkat(d->fd, CURRENT, link, sizeof(link) - 1);

	buf[0] = '\0';
	if (n <= 0)
		return;
	link[n] = '\0';
	if (strncmp(link, VERSIONS "/", sizeof(VERSIONS)) == 0 &&
	    !strchr(link + sizeof(VERSIONS), '/') && strlen(link + sizeof(VERSIONS)) < size)
		snprintf(buf, size, "%s", link + sizeof(VERSIONS));
}

static bool is_leftover(const char *name)
{
	return strncmp(name, STAGING_PREFIX "-", sizeof(STAGING_PREFIX)) == 0 ||
	       (name[0] == '.' && strstr(name, ".tmp-"));
}

static int cleanup_dir(int dirfd, bool (*doomed)(const char *, const void *), const void *ud,
		       const char *why, struct err *e)
{
	_cleanup_closedir_ DIR *dir = fs_opendir_at(dirfd, ".", e);
	struct dirent *de;

	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    !doomed(de->d_name, ud))
			continue;
		log_kv(LOG_INFO, "publish", why, "name", de->d_name, LOG_END);
		if (fs_rm_rf_at(dirfd, de->d_name, e) < 0)
			return -1;
	}
	return 0;
}

static bool doomed_leftover(const char *name, const void *ud)
{
	(void)ud;
	return is_leftover(name);
}

/* The versions kept: the current one and the pending one (installer/stage/pending.h). */
struct kept {
	char current[NAME_MAX + 1];
	char pending[NAME_MAX + 1];
};

static bool doomed_not_kept(const char *name, const void *ud)
{
	const struct kept *k = ud;

	return strcmp(name, k->current) != 0 && strcmp(name, k->pending) != 0;
}

int publish_cleanup(struct installdir *d, struct err *e)
{
	_cleanup_close_ int vfd = -1;
	struct kept k = {.pending = ""};
	struct pending p;
	struct err pe;

	if (cleanup_dir(d->fd, doomed_leftover, NULL, "removing what an interrupted run left", e) <
	    0)
		return err_wrap(e, "publish: cleanup");
	vfd = openat(d->fd, VERSIONS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (vfd < 0)
		return 0;
	current_target(d, k.current, sizeof(k.current));
	/* A damaged record protects nothing: the run that reads it next clears it. */
	err_clear(&pe);
	if (pending_read(d->fd, &p, &pe) == 0)
		snprintf(k.pending, sizeof(k.pending), "%s", p.id);
	if (cleanup_dir(vfd, doomed_not_kept, &k,
			"removing a version that is neither current nor pending", e) < 0)
		return err_wrap(e, "publish: cleanup");
	return 0;
}

int publish_current(struct installdir *d, struct manifest *ret, struct err *e)
{
	char cur[NAME_MAX + 1], path[PATH_MAX];
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -1;
	size_t len;

	current_target(d, cur, sizeof(cur));
	if (!cur[0])
		return 1;
	snprintf(path, sizeof(path), VERSIONS "/%s/" MANIFEST_NAME, cur);
	fd = fs_open_regular_in_root(d->fd, path, FS_NOFOLLOW_LAST, e);
	if (fd < 0)
		return err_errnum(e) == ENOENT ? (err_clear(e), 1) : err_wrap(e, "install dir");
	if (fs_read_fd(fd, 1 << 20, &buf, &len, e) < 0 || manifest_parse(buf, len, ret, e) < 0)
		return err_wrap(e, "install dir: '%s'", path);
	return 0;
}

int publish_current_at(int install_fd, struct manifest *ret, struct err *e)
{
	struct installdir d = {.fd = install_fd};

	return publish_current(&d, ret, e);
}

int publish_record_capabilities(struct installdir *d, const char *capabilities, struct err *e)
{
	char cur[NAME_MAX + 1], dir[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;
	struct manifest m;
	int r = publish_current(d, &m, e);

	if (r != 0)
		return r < 0 ? -1 : err_set(e, EXIT_UNEXPECTED, "install dir: no current version");
	free(m.capabilities);
	m.capabilities = strdup(capabilities);
	text = m.capabilities ? manifest_to_json(&m) : NULL;
	manifest_done(&m);
	if (!text)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "manifest");
	current_target(d, cur, sizeof(cur));
	snprintf(dir, sizeof(dir), VERSIONS "/%s", cur);
	dfd = fs_dir_nofollow(d->fd, dir);
	if (dfd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "install dir: open '%s'", dir);
	if (fs_replace_at(dfd, MANIFEST_NAME, text, strlen(text), 0644, e) < 0)
		return err_wrap(e, "install dir: '%s/" MANIFEST_NAME "'", dir);
	return 0;
}

bool publish_links_ok(struct installdir *d)
{
	char target[64];
	struct stat st;

	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		snprintf(target, sizeof(target), CURRENT "/%s", subdirs[i]);
		if (!fs_symlink_is(d->fd, subdirs[i], target))
			return false;
	}
	return fstatat(d->fd, CURRENT "/" MANIFEST_NAME, &st, 0) == 0;
}

int publish_staging(struct installdir *d, char *ret_name, size_t size, struct err *e)
{
	int fd;

	if (fs_mkdtemp_at(d->fd, STAGING_PREFIX, ret_name, size, e) < 0)
		return err_wrap(e, "publish: staging");
	fd = openat(d->fd, ret_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "publish: open '%s'", ret_name);
	return fd;
}

void publish_staging_abort(struct installdir *d, const char *name)
{
	struct err e;

	if (fs_rm_rf_at(d->fd, name, &e) < 0)
		log_msg(LOG_WARN, "publish", "could not remove '%s': %s", name, e.msg);
}

/* ---- taking over an earlier install ------------------------------------- */

/*
 * Removes the driver's files under dirfd, depth first, and the directories left empty.
 * Everything else stays. Returns how many entries stayed, or -1.
 */
static int prune_driver_files(int dirfd, unsigned depth, struct err *e)
{
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;
	int kept = 0;

	if (depth > 16)
		return 1; /* deeper than any driver tree: keep it */
	dir = fs_opendir_at(dirfd, ".", e);
	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "stat '%s'", de->d_name);
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(
				dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int r = sub < 0 ? err_errno(e, EXIT_UNEXPECTED, errno, "open '%s'",
						    de->d_name)
					: prune_driver_files(sub, depth + 1, e);

			if (r < 0)
				return -1;
			if (r > 0 || unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0)
				kept++;
		} else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) &&
			   carry_is_driver_file(de->d_name)) {
			if (unlinkat(dirfd, de->d_name, 0) < 0)
				return err_errno(e, EXIT_UNEXPECTED, errno, "remove '%s'",
						 de->d_name);
		} else {
			kept++;
		}
	}
	return kept;
}

/* Whether NAME under dirfd exists as a regular file or a link (not followed). */
static bool has_entry(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
}

/* Whether dirfd's real subdirectory SUB holds NAME. */
static bool real_dir_has(int dirfd, const char *sub, const char *name)
{
	_cleanup_close_ int fd =
		openat(dirfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd >= 0 && has_entry(fd, name);
}

int publish_check_takeover(struct installdir *d, const char *install_dir, struct err *e)
{
	const char *real = NULL;
	struct stat st;

	/* Our own names are ours only in our shape: a link or a file there is not followed. */
	if (fstatat(d->fd, VERSIONS, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
		if (!S_ISLNK(st.st_mode))
			return err_set(e, EXIT_USAGE,
				       "install dir '%s' holds a '%s' that is not ours",
				       install_dir, VERSIONS);
		if (unlinkat(d->fd, VERSIONS, 0) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "install dir: remove link '%s'",
					 VERSIONS);
		log_kv(LOG_WARN, "publish", "a link planted at our name was removed, not followed",
		       "name", VERSIONS, LOG_END);
	}
	if (fstatat(d->fd, CURRENT, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode))
		return err_set(e, EXIT_USAGE, "install dir '%s' holds a '%s' that is not ours",
			       install_dir, CURRENT);
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		if (fstatat(d->fd, subdirs[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(st.st_mode))
			continue;
		if (!S_ISDIR(st.st_mode))
			return err_set(e, EXIT_USAGE,
				       "install dir '%s' holds a file '%s' that is not ours",
				       install_dir, subdirs[i]);
		real = real ? real : subdirs[i];
	}
	if (!real)
		return 0;
	/* An earlier NVIDIA install (GKE's installer, an older layout) has the driver's own. */
	if (real_dir_has(d->fd, "lib64", "libnvidia-ml.so.1") ||
	    real_dir_has(d->fd, "lib64", "libcuda.so.1") ||
	    real_dir_has(d->fd, "bin", "nvidia-smi"))
		return 0;
	err_set(e, EXIT_USAGE,
		"install dir '%s' holds a directory '%s' that is not an NVIDIA driver install (no lib64/libnvidia-ml.so.1, lib64/libcuda.so.1 or bin/nvidia-smi)",
		install_dir, real);
	err_hint(e, "give an install dir of the installer's own, or move '%s/%s' away", install_dir,
		 real);
	return -1;
}

/*
 * Moves the real directory NAME (an earlier install, proven by publish_check_takeover)
 * to TAKEN_OVER/NAME, puts the link in its place, then removes the driver's files from
 * the moved tree: what is not the driver's stays there, and is named in the log.
 */
static int take_over(struct installdir *d, const char *name, const char *target, struct err *e)
{
	_cleanup_close_ int tfd = -1, old = -1;
	char dst[NAME_MAX + 1];
	int kept;

	if (mkdirat(d->fd, TAKEN_OVER, 0755) < 0 && errno != EEXIST)
		return err_errno(e, EXIT_UNEXPECTED, errno, "create '%s'", TAKEN_OVER);
	tfd = openat(d->fd, TAKEN_OVER, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open '%s'", TAKEN_OVER);
	snprintf(dst, sizeof(dst), "%s", name);
	for (unsigned i = 1; renameat2(d->fd, name, tfd, dst, RENAME_NOREPLACE) < 0; i++) {
		if (errno != EEXIST || i > 99)
			return err_errno(e, EXIT_UNEXPECTED, errno, "move '%s' to '%s'", name,
					 TAKEN_OVER);
		snprintf(dst, sizeof(dst), "%s.%u", name, i);
	}
	if (fs_symlink_replace_at(d->fd, target, name, e) < 0)
		return -1;
	old = openat(tfd, dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	kept = old < 0 ? err_errno(e, EXIT_UNEXPECTED, errno, "open '%s'", dst)
		       : prune_driver_files(old, 0, e);
	if (kept < 0)
		return -1;
	if (kept == 0 && unlinkat(tfd, dst, AT_REMOVEDIR) == 0) {
		log_kv(LOG_INFO, "publish", "earlier install taken over", "name", name, LOG_END);
		unlinkat(d->fd, TAKEN_OVER, AT_REMOVEDIR); /* fails while it holds more */
		return 0;
	}
	log_kv(LOG_WARN, "publish",
	       "earlier install taken over; files that are not the driver's were kept", "name",
	       name, U64("kept", (uint64_t)kept), "moved_to", TAKEN_OVER "/", "entry", dst,
	       LOG_END);
	return 0;
}

/* Replaces NAME (a link, a file, or a real directory of an earlier install) with a link. */
static int link_one(struct installdir *d, const char *name, const char *target, struct err *e)
{
	struct stat st;

	if (fs_symlink_is(d->fd, name, target))
		return 0;
	if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode))
			return take_over(d, name, target, e);
		if (!S_ISLNK(st.st_mode))
			return err_set(e, EXIT_USAGE,
				       "'%s' in the install dir is a file that is not ours", name);
	}
	return fs_symlink_replace_at(d->fd, target, name, e);
}

int publish_links(struct installdir *d, struct err *e)
{
	char target[64];

	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		snprintf(target, sizeof(target), CURRENT "/%s", subdirs[i]);
		if (link_one(d, subdirs[i], target, e) < 0)
			return err_wrap(e, "publish");
	}
	if (fsync(d->fd) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "publish: fsync install dir");
	return 0;
}

/* Shapes the staged tree into the host layout and records the manifest. */
static int staging_finish(int sfd, const struct manifest *m, struct err *e)
{
	_cleanup_free_ char *json = NULL;
	struct stat st;
	int wrapped;

	if (fstatat(sfd, "kernel", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    renameat(sfd, "kernel", sfd, "drivers") < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "move kernel/ to drivers/");
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		if (mkdirat(sfd, subdirs[i], 0755) < 0 && errno != EEXIST)
			return err_errno(e, EXIT_UNEXPECTED, errno, "create '%s'", subdirs[i]);
		if (fstatat(sfd, subdirs[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			return err_set(e, EXIT_VERIFY, "package '%s' is not a directory",
				       subdirs[i]);
	}
	/* NVIDIA's programs find the driver's libraries wherever bin/ is mounted. */
	wrapped = wrap_programs(sfd, e);
	if (wrapped < 0)
		return -1;
	log_kv(LOG_DEBUG, "publish", "programs wrapped in the launcher",
	       U64("count", (uint64_t)wrapped), LOG_END);
	/* Where NVIDIA's tools and GKE's plugin look in a driver root. */
	if (locate_shape(sfd, e) < 0)
		return -1;
	/* What is the package's own in lib64/: the rest is carried to the next version. */
	if (carry_record(sfd, e) < 0)
		return -1;
	/* Staging was private while it filled; the published tree is readable by workloads. */
	if (fchmod(sfd, 0755) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "chmod staging");
	json = manifest_to_json(m);
	if (!json)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "manifest");
	if (fs_write_atomic_at(sfd, MANIFEST_NAME, json, strlen(json), 0644, e) < 0)
		return -1;
	/*
	 * The tree on disk before it can become current. publish_flush_begin has
	 * usually written it already: this pass then only waits for the manifest.
	 */
	return fs_sync_tree(sfd, e);
}

/*
 * Files other installers added to FROM's lib64/ go to TO's (installer/stage/carry.h); both are
 * paths under the install dir. Best effort: a file that cannot be carried is named in a
 * warning.
 */
static void carry_between(struct installdir *d, const char *from, const char *to)
{
	_cleanup_close_ int ffd = fs_dir_nofollow(d->fd, from);
	_cleanup_close_ int tfd = fs_dir_nofollow(d->fd, to);

	if (ffd < 0 || tfd < 0) {
		log_kv(LOG_WARN, "publish",
		       "the versions' directories cannot be opened: files of other installers in lib64/ stay behind",
		       "from", from, "to", to, "reason", strerror(errno), LOG_END);
		return;
	}
	(void)carry_foreign(ffd, tfd);
}

/* Moves the staged tree to .versions/ID, replacing an older copy of the same ID. */
static int staging_install(struct installdir *d, const char *staging, const char *id, struct err *e)
{
	char dst[NAME_MAX + sizeof(VERSIONS) + 2];
	struct stat st;

	if (mkdirat(d->fd, VERSIONS, 0755) < 0 && errno != EEXIST)
		return err_errno(e, EXIT_UNEXPECTED, errno, "create '%s'", VERSIONS);
	snprintf(dst, sizeof(dst), VERSIONS "/%s", id);
	if (fstatat(d->fd, dst, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return renameat(d->fd, staging, d->fd, dst) < 0
			       ? err_errno(e, EXIT_UNEXPECTED, errno, "rename to '%s'", dst)
			       : 0;
	/*
	 * A repair of the same version: swap, so that .current never dangles. What other
	 * installers put in the tree being replaced goes into its replacement first.
	 */
	carry_between(d, dst, staging);
	if (renameat2(d->fd, staging, d->fd, dst, RENAME_EXCHANGE) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "exchange '%s'", dst);
	return fs_rm_rf_at(d->fd, staging, e);
}

static void *flush_main(void *ud)
{
	struct publish_flush *f = ud;
	struct err e;

	/* A head start only: publish_stage syncs the tree again and reports what fails there. */
	if (fs_sync_tree(f->fd, &e) < 0)
		err_clear(&e);
	return NULL;
}

void publish_flush_begin(struct publish_flush *f, int staging_fd)
{
	f->fd = staging_fd;
	f->started = pthread_create(&f->thread, NULL, flush_main, f) == 0;
}

void publish_flush_end(struct publish_flush *f)
{
	if (f->started)
		pthread_join(f->thread, NULL);
	f->started = false;
}

void publish_version_id(const struct driver_id *d, const char *sha256, char *buf, size_t size)
{
	/* The flavour is part of the identity: the same version in the other flavour is another. */
	if (d->module_type)
		snprintf(buf, size, "%s-%s-%.12s", d->version, d->module_type, sha256);
	else
		snprintf(buf, size, "%s-%.12s", d->version, sha256);
}

bool publish_has_version(struct installdir *d, const char *id)
{
	char path[NAME_MAX + sizeof(VERSIONS) + sizeof(MANIFEST_NAME) + 3];
	struct stat st;

	/* The version's own directory, not a link to a tree that is not ours. */
	snprintf(path, sizeof(path), VERSIONS "/%s", id);
	if (fstatat(d->fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return false;
	snprintf(path, sizeof(path), VERSIONS "/%s/" MANIFEST_NAME, id);
	return fstatat(d->fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/*
 * What a labelling pass does with one entry: DIRFD/NAME (NULL: DIRFD itself) gets CONTEXT,
 * with all under it where TREE. Nonzero stops the pass.
 */
typedef int (*label_fn)(int dirfd, const char *name, const char *context, bool tree, void *ud);

/*
 * A version's tree (a staging tree, or .versions/ID): the container label, but for
 * drivers/, which the kernel loads and no container reads: the modules' label.
 */
static int each_in_version(int parent, const char *name, const struct selinux *se, label_fn fn,
			   void *ud)
{
	_cleanup_close_ int vfd = fs_dir_nofollow(parent, name ? name : ".");
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;
	int r = fn(parent, name, se->context, false, ud);

	if (r || vfd < 0 || !(dir = fdopendir(vfd)))
		return r;
	vfd = -1; /* the DIR's now */
	while (!r && (de = readdir(dir))) {
		bool mod = strcmp(de->d_name, "drivers") == 0 && se->modules_context[0];

		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			r = fn(dirfd(dir), de->d_name, mod ? se->modules_context : se->context,
			       true, ud);
	}
	return r;
}

/* The install dir's entries, as publish_label labels them. */
static int each_labelled(struct installdir *d, const struct selinux *se, label_fn fn, void *ud)
{
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;
	struct err e;
	int r = fn(d->fd, NULL, se->context, false, ud);

	if (r || !(dir = fs_opendir_at(d->fd, ".", &e)))
		return r;
	while (!r && (de = readdir(dir))) {
		const char *n = de->d_name;

		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, TAKEN_OVER) == 0 ||
		    is_leftover(n))
			continue;
		if (strcmp(n, VERSIONS) != 0) {
			r = fn(d->fd, n, se->context, true, ud);
			continue;
		}
		_cleanup_closedir_ DIR *vs = fs_opendir_at(d->fd, VERSIONS, &e);
		struct dirent *v;

		r = fn(d->fd, n, se->context, false, ud);
		while (!r && vs && (v = readdir(vs)))
			if (strcmp(v->d_name, ".") != 0 && strcmp(v->d_name, "..") != 0)
				r = each_in_version(dirfd(vs), v->d_name, se, fn, ud);
	}
	return r;
}

/* A labelling pass: the hard links of the tree it labels (host/selinux.h), and its error. */
struct relabel {
	struct selinux_links *links;
	struct err *e;
};

/*
 * A labelling pass's step (UD: its struct relabel). A file system that keeps no labels is
 * said once, and ends the pass without an error.
 */
static int relabel_entry(int dirfd, const char *name, const char *context, bool tree, void *ud)
{
	struct relabel *w = ud;
	struct err *e = w->e;

	if (selinux_label_at(dirfd, name, context, tree, w->links, e) >= 0)
		return 0;
	if (err_errnum(e) != EOPNOTSUPP)
		return -1;
	log_kv(LOG_WARN, "publish",
	       "the install dir's file system keeps no SELinux labels: containers see its mount's context",
	       "label", context, LOG_END);
	err_clear(e);
	return 1;
}

/* Says what a labelling pass left as it was: hard links to files not the installer's. */
static void say_skipped(const struct selinux_links *links)
{
	if (links->skipped)
		log_kv(LOG_WARN, "publish",
		       "a hard link to a file that is not the installer's is left unlabelled (containers must not read it): remove it",
		       "path", links->first_skipped, U64("entries", links->skipped), LOG_END);
}

int publish_label(struct installdir *d, const struct selinux *se, struct err *e)
{
	_cleanup_(selinux_links_freep) struct selinux_links *links = NULL;
	struct relabel w = {.e = e};

	if (!selinux_label(se))
		return 0;
	/* The install dir's names are the installer's: links between its versions are ours. */
	if (selinux_links_new(d->fd, NULL, &links, e) < 0)
		return err_wrap(e, "publish: label");
	w.links = links;
	if (each_labelled(d, se, relabel_entry, &w) < 0)
		return err_wrap(e, "publish: label");
	say_skipped(links);
	return 0;
}

/* A census of the install dir's entries, as publish_label walks them; at most this many. */
#define LABEL_CENSUS_MAX 100000

struct census {
	const struct selinux_links *links;
	struct selinux_mislabel *m;
	int error;
};

static int census_entry(int dirfd, const char *name, const char *context, bool tree, void *ud)
{
	struct census *c = ud;
	struct selinux_mislabel one;
	int r;

	if (c->m->total >= LABEL_CENSUS_MAX)
		return 1;
	r = selinux_find_mislabelled(dirfd, name, context,
				     tree ? LABEL_CENSUS_MAX - c->m->total : 1, c->links, &one);
	if (r < 0) {
		/* The dir's own label decides whether labels can be read at all. */
		c->error = name ? 0 : r;
		return name ? 0 : 1;
	}
	if (one.count && !c->m->count) {
		snprintf(c->m->first, sizeof(c->m->first), "%s", one.first);
		snprintf(c->m->first_label, sizeof(c->m->first_label), "%s", one.first_label);
	}
	if (one.foreign && !c->m->foreign)
		snprintf(c->m->first_foreign, sizeof(c->m->first_foreign), "%s", one.first_foreign);
	c->m->count += one.count;
	c->m->foreign += one.foreign;
	c->m->total += one.total;
	return 0;
}

int publish_find_mislabelled(struct installdir *d, const struct selinux *se,
			     struct selinux_mislabel *ret)
{
	_cleanup_(selinux_links_freep) struct selinux_links *links = NULL;
	struct census c = {.m = ret};
	struct err e;

	*ret = (struct selinux_mislabel){0};
	/* Without it (no memory), each part counts its own links: more are said, none lost. */
	if (selinux_links_new(d->fd, NULL, &links, &e) == 0)
		c.links = links;
	(void)each_labelled(d, se, census_entry, &c);
	return c.error;
}

/* The staging tree, labelled as a version; its hard links are the ones made in it. */
static int label_staging(const struct publish_request *rq, struct err *e)
{
	_cleanup_(selinux_links_freep) struct selinux_links *links = NULL;
	struct relabel w = {.e = e};

	if (selinux_links_new(rq->staging_fd, NULL, &links, e) < 0)
		return -1;
	w.links = links;
	if (each_in_version(rq->staging_fd, NULL, rq->selinux, relabel_entry, &w) < 0)
		return -1;
	say_skipped(links);
	return 0;
}

int publish_stage(struct installdir *d, const struct publish_request *rq, char *ret_id, size_t size,
		  struct err *e)
{
	const struct manifest *m = rq->manifest;
	struct driver_id driver = manifest_driver(m);

	if (!version_is_valid(m->driver_version) || strlen(m->package_sha256) < 12)
		return err_set(e, EXIT_UNEXPECTED, "publish: bad manifest");
	publish_version_id(&driver, m->package_sha256, ret_id, size);
	if (staging_finish(rq->staging_fd, m, e) < 0)
		return err_wrap(e, "publish: staging");
	/* Labelled before it is published, so that no container meets it unlabelled. */
	if (rq->selinux && selinux_label(rq->selinux) && label_staging(rq, e) < 0)
		return err_wrap(e, "publish: staging");
	if (staging_install(d, rq->staging, ret_id, e) < 0)
		return err_wrap(e, "publish");
	return 0;
}

/*
 * Files other installers added to the current version's lib64/ go with the switch
 * (installer/stage/carry.h). Best effort: a file that cannot be carried is named in a warning.
 */
static void carry_to(struct installdir *d, const char *id)
{
	char cur[NAME_MAX + 1], from[PATH_MAX], to[PATH_MAX];

	current_target(d, cur, sizeof(cur));
	if (!cur[0] || strcmp(cur, id) == 0)
		return;
	snprintf(from, sizeof(from), VERSIONS "/%s", cur);
	snprintf(to, sizeof(to), VERSIONS "/%s", id);
	carry_between(d, from, to);
}

int publish_activate(struct installdir *d, const char *id, struct err *e)
{
	char target[NAME_MAX + sizeof(VERSIONS) + 2];

	snprintf(target, sizeof(target), VERSIONS "/%s", id);
	carry_to(d, id);
	/* The switch: one rename(2) of the .current link. */
	if (fs_symlink_replace_at(d->fd, target, CURRENT, e) < 0)
		return err_wrap(e, "publish: switch");
	if (fsync(d->fd) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "publish: fsync install dir");
	return publish_links(d, e);
}

int publish_deactivate(struct installdir *d, struct err *e)
{
	if (unlinkat(d->fd, CURRENT, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "publish: remove '%s'", CURRENT);
	if (fsync(d->fd) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "publish: fsync install dir");
	return 0;
}

void publish_current_id(struct installdir *d, char *buf, size_t size)
{
	current_target(d, buf, size);
}

int publish_version_subdir(struct installdir *d, const char *id, const char *sub, struct err *e)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), VERSIONS "/%s/%s", id, sub);
	fd = fs_dir_in_root(d->fd, path, false, e);
	return fd < 0 ? err_wrap(e, "install dir") : fd;
}

int publish_remove(struct installdir *d, struct err *e)
{
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		struct stat st;

		/* Only our links: a real directory here is not ours to delete. */
		if (fstatat(d->fd, subdirs[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode) && unlinkat(d->fd, subdirs[i], 0) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "uninstall: remove '%s'",
					 subdirs[i]);
	}
	if (unlinkat(d->fd, CURRENT, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "uninstall: remove '%s'", CURRENT);
	if (pending_clear(d->fd, e) < 0 || pending_failure_clear(d->fd, e) < 0)
		return err_wrap(e, "uninstall");
	if (fsync(d->fd) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "uninstall: fsync");
	if (fs_rm_rf_at(d->fd, VERSIONS, e) < 0 || libexec_remove(d->fd, e) < 0 ||
	    cleanup_dir(d->fd, doomed_leftover, NULL, "removing a leftover", e) < 0)
		return err_wrap(e, "uninstall");
	return 0;
}
