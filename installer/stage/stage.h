/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The selected package, unpacked into a staging tree of the install dir and
 * verified, ready for publish_stage(). From the node's cache when it holds the
 * package (its bytes hashed again as they are unpacked: the cache is not
 * trusted on its own). Otherwise in one pass: the download appends to the
 * cache's partial file, hashing as it goes, while an unpacker thread follows
 * it through the same file; the staging tree is kept only when the download
 * completed with the index's size and digest.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stage/publish.h"
#include "source/source.h"
#include "util/err.h"

/*
 * The face of stage/, the only header of it that other folders include: the staging
 * above, the install dir and its switch (publish.h), the programs the installer ships
 * into it, and the record of an upgrade that waits.
 */
#include "stage/libexec.h"
#include "stage/pending.h"

/*
 * The microseconds the download and the unpacking took, each summed when it ran twice,
 * and whether each ran to its end (the metrics list only those: expose/timing.h). When
 * the unpacking follows the download as it is written, the download's time includes the
 * unpacking alongside and the unpacking's is only what it took after the download ended:
 * the stages do not overlap.
 */
struct stage_times {
	uint64_t download_us;
	uint64_t unpack_us;
	bool downloaded;
	bool unpacked;
};

/*
 * What stage_package stages: PKG, from CACHE when it holds the package, else downloaded
 * from SRC's mirrors into CACHE; into a staging tree of DIR. The host under ROOT_FD
 * decides what a security.ima it cannot store means (unpack_ima_verdict).
 */
struct stage_request {
	struct source *src;
	struct cache *cache;
	const struct repo_package *pkg;
	int root_fd;
	struct installdir *dir;
};

/*
 * Stages RQ's package: writes the staging directory's name to STAGING (SIZE bytes) and
 * returns an fd on it, or -1 with e set and no staging left behind. Adds the
 * download's and the unpacking's times to T (may be NULL).
 */
_must_check_ int stage_package(const struct stage_request *rq, char *staging, size_t size,
			       struct stage_times *t, struct err *e);
