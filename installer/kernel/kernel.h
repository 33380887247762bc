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

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "stage/stage.h"
#include "util/err.h"
#include "util/str.h"

/*
 * The face of kernel/, the only header of it that other folders include: what other
 * folders call of its parts, module signatures, the kernel's trust, modules and the
 * driver's device nodes, then the stage itself. The rest of each part is in its own
 * header (modsig.h, ktrust.h, kmods.h, devnodes.h), which only kernel/ and the tests
 * include.
 */

/* ---- module signatures (modsig.c) ------------------------------------------- */

/* The certificates modules must be signed with (--module-cert). */
struct modsig_certs;

/*
 * Loads certificates from PATHS: PEM (one or more per file) or DER. Returns 0,
 * or -1 with EXIT_USAGE naming the file.
 */
_must_check_ int modsig_certs_load(char *const *paths, size_t n, struct modsig_certs **ret,
				   struct err *e);
void modsig_certs_free(struct modsig_certs *c);
DEFINE_POINTER_CLEANUP(struct modsig_certs, modsig_certs_free)

struct modsig_result {
	bool is_signed;
	bool verified;	    /* the signature verifies with a pinned certificate */
	char signer[256];   /* the matching certificate's subject, else the issuer named */
	char key_id[160];   /* subject key id, or serial number, as hex pairs */
	bool named_by_skid; /* key_id is the subject key id the signature names */
	/* what the kernel shows as the matching pinned cert's id (modsig_certs_kernel_id) */
	char cert_kernel_id[160];
	char hash_algo[32]; /* "sha256" */
	/* SHA-256 of the matching pinned certificate's DER, lower-case hex; "" if none */
	char cert_sha256[65];
	char reason[512]; /* why not verified; "" when verified */
};

/*
 * Examines the module open as FD: parses the signature and, with CERTS (may
 * be NULL or empty), verifies it. A module that is unsigned, malformed or
 * signed by another key is a result, not an error: *ret says why. Returns 0,
 * or -1 with e set on I/O trouble.
 */
_must_check_ int modsig_check_fd(int fd, const struct modsig_certs *certs,
				 struct modsig_result *ret, struct err *e);

/* ---- what the kernel trusts (ktrust.c) ---------------------------------------- */

#define KTRUST_MAX_KEYS 32

/* An asymmetric key as /proc/keys describes it: "SUBJECT: KEYID". */
struct ktrust_key {
	char subject[128]; /* the certificate's CN, or "O: CN" as the kernel names it */
	char key_id[96];   /* lower-case hex: its subject key id, else its serial number */
};

struct ktrust {
	char sig_enforce[16]; /* "yes", "no" or "unknown" */
	char lockdown[32];    /* "none", "integrity", "confidentiality" or "unknown" */
	char secure_boot[16]; /* "enabled", "disabled" or "unknown" (no EFI variables) */
	/*
	 * LoadPin: "enforcing", "permissive" (the sysctl reads 0), "excluded" (the kernel
	 * command line exempts kernel modules), "off" (not among the active LSMs) or
	 * "unknown" (no /sys/kernel/security/lsm to read).
	 */
	char loadpin[16];
	bool has_keys;	    /* /proc/keys could be read */
	char keyrings[128]; /* the trusted keyrings /proc/keys shows, comma-separated */
	struct ktrust_key keys[KTRUST_MAX_KEYS]; /* the asymmetric keys it shows */
	size_t n_keys;
};

/*
 * Reads the state from ROOT/sys, ROOT/proc/keys, ROOT/proc/sys/kernel/loadpin and
 * ROOT/proc/cmdline. Never fails: what cannot be read is "unknown".
 */
void ktrust_probe(int root_fd, struct ktrust *ret);

enum ktrust_verdict { KTRUST_LOADS, KTRUST_REFUSED, KTRUST_UNKNOWN };

struct ktrust_prediction {
	enum ktrust_verdict verdict;
	char rule
		[32]; /* what decides: "loadpin", "sig_enforce", "lockdown", "trusted key", "none" */
	char why[512];	/* a sentence */
	char need[384]; /* when not KTRUST_LOADS: what the modules need, naming the key; else "" */
};

