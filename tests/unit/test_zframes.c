// SPDX-License-Identifier: Apache-2.0
/*
 * stage/zframes.h: a zstd stream cut into frames, decompressed by workers, handed on in
 * order; what it does with frames too big to hand over, sizes it is not told, skippable
 * frames, the limit, damage and a source that gives a byte at a time.
 */
#include "cmocka_prelude.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stage/zframes.h"
#include "util/dlib.h"

/* Test data: compressible but not trivially (a counter's text with noise). */
static unsigned char *make_data(size_t n, unsigned seed)
{
	unsigned char *p = malloc(n);
	unsigned x = seed;

	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (i % 64 < 48) ? (unsigned char)('a' + (i / 64) % 26)
				     : (unsigned char)(x >> 16);
	}
	return p;
}

struct buf {
	unsigned char *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* One frame of DATA with a checksum (as zstd(1) writes), declaring its size or not. */
static void add_frame(struct buf *b, const unsigned char *data, size_t n, bool declared)
{
	size_t cap = ZSTD_compressBound(n), r;
	void *out = malloc(cap);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_inBuffer in = {data, n, 0};
	ZSTD_outBuffer o = {out, cap, 0};

	assert_non_null(out);
	assert_non_null(c);
	assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)));
	if (declared)
		assert_false(ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(c, n)));
	else
		assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0)));
	r = ZSTD_compressStream2(c, &o, &in, ZSTD_e_end);
	assert_int_equal(r, 0);
	buf_add(b, out, o.pos);
	ZSTD_freeCCtx(c);
	free(out);
}

static void add_skippable(struct buf *b, size_t n)
{
	unsigned char h[8] = {0x5a,
			      0x2a,
			      0x4d,
			      0x18,
			      (unsigned char)n,
			      (unsigned char)(n >> 8),
			      (unsigned char)(n >> 16),
			      (unsigned char)(n >> 24)};
	unsigned char *junk = calloc(1, n + 1);

	buf_add(b, h, sizeof(h));
	buf_add(b, junk, n);
	free(junk);
}

/* The source: the stream, CHUNK bytes at a time (varying when 0). */
struct src {
	const struct buf *b;
	size_t off, chunk, calls;
	int fail_at; /* the read that fails with EIO, or 0 */
};

static ssize_t src_read(void *ud, const void **ret)
{
	struct src *s = ud;
	size_t n;

	s->calls++;
	if (s->fail_at && (int)s->calls >= s->fail_at) {
		errno = EIO;
		return -1;
	}
	n = s->chunk ? s->chunk : 1 + (s->calls * 7919) % 70000;
	if (n > s->b->len - s->off)
		n = s->b->len - s->off;
	*ret = s->b->p + s->off;
	s->off += n;
	return (ssize_t)n;
}

struct result {
	struct buf out;
	int rc; /* 0 or the error code */
	char msg[256];
	bool over;
	uint64_t frames, streamed;
};

static void run(const struct buf *in, size_t chunk, uint64_t limit, unsigned workers,
		struct result *r)
{
	struct src s = {.b = in, .chunk = chunk};
	struct zframes *z;
	struct err e = {0};
	const void *first;
	ssize_t n = src_read(&s, &first);
	const void *p;

	memset(r, 0, sizeof(*r));
	assert_true(n > 0);
	assert_int_equal(zframes_start(&z, &(struct zframes_source){src_read, &s, first, (size_t)n},
				       limit, workers, &e),
			 0);
	while ((n = zframes_next(z, &p)) > 0)
		buf_add(&r->out, p, (size_t)n);
	if (n < 0) {
		const char *msg;

		r->rc = zframes_error(z, &msg);
		snprintf(r->msg, sizeof(r->msg), "%s", msg);
	}
	r->over = zframes_stop(z, &r->frames, &r->streamed);
	/* The reader read on to the end (or the limit) whatever happened. */
	if (!r->over && r->rc == 0)
		assert_int_equal(s.off, in->len);
}

