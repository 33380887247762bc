/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Driver versions are dotted decimal numbers ("550.90.07", "535.261.03").
 * They compare numerically component by component; "07" equals "7".
 */
#pragma once

#include <stdbool.h>

#include "source/source.h"

#define VERSION_MAX_COMPONENTS 6

/*
 * Whether VERSION belongs to SPEC: SPEC's components equal VERSION's leading
 * ones. "550" matches every 550.x; "550.90.07" matches only itself.
 */
bool version_matches(const char *spec, const char *version);
