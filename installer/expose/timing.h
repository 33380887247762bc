/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time one install spent in each stage, for the log and the metrics file: the install
 * command adds each stage's time where it measures it, logs the record at the end of the
 * run (timing_log) and hands it to metrics_write. The stages are listed in pipeline
 * order, the order the log line and the metrics file list them.
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
	TIMING_KERNEL,	/* modules verified, the old ones out, the new ones in */
	TIMING_DEVICES, /* /dev/nvidia* made to match what the kernel registered */
	TIMING_PUBLISH,
	TIMING_EXPOSE,
	TIMING_N,
};

struct timing {
	uint64_t us[TIMING_N];
	bool seen[TIMING_N]; /* the stage ran to its end at least once */
	/* Of the kernel stage, the time spent inside the kernel's module insertion calls
	 * (signature check, relocation, the modules' init functions): the kernel's, not ours. */
	uint64_t insert_us;
};

/* Adds US microseconds to STAGE's total: a stage that runs twice (the index, asked again)
 * sums. T may be NULL. */
void timing_add(struct timing *t, enum timing_stage stage, uint64_t us);

/* Adds US microseconds to STAGE's total without counting the stage as ended: the time a
 * stage spent before it failed (the log line shows it, the metrics do not). */
void timing_add_failed(struct timing *t, enum timing_stage stage, uint64_t us);

/* The stage's name, as the log and the metrics file spell it ("host", "index", ...). */
const char *timing_name(enum timing_stage stage);

/*
 * One INFO line, "stage times", with every stage's microseconds as NAME_us (0 for a stage
 * that did not run), in_kernel_us (T's insert_us), own_us (TOTAL_US less in_kernel_us)
 * and total_us (TOTAL_US: the run's start to now). For people and for bench/.
 */
void timing_log(const struct timing *t, uint64_t total_us);
