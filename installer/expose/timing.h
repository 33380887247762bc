/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time one install spent in each stage, for the metrics file: the install command
 * adds each stage's time where it measures it and hands the record to metrics_write.
 * The stages are listed in pipeline order, the order the metrics file lists them.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum timing_stage {
	TIMING_HOST,
	TIMING_INDEX,
	TIMING_SELECT,
	TIMING_DOWNLOAD,
	TIMING_UNPACK,
	TIMING_KERNEL,
	TIMING_PUBLISH,
	TIMING_EXPOSE,
	TIMING_N,
};

struct timing {
	uint64_t ms[TIMING_N];
	bool seen[TIMING_N]; /* the stage ran to its end at least once */
};

/* Adds MS to STAGE's total: a stage that runs twice (the index, asked again) sums. T may be
 * NULL. */
void timing_add(struct timing *t, enum timing_stage stage, uint64_t ms);

/* The stage's name, as the log and the metrics file spell it ("host", "index", ...). */
const char *timing_name(enum timing_stage stage);
