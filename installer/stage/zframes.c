// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage/zframes.h"
#include "util/dlib.h"

#define STREAM_BLOCK (1u << 20) /* what a streamed frame yields at a time */
#define SKIPPABLE_MAGIC 0x184D2A50u
#define SKIPPABLE_MASK 0xFFFFFFF0u

enum job_state { JOB_FREE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* A frame in flight; the slot of sequence number S is jobs[S % n_jobs]. */
struct job {
	enum job_state state;
	/* Both kept from frame to frame (no page is faulted in twice): grown, never shrunk. */
	char *in; /* the whole frame (queued) */
	size_t in_len, in_cap;
	char *out;
	size_t out_len, out_cap;
	int err;
	char msg[128];
};

/* Makes *BUF hold at least N bytes. */
static int reserve(char **buf, size_t *cap, size_t n)
{
	char *b;

	if (n <= *cap)
		return 0;
	if (!(b = realloc(*buf, n)))
		return -1;
	*buf = b;
	*cap = n;
	return 0;
}

struct zframes {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *jobs;
	size_t n_jobs;
	uint64_t next_seq; /* the reader's next frame */
	uint64_t take_seq; /* the frame the consumer waits for */
	bool held;	   /* the consumer holds take_seq's buffer */
	bool reader_done;  /* no frame after next_seq - 1 */
	bool cancelled;	   /* the consumer stopped */
	int err;	   /* the reader's error, seen after frame next_seq - 1 */
	char msg[256];

	/* the reader's own */
	zframes_read_fn read;
	void *ud;
	char *buf; /* the frame being gathered */
	size_t len, cap;
	uint64_t limit, out; /* bytes declared or streamed so far */
	uint64_t frames, streamed;
	char *scratch; /* what a streamed frame yields once the consumer has stopped */
	bool over_limit;
	ZSTD_DCtx *stream;

