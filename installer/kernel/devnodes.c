// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kernel/devnodes.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

/* 8 GPUs of 7 MIG instances (a node each for the GPU instance and its compute instance), 64
 * NVSwitches and the rest. */
#define MAX_NODES 512
#define CAPS_DIR "/proc/driver/nvidia/capabilities"
/* nvidia.ko's NVSwitch part (linux_nvswitch.c): its control node's minor, at most 64 switches. */
#define NVSWITCH_CTL_MINOR 255
#define NVSWITCH_MAX 64

struct node {
	char name[64]; /* under /dev: "nvidia0", "nvidia-caps/nvidia-cap1" */
	unsigned major, minor;
	mode_t mode;
	bool root_owned; /* root:root whatever DeviceFileUID/GID say (the NVSwitch nodes) */
};

/* "Key: value" lines; returns the value of KEY as a number, or DEF. */
static long field(const char *buf, const char *key, long def)
{
	size_t kl = strlen(key);

	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) == 0 && l[kl] == ':') {
			char *end;
			long v = strtol(l + kl + 1, &end, 10);

			if (end != l + kl + 1)
				return v;
		}
	}
	return def;
}

void devnodes_parse_params(const char *buf, struct nv_params *p)
{
	p->modify = field(buf, "ModifyDeviceFiles", 1) != 0;
	p->uid = (uid_t)field(buf, "DeviceFileUID", 0);
	p->gid = (gid_t)field(buf, "DeviceFileGID", 0);
	/* The driver prints the mode in decimal (438 = 0666). */
	p->mode = (mode_t)field(buf, "DeviceFileMode", 0666) & 07777;
}

int devnodes_parse_major(const char *proc_devices, const char *name)
{
	const char *l = strstr(proc_devices, "Character devices:");

	for (l = l ? l : proc_devices; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char n[64];
		int major;

		if (strncmp(l, "Block devices:", 14) == 0)
			break;
		if (sscanf(l, " %d %63s", &major, n) == 2 && strcmp(n, name) == 0)
			return major;
	}
	return -1;
}

int devnodes_parse_minor(const char *information)
{
	return (int)field(information, "Device Minor", -1);
}

static int add_node(struct node *nodes, size_t *n, const char *name, unsigned major, unsigned minor,
		    mode_t mode)
{
	if (*n == MAX_NODES)
		return -1;
	snprintf(nodes[*n].name, sizeof(nodes[*n].name), "%s", name);
	nodes[*n].major = major;
	nodes[*n].minor = minor;
	nodes[*n].mode = mode;
	nodes[*n].root_owned = false;
	(*n)++;
	return 0;
}

/* One nvidiaN per GPU the driver reports. */
static int add_gpu_nodes(int root_fd, struct node *nodes, size_t *n, mode_t mode, struct err *e)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int fd;

	fd = fs_dir_in_root(root_fd, "/proc/driver/nvidia/gpus", false, e);
	if (fd < 0) {
		err_clear(e);
		return 0;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return err_errno(e, EXIT_UNEXPECTED, errno, "read /proc/driver/nvidia/gpus");
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *info = NULL;
		char path[300], name[32];
		int minor;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", de->d_name);
		info = fs_read_in_root(root_fd, path, 1 << 20, NULL);
		minor = info ? devnodes_parse_minor(info) : -1;
		if (minor < 0 || minor >= NV_MODESET_MINOR)
			return err_set(e, EXIT_UNEXPECTED, "%s: no valid \"Device Minor\"", path);
		snprintf(name, sizeof(name), "nvidia%d", minor);
		if (add_node(nodes, n, name, NV_MAJOR, (unsigned)minor, mode) < 0)
			return err_set(e, EXIT_UNEXPECTED, "too many GPUs");
	}
	return 0;
}

