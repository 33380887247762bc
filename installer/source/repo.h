/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The repository index (docs/repository-format.md): parsing the signed
 * index.json and choosing the driver and package for a host. The index's data
 * model is in the face, source/source.h; its module flavours, source/repo_kmt.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/source.h"

/*
 * Parses an RFC 3339 time in UTC, "2026-11-30T04:13:03Z" with optional fractional
 * seconds (up to microseconds kept), into microseconds since the epoch. 0, or -1 when
 * it is not exactly that form or not a real date.
 */
int repo_parse_time(const char *s, int64_t *ret_us);

/*
 * One clause for a message about a request that matched no driver: "it has versions ...
 * (branches ...; tags ...), of which these have a package for kernel K: ...".
 */
void repo_describe_offer(const struct repo_index *idx, const struct host *h, char *buf,
			 size_t size);