	pthread_t reader;
	pthread_t workers[ZFRAMES_WORKERS_MAX];
	unsigned n_workers;
};

static uint32_t le32(const void *p)
{
	const unsigned char *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

bool zframes_is_zstd(const void *buf, size_t len)
{
	return len >= 4 &&
	       (le32(buf) == 0xFD2FB528u || (le32(buf) & SKIPPABLE_MASK) == SKIPPABLE_MAGIC);
}

unsigned zframes_workers(void)
{
	cpu_set_t set;
	int n = 1;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (n < 1)
		n = 1;
	return (unsigned)n > ZFRAMES_WORKERS_MAX ? ZFRAMES_WORKERS_MAX : (unsigned)n;
}

/* ---- the reader ------------------------------------------------------------ */

/* The reader stops with ERR (the consumer sees it after the last frame before). */
_printf_(3, 4) static void reader_fail(struct zframes *z, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&z->lock);
	if (!z->err) {
		z->err = err;
		va_start(ap, fmt);
		vsnprintf(z->msg, sizeof(z->msg), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&z->lock);
}

/* A free slot for frame next_seq, or NULL once the consumer has stopped. */
static struct job *slot_take(struct zframes *z)
{
	struct job *j = NULL;

	pthread_mutex_lock(&z->lock);
	while (!z->cancelled && z->jobs[z->next_seq % z->n_jobs].state != JOB_FREE)
		pthread_cond_wait(&z->cond, &z->lock);
	if (!z->cancelled)
		j = &z->jobs[z->next_seq % z->n_jobs];
	pthread_mutex_unlock(&z->lock);
	return j;
}

static void slot_put(struct zframes *z, struct job *j, enum job_state state)
{
	pthread_mutex_lock(&z->lock);
	j->state = state;
	z->next_seq++;
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
}

/* Whether N more bytes may come out; past the limit, false and over_limit. */
static bool within_limit(struct zframes *z, uint64_t n)
{
	if (n > z->limit - z->out) {
		z->over_limit = true;
		reader_fail(z, EFBIG, "beyond the unpack limit");
		return false;
	}
	return true;
}

/* Counts N more bytes out; false (and over_limit) past the limit. */
static bool count_out(struct zframes *z, uint64_t n)
{
	if (!within_limit(z, n))
		return false;
	z->out += n;
	return true;
}

/* Appends the source's next bytes to buf: >0, 0 at its end, -1 (failed, said). */
static ssize_t gather(struct zframes *z)
{
	const void *p;
	ssize_t n = z->read(z->ud, &p);

	if (n < 0) {
		reader_fail(z, errno ? errno : EIO, "reading package");
		return -1;
	}
	if (n == 0)
		return 0;
	if (z->len + (size_t)n > z->cap) {
		size_t cap = z->cap ? z->cap : (size_t)n;
		char *b;

		while (cap < z->len + (size_t)n)
			cap *= 2;
		if (!(b = realloc(z->buf, cap))) {
			reader_fail(z, ENOMEM, "out of memory");
			return -1;
		}
		z->buf = b;
		z->cap = cap;
	}
	memcpy(z->buf + z->len, p, (size_t)n);
	z->len += (size_t)n;
	return n;
}

/*
 * Decompresses the frame at the start of buf here, as a stream, reading on until it
 * ends; its bytes go to the consumer in blocks, each a frame slot of its own, written
 * into the slot's buffer. What follows the frame stays in buf. 0, or -1 (failed, said).
 */
static int stream_frame(struct zframes *z)
{
	ZSTD_inBuffer in = {z->buf, z->len, 0};
	struct job *j = NULL;
	char *block = NULL;
	size_t used = 0, r = 1;

	z->frames++;
	z->streamed++;
	if (!z->stream && !(z->stream = sym_ZSTD_createDCtx())) {
		reader_fail(z, ENOMEM, "out of memory");
		return -1;
	}
	sym_ZSTD_DCtx_reset(z->stream, ZSTD_reset_session_only);
	for (;;) {
		ZSTD_outBuffer out;

		if (!block) {
			/* The next slot's buffer; once the consumer stopped, scratch (counted). */
			if ((j = slot_take(z))) {
				if (reserve(&j->out, &j->out_cap, STREAM_BLOCK) < 0) {
					reader_fail(z, ENOMEM, "out of memory");
					return -1;
				}
				block = j->out;
			} else {
				if (!z->scratch && !(z->scratch = malloc(STREAM_BLOCK))) {
					reader_fail(z, ENOMEM, "out of memory");
					return -1;
				}
				block = z->scratch;
			}
		}
		out = (ZSTD_outBuffer){block, STREAM_BLOCK, used};
		r = sym_ZSTD_decompressStream(z->stream, &out, &in);
		if (sym_ZSTD_isError(r)) {
			reader_fail(z, EBADMSG, "zstd: %s", sym_ZSTD_getErrorName(r));
			return -1;
		}
		if (!count_out(z, out.pos - used))
			return -1;
		used = out.pos;
		/* A full block, or the frame's last bytes: the consumer's, in turn. */
		if (used == STREAM_BLOCK || (r == 0 && used > 0)) {
			if (j) {
				j->out_len = used;
				j->err = 0;
				slot_put(z, j, JOB_DONE);
			}
			j = NULL;
			block = NULL;
			used = 0;
		}
		if (r == 0)
			break;
		if (in.pos == in.size) {
			ssize_t n;

			z->len = 0;
			in.pos = in.size = 0;
			if ((n = gather(z)) < 0)
				return -1;
			if (n == 0) {
				reader_fail(z, EBADMSG, "the last zstd frame is cut short");
				return -1;
			}
			in.src = z->buf; /* gather may have moved it */
			in.size = z->len;
		}
	}
	/* An empty frame's slot, taken and not filled: given as empty (skipped). */
	if (j) {
		j->out_len = 0;
		j->err = 0;
		slot_put(z, j, JOB_DONE);
	}
	memmove(z->buf, z->buf + in.pos, in.size - in.pos);
	z->len = in.size - in.pos;
	return 0;
}

static bool skippable(const struct zframes *z)
{
	return z->len >= 4 && (le32(z->buf) & SKIPPABLE_MASK) == SKIPPABLE_MAGIC;
}

/*
 * A frame at the start of buf whose header says it is not one to hand over whole (no
 * size, or a size over the most) is decompressed here, as it comes, without waiting for
 * the rest of it; its declared size is judged against the limit first. 1 when streamed,
 * 0 when not such a frame (or its header is not all there yet), -1 (failed, said).
 */
static int stream_if_big(struct zframes *z)
{
	unsigned long long declared;

	if (z->len < 4 || skippable(z))
		return 0;
	declared = sym_ZSTD_getFrameContentSize(z->buf, z->len);
	if (declared == ZSTD_CONTENTSIZE_ERROR ||
	    (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared <= ZFRAMES_FRAME_MAX))
		return 0;
	if (declared != ZSTD_CONTENTSIZE_UNKNOWN && !within_limit(z, declared))
		return -1;
	return stream_frame(z) < 0 ? -1 : 1;
}

/* The complete frame of SIZE bytes at the start of buf (not a big one), to a worker. */
static int queue_frame(struct zframes *z, size_t size)
{
	unsigned long long declared;
	struct job *j;

	if (skippable(z)) {
		memmove(z->buf, z->buf + size, z->len - size);
		z->len -= size;
		return 0;
	}
	declared = sym_ZSTD_getFrameContentSize(z->buf, size);
	if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN) {
		reader_fail(z, EBADMSG, "zstd: a frame header is not valid");
		return -1;
	}
	if (!count_out(z, declared))
		return -1;
	z->frames++;
	/* Once the consumer stopped, the frame is counted, not decompressed. */
	if ((j = slot_take(z))) {
		if (reserve(&j->in, &j->in_cap, size) < 0) {
			reader_fail(z, ENOMEM, "out of memory");
			return -1;
		}
		memcpy(j->in, z->buf, size);
		j->in_len = size;
		j->out_len = (size_t)declared;
		j->err = 0;
		slot_put(z, j, JOB_QUEUED);
	}
	memmove(z->buf, z->buf + size, z->len - size);
	z->len -= size;
	return 0;
}

static void *reader_main(void *ud)
{
	struct zframes *z = ud;

	for (;;) {
		ssize_t n;
		int r;

		/* Every frame gathered so far goes: big ones streamed, complete ones queued. */
		while (z->len > 0) {
			size_t size;

			if ((r = stream_if_big(z)) < 0)
				goto out;
			if (r > 0)
				continue;
			size = sym_ZSTD_findFrameCompressedSize(z->buf, z->len);
			if (!sym_ZSTD_isError(size)) {
				if (queue_frame(z, size) < 0)
					goto out;
				continue;
			}
			if (sym_ZSTD_getErrorCode(size) != ZSTD_error_srcSize_wrong) {
				reader_fail(z, EBADMSG, "zstd: %s", sym_ZSTD_getErrorName(size));
				goto out;
			}
			break;
		}
		/* A frame whose compressed bytes outgrow the most it may have is streamed too. */
		if (z->len >= ZFRAMES_FRAME_MAX) {
			if (skippable(z)) {
				reader_fail(z, EBADMSG,
					    "zstd: a skippable frame is larger than 8 MiB");
				goto out;
			}
			if (stream_frame(z) < 0)
				goto out;
			continue;
		}
		if ((n = gather(z)) < 0)
			goto out;
		if (n == 0) {
			if (z->len > 0)
				reader_fail(z, EBADMSG, "the last zstd frame is cut short");
			break;
		}
	}
out:
	pthread_mutex_lock(&z->lock);
	z->reader_done = true;
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
	return NULL;
}

/* ---- the workers -------------------------------------------------------------- */

static void *worker_main(void *ud)
{
	struct zframes *z = ud;
	ZSTD_DCtx *dctx = sym_ZSTD_createDCtx();

	pthread_mutex_lock(&z->lock);
	for (;;) {
		struct job *j = NULL;
		size_t r;

		/* The oldest queued frame: the consumer waits for it first. */
		for (uint64_t s = z->take_seq; s < z->next_seq; s++)
			if (z->jobs[s % z->n_jobs].state == JOB_QUEUED) {
				j = &z->jobs[s % z->n_jobs];
				break;
			}
		if (!j) {
			if (z->reader_done || z->cancelled)
				break;
			pthread_cond_wait(&z->cond, &z->lock);
			continue;
		}
		j->state = JOB_RUNNING;
		pthread_mutex_unlock(&z->lock);

		if (!dctx || reserve(&j->out, &j->out_cap, j->out_len ? j->out_len : 1) < 0) {
			j->err = ENOMEM;
			snprintf(j->msg, sizeof(j->msg), "out of memory");
		} else {
			r = sym_ZSTD_decompressDCtx(dctx, j->out, j->out_len, j->in, j->in_len);
			if (sym_ZSTD_isError(r)) {
				j->err = EBADMSG;
				snprintf(j->msg, sizeof(j->msg), "zstd: %s",
					 sym_ZSTD_getErrorName(r));
			} else if (r != j->out_len) {
				j->err = EBADMSG;
				snprintf(j->msg, sizeof(j->msg),
					 "zstd: a frame holds %zu bytes, not the %zu it declares",
					 r, j->out_len);
			}
		}
		pthread_mutex_lock(&z->lock);
		j->state = JOB_DONE;
		pthread_cond_broadcast(&z->cond);
	}
	pthread_mutex_unlock(&z->lock);
	if (dctx)
		sym_ZSTD_freeDCtx(dctx);
	return NULL;
}

/* ---- the consumer -------------------------------------------------------------- */

int zframes_start(struct zframes **ret, const struct zframes_source *src, uint64_t limit,
		  unsigned workers, struct err *e)
{
	struct zframes *z = calloc(1, sizeof(*z));
	int perr;

	if (!z)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
	if (workers < 1)
		workers = 1;
	if (workers > ZFRAMES_WORKERS_MAX)
		workers = ZFRAMES_WORKERS_MAX;
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->cond, NULL);
	z->read = src->read;
	z->ud = src->ud;
	z->limit = limit;
	z->n_jobs = workers + 2;
	z->cap = src->first_len > 0 ? src->first_len : 1;
	z->jobs = calloc(z->n_jobs, sizeof(*z->jobs));
	z->buf = malloc(z->cap);
	if (!z->jobs || !z->buf) {
		free(z->jobs);
		free(z->buf);
		free(z);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
	}
	memcpy(z->buf, src->first, src->first_len);
	z->len = src->first_len;
	*ret = z;
	if ((perr = pthread_create(&z->reader, NULL, reader_main, z)))
		goto fail;
	for (; z->n_workers < workers; z->n_workers++)
		if ((perr = pthread_create(&z->workers[z->n_workers], NULL, worker_main, z))) {
			uint64_t frames, streamed;

			zframes_stop(z, &frames, &streamed);
			*ret = NULL;
			return err_errno(e, EXIT_UNEXPECTED, perr, "unpack: start a decompressor");
		}
	return 0;
fail:
	/* No thread runs: the reader is the first. */
	free(z->jobs);
	free(z->buf);
	pthread_cond_destroy(&z->cond);
	pthread_mutex_destroy(&z->lock);
	free(z);
	*ret = NULL;
	return err_errno(e, EXIT_UNEXPECTED, perr, "unpack: start the decompressor");
}

