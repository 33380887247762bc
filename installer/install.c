// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "host.h"
#include "install.h"
#include "mounts.h"
#include "publish.h"
#include "source.h"
#include "unpack.h"
#include "util/fs.h"
#include "util/log.h"

#define LOCK_PATH "/run/nvidia-driver-installer.lock"

int session_open_root(const struct config *c, struct err *e)
{
	int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		err_errno(e, EXIT_USAGE, errno, "host root '%s'", c->root);
		err_hint(e, "mount the host's / into the container and pass it as --root "
			    "(ROOT_MOUNT_DIR)");
	}
	return fd;
}

int session_lock(int root_fd, struct err *e)
{
	int fd = fs_open_in_root(root_fd, LOCK_PATH, O_RDWR | O_CREAT, 0644, FS_MKDIRS, e);

	if (fd < 0)
		return err_wrap(e, "lock");
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK) {
			close(fd);
			return err_errno(e, EXIT_UNEXPECTED, errno, "lock '%s'", LOCK_PATH);
		}
		log_kv(LOG_INFO, "lock", "another installer is running; waiting for it", "lock",
		       LOCK_PATH, LOG_END);
		while (flock(fd, LOCK_EX) < 0) {
			if (errno != EINTR) {
				close(fd);
				return err_errno(e, EXIT_UNEXPECTED, errno, "lock '%s'", LOCK_PATH);
			}
		}
	}
	return fd;
}

/* ---- install -------------------------------------------------------------- */

struct plan {
	struct host host;
	struct source src;
	struct repo_choice choice;
	struct manifest current; /* valid when has_current */
	bool has_current;
	bool up_to_date; /* the chosen package is the current one */
	bool links_ok;
	bool cached; /* the package is in the node cache */
	bool has_mount;
	struct mount_info mount; /* of the install dir */
};

static void plan_done(struct plan *p)
{
	host_done(&p->host);
	source_done(&p->src);
	manifest_done(&p->current);
}

/* "nvidia 550.90.07, nouveau", "none", or "unknown" without module support. */
static void describe_modules(const struct host *h, char *buf, size_t size)
{
	size_t len = 0;

	snprintf(buf, size, "%s", h->modules_known ? "none" : "unknown (no /proc/modules)");
	for (size_t i = 0; i < h->n_modules && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s%s", i ? ", " : "",
					h->modules[i].name, h->modules[i].version[0] ? " " : "",
					h->modules[i].version);
}

static void log_host(const struct host *h, uint64_t t0)
{
	char mods[512];

	describe_modules(h, mods, sizeof(mods));
	log_kv(LOG_INFO, "host", "host probed", "os", h->os_id, "version",
	       h->os_version_id ? h->os_version_id : "", "build",
	       h->os_build_id ? h->os_build_id : "", "kernel", h->kernel, "arch", h->arch, "gpus",
	       U64(h->n_gpus), "modules", mods, "duration_ms", U64(ms_since(t0)), LOG_END);
	for (size_t i = 0; i < h->n_gpus; i++) {
		char id[16];

		snprintf(id, sizeof(id), "%04x:%04x", h->gpus[i].vendor, h->gpus[i].device);
		log_kv(LOG_INFO, "host", "NVIDIA GPU", "address", h->gpus[i].bdf, "pci_id", id,
		       LOG_END);
	}
}

static int probe_host(const struct config *c, int root_fd, struct host *h, struct err *e)
{
	uint64_t t0 = now_ns();

	if (host_probe(root_fd, c->kernel_release, h, e) < 0)
		return err_wrap(e, "host");
	log_host(h, t0);
	if (c->skip_modules)
		return 0;
	if (h->n_gpus == 0) {
		err_set(e, EXIT_NO_MATCH, "host: no NVIDIA GPU on the PCI bus");
		err_hint(e, "run on a GPU node, or pass --skip-modules to install user space only");
		return -1;
	}
	err_set(e, EXIT_USAGE, "kernel modules: this release installs user space only");
	err_hint(e, "pass --skip-modules (NVIDIA_SKIP_MODULES=1); module loading arrives with the "
		    "kernel stage");
	return -1;
}

