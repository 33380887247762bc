/* SPDX-License-Identifier: Apache-2.0 */
/*
 * install --wait-for-package (docs/design.md, "A kernel nobody built for"): a run whose
 * chosen driver has no package for this node's kernel, architecture, OS and build asks the
 * repository again with a backoff instead of exiting 3, without the node lock between two
 * checks, says so in its record (stage/waiting.c), its metrics and on its Node
 * (cmd/nodeask.h), and goes on to install once the repository serves the package.
 */
#pragma once

#include <stdint.h>

#include "cmd/install_record.h"

/* The first check after a refusal comes this long after it, unless the cap is less. */
#define WAIT_FIRST_MS 5000u

/*
 * The backoff: how long to sleep before the next check when the one before waited PREV_MS
 * (0: none yet). WAIT_FIRST_MS first, then twice the one before, never past CAP_S seconds.
 */
uint64_t install_wait_next_ms(uint64_t prev_ms, unsigned cap_s);

/* What install.c does for the wait: the metrics file, with the error E of the last check. */
struct wait_calls {
	void (*report)(struct run *run, const struct err *e);
};

/*
 * After install_plan_make failed with E: when the run waits for packages (--wait-for-package)
 * and E is the refusal a new package would lift (repo_wanted), waits and checks again until
 * the repository serves it, then makes the plan (0); a signal, the limit
 * (--wait-for-package-max) or another error of a check ends the wait with -1 and E. Any
 * other E: -1 at once, E as it was.
 */
_must_check_ int install_wait(struct run *run, const struct wait_calls *calls, struct err *e);
