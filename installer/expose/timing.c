// SPDX-License-Identifier: Apache-2.0
#include "expose/timing.h"

static const char *const names[TIMING_N] = {
	[TIMING_HOST] = "host",		[TIMING_INDEX] = "index",   [TIMING_SELECT] = "select",
	[TIMING_DOWNLOAD] = "download", [TIMING_UNPACK] = "unpack", [TIMING_KERNEL] = "kernel",
	[TIMING_PUBLISH] = "publish",	[TIMING_EXPOSE] = "expose",
};

void timing_add(struct timing *t, enum timing_stage stage, uint64_t ms)
{
	if (!t || stage >= TIMING_N)
		return;
	t->ms[stage] += ms;
	t->seen[stage] = true;
}

const char *timing_name(enum timing_stage stage)
{
	return stage < TIMING_N ? names[stage] : "unknown";
}