/* IN comes out whole as DATA (N bytes), from FRAMES[0] frames, FRAMES[1] of them streamed. */
static void expect_whole(const struct buf *in, size_t chunk, unsigned workers,
			 const unsigned char *data, size_t n, const uint64_t frames[2])
{
	struct result r;

	run(in, chunk, UINT64_MAX, workers, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.out.len, n);
	assert_memory_equal(r.out.p, data, n);
	assert_int_equal(r.frames, frames[0]);
	assert_int_equal(r.streamed, frames[1]);
	free(r.out.p);
}

static void test_setup_lib(void **state)
{
	struct err e = {0};

	(void)state;
	assert_int_equal(dlib_zstd(&e), 0);
	assert_true(zframes_workers() >= 1 && zframes_workers() <= ZFRAMES_WORKERS_MAX);
}

/* Many small frames, read in chunks of every size: the bytes, in order, on 1 to 4 workers. */
static void test_frames_in_order(void **state)
{
	const size_t n = 10u << 20, frame = 300000;
	unsigned char *data = make_data(n, 1);
	struct buf in = {0};
	size_t chunks[] = {0, 1 << 20, 4096};

	(void)state;
	for (size_t off = 0; off < n; off += frame)
		add_frame(&in, data + off, n - off < frame ? n - off : frame, true);
	for (unsigned w = 1; w <= 4; w++)
		for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++)
			expect_whole(&in, chunks[i], w, data, n,
				     (uint64_t[2]){(n + frame - 1) / frame, 0});
	free(in.p);
	free(data);
}

/* A byte at a time: frame boundaries found however the bytes come. */
static void test_byte_at_a_time(void **state)
{
	const size_t n = 200000;
	unsigned char *data = make_data(n, 2);
	struct buf in = {0};

	(void)state;
	add_frame(&in, data, n / 2, true);
	add_frame(&in, data + n / 2, n - n / 2, true);
	expect_whole(&in, 1, 2, data, n, (uint64_t[2]){2, 0});
	free(in.p);
	free(data);
}

/*
 * One frame bigger than a worker takes (the layout before frames), and frames that do not
 * declare their size, between small ones: decompressed by the reader, in their turn.
 */
static void test_big_and_undeclared_frames_stream(void **state)
{
	const size_t big = 3 * ZFRAMES_FRAME_MAX + 12345, small = 100000;
	unsigned char *data = make_data(big + 2 * small, 3);
	struct buf in = {0};

	(void)state;
	add_frame(&in, data, small, true);
	add_frame(&in, data + small, big, true);
	add_frame(&in, data + small + big, small, false);
	expect_whole(&in, 0, 2, data, big + 2 * small, (uint64_t[2]){3, 2});
	free(in.p);
	free(data);
}

/* Skippable frames (pzstd writes one before each frame) are skipped. */
static void test_skippable_frames(void **state)
{
	const size_t n = 50000;
	unsigned char *data = make_data(n, 4);
	struct buf in = {0};

	(void)state;
	add_skippable(&in, 4);
	add_frame(&in, data, n / 2, true);
	add_skippable(&in, 1000);
	add_frame(&in, data + n / 2, n - n / 2, true);
	add_skippable(&in, 0);
	expect_whole(&in, 333, 2, data, n, (uint64_t[2]){2, 0});
	free(in.p);
	free(data);
}

/*
 * The limit: by declared sizes before anything is decompressed, and by what a streamed
 * frame yields; exactly the limit passes.
 */
static void test_limit(void **state)
{
	const size_t n = 4u << 20, frame = 1u << 20;
	unsigned char *data = make_data(n, 5);
	struct buf in = {0}, undeclared = {0};
	struct result r;

	(void)state;
	for (size_t off = 0; off < n; off += frame)
		add_frame(&in, data + off, frame, true);
	run(&in, 0, n, 2, &r);
	assert_int_equal(r.rc, 0);
	assert_false(r.over);
	free(r.out.p);
	run(&in, 0, n - 1, 2, &r);
	assert_true(r.over);
	assert_int_equal(r.rc, EFBIG);
	assert_true(r.out.len < n);
	free(r.out.p);

	add_frame(&undeclared, data, n, false);
	run(&undeclared, 0, n - 1, 2, &r);
	assert_true(r.over);
	assert_int_equal(r.rc, EFBIG);
	free(r.out.p);
	free(undeclared.p);
	free(in.p);
	free(data);
}

