/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU health from the kernel log: the NVIDIA driver reports a GPU error as an Xid line,
 *   NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
 * read from /dev/kmsg (one record per read: "PRIORITY,SEQ,USEC,FLAGS;MESSAGE") or from a
 * file of such records, one a line. Only the kernel writes the driver's lines: a record
 * whose PRIORITY names another facility than the kernel's (util/kmsg.h) was written by user
 * space into /dev/kmsg, and neither counts nor clears anything. Each Xid is counted; the
 * ones NVIDIA's Xid catalog resolves by a GPU reset or a reboot make the GPU unusable
 * until then, and the driver's "loading NVIDIA UNIX" line, printed when the module loads
 * (a reload resets the GPUs), ends them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define XID_BDF_SIZE 16

struct xid_event {
	char bdf[XID_BDF_SIZE]; /* "0000:3b:00", as the driver prints it, lower case */
	unsigned code;
	unsigned facility; /* KMSG_FROM_USER: the facility the record carries */
};

enum xid_class {
	XID_APPLICATION, /* the application's fault; the GPU is fine (13, 31, 43, 45, 68, 109) */
	XID_FATAL,	 /* the GPU needs a reset or the node a reboot */
	XID_OTHER,	 /* counted and logged; readiness stays */
};

/*
 * What a kernel log record says: nothing of ours, an Xid (*EV filled), a driver load, or
 * the driver's words in a record that user space wrote (not the kernel's: ignored).
 */
enum kmsg_kind { KMSG_OTHER, KMSG_XID, KMSG_DRIVER_LOADED, KMSG_FROM_USER };

/*
 * Reads one /dev/kmsg record (without its newline). Only the kernel's own records
 * (facility 0) are the driver's; a plain line, with no record's prefix, is nothing.
 */
enum kmsg_kind xid_parse(const char *rec, size_t len, struct xid_event *ev);
enum xid_class xid_classify(unsigned code);
const char *xid_class_name(enum xid_class c);

/* The kernel log, read as it grows: /dev/kmsg (a record per read) or a regular file. */
struct kmsg_reader {
	int fd;
	bool is_device;
	size_t used;	/* bytes of an unfinished line (a file) */
	char buf[8192]; /* /dev/kmsg records are at most 8 KiB (CONSOLE_EXT_LOG_MAX) */
};

/* Opens PATH (a host path, under ROOT_FD) from its first record. Returns 0 or -1. */
_must_check_ int kmsg_open(struct kmsg_reader *r, int root_fd, const char *path, struct err *e);
/*
 * Reads what is there now, calling FN(REC, LEN, ARG) for each record; never blocks.
 * Returns the number of records, or -1 with E set (the log cannot be read any more).
 */
int kmsg_read(struct kmsg_reader *r, void (*fn)(const char *, size_t, void *), void *arg,
	      struct err *e);
void kmsg_close(struct kmsg_reader *r);