/* nvidia-caps nodes: minor and mode from capabilities/mig/{config,monitor}. */
static void add_caps_nodes(int root_fd, int major, struct node *nodes, size_t *n)
{
	static const struct {
		const char *file, *node;
	} caps[] = {
		{"/proc/driver/nvidia/capabilities/mig/config", "nvidia-caps/nvidia-cap1"},
		{"/proc/driver/nvidia/capabilities/mig/monitor", "nvidia-caps/nvidia-cap2"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
		_cleanup_free_ char *buf = fs_read_in_root(root_fd, caps[i].file, 1 << 20, NULL);
		long minor = buf ? field(buf, "DeviceFileMinor", -1) : -1;

		if (minor >= 0)
			add_node(nodes, n, caps[i].node, (unsigned)major, (unsigned)minor,
				 (mode_t)field(buf, "DeviceFileMode", 0400) & 07777);
	}
}

/*
 * One nvidia-caps/nvidia-capMINOR for the capability file PATH (DeviceFileMinor, DeviceFileMode).
 */
static void add_cap_node(int root_fd, const char *path, int major, struct node *nodes, size_t *n)
{
	_cleanup_free_ char *buf = fs_read_in_root(root_fd, path, 1 << 16, NULL);
	long minor = buf ? field(buf, "DeviceFileMinor", -1) : -1;
	char name[64];

	/* nvidia-caps' minors are the driver's (nv-caps.c: at most NV_CAP_DRV_MINOR_COUNT). */
	if (minor < 0 || minor > (1 << 20))
		return;
	snprintf(name, sizeof(name), "nvidia-caps/nvidia-cap%ld", minor);
	add_node(nodes, n, name, (unsigned)major, (unsigned)minor,
		 (mode_t)field(buf, "DeviceFileMode", 0444) & 07777);
}

/*
 * The entries of the directory REL (under the host's /proc/driver/nvidia/capabilities)
 * named PREFIX followed by digits, into NAMES (at most MAX); returns how many.
 */
static size_t cap_entries(int root_fd, const char *rel, const char *prefix, char (*names)[16],
			  size_t max)
{
	char path[300];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	size_t k = 0, pl = strlen(prefix);
	struct err e;
	int fd;

	err_clear(&e);
	snprintf(path, sizeof(path), CAPS_DIR "/%s", rel);
	fd = fs_dir_in_root(root_fd, path, false, &e);
	if (fd < 0)
		return 0;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return 0;
	}
	while (k < max && (de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len < 16 && len > pl && strncmp(de->d_name, prefix, pl) == 0 &&
		    strspn(de->d_name + pl, "0123456789") == len - pl)
			memcpy(names[k++], de->d_name, len + 1);
	}
	return k;
}

/*
 * The nodes of the MIG instances the driver has now (GPU instance and compute instance
 * capabilities, capabilities/gpuN/mig/giM/access and .../ciK/access): what the device
 * plugins and the CDI spec of MIG devices name, made here as nvidia-modprobe -f would.
 */
static void add_mig_caps_nodes(int root_fd, int major, struct node *nodes, size_t *n)
{
	char gpus[64][16], gis[16][16], cis[16][16];

	for (size_t g = 0, ng = cap_entries(root_fd, "", "gpu", gpus, 64); g < ng; g++) {
		char mig[32];

		if (str_fmt(mig, sizeof(mig), "%s/mig", gpus[g]) < 0)
			continue;
		for (size_t i = 0, ni = cap_entries(root_fd, mig, "gi", gis, 16); i < ni; i++) {
			char gi[64], path[160];

			snprintf(gi, sizeof(gi), "%s/%s", mig, gis[i]);
			snprintf(path, sizeof(path), CAPS_DIR "/%s/access", gi);
			add_cap_node(root_fd, path, major, nodes, n);
			for (size_t c = 0, nc = cap_entries(root_fd, gi, "ci", cis, 16); c < nc;
			     c++) {
				snprintf(path, sizeof(path), CAPS_DIR "/%s/%s/access", gi, cis[c]);
				add_cap_node(root_fd, path, major, nodes, n);
			}
		}
	}
}

long devnodes_mig_cap_minor(int root_fd, unsigned gpu_minor, unsigned gi, int ci)
{
	char path[160];
	_cleanup_free_ char *buf = NULL;

	if (ci < 0)
		snprintf(path, sizeof(path), CAPS_DIR "/gpu%u/mig/gi%u/access", gpu_minor, gi);
	else
		snprintf(path, sizeof(path), CAPS_DIR "/gpu%u/mig/gi%u/ci%d/access", gpu_minor, gi,
			 ci);
	buf = fs_read_in_root(root_fd, path, 1 << 16, NULL);
	return buf ? field(buf, "DeviceFileMinor", -1) : -1;
}

unsigned devnodes_mig_instances(int root_fd)
{
	char gpus[64][16], gis[16][16], mig[32];
	unsigned n = 0;

	for (size_t g = 0, ng = cap_entries(root_fd, "", "gpu", gpus, 64); g < ng; g++) {
		if (str_fmt(mig, sizeof(mig), "%s/mig", gpus[g]) < 0)
			continue;
		n += (unsigned)cap_entries(root_fd, mig, "gi", gis, 16);
	}
	return n;
}

/* Creates or fixes one node. */
static int sync_node(int dev_fd, const struct node *nd, const struct nv_params *p,
		     struct devnodes_report *r, struct err *e)
{
	dev_t want = makedev(nd->major, nd->minor);
	char tmp[128];
	struct stat st;
	const char *slash = strrchr(nd->name, '/');

