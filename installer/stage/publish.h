/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The install directory and its atomic switch (docs/design.md):
 *
 *   INSTALL_DIR/.versions/<version>[-<module type>]-<sha12>/
 *       {bin,lib64,drivers,firmware,share,.install.json}
 *   INSTALL_DIR/.versions/<version>-<sha12>/bin/.real/   NVIDIA's programs (installer/stage/wrap.h)
 *   INSTALL_DIR/.current -> .versions/<version>-<sha12>
 *   INSTALL_DIR/{bin,lib64,drivers,firmware,share} -> .current/<name>
 *
 * A version is unpacked into INSTALL_DIR/.staging-*, synced, renamed into
 * .versions/ and made current by one rename(2) of the .current symlink, so
 * readers see the old tree or the new one, never a mixture. The manifest
 * .install.json inside each version is the record of what is installed: it
 * is switched in the same rename as the files it describes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "stage/stage.h"

#define MANIFEST_NAME ".install.json"

/* Parses manifest JSON. Returns 0, or -1 with e set. */
_must_check_ int manifest_parse(const char *buf, size_t len, struct manifest *m, struct err *e);
/* Serialises M; returns a malloc'd JSON string or NULL on ENOMEM. */
char *manifest_to_json(const struct manifest *m);
/* The driver M records, its strings M's (the kernel release it was installed for). */
struct driver_id manifest_driver(const struct manifest *m);

/* Creates a staging directory; returns its fd and writes its name to ret_name. */
_must_check_ int publish_staging(struct installdir *d, char *ret_name, size_t size, struct err *e);
