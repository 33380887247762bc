/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration's checks (config_check.c), over what config.h's table has set. */
#pragma once

#include "cmd/config.h"
#include "util/err.h"

/*
 * Checks what the options cannot check one by one: host paths (absolute, UTF-8, no '..'),
 * module arguments (kmods_parse_arg, each for a module of the set), the policies and names.
 * Returns 0, or -1 (EXIT_USAGE).
 */
_must_check_ int config_validate(const struct config *c, struct err *e);

/*
 * The pre-flight check of `config`: everything config_validate checks, then what
 * install would fail on before it touches anything (no repository, a repository key or
 * module certificate that is missing, unreadable, a placeholder or not a key), and every
 * unknown NVIDIA_* variable. Each problem is
 * logged (ERROR, stage "config"). Returns 0, or -1 (EXIT_USAGE, counting them).
 */
_must_check_ int config_preflight(const struct config *c, struct err *e);
