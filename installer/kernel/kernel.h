/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel stage: from a version's drivers/ directory to a live driver.
 *
 *   kernel_prepare  checks everything and changes nothing: the modules'
 *                   signatures and vermagic, conflicting drivers, and whether
 *                   a loaded driver of another version is free to go;
 *   kernel_unload_old, kernel_load
 *                   then make the change: conflicts and the old driver out,
 *                   the keyring certificate, the firmware path, the set in
 *                   (all or nothing), the device nodes.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "kernel/kmods.h"
#include "kernel/ktrust.h"
#include "stage/stage.h"
#include "util/err.h"
#include "util/str.h"

/*
 * The face of kernel/, the only header of it that other folders include: the stage
 * above, modules and their signatures (kmods.h, modsig.h), the kernel's trust
 * (ktrust.h), and the driver's device nodes.
 */
#include "kernel/devnodes.h"

#define KERNEL_DEFAULT_MODULES "nvidia,nvidia-modeset,nvidia-drm,nvidia-uvm"
/* The same set as a list (kmods takes writable-typed names; nobody writes them). */
extern char *const kernel_default_modules[];
extern const size_t kernel_n_default_modules;

/*
 * What the kernel stage reads of the configuration. The strings are the caller's: they
 * must outlive every struct kernel made with them.
 */
struct kernel_opts {
	char *const *module_certs; /* certificates modules must be signed with */
	size_t n_module_certs;
	char *const *modules; /* the set to load; none: KERNEL_DEFAULT_MODULES */
	size_t n_modules;
	char *const *module_args; /* MODULE.KEY=VALUE */
	size_t n_module_args;
	const char *keyring_cert; /* added to .secondary_trusted_keys before loading, or NULL */
	bool no_unload_conflicts; /* refuse, rather than unload, a conflicting driver */
	const char *install_dir;  /* host path whose firmware links kernel_remove withdraws */
	bool defer_busy;	  /* kernel_prepare: a busy old driver is an answer (1), not -1 */
	const pid_t *own_pids;	  /* the installer's own processes: no users of the driver */
	size_t n_own_pids;
	/*
	 * Called before each check that the loaded driver is idle (a reload, an unload): lets
	 * the daemons the node agent runs (persistence daemon, Fabric Manager) stop first, so
	 * that they neither hold the driver nor count as its users. NULL: none. Returns 0, or
	 * -1 with E set (the check is not made then).
	 */
	int (*before_idle_check)(void *arg, struct err *e);
	void *before_idle_arg;
};

struct kernel;

/* Trust and loaded state, for the plan; changes nothing. Returns 0 or -1. */
_must_check_ int kernel_probe(const struct kernel_opts *o, int root_fd, const char *release,
			      struct kernel **ret, struct err *e);

/*
 * What kernel_prepare is asked: load DRIVER (its version; its flavour, or NULL when not
 * known; the running release, whose modules and rules are read) from DRIVERS_FD, the
 * version's drivers/ (duplicated; the caller keeps its fd), under OPTS.
 */
struct kernel_request {
	const struct kernel_opts *opts;
	int root_fd;
	int drivers_fd;
	struct driver_id driver;
	bool installed; /* the files are the installed version's, verified when it was installed */
};

/*
 * Prepares loading RQ's driver. A loaded driver of the same version in the other
 * flavour is another driver, unloaded and replaced as one of another version is. For
 * INSTALLED files, modules live at the version are not checked again. A new
 * package's files are always checked, even where a module of the same version
 * is live. Fails (changing nothing) with EXIT_VERIFY or EXIT_KERNEL_REFUSED for
 * a module the kernel would refuse, EXIT_IN_USE for a busy old driver or a
 * conflicting one. With opts->defer_busy, a busy old driver (and only that) gives 1
 * instead: everything else was checked (the modules verified), *RET is set, and E holds
 * the EXIT_IN_USE error naming what holds the driver (kernel_busy_reason). Returns 0,
 * 1 or -1.
 */
_must_check_ int kernel_prepare(const struct kernel_request *rq, struct kernel **ret,
				struct err *e);
void kernel_free(struct kernel *kn);
DEFINE_POINTER_CLEANUP(struct kernel, kernel_free)

/* What holds the busy old driver (kernel_prepare gave 1), or NULL. */
const char *kernel_busy_reason(const struct kernel *kn);