/* "loads", "refused" or "unknown". */
const char *ktrust_verdict_name(enum ktrust_verdict v);

/* ---- kernel modules (kmods.c, kmods_set.c) ----------------------------------- */

#define KMODS_NAME_MAX 64

struct kmods_info {
	char name[KMODS_NAME_MAX]; /* "nvidia_uvm": modinfo's name, '-' as '_' */
	char version[64];
	char vermagic[256];
	char depends[512]; /* comma-separated module names */
};

struct kmods_report {
	char file[256];
	bool has_info;
	struct kmods_info info;
	struct modsig_result sig;
	bool vermagic_ok;
	bool ok;	   /* signature (when required) and vermagic pass */
	int code;	   /* when !ok: EXIT_VERIFY or EXIT_KERNEL_REFUSED */
	char verdict[640]; /* "ok", or why not */
};

struct kmods;

/*
 * Opens libkmod for RELEASE with the host's module tree under root_fd (which
 * may be missing: modules from files still work, in-tree lookups do not).
 * Returns 0 or -1.
 */
_must_check_ int kmods_new(int root_fd, const char *release, struct kmods **ret, struct err *e);
void kmods_free(struct kmods *k);
DEFINE_POINTER_CLEANUP(struct kmods, kmods_free)

/* Normalises a module name in place: '-' becomes '_', as the kernel does. */
void kmods_normalise_name(char *name);

/*
 * Everything the kernel would check before it runs the module at PATH:
 * modinfo, vermagic against RELEASE, and the signature against CERTS (only
 * required when CERTS holds any). Returns 0 with the verdict in *ret, or -1
 * on I/O trouble.
 */
_must_check_ int kmods_inspect(struct kmods *k, const char *path, const struct modsig_certs *certs,
			       const char *release, struct kmods_report *ret, struct err *e);

enum kmods_state { KMODS_ABSENT, KMODS_LIVE, KMODS_COMING, KMODS_GOING, KMODS_BUILTIN };

/*
 * Splits "MODULE.KEY=VALUE" into the module (normalised) and "KEY=VALUE".
 * Returns 0, or -1 (EXIT_USAGE) when malformed: not UTF-8, a module name of other than
 * letters, digits, '_' and '-', a key of other than letters, digits and '_', an empty
 * value, or one with a space, a quote or a control character.
 */
_must_check_ int kmods_parse_arg(const char *arg, char *module, size_t msize, char *kv,
				 size_t kvsize, struct err *e);

/* The state of module NAME, from ROOT/sys/module/NAME. */
enum kmods_state kmods_get_state(struct kmods *k, const char *name);

/* The version of loaded module NAME (ROOT/sys/module/NAME/version). 0, or -1 if none. */
int kmods_loaded_version(struct kmods *k, const char *name, char *buf, size_t size);

/*
 * The flavour of loaded module NAME, by its license as the kernel judged it: "proprietary"
 * when ROOT/sys/module/NAME/taint carries P (a license that is not GPL-compatible, as
 * NVIDIA's proprietary nvidia.ko has, "NVIDIA"), "open" when it does not (the open
 * nvidia.ko is "Dual MIT/GPL"). Returns 0, or -1 when NAME is not live or shows no taint.
 */
int kmods_loaded_module_type(struct kmods *k, const char *name, char *buf, size_t size);
/*
 * The processes under ROOT_FD's /proc, but OURS, with a /dev/nvidia* node (nvidia-fsN
 * among them) or /dev/gdrdrv open: each
 * appended to BUF ("/dev/nvidia0 open in pid 42 (python3)", "; " between; BUF holds a
 * string, "" for none). Returns how many were found.
 */
size_t kmods_open_users(int root_fd, const pid_t *ours, size_t n_ours, char *buf, size_t size);

/* ---- the driver's device nodes (devnodes.c) ---------------------------------- */

/* nvidiaN is NV_MAJOR:N, nvidiactl and nvidia-modeset take the two top minors. */
#define NV_MAJOR 195
#define NV_CTL_MINOR 255
#define NV_MODESET_MINOR 254

struct devnodes_report {
	unsigned created, replaced, fixed, kept, links; /* fixed: mode or owner corrected */
};

