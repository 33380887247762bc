// SPDX-License-Identifier: Apache-2.0
/*
 * What the node is, gathered once and read only (agent/agent.h, struct nodestate): what is
 * installed, what the kernel runs, what was published. The node agent judges it at every
 * look; status and doctor report it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent/agent.h"
#include "expose/expose.h"
#include "kernel/kernel.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

static bool exists(int root_fd, const char *path)
{
	struct err e;
	_cleanup_close_ int fd = fs_open_in_root(root_fd, path, O_PATH, 0, 0, &e);

	return fd >= 0;
}

static void bindings(int root_fd, struct nodestate *s)
{
	for (size_t i = 0; i < s->host.n_gpus && i < ARRAY_SIZE(s->bindings); i++) {
		char path[128], target[PATH_MAX];
		struct err e;
		_cleanup_close_ int dev = -1;
		ssize_t n;

		snprintf(s->bindings[i].bdf, sizeof(s->bindings[i].bdf), "%s", s->host.gpus[i].bdf);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", s->host.gpus[i].bdf);
		dev = fs_dir_in_root(root_fd, path, false, &e);
		if (dev < 0 || (n = readlinkat(dev, "driver", target, sizeof(target) - 1)) <= 0)
			continue;
		target[n] = '\0';
		str_fmt_cut(s->bindings[i].driver, sizeof(s->bindings[i].driver), "%s",
			    strrchr(target, '/') ? strrchr(target, '/') + 1 : target);
	}
}

static void device_nodes(int root_fd, struct nodestate *s)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e;
	size_t per_gpu = 0;
	bool ctl = false;
	int dev = fs_dir_in_root(root_fd, "/dev", false, &e);

	if (dev < 0 || !(d = fdopendir(dev))) {
		if (dev >= 0)
			close(dev);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (strncmp(de->d_name, "nvidia", 6) != 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISCHR(st.st_mode))
			continue;
		if (s->n_nodes < NODESTATE_MAX_NODES)
			str_fmt_cut(s->nodes[s->n_nodes++], sizeof(s->nodes[0]), "/dev/%s",
				    de->d_name);
		if (major(st.st_rdev) == NV_MAJOR && minor(st.st_rdev) == NV_CTL_MINOR)
			ctl = true;
		else if (major(st.st_rdev) == NV_MAJOR && minor(st.st_rdev) < NV_MODESET_MINOR)
			per_gpu++;
	}
	s->nodes_ok = ctl && per_gpu >= s->host.n_gpus;
}

static void firmware(int root_fd, const struct nodestate_opts *o, struct nodestate *s)
{
	const char *v = s->manifest.driver_version;
	char path[PATH_MAX], param[PATH_MAX] = "";
	_cleanup_close_ int fd = -1;
	struct err e;

	snprintf(path, sizeof(path), "%s/firmware/nvidia/%s", o->install_dir, v);
	if (!exists(root_fd, path)) {
		s->firmware_ok = true;
		snprintf(s->firmware_how, sizeof(s->firmware_how),
			 "the package has no GSP firmware");
		return;
	}
	snprintf(path, sizeof(path), "/lib/firmware/nvidia/%s", v);
	if (exists(root_fd, path)) {
		s->firmware_ok = true;
		str_fmt_cut(s->firmware_how, sizeof(s->firmware_how), "%s", path);
		return;
	}
	fd = fs_open_regular_in_root(root_fd, "/sys/module/firmware_class/parameters/path", 0, &e);
	if (fd >= 0) {
		ssize_t n = read(fd, param, sizeof(param) - 1);

		param[n > 0 ? n : 0] = '\0';
		param[strcspn(param, "\n")] = '\0';
	}
	snprintf(path, sizeof(path), "%s/firmware", o->install_dir);
	s->firmware_ok = strcmp(param, path) == 0;
	str_fmt_cut(s->firmware_how, sizeof(s->firmware_how), "firmware_class.path '%s'", param);
}

static void installed(const struct nodestate_opts *o, int root_fd, struct nodestate *s)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct modsig_result sig;
	struct statvfs vfs;
	char path[PATH_MAX];
	struct err e;
	int fd;

	err_clear(&e);
	if (publish_open(root_fd, o->install_dir, false, &dir, &e) != 0)
		return;
	s->has_mount =
		mounts_lookup_fd(publish_fd(dir), "/proc/self/mountinfo", &s->mount, &e) == 0;
	if (fstatvfs(publish_fd(dir), &vfs) == 0)
		s->free_mib = (uint64_t)vfs.f_bavail * vfs.f_frsize >> 20;
	if (publish_current(dir, &s->manifest, &e) != 0)
		return;
	s->installed = true;
	publish_current_id(dir, s->install_id, sizeof(s->install_id));
	snprintf(path, sizeof(path), "/proc/self/fd/%d/drivers/nvidia.ko", publish_fd(dir));
	fd = fs_open_regular_at(AT_FDCWD, path, 0, &e);
	if (fd >= 0 && modsig_check_fd(fd, NULL, &sig, &e) == 0) {
		s->signed_module = sig.is_signed;
		snprintf(s->signer, sizeof(s->signer), "%s", sig.signer);
	}
	if (fd >= 0)
		close(fd);
	/*
	 * NVML is asked even when the installed driver is not the loaded one: its answer
	 * ("Driver Not Loaded", a version mismatch) is the cause in the driver's own words.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/lib64/libnvidia-ml.so.1", publish_fd(dir));
	s->nvml_ok = nvml_query(path, &s->nvml, &e) == 0;
	if (!s->nvml_ok)
		str_fmt_cut(s->nvml_error, sizeof(s->nvml_error), "%s", e.msg);
}

int nodestate_collect(const struct nodestate_opts *o, int root_fd, struct nodestate *s,
		      struct err *e)
{
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	const struct cdi_place at = {
		.root_fd = root_fd, .cdi_dir = o->cdi_dir, .install_dir = o->install_dir};
	struct err ie;
	char path[PATH_MAX];

	memset(s, 0, sizeof(*s));
	err_clear(&ie);
	s->host_ok = host_probe(root_fd, o->kernel_release, &s->host, &ie) == 0;
	if (!s->host_ok && ie.code == EXIT_USAGE) {
		*e = ie;
		return -1;
	}
	bindings(root_fd, s);
	if (kmods_new(root_fd, s->host.kernel[0] ? s->host.kernel : "none", &k, &ie) == 0 &&
	    kmods_loaded_version(k, "nvidia", s->loaded_version, sizeof(s->loaded_version)) < 0)
		s->loaded_version[0] = '\0';
	if (k && kmods_loaded_module_type(k, "nvidia", s->loaded_type, sizeof(s->loaded_type)) < 0)
		s->loaded_type[0] = '\0';
	ktrust_probe(root_fd, &s->trust);
	installed(o, root_fd, s);
	device_nodes(root_fd, s);
	if (s->installed)
		firmware(root_fd, o, s);
	s->ld_ok = ldcache_has(root_fd, o->install_dir, "libcuda.so.1");
	snprintf(path, sizeof(path), "%s/%s", o->cdi_dir, CDI_FILE);
	s->cdi_present = exists(root_fd, path);
	if (cdi_find_other(&at, o->cdi_kind, s->cdi_other, sizeof(s->cdi_other)) != 1)
		s->cdi_other[0] = '\0';
	s->labels_present = exists(root_fd, LABELS_FILE);
	s->ready_present = exists(root_fd, READY_FILE);
	return 0;
}

void nodestate_done(struct nodestate *s)
{
	host_done(&s->host);
	manifest_done(&s->manifest);
}
