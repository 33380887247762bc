// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/xid.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/kmsg.h"

/*
 * NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/, "Analyzing Xid Errors with the
 * Xid Catalog"), the immediate action of each Xid on Ampere and later: these are the ones
 * it resolves by resetting the GPU or restarting the machine (RESET_GPU, RESTART_BM,
 * RESTART_VM). 48 a double-bit ECC error, 62 an internal micro-controller halt, 64 a
 * failure to record a memory error's remedy, 74 an NVLink error, 79 the GPU fallen off the
 * bus, 95 an uncontained ECC error, 119 and 120 the GSP not answering or failing, 140 an
 * unrecovered ECC error, 143 a GPU initialisation failure.
 */
static const unsigned fatal_xids[] = {48, 62, 64, 74, 79, 95, 119, 120, 140, 143};
/*
 * Errors of the application, not of the GPU: the set NVIDIA's device plugin skips when it
 * judges a GPU's health (k8s-device-plugin, internal/rm/health.go, applicationErrorXids).
 */
static const unsigned application_xids[] = {13, 31, 43, 45, 68, 109};

static bool in(const unsigned *set, size_t n, unsigned code)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == code)
			return true;
	return false;
}

enum xid_class xid_classify(unsigned code)
{
	if (in(fatal_xids, ARRAY_SIZE(fatal_xids), code))
		return XID_FATAL;
	if (in(application_xids, ARRAY_SIZE(application_xids), code))
		return XID_APPLICATION;
	return XID_OTHER;
}

const char *xid_class_name(enum xid_class c)
{
	return c == XID_FATAL ? "fatal" : c == XID_APPLICATION ? "application" : "other";
}

/* Finds NEEDLE in the LEN bytes at HAY; returns what follows it, or NULL. */
static const char *after(const char *hay, size_t len, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(hay + i, needle, n) == 0)
			return hay + i + n;
	return NULL;
}

/* "(PCI:0000:3b:00): 79, ..." after "NVRM: Xid ": the address and the code. */
static bool parse_xid(const char *p, const char *end, struct xid_event *ev)
{
	size_t n = 0;
	unsigned long code = 0;
	const char *digits;

	if (end - p < 6 || memcmp(p, "(PCI:", 5) != 0)
		return false;
	for (p += 5; p < end && *p != ')'; p++) {
		if (n + 1 >= sizeof(ev->bdf) ||
		    !(isxdigit((unsigned char)*p) || *p == ':' || *p == '.'))
			return false;
		ev->bdf[n++] = (char)tolower((unsigned char)*p);
	}
	ev->bdf[n] = '\0';
	if (n == 0 || end - p < 3 || memcmp(p, "): ", 3) != 0)
		return false;
	for (digits = p += 3; p < end && isdigit((unsigned char)*p) && p - digits < 6; p++)
		code = code * 10 + (unsigned long)(*p - '0');
	if (p == digits || (p < end && *p != ',' && *p != ' '))
		return false;
	ev->code = (unsigned)code;
	return true;
}

/* What MSG (LEN bytes, a record's message) says of the driver. */
static enum kmsg_kind driver_line(const char *msg, size_t mlen, struct xid_event *ev)
{
	const char *end = msg + mlen, *p;

	if (mlen < 6 || memcmp(msg, "NVRM: ", 6) != 0)
		return KMSG_OTHER;
	if ((p = after(msg, mlen, "NVRM: Xid ")) == msg + 10)
		return parse_xid(p, end, ev) ? KMSG_XID : KMSG_OTHER;
	if (after(msg, mlen, "NVRM: loading NVIDIA UNIX") == msg + 25)
		return KMSG_DRIVER_LOADED;
	return KMSG_OTHER;
}

enum kmsg_kind xid_parse(const char *rec, size_t len, struct xid_event *ev)
{
	struct kmsg_record r;
	enum kmsg_kind kind;

	if (kmsg_parse_record(rec, len, &r) < 0)
		return KMSG_OTHER;
	kind = driver_line(r.msg, r.msg_len, ev);
	if (kind != KMSG_OTHER && r.facility != KMSG_FACILITY_KERNEL) {
		ev->facility = r.facility;
		return KMSG_FROM_USER;
	}
	return kind;
}

int kmsg_open(struct kmsg_reader *r, int root_fd, const char *path, struct err *e)
{
	struct stat st;

	r->used = 0;
	r->fd = fs_open_in_root(root_fd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0, 0, e);
	if (r->fd < 0)
		return -1;
	if (fstat(r->fd, &st) < 0) {
		err_errno(e, EXIT_UNEXPECTED, errno, "kernel log '%s'", path);
		close(r->fd);
		r->fd = -1;
		return -1;
	}
	r->is_device = S_ISCHR(st.st_mode);
	return 0;
}

void kmsg_close(struct kmsg_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* A regular file: complete lines go to FN, a partial one waits for its end. */
static int file_lines(struct kmsg_reader *r, void (*fn)(const char *, size_t, void *), void *arg)
{
	int records = 0;
	size_t start = 0;

	for (size_t i = 0; i < r->used; i++) {
		if (r->buf[i] != '\n')
			continue;
		fn(r->buf + start, i - start, arg);
		records++;
		start = i + 1;
	}
	/* A line longer than the buffer is cut: what the buffer holds counts as one. */
	if (start == 0 && r->used == sizeof(r->buf)) {
		fn(r->buf, r->used, arg);
		records++;
		start = r->used;
	}
	memmove(r->buf, r->buf + start, r->used - start);
	r->used -= start;
	return records;
}

int kmsg_read(struct kmsg_reader *r, void (*fn)(const char *, size_t, void *), void *arg,
	      struct err *e)
{
	int records = 0;

	for (;;) {
		ssize_t n = read(r->fd, r->buf + r->used, sizeof(r->buf) - r->used);

		if (n < 0 && errno == EINTR)
			continue;
		/* /dev/kmsg: records overwritten before we read them; the next read goes on. */
		if (n < 0 && errno == EPIPE)
			continue;
		if (n < 0 && errno == EAGAIN)
			return records;
		if (n < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "reading the kernel log");
		if (n == 0)
			return records;
		if (r->is_device) {
			/* Continuation lines (" KEY=VALUE") follow the first line's newline. */
			const char *nl = memchr(r->buf, '\n', (size_t)n);

			fn(r->buf, nl ? (size_t)(nl - r->buf) : (size_t)n, arg);
			records++;
			continue;
		}
		r->used += (size_t)n;
		records += file_lines(r, fn, arg);
	}
}
