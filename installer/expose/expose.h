/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The last stage: making the installed driver usable and visible. In order:
 * the exec bind mount (and --host-mount targets), the host's ld cache, the
 * NVML verification against the loaded driver, the GPU layout (MIG), the CUDA
 * check of what is then there, the CDI spec, the node
 * labels, and last the readiness marker, so that whatever waits for it finds
 * everything else in place. Uninstall withdraws them in the reverse order:
 * the marker, labels and CDI spec before the kernel side, the ld
 * configuration and the mounts after it.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h"
#include "stage/stage.h"
#include "util/err.h"

/*
 * The face of expose/, the only header of it that other folders include: what other
 * folders call of its parts, for the agent and the commands that read what the stage
 * made (status, doctor), then the stage itself. The rest of each part is in its own
 * header (cdi.h, cuda.h, ...), which only expose/ and the tests include.
 */

/* ---- the time per stage (timing.c) --------------------------------------------- */

enum timing_stage {
	TIMING_HOST,
	TIMING_INDEX,
	TIMING_SELECT,
	TIMING_DOWNLOAD,
	TIMING_UNPACK,
	TIMING_KERNEL,	/* modules verified, the old ones out, the new ones in */
	TIMING_DEVICES, /* /dev/nvidia* made to match what the kernel registered */
	TIMING_PUBLISH,
	TIMING_EXPOSE,
	TIMING_N,
};

struct timing {
	uint64_t us[TIMING_N];
	bool seen[TIMING_N]; /* the stage ran to its end at least once */
	/* Of the kernel stage, the time spent inside the kernel's module insertion calls
	 * (signature check, relocation, the modules' init functions): the kernel's, not ours. */
	uint64_t insert_us;
};

/* Adds US microseconds to STAGE's total: a stage that runs twice (the index, asked again)
 * sums. T may be NULL. */
void timing_add(struct timing *t, enum timing_stage stage, uint64_t us);

/* Adds US microseconds to STAGE's total without counting the stage as ended: the time a
 * stage spent before it failed (the log line shows it, the metrics do not). */
void timing_add_failed(struct timing *t, enum timing_stage stage, uint64_t us);

/*
 * One INFO line, "stage times", with every stage's microseconds as NAME_us (0 for a stage
 * that did not run), in_kernel_us (T's insert_us), own_us (TOTAL_US less in_kernel_us)
 * and total_us (TOTAL_US: the run's start to now). For people and for bench/.
 */
void timing_log(const struct timing *t, uint64_t total_us);

/* ---- what a node pool asks for (mig.c) ----------------------------------------- */

#define MIG_GKE_CONFIG "/etc/nvidia/gpu_config.json"
/*
 * MPS's pipe directory on the host: where GKE's device plugin mounts it from into the
 * containers of an MPS pool, at the same path, the MPS default (container-engine-
 * accelerators, pkg/gpu/nvidia/manager.go, nvidiaMpsDir); and its log directory, MPS's
 * default (NVIDIA's MPS documentation, CUDA_MPS_LOG_DIRECTORY).
 */
#define MIG_MPS_PIPE_DIR "/tmp/nvidia-mps"
#define MIG_MPS_LOG_DIR "/var/log/nvidia-mps"
#define MIG_SIZE_MAX 32

/* GPUSharingConfig.GPUSharingStrategy (gpusharing.go): none, "time-sharing", "mps". */
enum mig_sharing { MIG_SHARING_NONE, MIG_SHARING_TIME, MIG_SHARING_MPS };

struct mig_request {
	char partition_size[MIG_SIZE_MAX]; /* GPUPartitionSize: "1g.10gb", "" for whole GPUs */
	enum mig_sharing sharing;
	unsigned max_shared_clients; /* per GPU or partition; 0 without sharing */
};

/* One partition size of a GPU model. */
struct mig_size {
	const char *name;    /* "1g.10gb" */
	unsigned profile_id; /* the GPU-instance profile id (nvidia-smi mig -lgip) */
	unsigned count;	     /* instances of it one GPU holds */
};

