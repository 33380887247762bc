/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The module parameters the live driver was loaded with: every load the installer makes
 * records the exact MODULE.KEY=VALUE arguments it gave, in the host's /run (a tmpfs),
 * so the record vanishes at reboot together with the modules it describes. A request
 * is compared with that record, not with what the kernel shows, so a parameter no
 * longer asked for, or one the kernel does not show, is a change too; a refused reload
 * loads the driver again with exactly the recorded set.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"
#include "util/str.h"

/* Host paths (under the host root): the directory is per boot, shared with the mounts record. */
#define KARGS_RECORD_DIR "/run/nvidia-driver-installer"
#define KARGS_RECORD_NAME "module-args.json"

struct kargs_record {
	char driver_version[64]; /* of the load the record describes */
	char module_type[16];	 /* "open", "proprietary", or "" when not known */
	struct strv args;	 /* MODULE.KEY=VALUE, module names with '_' */
	/* KMODS_GDRDRV, KMODS_NVIDIA_FS: inserted by our load ("gpudirect_modules") */
	unsigned gpudirect;
};

void kargs_record_done(struct kargs_record *r);

/*
 * Reads the record under the host root ROOT_FD into *RET (to be kargs_record_done'd).
 * Returns 0, 1 when there is none (also where KARGS_RECORD_DIR resolves outside the
 * host's /run, or nowhere: what a link leads to is not taken), or -1 for a damaged or
 * unreadable record, which is removed then, so that it is told once (E says which, and
 * whether it went). An entry --module-arg would refuse (kmods_parse_arg: a space, a quote)
 * makes the record damaged: no load of ours gave it, and a restore cannot.
 */
_must_check_ int kargs_read(int root_fd, struct kargs_record *ret, struct err *e);

/*
 * Replaces the record, atomically, after KARGS_RECORD_DIR was checked to resolve inside
 * the host's /run (a link elsewhere could make it outlive the boot). Returns 0 or -1.
 */
_must_check_ int kargs_write(int root_fd, const struct kargs_record *r, struct err *e);

/*
 * Removes the record (none, or a directory outside /run or resolving nowhere, is success).
 * Returns 0 or -1.
 */
_must_check_ int kargs_remove(int root_fd, struct err *e);

/*
 * Whether the set REQUESTED (N_REQUESTED MODULE.KEY=VALUE) differs from the set
 * RECORDED, order aside (module names in either spelling; a key given twice counts
 * once, with its last value, as the kernel takes it). The differences go to BUF, comma
 * separated: "nvidia.NVreg_X: 1 -> 2" for a changed value, "nvidia.NVreg_X: 1 ->
 * (default)" for one no longer asked for, "nvidia.NVreg_Y: (default) -> 2" for a new one.
 */
bool kargs_diff(char *const *recorded, size_t n_recorded, char *const *requested,
		size_t n_requested, char *buf, size_t size);

/*
 * The package's default module parameters: what NVIDIA requires on a platform (docs/
 * repository-format.md), shipped as kernel/module-params.conf (on the host drivers/
 * module-params.conf) beside the modules. modprobe.d's syntax, limited to what a package
 * may ask: "options MODULE KEY=VALUE..." lines, blank lines and '#' comments; every
 * KEY=VALUE is held to --module-arg's rules (kmods_parse_arg).
 */
#define KARGS_PACKAGE_FILE "module-params.conf"
#define KARGS_PACKAGE_MAX (64u << 10)

/*
 * Pushes the parameters DRIVERS_FD's KARGS_PACKAGE_FILE gives to RET as MODULE.KEY=VALUE,
 * in file order. None (no such file) is 0 with nothing pushed. A file that is not a
 * regular one, too large, or with a line outside the syntax refuses the package
 * (EXIT_VERIFY, naming the line). Returns 0 or -1.
 */
_must_check_ int kargs_package_defaults(int drivers_fd, struct strv *ret, struct err *e);

/*
 * The package's DEFAULTS split by the modules a load gives (MODULES, either spelling):
 * those for one of MODULES pushed to RET, the others to RET_IGNORED. A package's
 * default for a module the request leaves out (--modules, a documented subset) is no
 * reason to refuse the load; what --module-arg gives for one stays an error
 * (kmods_set_build). Returns 0 or -ENOMEM.
 */
_must_check_ int kargs_for_modules(char *const *defaults, size_t n_defaults, char *const *modules,
				   size_t n_modules, struct strv *ret, struct strv *ret_ignored);

/*
 * The set a load gives: DEFAULTS (the package's) less each MODULE.KEY that REQUESTED
 * (--module-arg) gives too, then REQUESTED, pushed to RET; *N_OVERRIDDEN counts the
 * defaults REQUESTED replaced. Module names compare in either spelling. Returns 0 or
 * -ENOMEM.
 */
_must_check_ int kargs_merge(char *const *defaults, size_t n_defaults, char *const *requested,
			     size_t n_requested, struct strv *ret, size_t *n_overridden);