/*
 * Whether the live driver, at VERSION (kernel_probe's KN will do), runs with other module
 * parameters than o->module_args asks for (with kernel_use_package_args, than the package's
 * defaults and o->module_args). The set is compared with the record of the
 * load the installer made (kargs.h): a parameter added, changed or no longer asked for
 * is a difference. Without a record of this driver (loaded by hand, by an older
 * installer), each MODULE.KEY=VALUE asked for is compared with what the kernel shows,
 * /sys/module/MODULE/parameters/KEY, and nvidia's NVreg_KEY also with
 * /proc/driver/nvidia/params: a parameter the kernel does not show counts as unchanged,
 * and one no longer asked for cannot be told. The differences go to BUF (kargs_diff's
 * form: "nvidia.NVreg_X: 0 -> 1", "... -> (default)", "(default) -> ...").
 */
bool kernel_args_differ(const struct kernel *kn, const char *version, char *buf, size_t size);

/*
 * Makes the parameters KN compares and loads those of the package in DRIVERS_FD: its
 * default module parameters (kargs.h, drivers/module-params.conf) for the modules of
 * o->modules (kargs_for_modules: the others are set apart, and kernel_prepare logs each),
 * each replaced where o->module_args gives the same MODULE.KEY, then o->module_args. kernel_prepare does it
 * for the driver it loads; a kernel_probe'd KN compares o->module_args alone until then
 * (kernel_args_differ on an installed version: pass that version's drivers/). Returns 0,
 * or -1 (EXIT_VERIFY for a malformed file).
 */
_must_check_ int kernel_use_package_args(struct kernel *kn, int drivers_fd, struct err *e);

/*
 * The parameters the live driver was loaded with, pushed to RET as MODULE.KEY=VALUE: the
 * recorded set, less the parameters of modules outside the set to load, or without a
 * record the live values of those o->module_args names (one the kernel does not show,
 * shows empty, or shows as --module-arg could not give it, is left out, with a warning
 * for the last). Read before kernel_unload_current, they
 * load the driver again as it ran. Returns 0 or -ENOMEM.
 */
_must_check_ int kernel_previous_args(const struct kernel *kn, struct strv *ret);

/* Whether a driver of another version is loaded (and kernel_unload_old will remove it). */
bool kernel_will_reload(const struct kernel *kn);
/* The version of the loaded nvidia module, or NULL. */
const char *kernel_loaded_version(const struct kernel *kn);
/* The flavour of the loaded nvidia module ("open", "proprietary"), or NULL. */
const char *kernel_loaded_module_type(const struct kernel *kn);

/*
 * Predicts whether the kernel will take the driver's modules (ktrust_predict), kept for
 * kernel_describe: INSTALL_FD is the install dir (its file system, for LoadPin), or -1;
 * DRIVERS_FD the package's drivers/ directory when its files are at hand (its nvidia.ko
 * names the signer), else -1. Without the files, SIGNER and KEY_ID are what the signed
 * index says of the package (packages[].signer), or NULL: the signer is then unknown.
 */
void kernel_predict(struct kernel *kn, int install_fd, int drivers_fd, const char *signer,
		    const char *key_id, struct ktrust_prediction *ret);

/* The prediction kernel_predict made, or NULL before it. */
const struct ktrust_prediction *kernel_prediction(const struct kernel *kn);

/* The host's rules, as read by kernel_probe. */
const struct ktrust *kernel_trust(const struct kernel *kn);

/* Prints the kernel part of the plan (dry run), with the prediction once made. */
void kernel_describe(const struct kernel *kn, FILE *out);

/* Unloads a loaded driver of another version. Returns 0 or -1. */
_must_check_ int kernel_unload_old(struct kernel *kn, struct err *e);

/*
 * Unloads the live driver of the version to load, for a reload with new module
 * parameters, after checking it is idle (EXIT_IN_USE otherwise). Returns 0 or -1.
 */
_must_check_ int kernel_unload_current(struct kernel *kn, struct err *e);

/*
 * Loads the prepared set and makes its device nodes; INSTALL_DIR is the host
 * path whose firmware/ the kernel will read. On failure no module of the set
 * stays loaded. The arguments each inserted module was given are recorded (kargs.h);
 * every unload here removes that record. Returns 0 or -1.
 */
_must_check_ int kernel_load(struct kernel *kn, const char *install_dir, struct err *e);

/* Where the last kernel_load spent its time, in microseconds: inside the kernel's module
 * insertion calls (the kernel's own: signature check, relocation, the modules' init), and
 * making the device nodes. Zero before any load. */
struct kernel_load_times {
	uint64_t insert_us;
	uint64_t devices_us;
};
const struct kernel_load_times *kernel_load_times(const struct kernel *kn);

/*
 * uninstall: unloads the driver (EXIT_IN_USE when busy), removes its nodes,
 * firmware links and the record of its module parameters. DRY only checks that the driver could be unloaded.
 */
_must_check_ int kernel_remove(const struct kernel_opts *o, int root_fd, const char *release,
			       bool dry, struct err *e);
