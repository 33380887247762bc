/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mirror: a copy of a repository for air-gapped clusters. The signed index is
 * copied byte for byte (so its signature still verifies), with exactly the
 * packages the given kernels and versions need, each verified against the
 * index. The result is a repository for file:// or any static HTTP server, an
 * OCI image layout or a registry repository (cmd/mirror_dest.h); a re-run
 * copies only what is missing.
 */
#pragma once

#include "cmd/config.h"
#include "util/err.h"

_must_check_ int mirror_run(const struct config *c, struct err *e);
