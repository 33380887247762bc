/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One record of the kernel's log as /dev/kmsg gives it (the kernel's
 * Documentation/ABI/testing/dev-kmsg): "PRIORITY,SEQUENCE,MICROSECONDS,FLAGS[,...];MESSAGE",
 * where PRIORITY is the syslog facility shifted left by three, or'ed with the level. The
 * kernel's own messages (printk) have facility 0; a line that user space writes into
 * /dev/kmsg gets the facility it names, and LOG_USER (1) when it names none or names 0
 * (printk.c, devkmsg_write), so that no process can pass for the kernel there.
 */
#pragma once

#include <stddef.h>

#include "util/err.h"

#define KMSG_FACILITY_KERNEL 0u

struct kmsg_record {
	unsigned facility;
	unsigned level;
	const char *msg; /* into the record: the message, without the prefix */
	size_t msg_len;
};

/*
 * Parses the LEN bytes at REC (one record, up to its first newline or whole). Returns 0
 * and fills *RET, or -1 when REC has no prefix of that shape (a plain line is no record).
 */
_must_check_ int kmsg_parse_record(const char *rec, size_t len, struct kmsg_record *ret);