struct mig_model {
	const char *name;     /* "H100 80GB" */
	const char *gke_type; /* the accelerator type GKE names it by: "nvidia-h100-80gb" */
	uint16_t devices[4];  /* its PCI device ids (vendor 0x10de), 0 after the last */
	const struct mig_size *sizes;
	size_t n_sizes;
};

/* The model of the GPU with this PCI id, or NULL where no MIG sizes are known. */
const struct mig_model *mig_model_of(uint16_t vendor, uint16_t device);

/*
 * Opens MPS's directory DIR (MIG_MPS_PIPE_DIR, MIG_MPS_LOG_DIR) under ROOT_FD, made if
 * need be, only where it is what it says: a link on the way that leads elsewhere (to /etc)
 * is refused (EXIT_USAGE), so that nothing of MPS's lands there; and one that is not ours
 * alone (another user's, made first in the sticky /tmp, or one others may write) is refused
 * (EXIT_USAGE, util/fs.h fs_own_dir_in_root), so that no one can replace the root
 * daemon's sockets in it. Returns an fd or -1.
 */
_must_check_ int mig_mps_dir(int root_fd, const char *dir, struct err *e);

/* Reads and parses MIG_GKE_CONFIG under ROOT_FD. Returns 0, 1 when there is none, or -1. */
_must_check_ int mig_read_gke_config(int root_fd, struct mig_request *ret, struct err *e);

/*
 * What REQ's partition size is on the GPU VENDOR:DEVICE: its size (NULL: no partitions
 * asked for). Returns 0, or -1 (EXIT_USAGE) for a GPU with no known MIG sizes or a size
 * its model does not have, E naming the sizes it has.
 */
_must_check_ int mig_size_for_gpu(const struct mig_request *req, uint16_t vendor, uint16_t device,
				  const struct mig_size **ret, struct err *e);

/* ---- GPU partitions through NVML (partition.c) --------------------------------- */

enum part_kind {
	PART_KEEP,     /* no layout asked for: MIG left as it is */
	PART_DISABLED, /* MIG off, instances destroyed: "all-disabled" */
	PART_ENABLED,  /* MIG on, instances as they are: "all-enabled" */
	PART_PROFILE,  /* MIG on, the GPU filled with one profile: "all-1g.10gb" */
};

/* One GPU's layout. */
struct part_one {
	enum part_kind kind;
	char profile[MIG_SIZE_MAX]; /* PART_PROFILE: go-nvlib's name, "1g.10gb" */
};

#define PART_LAYOUT_GPUS 16	 /* GPUs a layout can name (NVML_MAX_GPUS) */
#define PART_LAYOUT_NAME_MAX 512 /* the longest name part_layout_name gives */

/* A layout for the node: one for every GPU, and those of the GPUs named by index. */
struct part_layout {
	enum part_kind kind;	    /* the GPUs not named */
	char profile[MIG_SIZE_MAX]; /* PART_PROFILE: go-nvlib's name, "1g.10gb" */
	struct part_one gpu[PART_LAYOUT_GPUS];
	bool named[PART_LAYOUT_GPUS];
	const char *source; /* where it was asked for: "--mig-layout", gpu_config.json */
};

/*
 * --mig-layout: "all-disabled", "all-enabled", "all-PROFILE" (mig-parted's names), "none"
 * (keep) for every GPU; a comma-separated list of such layouts for GPUs by NVML index,
 * "N=LAYOUT", with at most one for the GPUs not named ("all-disabled,0=all-1g.10gb"); or
 * "gke": GKE's gpu_config.json under ROOT_FD (no file, or one without a GPUPartitionSize:
 * keep). Returns 0, or -1 (EXIT_USAGE) naming what is wrong.
 */
_must_check_ int part_layout_parse(const char *spec, int root_fd, struct part_layout *ret,
				   struct err *e);

/* The layout of GKE's request REQ (already read): its partition size on every GPU, or keep. */
void part_layout_of_gke(const struct mig_request *req, struct part_layout *ret);

