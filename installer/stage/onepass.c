// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "stage/publish.h"
#include "stage/unpack.h"
#include "util/log.h"
#include "util/tail.h"

/*
 * The unpacking took from T0 (with the download, when streamed) to now; the unpack stage
 * is the part from T_OWN on (the download's end, when streamed), so that the stages of a
 * run do not overlap (expose/expose.h).
 */
static void log_unpacked(const struct unpack_stats *st, const char *how, uint64_t t0,
			 uint64_t t_own, struct stage_times *t)
{
	uint64_t us = us_since(t0);

	log_kv(LOG_INFO, "unpack", "package unpacked and verified", U64("files", st->files),
	       U64("symlinks", st->symlinks), U64("bytes", st->bytes), "from", how,
	       U64("zstd_frames", st->frames), U64("frames_streamed", st->streamed),
	       U64("workers", st->workers), U64("duration_ms", us / 1000u), LOG_END);
	if (t) {
		t->unpack_us += us_since(t_own);
		t->unpacked = true;
	}
}

static int unpack_failed(const struct stage_request *rq, const char *staging, struct err *e)
{
	publish_staging_abort(rq->dir, staging);
	if (e->code == EXIT_VERIFY)
		err_hint(
			e,
			"rebuild the package to " DOC_DIR
			"/repository-format.md (make-repo pack), add it to the repository again and re-sign the index");
	return err_wrap(e, "unpack: package '%s'", rq->pkg->path);
}

/* Unpacks the whole package in PKG_FD, hashing it; on failure no staging is left. */
static int stage_from_file(const struct stage_request *rq, int pkg_fd, char *staging, size_t size,
			   struct stage_times *t, struct err *e)
{
	const struct repo_package *pkg = rq->pkg;
	struct unpack_limit limit = unpack_limit_for(pkg->size, pkg->unpacked_size);
	_cleanup_close_ int sfd = -1;
	struct unpack_stats st;
	uint64_t t0 = now_ns();

	if (lseek(pkg_fd, 0, SEEK_SET) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "unpack: rewind");
	sfd = publish_staging(rq->dir, staging, size, e);
	if (sfd < 0)
		return -1;
	if (unpack_package(&(struct unpack_request){.pkg_fd = pkg_fd,
						    .size = pkg->size,
						    .sha256 = pkg->sha256,
						    .limit = &limit,
						    .staging_fd = sfd},
			   &st, e) < 0 ||
	    unpack_ima_verdict(rq->root_fd, &st, e) < 0)
		return unpack_failed(rq, staging, e);
	log_unpacked(&st, "file", t0, t0, t);
	return TAKE_FD(sfd);
}

struct follower {
	int pkg_fd, staging_fd;
	struct tail *tail;
	struct unpack_limit limit;
	struct unpack_stats st;
	struct err e;
	int r;
};

static void *follower_main(void *ud)
{
	struct follower *f = ud;

	f->r = unpack_follow(f->pkg_fd, f->tail, &f->limit, f->staging_fd, &f->st, &f->e);
	return NULL;
}

/*
 * Downloads PKG into the cache and unpacks it in the same pass. The unpacker
 * reads bytes the download wrote and hashed; they are the file's bytes as long
 * as the download never cut the file back below them (the tail says when it
 * did), so the download's digest covers what was unpacked.
 */
static int stage_streaming(const struct stage_request *rq, char *staging, size_t size,
			   struct stage_times *t, struct err *e)
{
	const struct repo_package *pkg = rq->pkg;
	_cleanup_close_ int fd = -1, sfd = -1;
	struct follower f = {.r = -1};
	struct tail tail;
	pthread_t thread;
	uint64_t net = 0, t0 = now_ns(), t_download, t_downloaded;
	int r, perr;

	fd = cache_partial_open(rq->cache, pkg->sha256, e);
	if (fd < 0)
		return err_wrap(e, "download");
	sfd = publish_staging(rq->dir, staging, size, e);
	if (sfd < 0)
		return -1;
	tail_init(&tail);
	f.pkg_fd = fd;
	f.staging_fd = sfd;
	f.tail = &tail;
	f.limit = unpack_limit_for(pkg->size, pkg->unpacked_size);
	err_clear(&f.e);
	perr = pthread_create(&thread, NULL, follower_main, &f);
	t_download = now_ns();
	r = source_download(rq->src, pkg, fd, perr == 0 ? &tail : NULL, &net, e);
	t_downloaded = now_ns();
	if (r == 0 && t) {
		t->download_us += (t_downloaded - t_download) / 1000u;
		t->downloaded = true;
	}
	if (r == 0)
		r = cache_commit(rq->cache, pkg->sha256, e);
	if (perr == 0) {
		tail_finish(&tail, r == 0 ? TAIL_COMPLETE : TAIL_FAILED);
		pthread_join(thread, NULL);
	}
	tail_destroy(&tail);
	if (r < 0) {
		publish_staging_abort(rq->dir, staging);
		return -1;
	}
	if (perr == 0 && f.r == 0 && unpack_ima_verdict(rq->root_fd, &f.st, &f.e) < 0)
		f.r = -1;
	if (perr == 0 && f.r == 0) {
		log_unpacked(&f.st, "download", t0, t_downloaded, t);
		return TAKE_FD(sfd);
	}
	if (perr == 0 && f.r < 0) {
		*e = f.e;
		return unpack_failed(rq, staging, e);
	}
	publish_staging_abort(rq->dir, staging);
	/* No thread, or the download started over under the unpacker: unpack the file. */
	log_kv(LOG_INFO, "unpack",
	       perr ? "no unpacker thread; unpacking after the download"
		    : "the download started over under the unpacker; unpacking the file again",
	       "reason", perr ? strerror(perr) : "file cut back", LOG_END);
	return stage_from_file(rq, fd, staging, size, t, e);
}

int stage_package(const struct stage_request *rq, char *staging, size_t size, struct stage_times *t,
		  struct err *e)
{
	const struct repo_package *pkg = rq->pkg;
	_cleanup_close_ int fd = cache_package_open(rq->cache, pkg->sha256);
	int sfd;

	if (fd < 0)
		return stage_streaming(rq, staging, size, t, e);
	log_kv(LOG_INFO, "download", "package found in the node cache", "sha256", pkg->sha256,
	       LOG_END);
	sfd = stage_from_file(rq, fd, staging, size, t, e);
	if (sfd >= 0 || e->code != EXIT_VERIFY)
		return sfd;
	/* A cached copy that fails verification is dropped and downloaded once more. */
	log_kv(LOG_WARN, "unpack", "cached package failed verification; downloading again",
	       "reason", e->msg, LOG_END);
	cache_drop(rq->cache, pkg->sha256);
	err_clear(e);
	return stage_streaming(rq, staging, size, t, e);
}