	if (slash) {
		char dir[64];

		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - nd->name), nd->name);
		if (mkdirat(dev_fd, dir, 0755) < 0 && errno != EEXIST)
			return err_errno(e, EXIT_UNEXPECTED, errno, "create /dev/%s", dir);
	}
	if (fstatat(dev_fd, nd->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISCHR(st.st_mode) && st.st_rdev == want) {
			if ((st.st_mode & 07777) == nd->mode && st.st_uid == p->uid &&
			    st.st_gid == p->gid) {
				r->kept++;
				return 0;
			}
			if (fchownat(dev_fd, nd->name, p->uid, p->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
			    fchmodat(dev_fd, nd->name, nd->mode, 0) < 0)
				return err_errno(e, EXIT_UNEXPECTED, errno, "chmod /dev/%s",
						 nd->name);
			r->fixed++;
			return 0;
		}
		/* Wrong type or numbers: replaced, whatever it was. */
		if (S_ISDIR(st.st_mode) && fs_rm_rf_at(dev_fd, nd->name, e) < 0)
			return -1;
		r->replaced++;
	} else if (errno != ENOENT) {
		return err_errno(e, EXIT_UNEXPECTED, errno, "stat /dev/%s", nd->name);
	} else {
		r->created++;
	}
	/* A new node under a temporary name, then rename(2): never a moment without one. */
	if (str_fmt(tmp, sizeof(tmp), "%s.tmp-ndi", nd->name) < 0)
		return err_set(e, EXIT_UNEXPECTED, "/dev/%s: name too long", nd->name);
	unlinkat(dev_fd, tmp, 0);
	if (mknodat(dev_fd, tmp, S_IFCHR | nd->mode, want) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mknod /dev/%s (%u:%u)", nd->name,
				 nd->major, nd->minor);
	if (fchownat(dev_fd, tmp, p->uid, p->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fchmodat(dev_fd, tmp, nd->mode, 0) < 0 || renameat(dev_fd, tmp, dev_fd, nd->name) < 0) {
		int r_errno = errno;

		unlinkat(dev_fd, tmp, 0);
		return err_errno(e, EXIT_UNEXPECTED, r_errno, "install /dev/%s", nd->name);
	}
	return 0;
}

static int sync_char_link(int dev_fd, const struct node *nd, struct devnodes_report *r,
			  struct err *e)
{
	_cleanup_close_ int char_fd = -1;
	char link[32], target[96];

	if (mkdirat(dev_fd, "char", 0755) < 0 && errno != EEXIST)
		return err_errno(e, EXIT_UNEXPECTED, errno, "create /dev/char");
	char_fd = openat(dev_fd, "char", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (char_fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open /dev/char");
	snprintf(link, sizeof(link), "%u:%u", nd->major, nd->minor);
	if (str_fmt(target, sizeof(target), "../%s", nd->name) < 0)
		return err_set(e, EXIT_UNEXPECTED, "/dev/%s: name too long", nd->name);
	if (fs_symlink_is(char_fd, link, target))
		return 0;
	r->links++;
	return fs_symlink_replace_at(char_fd, target, link, e);
}

/*
 * The NVSwitch nodes, as nvidia-modprobe -s makes them (nvidia_nvswitch_mknod): the major
 * of "nvidia-nvswitch", nvidia-nvswitchctl at minor 255 and nvidia-nvswitchN per switch,
 * mode from /proc/driver/nvidia-nvswitch/permissions (DeviceFileMode), owned by root (that
 * file names no owner). The driver gives each switch it probes the lowest free minor and
 * says which only through an ioctl on the control node; at load every switch is probed in
 * turn, so the N switches under /proc/driver/nvidia-nvswitch/devices have minors 0 to N-1.
 */
static void add_nvswitch_nodes(int root_fd, int major, struct node *nodes, size_t *n)
{
	_cleanup_free_ char *perm =
		fs_read_in_root(root_fd, "/proc/driver/nvidia-nvswitch/permissions", 4096, NULL);
	mode_t mode = (mode_t)(perm ? field(perm, "DeviceFileMode", 0666) : 0666) & 07777;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e = {0};
	unsigned switches = 0;
	int fd = fs_dir_in_root(root_fd, "/proc/driver/nvidia-nvswitch/devices", false, &e);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		switches += de->d_name[0] != '.';
	if (switches == 0)
		return;
	if (add_node(nodes, n, "nvidia-nvswitchctl", (unsigned)major, NVSWITCH_CTL_MINOR, mode) ==
	    0)
		nodes[*n - 1].root_owned = true;
	for (unsigned i = 0; i < switches && i < NVSWITCH_MAX; i++) {
		char name[32];

		snprintf(name, sizeof(name), "nvidia-nvswitch%u", i);
		if (add_node(nodes, n, name, (unsigned)major, i, mode) == 0)
			nodes[*n - 1].root_owned = true;
	}
}

/*
 * GDRCopy's and GPUDirect Storage's nodes, when our module set has their modules and the
 * kernel registers their chrdevs (/proc/devices), as their own tools make them. gdrdrv
 * registers "gdrdrv" with a dynamic major and makes no node: NVIDIA/gdrcopy insmod.sh:31-41
 * takes the major from /proc/devices, "mknod /dev/gdrdrv c $major 0" and "chmod a+w+r"
 * (0666). nvidia-fs registers "nvidia-fs" (nvfs-core.h:24, nvfs-core.c:2524) and
 * device_create()s nvidia-fs0..N-1 in its class "nvidia-fs-class" (nvfs-core.h:25,
 * nvfs-core.c:2535-2555), mode 0666 (its devnode callback, nvfs-core.c:2456-2464): the
 * devices it made are those of /sys/class/nvidia-fs-class, each with its MAJ:MIN in "dev"
 * (its max_devices parameter is writable, nvfs-core.c:2622, so it may no longer say how
 * many were made). devtmpfs makes those on a host, we make them where /dev is not devtmpfs
 * (a container's). Both root-owned: neither reads the driver's DeviceFileUID/GID, and
 * neither is nvidia.ko's, so its ModifyDeviceFiles does not concern them.
 */
#define GPUDIRECT_MODE 0666
#define NVFS_CLASS "/sys/class/nvidia-fs-class"
#define NVFS_MAX_DEVICES 16U

static bool all_digits(const char *s)
{
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Whether NAME is "PREFIX" followed by one or more digits. */
static bool prefix_digits(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix);

	return strncmp(name, prefix, pl) == 0 && name[pl] && all_digits(name + pl);
}

/* The number of device MINOR of nvidia-fs (its class's nvidia-fsMINOR/dev), or 0. */
static dev_t nvfs_sysfs_dev(int root_fd, unsigned minor)
{
	char path[96];
	_cleanup_free_ char *buf = NULL;
	unsigned maj, min;

	snprintf(path, sizeof(path), NVFS_CLASS "/nvidia-fs%u/dev", minor);
	buf = fs_read_in_root(root_fd, path, 64, NULL);
	if (!buf || sscanf(buf, "%u:%u", &maj, &min) != 2)
		return 0;
	return makedev(maj, min);
}

static void add_gpudirect_nodes(int root_fd, const char *devices, unsigned which,
				struct node *nodes, size_t *n)
{
	int gdr = devnodes_parse_major(devices, "gdrdrv");
	int nvfs = devnodes_parse_major(devices, "nvidia-fs");

	if ((which & DEVNODES_GDRDRV) && gdr > 0 &&
	    add_node(nodes, n, "gdrdrv", (unsigned)gdr, 0, GPUDIRECT_MODE) == 0)
		nodes[*n - 1].root_owned = true;
	if (!(which & DEVNODES_NVIDIA_FS) || nvfs <= 0)
		return;
	for (unsigned i = 0; i < NVFS_MAX_DEVICES; i++) {
		dev_t d = nvfs_sysfs_dev(root_fd, i);
		char name[32];

		/* Only what the module made, at the numbers it gave. */
		if (d == 0 || major(d) != (unsigned)nvfs || minor(d) != i)
			continue;
		snprintf(name, sizeof(name), "nvidia-fs%u", i);
		if (add_node(nodes, n, name, (unsigned)nvfs, i, GPUDIRECT_MODE) == 0)
			nodes[*n - 1].root_owned = true;
	}
}

/* Whether /dev's NAME is GDRCopy's or GPUDirect Storage's node name. */
static bool is_gpudirect_node(const char *name)
{
	return strcmp(name, "gdrdrv") == 0 || prefix_digits(name, "nvidia-fs");
}

bool devnodes_gpudirect_live(int root_fd, const char *name, dev_t rdev)
{
	_cleanup_free_ char *devices = fs_read_in_root(root_fd, "/proc/devices", 1 << 20, NULL);
	char *end;
	unsigned long i;

	if (!devices)
		return false;
	if (strcmp(name, "gdrdrv") == 0)
		return devnodes_parse_major(devices, "gdrdrv") > 0 &&
		       rdev == makedev((unsigned)devnodes_parse_major(devices, "gdrdrv"), 0);
	if (!prefix_digits(name, "nvidia-fs"))
		return false;
	i = strtoul(name + 9, &end, 10);
	return i < NVFS_MAX_DEVICES && devnodes_parse_major(devices, "nvidia-fs") > 0 &&
	       rdev == makedev((unsigned)devnodes_parse_major(devices, "nvidia-fs"), (unsigned)i) &&
	       nvfs_sysfs_dev(root_fd, (unsigned)i) == rdev;
}

/*
 * GDRCopy's and GPUDirect Storage's character devices in /dev that are neither among NODES
 * (the wanted, with their numbers) nor at the numbers the kernel gives that name now (a
 * module loaded by another, the GPU Operator's gdrcopy container: its node is left be):
 * left by a load a reload moved or took out, they would name another driver's device at
 * those numbers. Their /dev/char links go after (drop_stale_link).
 */
static void drop_stale_gpudirect(int root_fd, int dev_fd, const struct node *nodes, size_t n)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e;

	err_clear(&e);
	d = fs_opendir_at(dev_fd, ".", &e);
	while (d && (de = readdir(d))) {
		struct stat st;
		bool wanted = false;

		if (!is_gpudirect_node(de->d_name) ||
		    fstatat(dev_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISCHR(st.st_mode))
			continue;
		for (size_t i = 0; i < n && !wanted; i++)
			wanted = strcmp(nodes[i].name, de->d_name) == 0 &&
				 st.st_rdev == makedev(nodes[i].major, nodes[i].minor);
		if (!wanted && !devnodes_gpudirect_live(root_fd, de->d_name, st.st_rdev) &&
		    unlinkat(dev_fd, de->d_name, 0) == 0)
			log_kv(LOG_INFO, "devices", "stale node removed", "node", de->d_name,
			       U64("major", major(st.st_rdev)), U64("minor", minor(st.st_rdev)),
			       LOG_END);
	}
}

/*
 * The nodes the loaded driver calls for: nvidia.ko's when MODIFY (its ModifyDeviceFiles),
 * and those of GPUDIRECT (DEVNODES_GDRDRV, DEVNODES_NVIDIA_FS) whatever it says.
 */
struct want {
	bool with_modeset, modify; /* nvidia-modeset; ModifyDeviceFiles */
	unsigned gpudirect;	   /* DEVNODES_GDRDRV, DEVNODES_NVIDIA_FS */
	mode_t mode;		   /* of nvidia.ko's nodes */
};

static int wanted_nodes(int root_fd, const struct want *q, struct node *nodes, size_t *n,
			struct err *e)
{
	mode_t mode = q->mode;

	_cleanup_free_ char *devices = fs_read_in_root(root_fd, "/proc/devices", 1 << 20, NULL);
	int uvm = devices ? devnodes_parse_major(devices, "nvidia-uvm") : -1;
	int caps = devices ? devnodes_parse_major(devices, "nvidia-caps") : -1;
	int nvswitch = devices ? devnodes_parse_major(devices, "nvidia-nvswitch") : -1;

	if (devices)
		add_gpudirect_nodes(root_fd, devices, q->gpudirect, nodes, n);
	if (!q->modify)
		return 0;
	add_node(nodes, n, "nvidiactl", NV_MAJOR, NV_CTL_MINOR, mode);
	if (q->with_modeset)
		add_node(nodes, n, "nvidia-modeset", NV_MAJOR, NV_MODESET_MINOR, mode);
	if (uvm > 0) {
		add_node(nodes, n, "nvidia-uvm", (unsigned)uvm, 0, mode);
		add_node(nodes, n, "nvidia-uvm-tools", (unsigned)uvm, 1, mode);
	}
	if (caps > 0) {
		add_caps_nodes(root_fd, caps, nodes, n);
		add_mig_caps_nodes(root_fd, caps, nodes, n);
	}
	if (nvswitch > 0)
		add_nvswitch_nodes(root_fd, nvswitch, nodes, n);
	return add_gpu_nodes(root_fd, nodes, n, mode, e);
}

/* The nodes of devnodes_sync (WHICH: the driver's), or of devnodes_sync_mig (MIG only). */
enum which { ALL_NODES, ALL_NODES_MODESET, MIG_NODES };

static int wanted(int root_fd, enum which w, const struct want *q, struct node *nodes, size_t *n,
		  struct err *e)
{
	_cleanup_free_ char *devices = NULL;
	int caps;

	if (w != MIG_NODES)
		return wanted_nodes(root_fd, q, nodes, n, e);
	if (!q->modify)
		return 0;
	devices = fs_read_in_root(root_fd, "/proc/devices", 1 << 20, NULL);
	caps = devices ? devnodes_parse_major(devices, "nvidia-caps") : -1;
	if (caps > 0)
		add_mig_caps_nodes(root_fd, caps, nodes, n);
	return 0;
}

/*
 * IMEX's default channel, /dev/nvidia-caps-imex-channels/channel0, as NVIDIA's IMEX guide
 * has the administrator make it ("Default Channel Creation",
 * https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/imexchannels.html: the major
 * of /proc/devices' nvidia-caps-imex-channels, minor 0). NVIDIA's device plugin with
 * IMEX_CHANNEL_IDS=0 hands that host node to its containers and, with IMEX_REQUIRED, will
 * not start without it (k8s-device-plugin internal/imex/imex.go:42-64; :75-98: a character
 * device at that path; api/config/v1/imex.go:44-53: the ids are [] or [0]). The driver registers
 * the chrdev from branch 550 with a dynamic major, so a reload may move it: the node is
 * made anew whenever it differs. The directory is judged where it is, in the host's /dev
 * (resolved in the root): a link or another kind of file there, or anything but a
 * character device at channel0, is refused by name, never followed nor replaced.
 */
#define IMEX_DIR DEVNODES_IMEX_CHRDEV
/* channel0 relative to /dev (DEVNODES_IMEX_CHANNEL0 past its "/dev/"). */
static const char *const channel0_in_dev = &DEVNODES_IMEX_CHANNEL0[sizeof("/dev/") - 1];

int devnodes_imex_major(int root_fd)
{
	_cleanup_free_ char *devices = fs_read_in_root(root_fd, "/proc/devices", 1 << 20, NULL);

	return devices ? devnodes_parse_major(devices, DEVNODES_IMEX_CHRDEV) : -1;
}

static int imex_dir_open(int dev_fd, bool create, struct err *e)
{
	struct stat st;
	int fd;

	if (fstatat(dev_fd, IMEX_DIR, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT || !create)
			return err_errno(e, EXIT_UNEXPECTED, errno, "stat /dev/" IMEX_DIR);
		if (mkdirat(dev_fd, IMEX_DIR, 0755) < 0 && errno != EEXIST)
			return err_errno(e, EXIT_UNEXPECTED, errno, "create /dev/" IMEX_DIR);
	} else if (!S_ISDIR(st.st_mode)) {
		err_set(e, EXIT_USAGE, "/dev/" IMEX_DIR " is %s, not a directory",
			S_ISLNK(st.st_mode) ? "a symbolic link" : "another kind of file");
		err_hint(
			e,
			"remove it: the installer makes the directory and channel0 in it (--imex-channel0)");
		return -1;
	}
	fd = openat(dev_fd, IMEX_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open /dev/" IMEX_DIR);
	return fd;
}

/* Anything at channel0 but a character device (which sync_node fixes) is refused. */
static int channel0_kind_ok(int dir_fd, struct err *e)
{
	struct stat st;

	if (fstatat(dir_fd, "channel0", &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISCHR(st.st_mode))
		return 0;
	err_set(e, EXIT_USAGE, DEVNODES_IMEX_CHANNEL0 " is %s, not a character device",
		S_ISREG(st.st_mode)   ? "a regular file"
		: S_ISLNK(st.st_mode) ? "a symbolic link"
		: S_ISDIR(st.st_mode) ? "a directory"
				      : "another kind of file");
	err_hint(e, "remove it: the installer makes channel0 there (--imex-channel0)");
	return -1;
}

int devnodes_imex_channel0(int root_fd, dev_t *ret, struct err *e)
{
	_cleanup_close_ int dev_fd = fs_dir_in_root(root_fd, "/dev", false, e);
	_cleanup_close_ int dir_fd = -1;
	struct stat st;

	if (dev_fd < 0) {
		err_clear(e); /* no /dev yet: nothing there */
		return 0;
	}
	if (fstatat(dev_fd, IMEX_DIR, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 0;
	dir_fd = imex_dir_open(dev_fd, false, e);
	if (dir_fd < 0 || channel0_kind_ok(dir_fd, e) < 0)
		return -1;
	if (fstatat(dir_fd, "channel0", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	*ret = st.st_rdev;
	return 1;
}

int devnodes_imex_check(int root_fd, struct err *e)
{
	dev_t rdev;

	if (devnodes_imex_channel0(root_fd, &rdev, e) < 0)
		return err_wrap(e, "devices");
	return 0;
}

/*
 * Each /dev/char link whose target starts "../": DROP (given the link's name, the target
 * past "../" and ARG) says whether it goes. A missing /dev/char is fine.
 */
static void char_links_walk(int dev_fd,
			    bool (*drop)(const char *link, const char *target, const void *arg),
			    const void *arg)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e;

	err_clear(&e);
	d = fs_opendir_at(dev_fd, "char", &e);
	while (d && (de = readdir(d))) {
		char target[128];
		ssize_t len = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);

		if (len <= 3 || strncmp(target, "../", 3) != 0)
			continue;
		target[len] = '\0';
		if (drop(de->d_name, target + 3, arg))
			unlinkat(dirfd(d), de->d_name, 0);
	}
}

/*
 * The /dev/char links to channel0 of another major than *KEEP: left by the sync before a
 * reload moved the dynamic major (channel0 itself is replaced then), they would name a
 * device the kernel no longer has at that number.
 */
static bool stale_channel0_link(const char *link, const char *target, const void *arg)
{
	char mine[32];

	snprintf(mine, sizeof(mine), "%u:0", *(const unsigned *)arg);
	return strcmp(target, channel0_in_dev) == 0 && strcmp(link, mine) != 0;
}

static int sync_imex_channel0(int root_fd, int dev_fd, const struct nv_params *p,
			      struct devnodes_report *r, struct err *e)
{
	int major = devnodes_imex_major(root_fd);
	struct node nd = {.name = "channel0", .minor = 0, .mode = p->mode};
	_cleanup_close_ int dir_fd = -1;

	if (major <= 0) {
		log_msg(LOG_WARN, "devices",
			"--imex-channel0: the loaded driver registers no " DEVNODES_IMEX_CHRDEV
			" in /proc/devices (IMEX came in branch 550): no channel0 made");
		return 0;
	}
	nd.major = (unsigned)major;
	dir_fd = imex_dir_open(dev_fd, true, e);
	if (dir_fd < 0)
		return -1;
	if (channel0_kind_ok(dir_fd, e) < 0)
		return -1;
	/* sync_node names the node under /dev, which channel0 is not directly. */
	if (sync_node(dir_fd, &nd, p, r, e) < 0)
		return err_errno(e, EXIT_UNEXPECTED, e->sys_errno,
				 "make " DEVNODES_IMEX_CHANNEL0 " (%u:0)", nd.major);
	snprintf(nd.name, sizeof(nd.name), "%s", channel0_in_dev);
	if (sync_char_link(dev_fd, &nd, r, e) < 0)
		return -1;
	char_links_walk(dev_fd, stale_channel0_link, &nd.major);
	return 0;
}

/*
 * channel0 and its directory when left empty (remove_char_links has removed its /dev/char
 * links); a missing one is fine.
 */
static void remove_imex_channel0(int dev_fd)
{
	_cleanup_close_ int dir_fd = -1;
	struct stat st;
	struct err e;

	err_clear(&e);
	dir_fd = imex_dir_open(dev_fd, false, &e);
	if (dir_fd < 0)
		return;
	if (fstatat(dir_fd, "channel0", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode))
		unlinkat(dir_fd, "channel0", 0);
	unlinkat(dev_fd, IMEX_DIR, AT_REMOVEDIR);
}

struct wanted_set {
	int dev_fd;
	const struct node *nodes;
	size_t n;
};

/*
 * /dev/char links to a wanted node under another MAJ:MIN than its own: left by an earlier
 * load whose dynamic major (nvidia-uvm's, gdrdrv's, nvidia-fs's) a reload moved. A runtime
 * that resolves the old numbers through them would find the node of new ones. And links
 * to GDRCopy's and GPUDirect Storage's nodes that are gone or at other numbers now
 * (drop_stale_gpudirect removed them).
 */
static bool stale_link(const char *link, const char *target, const void *arg)
{
	const struct wanted_set *w = arg;
	char own[32];
	struct stat st;
	unsigned maj, min;
	int end = 0;

	for (size_t i = 0; i < w->n; i++) {
		if (strcmp(target, w->nodes[i].name) != 0)
			continue;
		snprintf(own, sizeof(own), "%u:%u", w->nodes[i].major, w->nodes[i].minor);
		if (strcmp(link, own) != 0)
			return true;
	}
	if (!is_gpudirect_node(target))
		return false;
	return sscanf(link, "%u:%u%n", &maj, &min, &end) != 2 || link[end] ||
	       fstatat(w->dev_fd, target, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISCHR(st.st_mode) ||
	       st.st_rdev != makedev(maj, min);
}

static int sync_nodes(int root_fd, enum which w, unsigned gpudirect, bool imex,
		      struct devnodes_report *r, struct err *e)
{
	_cleanup_free_ char *params =
		fs_read_in_root(root_fd, "/proc/driver/nvidia/params", 1 << 20, NULL);
	_cleanup_close_ int dev_fd = -1;
	struct nv_params p;
	struct node nodes[MAX_NODES];
	size_t n = 0;

	memset(r, 0, sizeof(*r));
	devnodes_parse_params(params ? params : "", &p);
	if (!p.modify)
		log_msg(LOG_INFO, "devices",
			"ModifyDeviceFiles is 0: the driver's device files are managed elsewhere");
	if (wanted(root_fd, w, &(struct want){w == ALL_NODES_MODESET, p.modify, gpudirect, p.mode},
		   nodes, &n, e) < 0)
		return err_wrap(e, "devices");
	if (!p.modify && w == MIG_NODES)
		return 0;
	dev_fd = fs_dir_in_root(root_fd, "/dev", true, e);
	if (dev_fd < 0)
		return err_wrap(e, "devices");
	if (w != MIG_NODES)
		drop_stale_gpudirect(root_fd, dev_fd, nodes, n);
	for (size_t i = 0; i < n; i++) {
		struct nv_params np = p;

		if (nodes[i].root_owned)
			np.uid = 0, np.gid = 0;
		if (sync_node(dev_fd, &nodes[i], &np, r, e) < 0 ||
		    sync_char_link(dev_fd, &nodes[i], r, e) < 0)
			return err_wrap(e, "devices");
	}
	char_links_walk(dev_fd, stale_link, &(struct wanted_set){dev_fd, nodes, n});
	if (!p.modify)
		return 0;
	/*
	 * channel0 is optional to the driver: a failure to make it now (mknod refused: a
	 * read-only /dev, a user namespace) is one warning and the driver keeps serving, never
	 * the half install the caller rolls back. What is in the way was refused before the
	 * load (devnodes_imex_check).
	 */
	if (imex && sync_imex_channel0(root_fd, dev_fd, &p, r, e) < 0) {
		log_msg(LOG_WARN, "devices",
			"--imex-channel0: channel0 not made (%s): the driver stays loaded and serves "
			"without it, the install goes on; fix the cause and re-run install (doctor "
			"--imex-channel0 fails the node until then)",
			e->msg);
		err_clear(e);
	}
	return 0;
}

int devnodes_sync(int root_fd, bool with_modeset, unsigned gpudirect, bool imex_channel0,
		  struct devnodes_report *r, struct err *e)
{
	return sync_nodes(root_fd, with_modeset ? ALL_NODES_MODESET : ALL_NODES, gpudirect,
			  imex_channel0, r, e);
}

int devnodes_sync_mig(int root_fd, struct devnodes_report *r, struct err *e)
{
	return sync_nodes(root_fd, MIG_NODES, 0, false, r, e);
}

static bool is_driver_node(const char *name)
{
	static const char *const fixed[] = {"nvidiactl", "nvidia-modeset", "nvidia-uvm",
					    "nvidia-uvm-tools", "nvidia-nvswitchctl"};

	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
		if (strcmp(name, fixed[i]) == 0)
			return true;
	}
	return is_gpudirect_node(name) || prefix_digits(name, "nvidia-nvswitch") ||
	       prefix_digits(name, "nvidia");
}

/*
 * /dev/char links that point at the driver's nodes, and with IMEX (*ARG) those at channel0
 * (of any major: one a reload moved may have left its link).
 */
static bool driver_link(const char *link, const char *target, const void *arg)
{
	(void)link;
	return is_driver_node(target) || strncmp(target, "nvidia-caps/", 12) == 0 ||
	       (*(const bool *)arg && strcmp(target, channel0_in_dev) == 0);
}

int devnodes_remove(int root_fd, bool imex_channel0, struct err *e)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int dev_fd = fs_dir_in_root(root_fd, "/dev", false, e);
	struct dirent *de;

	if (dev_fd < 0) {
		err_clear(e);
		return 0;
	}
	char_links_walk(dev_fd, driver_link, &imex_channel0);
	if (imex_channel0)
		remove_imex_channel0(dev_fd);
	d = fs_opendir_at(dev_fd, ".", e);
	if (!d)
		return err_wrap(e, "devices");
	while ((de = readdir(d))) {
		struct stat st;

		if (fstatat(dev_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if ((S_ISCHR(st.st_mode) && is_driver_node(de->d_name)) ||
		    (S_ISDIR(st.st_mode) && strcmp(de->d_name, "nvidia-caps") == 0)) {
			if (fs_rm_rf_at(dev_fd, de->d_name, e) < 0)
				return err_wrap(e, "devices");
		}
	}
	return 0;
}