/* "all-disabled", "all-1g.10gb", "0=all-1g.10gb,1=all-disabled", "none". */
void part_layout_name(const struct part_layout *l, char *buf, size_t size);

/* The layout of GPU INDEX: its own where L names it, else that of the GPUs not named. */
struct part_one part_layout_for(const struct part_layout *l, unsigned index);

/* Whether L leaves every GPU as it is. */
bool part_layout_keeps(const struct part_layout *l);

/* A MIG device: one compute instance of a GPU instance, what a container is given. */
struct part_mig {
	unsigned gpu;	 /* its GPU's NVML index */
	unsigned index;	 /* among its GPU's MIG devices (nvmlDeviceGetMigDeviceHandleByIndex) */
	unsigned gi, ci; /* its GPU instance's and compute instance's ids */
	char uuid[96];	 /* "MIG-..." */
	char profile[MIG_SIZE_MAX]; /* go-nvlib's name: "1g.10gb", "1g.10gb+me", "1c.2g.20gb" */
	uint64_t memory_mib;
	unsigned sms, gi_slices, ci_slices;
	unsigned copy, decoders, encoders, jpegs, ofas; /* engines, shared within the instance */
};

/* A profile among MIG devices: its first device, and how many have it. */
struct part_profile_count {
	const struct part_mig *first;
	unsigned count;
};

/*
 * The distinct profiles of the N devices MIGS, in the order they first appear, into RET (at
 * most MAX). Returns how many.
 */
size_t partition_profiles(const struct part_mig *migs, unsigned n, struct part_profile_count *ret,
			  size_t max);

/* ---- the NVML check (nvml.c) --------------------------------------------------- */

#define NVML_MAX_GPUS 16

struct nvml_gpu {
	unsigned minor; /* /dev/nvidiaN */
	char name[96];
	char uuid[96];
	uint64_t memory_mib;
	int cc_major, cc_minor;
	/*
	 * Its NVLink fabric, as nvmlDeviceGetGpuFabricInfo (R525 and later) says on Hopper and
	 * later GPUs of NVSwitch systems: NVML_FABRIC_* below; fabric_status is NVML's return
	 * for the GPU's registration, meaningful once COMPLETED.
	 */
	int fabric_state;
	int fabric_status;
	/* MIG mode (nvmlDeviceGetMigMode): 0 off, 1 on; -1 where the GPU has no MIG. */
	int mig_mode, mig_pending;
};

#define NVML_MAX_MIGS (NVML_MAX_GPUS * 7) /* seven instances each at most */

/* nvmlGpuFabricState_t (nvml.h), and UNKNOWN: the library has no such call. */
enum {
	NVML_FABRIC_UNKNOWN = -1,
	NVML_FABRIC_NOT_SUPPORTED = 0,
	NVML_FABRIC_NOT_STARTED = 1,
	NVML_FABRIC_IN_PROGRESS = 2,
	NVML_FABRIC_COMPLETED = 3,
};

/* "not supported", "not started", "in progress", "completed", "unknown". */
const char *nvml_fabric_state_name(int state);

struct nvml_report {
	char driver_version[80];
	int cuda_version; /* 12020 for CUDA 12.2 */
	unsigned n_gpus;
	struct nvml_gpu gpus[NVML_MAX_GPUS];
	unsigned n_migs;
	struct part_mig migs[NVML_MAX_MIGS];
};

/*
 * Loads LIB (a path to libnvidia-ml.so.1) and asks it. Returns 0, or -1 with
 * EXIT_DRIVER_CHECK and what failed (load, init, a query).
 */
_must_check_ int nvml_query(const char *lib, struct nvml_report *ret, struct err *e);

/*
 * Checks a report against what was installed: VERSION, and PCI_GPUS GPUs.
 * Returns 0, or -1 with EXIT_DRIVER_CHECK saying what differs and what to do.
 */
