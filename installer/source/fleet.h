/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fleet file (docs/building-packages.md, "A fleet"): one row per node image the operator
 * runs, each with the driver versions and module flavours it must be served. coverage
 * --fleet answers for every row; scripts/build-fleet builds what the repository lacks
 * from the same file.
 */
#pragma once

#include <stddef.h>

#include "util/cleanup.h"
#include "util/err.h"
#include "util/str.h"

#define FLEET_MAX_BYTES (4u << 20)
#define FLEET_MAX_ROWS 4096

struct fleet_row {
	char *name;	      /* "name", or NULL */
	char *os;	      /* os-release ID */
	char *os_build;	      /* os-release BUILD_ID, or NULL */
	char *kernel;	      /* uname -r */
	char *arch;	      /* uname -m; "x86_64" when the row says none */
	struct strv versions; /* "driver_versions": versions, branches or tags; at least one */
	struct strv flavours; /* "flavours": "proprietary", "open", "auto"; {"auto"} if none */
	struct strv gpus;     /* "gpus": "10de:2330" */
	char *module_signer;  /* "module_signer": the only signer the pool's kernel trusts */
};

struct fleet {
	struct fleet_row *rows;
	size_t n_rows;
};

/*
 * Parses a fleet file's text (strict JSON, format 1). Returns 0 and *ret, or -1 with
 * EXIT_USAGE naming the row and key: unknown keys are refused (a misspelt key would
 * otherwise ask a question nobody meant), as are missing and empty values.
 */
_must_check_ int fleet_parse(const char *buf, size_t len, struct fleet **ret, struct err *e);
void fleet_free(struct fleet *f);
DEFINE_POINTER_CLEANUP(struct fleet, fleet_free)
/* A row as the answer names it: its "name", or "OS[ build B] kernel R (ARCH)". */
void fleet_row_label(const struct fleet_row *r, char *buf, size_t size);