static void print_plan(const struct config *c, const struct plan *p)
{
	const struct repo_package *pkg = p->choice.pkg;
	const struct host *h = &p->host;
	char mods[512];

	printf("plan (dry run, nothing changed):\n");
	printf("  host:        %s%s%s, kernel %s (%s), %zu NVIDIA GPU(s)\n",
	       h->os_pretty ? h->os_pretty : h->os_id, h->os_build_id ? " build " : "",
	       h->os_build_id ? h->os_build_id : "", h->kernel, h->arch, h->n_gpus);
	for (size_t i = 0; i < h->n_gpus; i++)
		printf("               GPU %04x:%04x at %s\n", h->gpus[i].vendor, h->gpus[i].device,
		       h->gpus[i].bdf);
	printf("  repository:  %s (index signed by key %s)\n",
	       p->src.from_cache ? "node cache (no mirror answered)"
				 : p->src.mirrors[p->src.mirror],
	       p->src.fingerprint);
	printf("  request:     %s -> driver %s\n", c->driver_version, p->choice.driver->version);
	printf("  package:     %s (%llu bytes, sha256 %s)\n", pkg->path,
	       (unsigned long long)pkg->size, pkg->sha256);
	if (p->has_current)
		printf("  installed:   %s for kernel %s (sha256 %.12s...)\n",
		       p->current.driver_version, p->current.kernel_release,
		       p->current.package_sha256);
	else
		printf("  installed:   nothing\n");
	if (p->up_to_date)
		printf("  action:      %s\n",
		       p->links_ok ? "none, already installed" : "repair the install dir's links");
	else
		printf("  action:      %s, unpack, verify, publish%s\n",
		       p->cached ? "use the cached package" : "download",
		       p->has_current ? " (replacing the installed version)" : "");
	printf("  install dir: %s (host root %s)\n", c->install_dir, c->root);
	if (p->has_mount)
		printf("  mount:       %s (%s, %s)%s\n", p->mount.target, p->mount.fstype,
		       p->mount.options,
		       p->mount.noexec ? ": noexec, its binaries cannot run until remounted exec"
				       : "");
	describe_modules(h, mods, sizeof(mods));
	printf("  loaded:      %s\n", mods);
	printf("  kernel:      %s\n",
	       c->skip_modules ? "untouched (--skip-modules)" : "load modules");
}

/* Unpacks the package into a fresh staging tree and publishes it. */
static int unpack_and_publish(const struct config *c, struct plan *p, struct installdir *dir,
			      int pkg_fd, struct err *e)
{
	const struct repo_package *pkg = p->choice.pkg;
	char staging[NAME_MAX + 1], now[32];
	_cleanup_close_ int sfd = -1;
	struct unpack_stats st;
	struct manifest m = {0};
	uint64_t t0 = now_ns();
	time_t t = time(NULL);
	struct tm tm;

	sfd = publish_staging(dir, staging, sizeof(staging), e);
	if (sfd < 0)
		return -1;
	if (unpack_package(pkg_fd, pkg->size, pkg->sha256, sfd, &st, e) < 0) {
		publish_staging_abort(dir, staging);
		if (e->code == EXIT_VERIFY)
			err_hint(e, "rebuild the package to docs/repository-format.md (make-repo "
				    "pack), "
				    "add it to the repository again and re-sign the index");
		return err_wrap(e, "unpack: package '%s'", pkg->path);
	}
	log_kv(LOG_INFO, "unpack", "package unpacked and verified", "files", U64(st.files),
	       "symlinks", U64(st.symlinks), "bytes", U64(st.bytes), "duration_ms",
	       U64(ms_since(t0)), LOG_END);

	t0 = now_ns();
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	m.driver_version = p->choice.driver->version;
	m.kernel_release = p->host.kernel;
	m.package_sha256 = (char *)pkg->sha256;
	m.package_size = pkg->size;
	m.package_path = pkg->path;
	m.repository = p->src.from_cache ? (char *)"cache" : p->src.mirrors[p->src.mirror];
	m.requested_version = c->driver_version;
	m.installed_at = now;
	m.os_id = p->host.os_id;
	m.arch = p->host.arch;
	m.key_fingerprint = p->src.fingerprint;
	if (publish_commit(dir, staging, sfd, &m, e) < 0) {
		publish_staging_abort(dir, staging);
		return -1;
	}
	log_kv(LOG_INFO, "publish", "driver published", "version", m.driver_version, "install_dir",
	       c->install_dir, "duration_ms", U64(ms_since(t0)), LOG_END);
	return 0;
}

/*
 * Download (or take from the cache), then unpack and publish. A cached copy
 * that fails verification is dropped and downloaded once more.
 */
static int fetch_and_publish(const struct config *c, struct plan *p, struct cache *cache,
			     struct installdir *dir, struct err *e)
{
	const struct repo_package *pkg = p->choice.pkg;

