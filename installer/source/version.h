/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Driver versions are dotted decimal numbers ("550.90.07", "535.261.03").
 * They compare numerically component by component; "07" equals "7".
 */
#pragma once

#include <stdbool.h>

#define VERSION_MAX_COMPONENTS 6

/* Whether S is 1 to VERSION_MAX_COMPONENTS dot-separated runs of 1 to 9 digits. */
bool version_is_valid(const char *s);

/*
 * Orders two valid versions: negative, zero or positive. When one is a prefix
 * of the other the longer one is greater ("550" < "550.90").
 */
int version_compare(const char *a, const char *b);

/*
 * Whether VERSION belongs to SPEC: SPEC's components equal VERSION's leading
 * ones. "550" matches every 550.x; "550.90.07" matches only itself.
 */
bool version_matches(const char *spec, const char *version);