_must_check_ int nvml_check(const struct nvml_report *r, const char *version, size_t pci_gpus,
			    struct err *e);

/* ---- the CUDA check (cuda.c) --------------------------------------------------- */

/* CUDA_ERROR_SYSTEM_NOT_READY (cuda.h): the fabric is not trained, or Fabric Manager is down. */
#define CUDA_SYSTEM_NOT_READY 802

#define CUDA_MAX_GPUS 16

/* How long one process may take: cuInit and a context on each of 8 GPUs take seconds. */
#define CUDA_CHECK_TIMEOUT_S 60

/* Processes asking CUDA at once: each holds a context, hundreds of MiB of host memory. */
#define CUDA_PROBES_AT_ONCE 4

/* CUDA_VISIBLE_DEVICES naming every GPU of a node by its UUID ("GPU-" and 36 characters). */
#define CUDA_VISIBLE_MAX (CUDA_MAX_GPUS * 48)

struct cuda_report {
	/* What was asked. */
	char visible[CUDA_VISIBLE_MAX]; /* CUDA_VISIBLE_DEVICES; "" unset: all CUDA enumerates */
	char what[160]; /* those devices in words: "MIG device MIG-... (GPU 0...)" */
	int expect;	/* how many devices CUDA must see there */
	/* What CUDA answered. */
	int result;		     /* the CUresult of the call that failed, 0 when all passed */
	char call[32];		     /* that call: "cuInit", "cuCtxCreate", ... */
	char error[96];		     /* its name and text, as libcuda gives them ("" if none) */
	int failed_device;	     /* the device whose call failed, or -1 */
	int driver_version;	     /* cuDriverGetVersion: 12020 for CUDA 12.2 */
	int n_devices;		     /* cuDeviceGetCount */
	char bdf[CUDA_MAX_GPUS][16]; /* each device's PCI address, lower case */
};

/*
 * Judges a report: CUDA must see R->expect devices, and each must take a context. FABRIC
 * (the host's NVSwitches as host_fabric names them, or NULL) names the cause of 802.
 * Returns 0, or -1 with EXIT_DRIVER_CHECK, the cause and the fix.
 */
_must_check_ int cuda_check(const struct cuda_report *r, const char *fabric, struct err *e);

/* What CUDA is asked on a node, from NVML's answer. */
struct cuda_plan {
	unsigned whole; /* GPUs outside MIG mode, asked in one process */
	unsigned migs;	/* MIG devices, one process each */
	unsigned idle;	/* GPUs in MIG mode without a MIG device: nothing to ask there */
	unsigned n;	/* processes: one for the whole GPUs (if any), one per MIG device */
	/* The whole GPUs' CUDA_VISIBLE_DEVICES: "" where no GPU is in MIG mode (unset, every
	 * device CUDA enumerates), else their GPU-<uuid> list. */
	char whole_visible[CUDA_VISIBLE_MAX];
};

/*
 * Asks CUDA about the node NV describes, as cuda_plan_node plans it, CUDA_PROBES_AT_ONCE
 * processes at a time, each within TIMEOUT_S, and stops at the first answer that fails.
 * Fills RET with the plan and *RET_LAST with that answer (a result other than 0, or
 * another count than expected), else with the last one (all zero where there was nothing
 * to ask), for cuda_check. Returns 0, or -1 as cuda_probe does, naming the devices asked.
 */
_must_check_ int cuda_probe_node(const char *lib, const struct nvml_report *nv, unsigned timeout_s,
				 struct cuda_plan *ret, struct cuda_report *ret_last,
				 struct err *e);

/* ---- the ld cache (ldcache.c) -------------------------------------------------- */

/* Whether ROOT/etc/ld.so.cache lists SONAME (e.g. "libcuda.so.1") under INSTALL_DIR. */
bool ldcache_has(int root_fd, const char *install_dir, const char *soname);

/* ---- mounts (mounts.c) --------------------------------------------------------- */

struct mount_info {
	char target[PATH_MAX]; /* mount point, as this process sees it */
	char fstype[64];
	char options[256]; /* per-mount (VFS) options */
	bool noexec;
};