	for (int attempt = 0;; attempt++) {
		_cleanup_close_ int fd = -1;
		uint64_t net;

		fd = source_get_package(&p->src, cache, pkg, &net, e);
		if (fd < 0)
			return -1;
		if (unpack_and_publish(c, p, dir, fd, e) == 0)
			return 0;
		if (e->code != EXIT_VERIFY || net > 0 || attempt > 0)
			return -1;
		log_kv(LOG_WARN, "unpack", "cached package failed verification; downloading again",
		       "reason", e->msg, LOG_END);
		cache_drop(cache, pkg->sha256);
		err_clear(e);
	}
}

static void inspect_mount(struct installdir *dir, struct plan *p)
{
	struct err e;

	err_clear(&e);
	if (mounts_lookup_fd(publish_fd(dir), "/proc/self/mountinfo", &p->mount, &e) < 0) {
		log_msg(LOG_DEBUG, "mounts", "%s", e.msg);
		return;
	}
	p->has_mount = true;
	log_kv(p->mount.noexec ? LOG_WARN : LOG_DEBUG, "mounts",
	       p->mount.noexec ? "the install dir is on a noexec mount: its binaries cannot run "
				 "until it is remounted exec"
			       : "install dir mount",
	       "mount", p->mount.target, "fstype", p->mount.fstype, "options", p->mount.options,
	       LOG_END);
}

/* With the host probed: the index, the choice, and what is installed now. */
static int plan_make(const struct config *c, struct cache *cache, struct installdir *dir,
		     struct plan *p, struct err *e)
{
	uint64_t t0;
	int r;

	if (source_open(c, cache, !c->dry_run, &p->src, e) < 0)
		return -1;
	t0 = now_ns();
	if (repo_select(p->src.idx, &p->host, c->driver_version, &p->choice, e) < 0)
		return err_wrap(e, "select");
	log_kv(LOG_INFO, "select", "driver selected", "request", c->driver_version, "version",
	       p->choice.driver->version, "package", p->choice.pkg->path, "duration_ms",
	       U64(ms_since(t0)), LOG_END);
	if (dir) {
		inspect_mount(dir, p);
		r = publish_current(dir, &p->current, e);
		if (r < 0)
			return -1;
		p->has_current = r == 0;
		p->links_ok = publish_links_ok(dir);
	}
	p->up_to_date = p->has_current &&
			strcmp(p->current.package_sha256, p->choice.pkg->sha256) == 0 &&
			strcmp(p->current.kernel_release, p->host.kernel) == 0;
	if (cache) {
		int fd = cache_package_open(cache, p->choice.pkg->sha256);

		p->cached = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

int install_run(const struct config *c, struct err *e)
{
	_cleanup_close_ int root_fd = -1, lock_fd = -1;
	_cleanup_(cache_freep) struct cache *cache = NULL;
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct plan p = {0};
	uint64_t t0 = now_ns();
	int r = -1;

	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	/* A host we cannot serve is refused before anything is written to it. */
	if (probe_host(c, root_fd, &p.host, e) < 0)
		goto out;
	if (!c->dry_run && (lock_fd = session_lock(root_fd, e)) < 0)
		goto out;
	if (cache_open(root_fd, c->cache_dir, !c->dry_run, &cache, e) < 0 ||
	    publish_open(root_fd, c->install_dir, !c->dry_run, &dir, e) < 0)
		goto out;
	if (dir && !c->dry_run && publish_cleanup(dir, e) < 0)
		goto out;
	if (plan_make(c, cache, dir, &p, e) < 0)
		goto out;
	if (c->dry_run) {
		print_plan(c, &p);
		r = 0;
	} else if (p.up_to_date) {
		r = p.links_ok ? 0 : publish_links(dir, e);
		if (r == 0)
			log_kv(LOG_INFO, "install",
			       p.links_ok ? "already installed" : "links repaired", "version",
			       p.current.driver_version, "duration_ms", U64(ms_since(t0)), LOG_END);
	} else if ((r = fetch_and_publish(c, &p, cache, dir, e)) == 0) {
		if (cache_prune(cache, p.choice.pkg->sha256, e) < 0) {
			/* The driver is in place; a stale cache entry is not worth failing for. */
			log_msg(LOG_WARN, "cache", "%s", e->msg);
			err_clear(e);
		}
		log_kv(LOG_INFO, "install", "driver installed", "version", p.choice.driver->version,
		       "previous", p.has_current ? p.current.driver_version : "none", "duration_ms",
		       U64(ms_since(t0)), LOG_END);
	}
out:
	plan_done(&p);
	return r;
}