/*
 * The chrdev of IMEX's channels in /proc/devices (nvidia.ko from branch 550) and its node,
 * in the directory of the chrdev's name (NVIDIA's IMEX guide, "Default Channel Creation").
 */
#define DEVNODES_IMEX_CHRDEV "nvidia-caps-imex-channels"
#define DEVNODES_IMEX_CHANNEL0 "/dev/" DEVNODES_IMEX_CHRDEV "/channel0"

/* The major /proc/devices gives DEVNODES_IMEX_CHRDEV under ROOT_FD, or -1 when none. */
int devnodes_imex_major(int root_fd);

/*
 * DEVNODES_IMEX_CHANNEL0 under ROOT_FD as install judges it, no link followed: 1 with its
 * device number in *RET (a character device), 0 when it or its directory is missing, -1
 * with E naming what is there instead (the directory a link or not a directory, channel0
 * not a character device).
 */
int devnodes_imex_channel0(int root_fd, dev_t *ret, struct err *e);

/*
 * Makes only the nodes of the MIG instances the driver has now (nvidia-caps/nvidia-capN of
 * each capabilities/gpuN/mig/giM and its ciK): for partitions made after the install, by
 * whatever tool; the node agent calls it on each look. Returns 0 and what it did, or -1.
 */
_must_check_ int devnodes_sync_mig(int root_fd, struct devnodes_report *ret, struct err *e);

/*
 * The nvidia-caps minor of GPU instance GI (CI < 0) or of its compute instance CI on the
 * GPU /dev/nvidiaGPU_MINOR, from the driver's capability file; -1 where there is none.
 */
long devnodes_mig_cap_minor(int root_fd, unsigned gpu_minor, unsigned gi, int ci);

/*
 * Whether /dev's NAME ("gdrdrv", "nvidia-fsN") at device number RDEV is GDRCopy's or
 * GPUDirect Storage's node at the numbers the kernel gives it now (/proc/devices' major,
 * and for nvidia-fsN the device nvidia-fs made, /sys/class/nvidia-fs-class/nvidia-fsN/dev).
 */
bool devnodes_gpudirect_live(int root_fd, const char *name, dev_t rdev);

/* ---- GPUDirect RDMA (rdma.c) ---------------------------------------------------- */

/* --rdma: which path serves GPUDirect RDMA (docs/design.md, "GPUDirect RDMA"). */
enum kernel_rdma { KERNEL_RDMA_OFF, KERNEL_RDMA_AUTO, KERNEL_RDMA_PEERMEM, KERNEL_RDMA_DMABUF };
/* What serves it: nothing, nvidia-peermem over the RDMA stack, or the kernel's dma-buf. */
enum kernel_rdma_path { RDMA_PATH_NONE, RDMA_PATH_PEERMEM, RDMA_PATH_DMABUF };

/* "off", "auto", "peermem", "dmabuf" into *RET: 0, or -1 when S is none of them. */
int kernel_rdma_parse(const char *s, enum kernel_rdma *ret);
/* "none", "peermem", "dmabuf". */
const char *kernel_rdma_path_name(enum kernel_rdma_path p);

/* What the node shows of RDMA, read from ROOT/sys, ROOT/proc and its module tree. */
struct kernel_rdma_probe {
	bool stack_live;      /* ib_core is live (or built in): the node's RDMA stack is up */
	bool stack_in_tree;   /* ib_core is live, built in or in /lib/modules/RELEASE */
	bool peer_api;	      /* the kernel exports ib_register_peer_memory_client (MOFED's) */
	bool dmabuf_import;   /* the kernel exports ib_umem_dmabuf_get (read when stack_live) */
	bool peermem_live;    /* nvidia_peermem is live */
	bool peermem_stub;    /* the package's nvidia-peermem imports no peer-memory API */
	char release[128];    /* the kernel's */
	char module_type[16]; /* the driver's flavour: "open", "proprietary" or "" (unknown) */
};

/* The decision: the path, or an error (code != 0) with its cause and fix; WHY says why. */
struct kernel_rdma_decision {
	enum kernel_rdma_path path;
	int code;      /* 0, or EXIT_KERNEL_REFUSED: the mode asked for cannot be served */
	char why[384]; /* one sentence: what serves RDMA, or why nothing does */
	char fix[256]; /* when code != 0 */
};