/*
 * Finds the mount that holds the directory open as FD, from MOUNTINFO
 * (normally /proc/self/mountinfo). Returns 0, or -1 with e set.
 */
_must_check_ int mounts_lookup_fd(int fd, const char *mountinfo, struct mount_info *ret,
				  struct err *e);

/* ---- the CDI spec (cdi.c) ------------------------------------------------------ */

#define CDI_KIND "nvidia.com/gpu"
#define CDI_FILE "nvidia-driver-installer.json"
/* Another producer's spec, set aside by --cdi-replace, gets this suffix. */
#define CDI_SET_ASIDE ".replaced-by-nvidia-driver-installer"

/* Whether KIND is a CDI kind ("vendor/class", the CDI library's character rules). */
bool cdi_kind_is_valid(const char *kind);

/*
 * Where our spec goes and what it points at: the host root, the directory our spec is
 * written to and the install dir its mounts come from. Built once by the caller, it is what
 * the functions that find, write, set aside or remove specs are given, instead of the three.
 */
struct cdi_place {
	int root_fd;		 /* the host's / (not owned) */
	const char *cdi_dir;	 /* host path of our spec's directory (--cdi-dir) */
	const char *install_dir; /* host path */
};

/*
 * Another producer's spec of KIND on the node: the first *.json or *.yaml in
 * /etc/cdi, /var/run/cdi and P's cdi_dir (under its root_fd; each directory once, however
 * it is named) that declares KIND and is not ours. Files are read as the CDI library
 * reads them, a link followed (inside the root), but only regular files of at most
 * CDI_SPEC_MAX bytes; ours are told by what they resolve to (device and inode), not by
 * name: cdi_dir/CDI_FILE, or a legacy cdi_dir/nvidia.json that mounts from P's
 * install_dir, under any name that leads to them. Writes its host path to ret.
 * Returns 1 found, 0 none.
 */
int cdi_find_other(const struct cdi_place *p, const char *kind, char *ret, size_t size);

/* What cdi_find_stale found: the spec's host path, and the first path it names that is gone. */
struct cdi_stale {
	char spec[PATH_MAX];
	char missing[PATH_MAX];
};

/*
 * Another producer's spec (read as cdi_find_other reads them, of any kind) that names a
 * path under P's install_dir that no longer resolves: NVIDIA's tools resolve our links and
 * write .versions/ID/... paths, which a switch removes with the version (docs/design.md,
 * "Specs of others after a switch"). Fills RET. Returns 1 found, 0 none.
 */
int cdi_find_stale(const struct cdi_place *p, struct cdi_stale *ret);

/* The kind our spec at P declares, into RET. Returns 0, or -1 when there is none. */
int cdi_our_kind(const struct cdi_place *p, char *ret, size_t size);

/* Of what kind our spec is, and the rule for another producer's of that kind. */
struct cdi_rule {
	const char *kind;
	bool replace; /* --cdi-replace: theirs set aside; else theirs win, ours withdrawn */
};

/* What cdi_settle found and did. */
struct cdi_settled {
	char theirs[4200];    /* host path of the other producer's spec that stays, or "" */
	char set_aside[4200]; /* the last one set aside, or "" */
	unsigned n_set_aside;
	bool withdrew; /* ours was there, and is withdrawn */
	bool conflict; /* on error: ours and theirs both stay, and a runtime resolves neither */
};

/*
 * The rule for another producer's spec of R's kind (docs/design.md, "One producer per
 * kind"), applied to our spec at P at install and at each look of the agent: two specs
 * that define KIND=0 make a runtime drop the device for every container. Without
 * R->replace theirs win: ours is withdrawn. With it, each of theirs is set aside
 * (cdi_set_aside). Fills RET. Returns 1 when no spec of theirs stays (ours may stand), 0
 * when one does and ours is withdrawn, -1 when the rule could not be applied
 * (RET->conflict says whether both stay).
 */
