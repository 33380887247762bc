// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <locale.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "stage/unpack.h"
#include "stage/unpack_policy.h"
#include "stage/writeback.h"
#include "stage/zframes.h"
#include "util/fs.h"
#include "util/dlib.h"
#include "util/log.h"
#include "util/str.h"
#include "util/tail.h"
#include "source/source.h"

#define READ_BLOCK (256u * 1024)

/* The member's attributes under the policy, before anything of it is written. */
static int check_xattrs(struct archive_entry *ae, const char *name, mode_t type, struct err *e)
{
	const char *xname;
	const void *value;
	size_t len;
	int n = 0;

	sym_archive_entry_xattr_reset(ae);
	while (sym_archive_entry_xattr_next(ae, &xname, &value, &len) == ARCHIVE_OK) {
		if (unpack_check_xattr(name, type == AE_IFREG, xname, value, len, e) < 0)
			return -1;
		if (++n > 1)
			return err_set(e, EXIT_VERIFY, "member '%s' carries security.ima twice",
				       name);
	}
	return 0;
}

/*
 * Gives the file its security.ima. A host that cannot store it (a file system without
 * security.* attributes: EOPNOTSUPP; no CAP_SYS_ADMIN: EPERM) is counted, not failed
 * here: unpack_ima_verdict() decides with the host's IMA policy in hand.
 */
static int set_xattrs(struct archive_entry *ae, int fd, const char *name, struct unpack_stats *st,
		      struct err *e)
{
	const char *xname;
	const void *value;
	size_t len;

	sym_archive_entry_xattr_reset(ae);
	while (sym_archive_entry_xattr_next(ae, &xname, &value, &len) == ARCHIVE_OK) {
		if (fsetxattr(fd, xname, value, len, 0) == 0) {
			st->ima++;
		} else if (errno == EOPNOTSUPP || errno == EPERM) {
			if (st->ima_unstored++ == 0) {
				st->ima_errno = errno;
				snprintf(st->ima_first, sizeof(st->ima_first), "%.255s", name);
			}
		} else {
			return err_errno(e, EXIT_UNEXPECTED, errno, "set %s of '%s'", xname, name);
		}
	}
	return 0;
}

/* ---- reading, hashing ----------------------------------------------------- */

struct reader {
	int fd;
	struct sha256 *sha; /* NULL: the writer of a followed file hashes it */
	struct tail *tail;  /* the file is being written: follow it; else read fd to its end */
	uint64_t total;
	int io_errno;
	size_t replay; /* buf holds this many bytes read (and hashed) already: given first */
	char buf[READ_BLOCK];
};

