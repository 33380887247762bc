// SPDX-License-Identifier: Apache-2.0
#include "expose/timing.h"
#include "util/log.h"

static const char *const names[TIMING_N] = {
	[TIMING_HOST] = "host",		[TIMING_INDEX] = "index",     [TIMING_SELECT] = "select",
	[TIMING_DOWNLOAD] = "download", [TIMING_UNPACK] = "unpack",   [TIMING_KERNEL] = "kernel",
	[TIMING_DEVICES] = "devices",	[TIMING_PUBLISH] = "publish", [TIMING_EXPOSE] = "expose",
};

void timing_add(struct timing *t, enum timing_stage stage, uint64_t us)
{
	if (!t || stage >= TIMING_N)
		return;
	t->us[stage] += us;
	t->seen[stage] = true;
}

void timing_add_failed(struct timing *t, enum timing_stage stage, uint64_t us)
{
	if (t && stage < TIMING_N)
		t->us[stage] += us;
}

const char *timing_name(enum timing_stage stage)
{
	return stage < TIMING_N ? names[stage] : "unknown";
}

void timing_log(const struct timing *t, uint64_t total_us)
{
	const uint64_t *us = t->us;

	_Static_assert(TIMING_N == 9, "timing_log lists every stage");
	log_kv(LOG_INFO, "install", "stage times", U64("host_us", us[TIMING_HOST]),
	       U64("index_us", us[TIMING_INDEX]), U64("select_us", us[TIMING_SELECT]),
	       U64("download_us", us[TIMING_DOWNLOAD]), U64("unpack_us", us[TIMING_UNPACK]),
	       U64("kernel_us", us[TIMING_KERNEL]), U64("devices_us", us[TIMING_DEVICES]),
	       U64("publish_us", us[TIMING_PUBLISH]), U64("expose_us", us[TIMING_EXPOSE]),
	       U64("in_kernel_us", t->insert_us),
	       U64("own_us", total_us > t->insert_us ? total_us - t->insert_us : 0),
	       U64("total_us", total_us), LOG_END);
}
