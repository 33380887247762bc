/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An upgrade that waits (docs/design.md, "Busy nodes"): a verified version staged in
 * the install dir's .versions/ beside the current one, or new module parameters for
 * the live driver, recorded in INSTALL_DIR/.pending.json until the GPUs are idle or the
 * node boots. The record is written atomically; the version it names is kept by
 * publish_cleanup. At most one thing is pending: a newer request replaces it.
 */
#pragma once

#include "stage/stage.h"

#define PENDING_FILE ".pending.json"
/* The report of a pending version that failed and was withdrawn (struct pending_failure). */
#define PENDING_FAILED_FILE ".pending-failed.json"
