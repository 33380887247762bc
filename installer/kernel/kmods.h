/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel modules with libkmod: what a .ko file is (modinfo), whether the
 * kernel can take it (vermagic, signature), the in-tree modules the driver's
 * set needs (the kernel's modules.dep), unloading what conflicts (nouveau),
 * checking that a loaded driver is idle (holders, processes with /dev/nvidia*
 * open), and inserting and removing the driver's set in dependency order, the
 * kernel's refusals put into words. The host's module tree is
 * ROOT/lib/modules/RELEASE; the kernel's live state is read from ROOT/proc and
 * ROOT/sys without libkmod, which is loaded only when a module is inspected,
 * inserted or removed. No insmod or modprobe process is ever run.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kernel/kernel.h"	  /* the face: what other folders call of this module */
#include "kernel/kmods_explain.h" /* why the kernel refused an insertion */
#include "util/err.h"

/*
 * Whether the file or directory open as FD is on another file system than the kernel's
 * own modules (ROOT/lib/modules/RELEASE), the one LoadPin pins when the kernel loads its
 * first module at boot: 1, 0, or -1 when either cannot be read.
 */
int kmods_other_fs(const struct kmods *k, int fd);

/* Reads a module file's .modinfo. Returns 0, or -1 (EXIT_VERIFY: not a module). */
_must_check_ int kmods_modinfo(struct kmods *k, const char *path, struct kmods_info *ret,
			       struct err *e);

/* ---- the driver's set, and loading it --------------------------------------- */

#define KMODS_MAX 12

struct kmods_entry {
	char name[KMODS_NAME_MAX]; /* "nvidia_uvm" */
	char path[PATH_MAX];	   /* the .ko, as this process can open it */
	char options[512];	   /* "KEY=VALUE ..." from --module-arg */
	struct kmods_info info;
	/*
	 * Live when the set was checked, so neither verified nor (kmods_set_build without
	 * modinfo) read: kmods_load_set refuses to insert it should it be gone by then.
	 */
	bool was_live;
};

/* The modules to load, dependencies first. */
struct kmods_set {
	struct kmods_entry e[KMODS_MAX];
	size_t n;
};

/* The set to build: which modules, where their files are, and what they are given. */
struct kmods_set_request {
	int drivers_fd;	    /* the package's kernel modules directory */
	char *const *names; /* nvidia, nvidia-modeset, ... (any spelling) */
	size_t n_names;
	char *const *args; /* --module-arg: "MODULE.KEY=VALUE" */
	size_t n_args;
	bool modinfo; /* read each file's .modinfo (see kmods_set_build) */
};

/*
 * Builds the set Q->names from the .ko files in Q->drivers_fd, ordered by their
 * dependencies, with the options Q->args give their modules. Returns 0, or -1:
 * EXIT_USAGE for an argument naming a module outside the set, EXIT_VERIFY for a
 * missing or unreadable module file.
 *
 * With Q->modinfo false the files are found but not read: each entry's info holds
 * its name only, and the set keeps the order of the names. For a set that is live
 * at the version to install (kmods_all_live), where nothing will be inserted
 * and the dependencies are loaded by definition.
 */
_must_check_ int kmods_set_build(struct kmods *k, const struct kmods_set_request *q,
				 struct kmods_set *ret, struct err *e);

/* Whether every module of NAMES (any spelling) is live in the kernel. */
bool kmods_all_live(struct kmods *k, char *const *names, size_t n_names);

/* Whether the set holds module NAME (normalised). */
bool kmods_set_has(const struct kmods_set *set, const char *name);

/*
 * GDRCopy's gdrdrv (KMODS_GDRDRV) and GPUDirect Storage's nvidia_fs (KMODS_NVIDIA_FS) are
 * the driver's own, unloaded with it, only once claimed: our load inserted them (the load
 * record says so, kernel.c). Unclaimed, a live one holds the driver from outside.
 */
#define KMODS_GDRDRV 1u
#define KMODS_NVIDIA_FS 2u
void kmods_claim_gpudirect(struct kmods *k, unsigned which);

/*
 * Checks that the loaded driver (every live nvidia* module) can be unloaded:
 * nothing outside it holds it, no reference beyond its own, and no process
 * has /dev/nvidia* open. OURS (N_OURS pids, may be NULL) are the installer's own
 * processes: they are no workload and do not count (the caller stops any of them that
 * holds the driver before unloading it). Returns 0, or -1 with EXIT_IN_USE naming the
 * users.
 */
_must_check_ int kmods_check_idle(struct kmods *k, const pid_t *ours, size_t n_ours, struct err *e);

/* Unloads the loaded driver, holders first. Returns 0, or -1 (EXIT_IN_USE on EBUSY). */
_must_check_ int kmods_unload_driver(struct kmods *k, struct err *e);

/*
 * Whether the module file at PATH imports SYMBOL (leaves it undefined for the kernel to
 * resolve at load; libkmod reads its symtab, with CRCs from __versions where built with
 * MODVERSIONS): 1 or 0, or -1 with E when the file cannot be read as a module.
 */
_must_check_ int kmods_imports(struct kmods *k, const char *path, const char *symbol,
			       struct err *e);

/* Whether module NAME is live, built in, or in the kernel's /lib/modules (modules.dep). */
bool kmods_has_intree(struct kmods *k, const char *name);

/*
 * Checks, before anything changes, that every module the set depends on outside itself is
 * built in, loaded, or in the kernel's /lib/modules; BUF gets those to load, with their
 * own dependencies, comma-separated, dependencies first. 0, or -1 (EXIT_KERNEL_REFUSED)
 * naming the missing one.
 */
_must_check_ int kmods_resolve_intree(struct kmods *k, const struct kmods_set *set, char *buf,
				      size_t size, struct err *e);
/*
 * Loads SET: in-tree dependencies first (from ROOT/lib/modules through
 * libkmod's index), then the set in order; live modules are left as they are.
 * On failure everything this call loaded is unloaded again, and the kernel's
 * errno becomes a message (EXIT_KERNEL_REFUSED) naming the module and the
 * cause; TRUST (signature enforcement, lockdown, LoadPin) says which rule an
 * EPERM comes from. Returns the number of modules loaded.
 */
_must_check_ int kmods_load_set(struct kmods *k, const struct kmods_set *set,
				const struct ktrust *trust, struct err *e);
/* Nanoseconds K's insertions spent inside the kernel (libkmod's finit_module or
 * init_module call: signature check, relocation, the module's init), summed. */
uint64_t kmods_insert_ns(const struct kmods *k);

/*
 * Unloads conflicting drivers (nouveau, nova_core, nova_drm) when loaded and
 * unused; with !MAY_UNLOAD, or when they are in use, fails (EXIT_IN_USE)
 * saying what to do. DRY checks without unloading. Returns 0 or -1.
 */
_must_check_ int kmods_resolve_conflicts(struct kmods *k, bool may_unload, bool dry, struct err *e);
