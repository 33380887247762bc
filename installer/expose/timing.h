/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time one install spent in each stage, for the log and the metrics file: the install
 * command adds each stage's time where it measures it, logs the record at the end of the
 * run (timing_log) and hands it to metrics_write. The stages are listed in pipeline
 * order, the order the log line and the metrics file list them.
 */
#pragma once

#include "expose/expose.h" /* the face: what other folders call of this module */

/* The stage's name, as the log and the metrics file spell it ("host", "index", ...). */
const char *timing_name(enum timing_stage stage);