/* Damage: a corrupt frame, a cut stream, something that is not zstd, a failing source. */
static void test_damage(void **state)
{
	const size_t n = 600000, frame = 200000;
	unsigned char *data = make_data(n, 6);
	struct buf in = {0};
	struct result r;
	size_t second = 0;

	(void)state;
	for (size_t off = 0; off < n; off += frame) {
		if (off == frame)
			second = in.len;
		add_frame(&in, data + off, frame, true);
	}
	/*
	 * The second frame's data, damaged (a worker finds it: the checksum), then its magic
	 * (the reader finds it): the first frame comes out, then the error.
	 */
	const size_t damaged[] = {second + 100, second + 1};

	for (size_t i = 0; i < 2; i++) {
		size_t at = damaged[i];

		in.p[at] ^= 0xff;
		run(&in, 0, UINT64_MAX, 2, &r);
		assert_int_equal(r.rc, EBADMSG);
		assert_true(strncmp(r.msg, "zstd: ", 6) == 0);
		print_message("damaged at +%zu: %s\n", at - second, r.msg);
		assert_int_equal(r.out.len, frame);
		assert_memory_equal(r.out.p, data, frame);
		free(r.out.p);
		in.p[at] ^= 0xff;
	}

	/* Cut inside the last frame. */
	in.len -= 10;
	run(&in, 4096, UINT64_MAX, 2, &r);
	assert_int_equal(r.rc, EBADMSG);
	assert_string_equal(r.msg, "the last zstd frame is cut short");
	free(r.out.p);
	in.len += 10;

	/* Garbage after the frames. */
	buf_add(&in, "garbage!", 8);
	run(&in, 0, UINT64_MAX, 2, &r);
	assert_int_equal(r.rc, EBADMSG);
	assert_int_equal(r.out.len, n);
	free(r.out.p);
	in.len -= 8;

	/* The source fails: its errno. */
	{
		struct src s = {.b = &in, .chunk = 1000, .fail_at = 3};
		struct zframes *z;
		struct err e = {0};
		const void *first, *p;
		ssize_t k = src_read(&s, &first);
		uint64_t frames, streamed;
		const char *msg;

		assert_int_equal(
			zframes_start(&z, &(struct zframes_source){src_read, &s, first, (size_t)k},
				      UINT64_MAX, 2, &e),
			0);
		while ((k = zframes_next(z, &p)) > 0)
			;
		assert_int_equal(k, -1);
		assert_int_equal(zframes_error(z, &msg), EIO);
		assert_string_equal(msg, "reading package");
		assert_false(zframes_stop(z, &frames, &streamed));
	}
	free(in.p);
	free(data);
}

/* The consumer stops early: stop returns, all freed, nothing blocks (ASan sees leaks). */
static void test_stop_early(void **state)
{
	const size_t n = 8u << 20, frame = 1u << 20;
	unsigned char *data = make_data(n, 7);
	struct buf in = {0};
	struct src s = {.b = &in, .chunk = 65536};
	struct zframes *z;
	struct err e = {0};
	const void *first, *p;
	ssize_t k;
	uint64_t frames, streamed;

	(void)state;
	for (size_t off = 0; off < n; off += frame)
		add_frame(&in, data + off, frame, true);
	k = src_read(&s, &first);
	assert_int_equal(zframes_start(&z, &(struct zframes_source){src_read, &s, first, (size_t)k},
				       UINT64_MAX, 2, &e),
			 0);
	assert_true(zframes_next(z, &p) > 0);
	assert_false(zframes_stop(z, &frames, &streamed));
	/* It read to the end and counted every frame. */
	assert_int_equal(s.off, in.len);
	assert_int_equal(frames, n / frame);
	free(in.p);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setup_lib),
		cmocka_unit_test(test_frames_in_order),
		cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_big_and_undeclared_frames_stream),
		cmocka_unit_test(test_skippable_frames),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_damage),
		cmocka_unit_test(test_stop_early),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