_must_check_ int cdi_settle(const struct cdi_place *p, const struct cdi_rule *r,
			    struct cdi_settled *ret, struct err *e);

/* ---- labels, readiness, metrics (nodeinfo.c) ----------------------------------- */

/*
 * NFD reads features.d in file name order and a later file's value wins: ours sorts
 * before GPU feature discovery's "gfd", so that GFD's labels win where it runs.
 */
#define LABELS_FILE "/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver"
#define READY_FILE "/run/nvidia/validations/driver-ready"
/*
 * An upgrade that waits (installer/stage/pending.h), in a labels file of its own so that the
 * driver's labels file stays untouched while the old driver serves.
 */
#define LABELS_PENDING_FILE                                                                        \
	"/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver-pending"
#define PENDING_LABEL_KEY "nvidia.com/gpu.driver-installer.upgrade-pending"
#define PENDING_REASON_LABEL_KEY "nvidia.com/gpu.driver-installer.upgrade-pending-reason"
/*
 * A pending version that failed and was withdrawn (struct pending_failure), in a file of its
 * own.
 */
#define LABELS_PENDING_FAILED_FILE                                                                 \
	"/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver-pending-failed"
#define PENDING_FAILED_LABEL_KEY "nvidia.com/gpu.driver-installer.upgrade-failed"

/*
 * Writes the pending-upgrade labels (VERSION waits for REASON, PENDING_DRIVER_IN_USE or
 * PENDING_MODULE_ARGS), or removes them when VERSION is NULL. Returns 0 or -1.
 */
_must_check_ int labels_pending_write(int root_fd, const char *version, const char *reason,
				      struct err *e);
/*
 * Writes the label of a pending version that failed (VERSION), or removes it when VERSION
 * is NULL. Returns 0 or -1.
 */
_must_check_ int labels_pending_failed_write(int root_fd, const char *version, struct err *e);

/*
 * Writes the labels file (only when it changes), and removes the one releases before
 * 00-nvidia-driver wrote. Returns 1 written, 0 unchanged, -1.
 */
_must_check_ int labels_write(int root_fd, const struct driver_id *d, const struct nvml_report *r,
			      size_t pci_gpus, struct err *e);

/*
 * Writes the readiness marker: what the GPU Operator's driver validator writes for our
 * layout (a host driver where a standard path has nvidia-smi, else the driver root
 * INSTALL_DIR), then our own keys. Returns 0 or -1.
 */
_must_check_ int readiness_write(int root_fd, const char *install_dir, const char *version,
				 struct err *e);

/*
 * Removes the readiness marker and the driver's labels, not the pending-upgrade labels (the
 * record they show stays). Returns 0 or -1.
 */
_must_check_ int nodeinfo_remove_driver(int root_fd, struct err *e);
void readiness_remove(int root_fd);

/* How a metrics file of ours starts: hostpath.c replaces no file that starts otherwise. */
#define METRICS_MARK "# HELP nvidia_driver_installer_"

/* What the last install run did, for the metrics file. */
struct metrics_report {
	int exit_code;
	struct driver_id driver;       /* the driver the run wanted; a NULL field: not known */
	const char *index_fallback;    /* why the cached index served (or NULL) */
	const struct timing *times;    /* the stages that ran to their end, or NULL */
	const struct pending *pending; /* the upgrade that waits, or NULL */
	/* the pending version that failed and was withdrawn, or NULL */
	const struct pending_failure *failed;
	const struct waiting *waiting; /* what the run waits for (--wait-for-package), or NULL */
};

/*
 * Writes a Prometheus textfile at PATH (a host path under root_fd) from R: success, exit
 * code, driver version, kernel and module flavour (no label without one), whether the
 * node's cached index served although the mirrors were asked (index_fallback:
 * source_fallback_name), the time of each stage, the upgrade that waits and its reason,
 * and the pending version that failed and was withdrawn. Returns 0 or -1.
 */
_must_check_ int metrics_write(int root_fd, const char *path, const struct metrics_report *r,
			       struct err *e);