/* What kernel_rdma_plan decides on. */
struct kernel_rdma_plan_request {
	enum kernel_rdma mode;
	int root_fd;
	const char *release;
	const char *module_type; /* the package's or the installed manifest's, or NULL */
	struct kmods *k;	 /* with DRIVERS_FD >= 0: the package's nvidia-peermem judged */
	int drivers_fd;		 /* -1: the package is not at hand (a plan before download) */
};

/*
 * The probe (nothing for off) and the decision in one, as install's plan, the kernel
 * stage and the agent make it: *P and *RET. 0, or -1 with E when the node cannot be read
 * (a refusal of the mode is in RET->code, not an error here).
 */
_must_check_ int kernel_rdma_plan(const struct kernel_rdma_plan_request *q,
				  struct kernel_rdma_probe *p, struct kernel_rdma_decision *ret,
				  struct err *e);

/* What the node agent asks at each look (kernel_rdma_reload). */
struct kernel_rdma_reload {
	enum kernel_rdma mode;
	int root_fd;
	const char *release;	 /* the running kernel's */
	int drivers_fd;		 /* the installed version's drivers/ */
	const char *version;	 /* the installed version: loaded only when nvidia is live at it */
	const char *module_type; /* the installed manifest's flavour, or NULL */
	char *const *module_certs; /* --module-cert: the file is verified with them first */
	size_t n_module_certs;
	/* Everything checked but nothing inserted: HOLD says why (the agent's debounce, or
	 * its back-off after a refusal); NULL to load when due. */
	const char *hold;
};

/*
 * nvidia-peermem loaded again after the RDMA stack came back (MOFED's driver container
 * restarted openibd): where the path is peermem, nvidia is live at RQ->version, every
 * module nvidia-peermem depends on but nvidia is live (the stack is never loaded here) and
 * nvidia_peermem is not, its file is verified (signature, vermagic) and inserted. *RET is
 * the decision; WAITING gets why nothing was loaded, or "". Returns 1 when it loaded it,
 * 0 when nothing was to do, -1 with E (the module refused, by us or by the kernel).
 */
/*
 * The RDMA stack's instance: an id of the live ib_core's sysfs directory (made anew by each
 * load of the module), 0 when none is live. Two looks that read the same id saw one load.
 */
uint64_t kernel_rdma_stack_instance(int root_fd);

/* An id of drivers/nvidia-peermem.ko's bytes (inode and mtime), 0 when it cannot be read. */
uint64_t kernel_rdma_peermem_file_id(int drivers_fd);

_must_check_ int kernel_rdma_reload(const struct kernel_rdma_reload *rq,
				    struct kernel_rdma_decision *ret, char *waiting, size_t size,
				    struct err *e);

/* ---- the stage --------------------------------------------------------------- */

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
	bool imex_channel0;	  /* make (uninstall: remove) DEVNODES_IMEX_CHANNEL0 */
	enum kernel_rdma rdma;	  /* --rdma: peermem adds nvidia-peermem to the set */
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
 * each replaced where o->module_args gives the same MODULE.KEY, then o->module_args.
 * kernel_prepare does it
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
 * names the signer), else -1. Without the files, SIGNER is what the signed index says of
 * the package (packages[].signer), or NULL: the signer is then unknown. A pinned
 * certificate (--module-cert) of the signer's digest tells the key id the kernel shows.
 */
struct kernel_signer {
	const char *subject, *key_id, *sha256; /* packages[].signer */
};
void kernel_predict(struct kernel *kn, int install_fd, int drivers_fd,
		    const struct kernel_signer *signer, struct ktrust_prediction *ret);

/* The prediction kernel_predict made, or NULL before it. */
const struct ktrust_prediction *kernel_prediction(const struct kernel *kn);

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
 * firmware links and the record of its module parameters. DRY only checks that the driver
 * could be unloaded.
 */
_must_check_ int kernel_remove(const struct kernel_opts *o, int root_fd, const char *release,
			       bool dry, struct err *e);