static void release_held(struct zframes *z)
{
	struct job *j = &z->jobs[z->take_seq % z->n_jobs];

	j->state = JOB_FREE;
	z->take_seq++;
	z->held = false;
	pthread_cond_broadcast(&z->cond);
}

ssize_t zframes_next(struct zframes *z, const void **ret)
{
	ssize_t n = 0;

	pthread_mutex_lock(&z->lock);
	if (z->held)
		release_held(z);
	for (;;) {
		struct job *j = &z->jobs[z->take_seq % z->n_jobs];

		if (z->take_seq < z->next_seq && j->state == JOB_DONE) {
			if (j->err) {
				z->err = j->err;
				snprintf(z->msg, sizeof(z->msg), "%s", j->msg);
				n = -1;
			} else if (j->out_len == 0) {
				release_held(z); /* an empty frame: on to the next */
				continue;
			} else {
				*ret = j->out;
				n = (ssize_t)j->out_len;
				z->held = true;
			}
			break;
		}
		if (z->take_seq == z->next_seq && z->reader_done) {
			n = z->err ? -1 : 0;
			break;
		}
		pthread_cond_wait(&z->cond, &z->lock);
	}
	pthread_mutex_unlock(&z->lock);
	return n;
}

int zframes_error(const struct zframes *z, const char **msg)
{
	*msg = z->msg;
	return z->err;
}

bool zframes_stop(struct zframes *z, uint64_t *frames, uint64_t *streamed)
{
	bool over;

	pthread_mutex_lock(&z->lock);
	z->cancelled = true;
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
	pthread_join(z->reader, NULL);
	for (unsigned i = 0; i < z->n_workers; i++)
		pthread_join(z->workers[i], NULL);
	for (size_t i = 0; i < z->n_jobs; i++) {
		free(z->jobs[i].in);
		free(z->jobs[i].out);
	}
	over = z->over_limit;
	*frames = z->frames;
	*streamed = z->streamed;
	if (z->stream)
		sym_ZSTD_freeDCtx(z->stream);
	free(z->scratch);
	free(z->jobs);
	free(z->buf);
	pthread_cond_destroy(&z->cond);
	pthread_mutex_destroy(&z->lock);
	free(z);
	return over;
}
