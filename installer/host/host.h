/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The face of host/, the only header of it that other folders include. What the installer
 * needs to know about the node: the OS (os-release), the kernel release and architecture,
 * the NVIDIA GPUs on the PCI bus, NVLink 5's management ports, the loaded modules that
 * matter here (/proc/modules) and SELinux; every file is read under the host root fd. Host
 * paths judged by where they resolve, and whether this process runs in a container. What
 * only host/ uses is in its internal headers (host/probe.h, hostpath.h, nvlink.h,
 * selinux.h, boot.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cleanup.h"
#include "util/err.h"

#define PCI_VENDOR_NVIDIA 0x10de

struct gpu {
	char bdf[32];	    /* "0000:00:04.0" */
	uint16_t vendor;    /* 0x10de */
	uint16_t device;    /* 0x2330 */
	uint32_t pci_class; /* 0x030200 */
};

#define HOST_MAX_MODULES 16
/* The longest kernel release: uname's (struct utsname's release, less its NUL). */
#define HOST_RELEASE_MAX 64

/* A loaded kernel module that is NVIDIA's or competes for its GPUs. */
struct loaded_module {
	char name[64];
	char version[64]; /* /sys/module/NAME/version, or "" */
};

/* NVLink 5's management ports (host/nvlink.h). */
#define HOST_MAX_NVLINK_PORTS 8

struct nvlink_port {
	char ibdev[64];	    /* the InfiniBand device: "mlx5_0" */
	unsigned port;	    /* its port number: 1 */
	uint64_t guid;	    /* the port GUID: the interface id of the port's GID 0 */
	char guid_text[19]; /* as NVLSM and Fabric Manager take it: "0x0002c90300317b01" */
};

/* What host_scan_nvlink found: the management ports, and whether ib_umad is loaded. */
struct nvlink {
	struct nvlink_port ports[HOST_MAX_NVLINK_PORTS];
	size_t n_ports;
	bool ib_umad;
};

/* SELinux on the node, and the label of what we publish for containers (host/selinux.h). */
enum selinux_mode {
	SELINUX_DISABLED, /* no selinuxfs with a policy: no label matters */
	SELINUX_PERMISSIVE,
	SELINUX_ENFORCING,
};

/* The type that containers may read and execute (container-selinux, refpolicy). */
#define SELINUX_CONTAINER_TYPE "container_file_t"
#define SELINUX_CONTEXT_MAX 256

struct selinux {
	enum selinux_mode mode;
	bool mls; /* the policy has levels (MCS or MLS): contexts end in one */
	/*
	 * The label to publish with ("system_u:object_r:container_file_t:s0"), or "" where
	 * SELinux is disabled or its policy has no container_file_t (no container policy:
	 * containers do not run confined by it).
	 */
	char context[SELINUX_CONTEXT_MAX];
	/*
	 * The kernel modules' label (drivers/ of each version): modules_object_t at s0, or ""
	 * where CONTEXT is, or the policy has no such type (drivers/ then gets CONTEXT).
	 */
	char modules_context[SELINUX_CONTEXT_MAX];
	bool checked; /* the policy confirmed CONTEXT (selinuxfs's context file) */
};

struct host {
	char *os_id;	     /* os-release ID ("cos", "ubuntu"), never NULL after probe */
	char *os_version_id; /* VERSION_ID, or NULL */
	char *os_build_id;   /* BUILD_ID, or NULL */
	char *os_pretty;     /* PRETTY_NAME, or NULL */
	char *os_like;	     /* ID_LIKE: the IDs it derives from, blank-separated, or NULL */
	char kernel[256];    /* kernel release, as uname -r prints it */
	char arch[64];	     /* uname -m */
	struct gpu *gpus;
	size_t n_gpus;
	size_t n_nvswitches;  /* NVIDIA functions of PCI class "bridge, other": NVSwitch */
	struct nvlink nvlink; /* NVLink 5: the NVSwitches' management ports (host/nvlink.h) */
	bool modules_known;   /* false where the kernel has no module support */
	struct loaded_module modules[HOST_MAX_MODULES];
	size_t n_modules;
	struct selinux selinux; /* its mode, and the label published files carry (selinux.h) */
};

/* The kernel the host boots next (host/boot.c), read from its files, nothing run. */
struct host_boot {
	char newest[HOST_RELEASE_MAX + 1]; /* the newest installed kernel with an image, or "" */
	size_t n_installed;
	char next[HOST_RELEASE_MAX + 1]; /* the kernel it boots next, or "" when none is known */
	char why[512];			 /* why NEXT is thought next */
	bool newest_after_next; /* a boot loader default read, and NEWEST later than NEXT */
};

/*
 * The installed kernels (/lib/modules/R with an image in /boot or the tree), the newest
 * in the distribution's version order (dpkg's, or rpm's on rpm distributions), and the
 * kernel of the boot loader's default entry: GRUB (grub.cfg, grubenv; BLS entries with
 * blscfg), else systemd-boot (loader.conf), else the newest installed. Returns 0 (an
 * unreadable file is no answer), or -1 with e set when memory runs out.
 */
_must_check_ int host_boot_next(int root_fd, const struct host *h, struct host_boot *ret,
				struct err *e);

/*
 * Whether the host is of the distribution ID: its own ID, or one ID_LIKE names (a rebuild:
 * Rocky Linux's "rhel centos fedora"), as os-release(5) means it.
 */
bool host_os_is(const struct host *h, const char *id);

/*
 * Parses a PCI id as the index and --gpu write it, "10de:2330" (four hex digits, a colon,
 * four hex digits; either case). Returns 0, or -1 when S is not exactly that.
 */
int host_parse_pci_id(const char *s, uint16_t *ret_vendor, uint16_t *ret_device);

/*
 * What the host's NVSwitches are, for messages: "2 NVSwitch(es)" (on the PCI bus) or
 * "NVLink 5 NVSwitches behind 2 management port(s)", into BUF; NULL when it has none.
 */
const char *host_fabric(const struct host *h, char *buf, size_t size);

/*
 * A GPU of a multi-node NVLink domain (GB200, GB300 NVL72 racks: GKE's A4X): a job whose
 * GPUs span nodes needs NVIDIA's IMEX (its daemon, nvidia-imex, and the channels of the
 * driver's nvidia-caps-imex-channels, from branch 550). MIN_VERSION: the first release that
 * drives it, by NVIDIA's list of supported GPUs (host/nvlink.c cites where each row comes
 * from).
 */
struct host_imex_gpu {
	uint16_t device; /* vendor 0x10de */
	const char *name;
	const char *min_version; /* "570.123.01" */
};

/* The first GPU of H that needs IMEX for multi-node NVLink (host_imex_gpu), or NULL. */
const struct gpu *host_imex_first(const struct host *h, const struct host_imex_gpu **ret_row);

/* What a driver lacks for a GPU's IMEX (host_imex_lack). */
enum host_imex_lack {
	HOST_IMEX_SERVED = 0,
	HOST_IMEX_NOT_DRIVEN,  /* older than the GPU's first release: no GPU, no IMEX */
	HOST_IMEX_NO_PROGRAMS, /* no nvidia-imex and nvidia-imex-ctl: single-node jobs run */
};

/*
 * What driver VERSION ("570.86.16") with (HAS_IMEX) or without nvidia-imex and
 * nvidia-imex-ctl lacks for ROW's GPU's IMEX, the version judged first (one built with IMEX
 * older than the GPU's first release does not drive the GPU at all), by the same numeric
 * comparison as host_imex_gate: the answer, with the reason in BUF ("driver 570.86.16 does
 * not drive the GB200 (570.123.01 or later does)", "it carries no nvidia-imex and
 * nvidia-imex-ctl"), "" when served. Every row's version is of branch 550 or later, where
 * the driver's IMEX came in. coverage and doctor say the same with it.
 */
enum host_imex_lack host_imex_lack(const char *version, bool has_imex,
				   const struct host_imex_gpu *row, char *buf, size_t size);

/*
 * The version a fix for ROW's GPU names ("install ... VERSION or later"): its own first
 * release, and HOST_IMEX_DNS_NAMES_MIN at the least, so that the fix serves ComputeDomains
 * too.
 */
const char *host_imex_fix_version(const struct host_imex_gpu *row);

/*
 * The oldest driver whose IMEX NVIDIA's DRA driver serves ComputeDomains with as it ships:
 * its IMEXDaemonsWithDNSNames feature gate, on by default, needs it, and its
 * compute-domain kubelet plugin refuses to start on an older driver (host/nvlink.c cites
 * where).
 */
#define HOST_IMEX_DNS_NAMES_MIN "570.158.01"

/*
 * Whether driver VERSION ("570.133.20"), which otherwise serves IMEX (host_imex_lack), is
 * older than HOST_IMEX_DNS_NAMES_MIN: true with what that means in BUF and the fix in FIX
 * (a newer 570, or the gate off), else false and both "". A warning, not a lack: IMEX
 * itself runs, and the DRA driver serves it with the gate off.
 */
bool host_imex_gate(const char *version, char *buf, size_t size, char *fix, size_t fix_size);

/*
 * Whether DCGM on H reads NVLink 5 switches through NVIDIA's libnvsdm (libnvsdm.so.1): an
 * x86_64 host with NVLink 5 management ports (host_scan_nvlink) or an HGX GPU of an NVLink 5
 * baseboard (host/nvlink.c cites its rows). True with what says so in BUF ("GPU 10de:2901
 * (B200)", "2 NVLink 5 management port(s)"); false and BUF "" elsewhere, aarch64 included,
 * for which NVIDIA ships no libnvsdm.
 */
bool host_nvsdm_wanted(const struct host *h, char *buf, size_t size);

/*
 * The first branch NVIDIA ships libnvsdm for (gpu-driver-container ubuntu24.04/precompiled/
 * nvidia-driver:69; build-driver-package's nvsdm.FIRST_BRANCH, which test_bdp_nvsdm holds
 * to this).
 */
#define HOST_NVSDM_FIRST_BRANCH 560

/*
 * The fix for a driver of BRANCH whose package has no libnvsdm, into BUF: a driver of
 * HOST_NVSDM_FIRST_BRANCH or later below it (build-driver-package --nvsdm refuses older
 * ones), else its package built again with --nvsdm. coverage and doctor say the same with it.
 */
void host_nvsdm_fix(unsigned long branch, char *buf, size_t size);

/*
 * Probes the host under root_fd. KERNEL (may be NULL) overrides the running
 * kernel's release. Returns 0, or -1 with e set; on failure *h holds nothing.
 */
_must_check_ int host_probe(int root_fd, const char *kernel, struct host *h, struct err *e);

/* A node image, as coverage's options name it. */
struct host_image {
	const char *os;	      /* os-release ID */
	const char *os_build; /* os-release BUILD_ID, or NULL */
	const char *kernel;   /* kernel release */
	const char *arch;     /* uname -m; amd64, arm64 too */
	char *const *gpu_ids; /* "10de:2330" */
	size_t n_gpus;
};

/*
 * A host as its node image IMG describes it, not probed, for asking the repository about
 * a node that is not this one. Returns 0, or -1 (EXIT_USAGE naming the value) with *h
 * holding nothing.
 */
_must_check_ int host_describe(const struct host_image *img, struct host *h, struct err *e);

/* Frees what host_probe allocated; the struct may be reused. */
void host_done(struct host *h);

/* ---- host paths judged by where they resolve (host/hostpath.h) ---- */

/* The host paths a command writes, links, mounts over or deletes in. */
struct hostpath_opts {
	const char *install_dir; /* required, as are cache_dir and cdi_dir */
	const char *cache_dir;
	const char *cdi_dir;
	char *const *host_mounts;
	size_t n_host_mounts;
	const char *metrics_file; /* or NULL */
	/*
	 * How the first line of a metrics file of ours begins (expose/expose.h, METRICS_MARK):
	 * an existing --metrics-file is taken over only when it does. At most 127 bytes.
	 */
	const char *metrics_mark;
};

/*
 * The canonical in-root spelling of PATH ("/a/b"): every existing component
 * resolved inside root_fd (links followed, as the installer will follow them),
 * the missing tail appended as spelled, without "." or repeated slashes. A link
 * that dangles or a component that is not a directory is refused. Returns 0, or
 * -1 with e set (EXIT_USAGE for a path that cannot name a directory).
 */
_must_check_ int hostpath_resolve(int root_fd, const char *path, char *ret, size_t size,
				  struct err *e);

/*
 * Checks every host-path option of O against the host under root_fd, before
 * anything is written: each must resolve to a place that is not a system
 * directory, and --metrics-file must name a *.prom file in such a place that
 * is absent or ours. Returns 0, or -1 with e set (EXIT_USAGE) naming the
 * option, its spelling and where it resolves.
 */
_must_check_ int hostpath_check_config(const struct hostpath_opts *o, int root_fd, struct err *e);

/*
 * Whether the installer can write at host path PATH: its nearest existing
 * ancestor is checked for a read-only file system (fstatvfs) and for write
 * permission for this process's effective ids. Returns 0 when writable, or -1
 * with e set (EXIT_USAGE) naming PATH, the directory that decides, and a fix.
 */
_must_check_ int hostpath_check_writable(int root_fd, const char *name, const char *path,
					 struct err *e);

/*
 * Checks, before anything changes, that install can write what it writes: the
 * install dir, the cache dir and the host's /run (the lock). Returns 0 or -1
 * (EXIT_USAGE).
 */
_must_check_ int hostpath_check_install_writable(const struct hostpath_opts *o, int root_fd,
						 struct err *e);

/*
 * ---- where this process itself runs (host/runenv.c) ----
 *
 * Whether it is inside a container, judged from the signals container engines document
 * (docs/configuration.md, "Running in a container"). Only this process's own file system
 * and environment are read, never the host root's.
 */

/* The variables among the signals, as set (NULL or "" when unset); config.c reads them. */
struct runenv_vars {
	const char *container;	      /* `container`: podman, systemd-nspawn, LXC */
	const char *k8s_service_host; /* KUBERNETES_SERVICE_HOST: the kubelet sets it in pods */
};

/*
 * Whether this process runs in a container: the first signal seen of the `container`
 * variable, /run/.containerenv (podman, buildah), /.dockerenv (Docker),
 * /run/systemd/container (systemd, in the container it runs in) and KUBERNETES_SERVICE_HOST.
 * The files are looked for under PREFIX: "" for this process's own /, a directory in tests.
 * Returns true with what was seen in RET_SIGNAL ("container=podman", "/.dockerenv"), or
 * false with RET_SIGNAL "".
 */
bool runenv_in_container(const char *prefix, const struct runenv_vars *vars, char *ret_signal,
			 size_t size);

/* ---- SELinux (host/selinux.h) ---- */

/*
 * Reads SELinux's state under ROOT_FD (enforce, mls) and asks the policy whether it knows
 * the label (a write to selinuxfs's context file, which the kernel answers EINVAL for a
 * type it has not). A selinuxfs that cannot be written (mounted read-only in a container)
 * cannot say: the label is then taken as valid, and CHECKED is false.
 */
void selinux_probe(int root_fd, struct selinux *ret);

/* The label to publish with, or NULL where none is to be set. */
static inline const char *selinux_label(const struct selinux *s)
{
	return s->context[0] ? s->context : NULL;
}

/* "disabled", "permissive" or "enforcing". */
const char *selinux_mode_name(enum selinux_mode m);

/*
 * The hard links of a tree the installer labels: its entries that are not directories and
 * have more than one name, each with how many of its names lie in the tree. A label is on
 * the inode, so labelling a name labels every other: an entry is labelled only where it is
 * the installer's, a directory, or a regular file or symbolic link whose every name lies in
 * the tree (the installer links a version's usr/bin/ to its bin/, and carries lib64/ across
 * versions by link, all inside the install dir). A hard link to a file outside it (the
 * host's /etc/shadow) would give that file the container label, and is left as it is, as
 * is any device, FIFO or socket, which the installer never makes there.
 */
struct selinux_links {
	struct selinux_link *v; /* sorted by device and inode */
	size_t n;
	/* What the passes given these links left unlabelled: how many, and the first. */
	size_t skipped;
	char first_skipped[512];
};

/*
 * Counts the hard links under DIRFD/NAME (NULL or "": DIRFD's tree), links not followed.
 * Returns 0 and *RET (selinux_links_free), or -1 with E set.
 */
_must_check_ int selinux_links_new(int dirfd, const char *name, struct selinux_links **ret,
				   struct err *e);
void selinux_links_free(struct selinux_links *l);
DEFINE_POINTER_CLEANUP(struct selinux_links, selinux_links_free)

/*
 * Labels DIRFD's NAME (NULL or "": DIRFD itself) and, where TREE and it is a directory,
 * everything under it with CONTEXT, where it carries another, never following a link (a
 * link is labelled itself), and only what is the installer's by LINKS (above; NULL: the
 * links of what this call labels), which counts what it skips. Returns the number of
 * entries changed, or -1 with e set: EXIT_USAGE when the kernel refused (the installer
 * runs confined), EXIT_UNEXPECTED else. A file system without labels (EOPNOTSUPP) is -1
 * with e's errno EOPNOTSUPP, for the caller to judge.
 */
_must_check_ int selinux_label_at(int dirfd, const char *name, const char *context, bool tree,
				  struct selinux_links *links, struct err *e);

/* What selinux_find_mislabelled found: how many, and the first, by path under DIRFD. */
struct selinux_mislabel {
	size_t count;
	size_t total;
	char first[512];
	char first_label[SELINUX_CONTEXT_MAX]; /* "" when it has none */
	size_t foreign; /* entries not the installer's, which no pass labels (selinux_links) */
	char first_foreign[512];
};

/*
 * Counts the entries of DIRFD/NAME's tree (NULL: DIRFD's; itself included, links not
 * followed, at most MAX_ENTRIES) whose type or level is not CONTEXT's, and apart, those
 * that are not the installer's by LINKS (NULL: the links of that tree), which
 * selinux_label_at leaves as they are. Returns 0, or -errno when its own label cannot be
 * read (EOPNOTSUPP: a file system without labels).
 */
int selinux_find_mislabelled(int dirfd, const char *name, const char *context, size_t max_entries,
			     const struct selinux_links *links, struct selinux_mislabel *ret);