/*
 * Writes TEXT to the host path PATH under ROOT_FD when it differs from what is there (a
 * new file, renamed into place). Returns 1 written, 0 unchanged, -1.
 */
_must_check_ int nodeinfo_write_file(int root_fd, const char *path, const char *text,
				     struct err *e);

/* ---- the stage (expose.c) ------------------------------------------------------ */

#define EXPOSE_RUN_DIR "/run/nvidia-driver-installer" /* this process's own, for staging */
/* NVIDIA's Fabric Manager, in the installed bin/: the node agent runs it on NVSwitch hosts. */
#define EXPOSE_FABRICMANAGER "nv-fabricmanager"
/* NVIDIA's NVLink Subnet Manager, which NVLink 5 fabrics need before Fabric Manager. */
#define EXPOSE_NVLSM "nvlsm"

/* What the expose stage reads of the configuration: host paths, and the CDI choices. */
/* What a run of expose_run left waiting, for the caller to record. */
struct expose_result {
	bool layout_deferred;		   /* the GPU layout asked for waits for idle GPUs */
	char layout[PART_LAYOUT_NAME_MAX]; /* its name ("all-1g.10gb") */
	char why[1024];			   /* who holds the GPUs */
};

struct expose_opts {
	const char *root;	   /* the host's / as this process sees it (--root) */
	const char *install_dir;   /* host path */
	const char *container_dir; /* where containers see the install dir */
	char *const *host_mounts;  /* more host paths to bind the install dir onto */
	size_t n_host_mounts;
	const char *cdi_dir;	/* host path of the CDI spec directory */
	const char *cdi_kind;	/* the kind our spec declares */
	bool cdi_replace;	/* set aside another producer's spec of that kind */
	const char *mig_layout; /* --mig-layout (partition.h); NULL: none */
	/*
	 * --when-busy defer: a layout change refused for busy GPUs leaves the layout as it is
	 * and says so in *RESULT (not NULL then), the run going on; else it fails (exit 7).
	 */
	bool defer_busy;
	struct expose_result *result;
	/* Called before GPUs are judged busy (the node agent's daemons stop), or NULL. */
	int (*before_busy_check)(void *arg, struct err *e);
	void *before_busy_arg;
	bool skip_verify; /* no NVML check (hosts without a GPU) */
};

/*
 * Exposes VERSION, installed in the directory open as INSTALL_FD. Without a
 * loaded driver of that version (--skip-modules), stops after the ld cache.
 * Returns 1 when the driver was made ready (the marker written), 0 when it
 * stopped after the ld cache, or after the CDI spec on an NVSwitch system whose CUDA waits
 * for Fabric Manager (the node agent's to start; the labels and marker are then its), or
 * -1 (EXIT_DRIVER_CHECK when NVML or CUDA disagrees; no marker then).
 */
_must_check_ int expose_run(const struct expose_opts *o, int root_fd, int install_fd,
			    const struct host *h, const char *version, struct err *e);

/*
 * After a failed install: when no nvidia module is loaded on RELEASE (a manual rmmod, a
 * run killed during a reload, a load that failed), nothing may keep saying that a driver
 * is here: the readiness marker, the driver's labels and the CDI spec are withdrawn, as
 * after a failed NVML check (the pending-upgrade labels stay with their record). Nothing
 * changes while a driver is loaded, or when the kernel's state cannot be read. Returns 1
 * when withdrawn, else 0; a file that cannot be removed is a warning.
 */
int expose_withdraw_unloaded(const struct expose_opts *o, int root_fd, const char *release);

/* uninstall, first: the readiness marker, the labels, the CDI spec. Returns 0 or -1. */
_must_check_ int expose_withdraw_notices(const struct expose_opts *o, int root_fd, struct err *e);

/* uninstall, after the kernel side: the ld configuration and the mounts. Returns 0 or -1. */
_must_check_ int expose_withdraw_host(const struct expose_opts *o, int root_fd, struct err *e);