/* The next bytes of a file being written, read at their offset once they are there. */
static ssize_t reader_follow(struct reader *r, char *dst, size_t cap)
{
	int64_t want = tail_claim(r->tail, r->total, cap);
	size_t done = 0;

	if (want < 0) {
		errno = ECANCELED;
		return -1;
	}
	while (done < (size_t)want) {
		ssize_t n = pread(r->fd, dst + done, (size_t)want - done, (off_t)(r->total + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = n < 0 ? errno : EIO;
			return -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Up to CAP bytes more of the package into DST, hashed: >0, 0 at its end, -1 (io_errno). */
static ssize_t reader_get(struct reader *r, char *dst, size_t cap)
{
	ssize_t n;

	if (r->tail)
		n = reader_follow(r, dst, cap);
	else
		do {
			n = read(r->fd, dst, cap);
		} while (n < 0 && errno == EINTR);
	if (n < 0) {
		r->io_errno = errno;
		return -1;
	}
	if (r->sha)
		sha256_update(r->sha, dst, (size_t)n);
	r->total += (uint64_t)n;
	return n;
}

static la_ssize_t reader_read(struct archive *a, void *ud, const void **ret)
{
	struct reader *r = ud;
	ssize_t n;

	if (r->replay) {
		n = (ssize_t)r->replay;
		r->replay = 0;
	} else if ((n = reader_get(r, r->buf, sizeof(r->buf))) < 0) {
		if (a)
			sym_archive_set_error(a, r->io_errno, "reading package");
		errno = r->io_errno;
		return -1;
	}
	*ret = r->buf;
	return n;
}

static ssize_t reader_next(void *ud, const void **ret)
{
	return reader_read(NULL, ud, ret);
}

/* Reads the package's first MIN bytes (fewer only at its end) into buf, to replay. */
static int reader_peek(struct reader *r, size_t min)
{
	while (r->replay < min) {
		ssize_t n = reader_get(r, r->buf + r->replay, sizeof(r->buf) - r->replay);

		if (n < 0)
			return -1;
		if (n == 0)
			break;
		r->replay += (size_t)n;
	}
	return 0;
}

/* Reads what the decompressor left behind (padding), so the digest covers every byte. */
static int reader_drain(struct reader *r)
{
	const void *unused;
	la_ssize_t n;

	while ((n = reader_read(NULL, r, &unused)) > 0)
		;
	return n < 0 ? -1 : 0;
}

/* ---- writing members ---------------------------------------------------- */

/*
 * Opens the parent directory of NAME under staging_fd, creating missing
 * directories. Every component is opened with O_NOFOLLOW, so a member can
 * never be written through a symlink an earlier member planted.
 */
static int open_parent(int staging_fd, const char *name, const char **ret_base, struct err *e)
{
	_cleanup_free_ char *copy = strdup(name);
	char *p, *slash;
	int fd;

	if (!copy)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
	fd = dup(staging_fd);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "unpack");
	for (p = copy; (slash = strchr(p, '/')); p = slash + 1) {
		int next;

		*slash = '\0';
		if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
			close(fd);
			return err_errno(e, EXIT_UNEXPECTED, errno, "create directory for '%s'",
					 name);
		}
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0) {
			if (errno == ELOOP || errno == ENOTDIR)
				return err_set(
					e, EXIT_VERIFY,
					"member '%s' would be written through a symlink or file",
					name);
			return err_errno(e, EXIT_UNEXPECTED, errno, "open directory for '%s'",
					 name);
		}
		fd = next;
	}
	*ret_base = name + (p - copy);
	return fd;
}

static int write_data(struct archive *a, int fd, const char *name, uint64_t *total, struct err *e)
{
	const void *block;
	size_t len;
	la_int64_t off;
	int r;

	while ((r = sym_archive_read_data_block(a, &block, &len, &off)) == ARCHIVE_OK) {
		const char *p = block;

		if ((uint64_t)off + len > UNPACK_MAX_ENTRY_SIZE ||
		    (*total += len) > UNPACK_MAX_TOTAL_SIZE)
			return err_set(e, EXIT_VERIFY, "member '%s' unpacks beyond the size limit",
				       name);
		while (len > 0) {
			ssize_t n = pwrite(fd, p, len, (off_t)off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return err_errno(e, EXIT_UNEXPECTED, errno, "write '%s'", name);
			p += n;
			off += n;
			len -= (size_t)n;
		}
	}
	if (r != ARCHIVE_EOF)
		return dlib_err_archive(e, EXIT_VERIFY, a, "read member '%s'", name);
	return 0;
}

/*
 * One unpack under way: the tar stream, the staging directory its members go to, the bound
 * on what they unpack to, what they came to so far, and the write-back of the files written.
 */
struct extraction {
	struct archive *a;
	int staging_fd;
	const struct unpack_limit *limit;
	struct unpack_stats *st;
	struct writeback *wb;
};

/* Member AE, a regular file NAME, as BASE in DIRFD. */
static int extract_file(const struct extraction *x, struct archive_entry *ae, int dirfd,
			const char *base, const char *name, struct err *e)
{
	struct unpack_stats *st = x->st;
	mode_t mode = (sym_archive_entry_perm(ae) & 0111) ? 0755 : 0644;
	_cleanup_close_ int fd = -1;
	struct timespec ts[2];

	if (sym_archive_entry_size_is_set(ae) &&
	    (uint64_t)sym_archive_entry_size(ae) > UNPACK_MAX_ENTRY_SIZE)
		return err_set(e, EXIT_VERIFY, "member '%s' is larger than the limit", name);
	fd = openat(dirfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST)
		return err_set(e, EXIT_VERIFY, "member '%s' appears twice", name);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "create '%s'", name);
	if (write_data(x->a, fd, name, &st->bytes, e) < 0)
		return -1;
	/* Sparse members end in a hole: give the file its full length. */
	if (sym_archive_entry_size_is_set(ae) && ftruncate(fd, sym_archive_entry_size(ae)) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "size '%s'", name);
	/* umask may have narrowed the mode; the policy wants exactly this. */
	if (fchmod(fd, mode) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "chmod '%s'", name);
	if (set_xattrs(ae, fd, name, st, e) < 0)
		return -1;
	ts[0].tv_sec = ts[1].tv_sec = sym_archive_entry_mtime(ae);
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	if (sym_archive_entry_mtime_is_set(ae))
		(void)futimens(fd, ts);
	writeback_push(x->wb, fd);
	st->files++;
	return 0;
}

/* Below the ceiling, the bound is the index's word: a genuine package needs a larger one. */
static void unpack_limit_hint(const struct unpack_limit *limit, struct err *e)
{
	if (limit->bytes < UNPACK_MAX_TOTAL_SIZE)
		err_hint(
			e,
			"a genuine package needs its unpacked_size in the index: add it again with 'make-repo add' (which writes it) and re-sign");
}

static int over_limit(const struct unpack_limit *limit, const char *name, struct err *e)
{
	if (limit->bytes == UNPACK_MAX_TOTAL_SIZE)
		err_set(e, EXIT_VERIFY, "member '%s' takes the package past %llu GiB unpacked",
			name, UNPACK_MAX_TOTAL_SIZE >> 30);
	else
		err_set(e, EXIT_VERIFY,
			"package unpacks to more than %llu bytes, the most %s allows (member '%s' passes it)",
			(unsigned long long)limit->bytes, limit->why, name);
	unpack_limit_hint(limit, e);
	return -1;
}

static int extract_entry(const struct extraction *x, struct archive_entry *ae, struct err *e)
{
	const struct unpack_limit *limit = x->limit;
	struct unpack_stats *st = x->st;
	const char *raw = sym_archive_entry_pathname(ae), *base = NULL;
	char name[PATH_MAX];
	_cleanup_close_ int dirfd = -1;
	mode_t type = sym_archive_entry_filetype(ae);
	int r;

	if (!raw)
		return err_set(e, EXIT_VERIFY, "member without a name");
	r = unpack_check_path(raw, name, sizeof(name), e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	if (sym_archive_entry_hardlink(ae))
		return err_set(e, EXIT_VERIFY, "member '%s' is a hard link", name);
	if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
		return err_set(
			e, EXIT_VERIFY,
			"member '%s' is a device, fifo or socket; only files, directories and symlinks are allowed",
			name);
	if (type == AE_IFLNK && unpack_check_symlink(name, sym_archive_entry_symlink(ae), e) < 0)
		return -1;
	/* A driver has no business running as someone else: a set-id bit means tampering. */
	if (type == AE_IFREG && (sym_archive_entry_perm(ae) & (S_ISUID | S_ISGID)))
		return err_set(e, EXIT_VERIFY, "member '%s' is setuid or setgid (mode %04o)", name,
			       (unsigned)sym_archive_entry_perm(ae) & 07777);
	if (check_xattrs(ae, name, type, e) < 0)
		return -1;
	/*
	 * Sizes as the headers declare them, before any data: a sparse member writes few
	 * bytes but its file has its whole length, so holes count against the limits too.
	 */
	if (type == AE_IFREG && sym_archive_entry_size_is_set(ae) &&
	    (st->declared += (uint64_t)sym_archive_entry_size(ae)) > limit->bytes)
		return over_limit(limit, name, e);
	dirfd = open_parent(x->staging_fd, name, &base, e);
	if (dirfd < 0)
		return -1;
	switch (type) {
	case AE_IFDIR:
		if (mkdirat(dirfd, base, 0755) < 0 && errno != EEXIST)
			return err_errno(e, EXIT_UNEXPECTED, errno, "create directory '%s'", name);
		st->dirs++;
		return 0;
	case AE_IFLNK:
		if (symlinkat(sym_archive_entry_symlink(ae), dirfd, base) < 0)
			return errno == EEXIST
				       ? err_set(e, EXIT_VERIFY, "member '%s' appears twice", name)
				       : err_errno(e, EXIT_UNEXPECTED, errno, "symlink '%s'", name);
		st->symlinks++;
		return 0;
	default:
		return extract_file(x, ae, dirfd, base, name, e);
	}
}

/* ---- decompressing, in a thread of its own ---------------------------------- */

/*
 * The package's compressed bytes are read and decompressed by one thread, which
 * hands the tar stream through a small ring of blocks to the thread that parses
 * it and writes the members: decompression and file writing, the two costliest
 * steps, run at once. Memory stays at the ring's few MiB whatever the size.
 */
#define RING_SLOTS 4
#define RING_SLOT_SIZE (1u << 20)

struct ring {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *slot[RING_SLOTS];
	size_t len[RING_SLOTS];
	uint64_t produced, consumed; /* slots filled, slots given back */
	bool held;		     /* the consumer holds slot consumed % RING_SLOTS */
	bool done;		     /* the producer will fill no more */
	bool cancelled;		     /* the consumer stopped: the producer only drains */
	int err;		     /* the producer's errno-like code, 0 */
	char msg[256];		     /* and what libarchive said */
};

struct inflater {
	struct archive *in; /* the package, its filter, the "raw" format */
	struct ring ring;
	pthread_t thread;
	bool started;
	uint64_t limit;	 /* bytes it may decompress */
	uint64_t out;	 /* bytes it decompressed */
	bool over_limit; /* it stopped there (read once joined) */
};

static int ring_init(struct ring *r)
{
	*r = (struct ring){0};
	for (size_t i = 0; i < RING_SLOTS; i++)
		if (!(r->slot[i] = malloc(RING_SLOT_SIZE)))
			return -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	return 0;
}

static void ring_destroy(struct ring *r)
{
	for (size_t i = 0; i < RING_SLOTS; i++)
		free(r->slot[i]);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
}

/* Producer: a free slot to fill, or NULL when the consumer is gone. */
static char *ring_free_slot(struct ring *r)
{
	char *p = NULL;

	pthread_mutex_lock(&r->lock);
	while (!r->cancelled && r->produced - r->consumed == RING_SLOTS)
		pthread_cond_wait(&r->cond, &r->lock);
	if (!r->cancelled)
		p = r->slot[r->produced % RING_SLOTS];
	pthread_mutex_unlock(&r->lock);
	return p;
}

static void ring_fill(struct ring *r, size_t len)
{
	pthread_mutex_lock(&r->lock);
	r->len[r->produced % RING_SLOTS] = len;
	r->produced++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void ring_finish(struct ring *r, int err, const char *msg)
{
	pthread_mutex_lock(&r->lock);
	r->done = true;
	r->err = err;
	snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void ring_cancel(struct ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->cancelled = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void *inflater_main(void *ud)
{
	struct inflater *z = ud;
	char *slot = NULL;
	size_t used = 0;
	const void *block;
	size_t len;
	la_int64_t off;
	int r;

	while ((r = sym_archive_read_data_block(z->in, &block, &len, &off)) == ARCHIVE_OK) {
		const char *p = block;

		/* Past the limit nothing more is decompressed; the reader hashes the rest. */
		if ((z->out += len) > z->limit) {
			z->over_limit = true;
			break;
		}
		while (len > 0) {
			size_t n;

			if (!slot && !(slot = ring_free_slot(&z->ring)))
				break; /* cancelled: read on, so the digest covers every byte */
			n = len < RING_SLOT_SIZE - used ? len : RING_SLOT_SIZE - used;
			memcpy(slot + used, p, n);
			used += n;
			p += n;
			len -= n;
			if (used == RING_SLOT_SIZE) {
				ring_fill(&z->ring, used);
				slot = NULL;
				used = 0;
			}
		}
	}
	if (slot && used > 0)
		ring_fill(&z->ring, used);
	if (z->over_limit)
		ring_finish(&z->ring, EFBIG, "beyond the unpack limit");
	else if (r == ARCHIVE_EOF)
		ring_finish(&z->ring, 0, NULL);
	else
		ring_finish(&z->ring, sym_archive_errno(z->in) ? sym_archive_errno(z->in) : EIO,
			    sym_archive_error_string(z->in));
	return NULL;
}

/* Consumer (libarchive's read callback): the next slot; the previous one goes back. */
static la_ssize_t ring_read(struct archive *a, void *ud, const void **ret)
{
	struct ring *r = ud;
	la_ssize_t n = 0;

	pthread_mutex_lock(&r->lock);
	if (r->held) {
		r->consumed++;
		r->held = false;
		pthread_cond_broadcast(&r->cond);
	}
	while (r->produced == r->consumed && !r->done)
		pthread_cond_wait(&r->cond, &r->lock);
	if (r->produced > r->consumed) {
		*ret = r->slot[r->consumed % RING_SLOTS];
		n = (la_ssize_t)r->len[r->consumed % RING_SLOTS];
		r->held = true;
	} else if (r->err) {
		sym_archive_set_error(a, r->err, "decompressing the package: %s", r->msg);
		n = -1;
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* ---- the package ---------------------------------------------------------- */

static int check_filter(struct archive *a, struct err *e)
{
	int code = sym_archive_filter_code(a, 0);

	if (code != ARCHIVE_FILTER_ZSTD && code != ARCHIVE_FILTER_XZ && code != ARCHIVE_FILTER_GZIP)
		return err_set(e, EXIT_VERIFY,
			       "package is compressed with '%s'; zstd, xz or gzip is required",
			       sym_archive_filter_name(a, 0) ? sym_archive_filter_name(a, 0)
							     : "nothing");
	return 0;
}

/* Opens the compressed stream in RD and starts the thread that decompresses it. */
static int inflater_start(struct inflater *z, struct reader *rd, struct err *e)
{
	struct archive_entry *ae;
	int perr;

	if (ring_init(&z->ring) < 0 || !(z->in = sym_archive_read_new()))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
	sym_archive_read_support_filter_zstd(z->in);
	sym_archive_read_support_filter_xz(z->in);
	sym_archive_read_support_filter_gzip(z->in);
	sym_archive_read_support_format_raw(z->in);
	if (sym_archive_read_open(z->in, rd, NULL, reader_read, NULL) != ARCHIVE_OK ||
	    sym_archive_read_next_header(z->in, &ae) != ARCHIVE_OK)
		return dlib_err_archive(e, EXIT_VERIFY, z->in,
					"package is not a zstd, xz or gzip tar");
	if (check_filter(z->in, e) < 0)
		return -1;
	perr = pthread_create(&z->thread, NULL, inflater_main, z);
	if (perr)
		return err_errno(e, EXIT_UNEXPECTED, perr, "unpack: start the decompressor");
	z->started = true;
	return 0;
}

/* Stops the decompressor (it reads the rest of the package first) and frees it all. */
static void inflater_stop(struct inflater *z)
{
	if (z->started) {
		ring_cancel(&z->ring);
		pthread_join(z->thread, NULL);
		z->started = false;
	}
	if (z->in)
		sym_archive_read_free(z->in);
	z->in = NULL;
	ring_destroy(&z->ring);
}

static int unpack_members_to(const struct extraction *x, struct err *e)
{
	struct archive_entry *ae;
	unsigned n = 0;
	int r;

	while ((r = sym_archive_read_next_header(x->a, &ae)) == ARCHIVE_OK) {
		if (++n > UNPACK_MAX_ENTRIES)
			return err_set(e, EXIT_VERIFY, "package has more than %u members",
				       UNPACK_MAX_ENTRIES);
		if (extract_entry(x, ae, e) < 0)
			return -1;
	}
	if (r != ARCHIVE_EOF)
		return dlib_err_archive(e, EXIT_VERIFY, x->a, "package is not a valid archive");
	if (n == 0)
		return err_set(e, EXIT_VERIFY, "package is an empty archive");
	return 0;
}

static int unpack_members(struct archive *a, int staging_fd, const struct unpack_limit *limit,
			  struct unpack_stats *st, struct err *e)
{
	struct writeback wb;
	const struct extraction x = {
		.a = a, .staging_fd = staging_fd, .limit = limit, .st = st, .wb = &wb};
	int r;

	writeback_start(&wb);
	r = unpack_members_to(&x, e);
	writeback_stop(&wb);
	return r;
}

/* libarchive's read callback on the frames decompressed in parallel. */
static la_ssize_t zframes_read(struct archive *a, void *ud, const void **ret)
{
	struct zframes *z = ud;
	ssize_t n = zframes_next(z, ret);
	const char *msg;
	int err;

	if (n < 0) {
		err = zframes_error(z, &msg);
		sym_archive_set_error(a, err ? err : EIO, "decompressing the package: %s", msg);
		return -1;
	}
	return n;
}

/*
 * The package in RD, decompressed by other threads, into staging_fd: a zstd package
 * frame by frame on every core (stage/zframes.h), xz and gzip by one thread through
 * libarchive's filters.
 */
static int unpack_stream(struct reader *rd, const struct unpack_limit *limit, int staging_fd,
			 struct unpack_stats *st, struct err *e)
{
	_cleanup_free_ struct inflater *z = calloc(1, sizeof(*z));
	struct zframes *zf = NULL;
	locale_t utf8 = (locale_t)0, prev = (locale_t)0;
	struct archive *tar = NULL;
	bool over_limit = false, framed;
	int r = -1;

	if (!z)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
	if (dlib_archive(e) < 0)
		return -1;
	if (reader_peek(rd, 4) < 0)
		return err_errno(e, EXIT_UNEXPECTED, rd->io_errno, "reading package");
	framed = zframes_is_zstd(rd->buf, rd->replay);
	if (framed && dlib_zstd(e) < 0)
		return -1;
	z->limit = limit->bytes;
	/*
	 * libarchive converts pax names from UTF-8 to this thread's locale, GNU names are
	 * raw bytes: in a C locale a pax name "café" failed while the same GNU name passed.
	 * Read in a UTF-8 locale, both are the same bytes, and str_is_utf8() judges them alike.
	 */
	utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	if (utf8)
		prev = uselocale(utf8);
	if (framed) {
		const struct zframes_source src = {reader_next, rd, rd->buf, rd->replay};

		rd->replay = 0;
		st->workers = zframes_workers();
		if (zframes_start(&zf, &src, limit->bytes, st->workers, e) < 0)
			goto out;
	} else if (inflater_start(z, rd, e) < 0) {
		goto out;
	}
	if (!(tar = sym_archive_read_new())) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
		goto out;
	}
	sym_archive_read_support_format_tar(tar);
	if (sym_archive_read_open(tar, zf ? (void *)zf : (void *)&z->ring, NULL,
				  zf ? zframes_read : ring_read, NULL) != ARCHIVE_OK)
		dlib_err_archive(e, EXIT_VERIFY, tar, "package is not a valid archive");
	else
		r = unpack_members(tar, staging_fd, limit, st, e);
out:
	if (zf) {
		over_limit = zframes_stop(zf, &st->frames, &st->streamed);
	} else if (!framed) {
		inflater_stop(z);
		over_limit = z->over_limit;
	}
	/*
	 * The decompressor stopped at the limit: whatever the tar reader made of that. It reads
	 * on to the limit after the reader stopped, so the verdict does not depend on which
	 * of the two threads got there first.
	 */
	if (over_limit) {
		err_clear(e);
		err_set(e, EXIT_VERIFY,
			"package unpacks to more than %llu bytes, the most %s allows (its decompressed stream passes it)",
			(unsigned long long)limit->bytes, limit->why);
		unpack_limit_hint(limit, e);
		r = -1;
	}
	if (tar)
		sym_archive_read_free(tar);
	if (prev)
		uselocale(prev);
	if (utf8)
		freelocale(utf8);
	return r;
}

/* Dangling links are refused: every link must resolve to a member of the package. */
static int check_links_resolve(int staging_fd, struct err *e);

struct unpack_limit unpack_limit_for(uint64_t size, uint64_t unpacked_size)
{
	struct unpack_limit l = {.bytes = unpacked_size, .why = "its signed unpacked_size"};

	if (unpacked_size == 0) {
		l.why = "16 times its signed size, at least 1 MiB (the index gives no unpacked_size)";
		l.bytes = size > UNPACK_MAX_TOTAL_SIZE / UNPACK_RATIO ? UNPACK_MAX_TOTAL_SIZE
								      : size * UNPACK_RATIO;
		if (l.bytes < UNPACK_MIN_LIMIT)
			l.bytes = UNPACK_MIN_LIMIT;
	}
	if (l.bytes >= UNPACK_MAX_TOTAL_SIZE) {
		l.bytes = UNPACK_MAX_TOTAL_SIZE;
		l.why = "the 16 GiB ceiling";
	}
	return l;
}

int unpack_package(const struct unpack_request *q, struct unpack_stats *ret, struct err *e)
{
	uint64_t size = q->size;
	const char *sha256 = q->sha256;
	_cleanup_(sha256_freep) struct sha256 *sha = sha256_new();
	_cleanup_free_ struct reader *rd = calloc(1, sizeof(*rd));
	struct unpack_stats st = {0};
	char got[65];
	int r;

	if (!sha || !rd)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
	rd->fd = q->pkg_fd;
	rd->sha = sha;
	r = unpack_stream(rd, q->limit, q->staging_fd, &st, e);
	/* A digest mismatch explains any other failure: report it first. */
	if (reader_drain(rd) < 0)
		return err_errno(e, EXIT_UNEXPECTED, rd->io_errno, "reading package");
	if (rd->total != size)
		return err_set(e, EXIT_VERIFY,
			       "package size mismatch (index says %llu bytes, got %llu)",
			       (unsigned long long)size, (unsigned long long)rd->total);
	if (sha256_final_hex(sha, got) < 0)
		return err_openssl(e, EXIT_UNEXPECTED, "sha256");
	if (strcmp(got, sha256) != 0)
		return err_set(e, EXIT_VERIFY,
			       "package sha256 mismatch (expected %.12s..., got %.12s...)", sha256,
			       got);
	if (r < 0)
		return -1;
	if (check_links_resolve(q->staging_fd, e) < 0)
		return -1;
	*ret = st;
	return 0;
}

int unpack_follow(int pkg_fd, struct tail *tail, const struct unpack_limit *limit, int staging_fd,
		  struct unpack_stats *ret, struct err *e)
{
	_cleanup_free_ struct reader *rd = calloc(1, sizeof(*rd));
	struct unpack_stats st = {0};
	enum tail_state state;
	bool stale;
	int r = -1;

	if (!rd) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
	} else {
		rd->fd = pkg_fd;
		rd->tail = tail;
		r = unpack_stream(rd, limit, staging_fd, &st, e);
	}
	/*
	 * The writer's verdict comes first, as the digest's does for a cached package: a
	 * download that failed or was cut back explains any error made from its bytes.
	 */
	state = tail_reader_done(tail, &stale);
	if (state != TAIL_COMPLETE) {
		err_clear(e);
		return err_set(e, EXIT_UNREACHABLE, "the download did not complete");
	}
	if (stale)
		return 1;
	if (r < 0 || check_links_resolve(staging_fd, e) < 0)
		return -1;
	*ret = st;
	return 0;
}

static int check_links_dir(int parent_fd, const char *name, const char *path, int staging_fd,
			   struct err *e)
{
	_cleanup_closedir_ DIR *d = fs_opendir_at(parent_fd, name, e);
	struct dirent *de;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		_cleanup_free_ char *sub = NULL;
		struct stat st, target;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (asprintf(&sub, "%s%s%s", path, *path ? "/" : "", de->d_name) < 0)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "unpack");
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "stat '%s'", sub);
		/* The target was checked to stay inside; it must also exist. */
		if (S_ISLNK(st.st_mode) && fstatat(staging_fd, sub, &target, 0) < 0)
			return err_set(e, EXIT_VERIFY,
				       "symlink '%s' does not resolve inside the package", sub);
		if (S_ISDIR(st.st_mode) &&
		    check_links_dir(dirfd(d), de->d_name, sub, staging_fd, e) < 0)
			return -1;
	}
	return 0;
}

static int check_links_resolve(int staging_fd, struct err *e)
{
	return check_links_dir(staging_fd, ".", "", staging_fd, e);
}
