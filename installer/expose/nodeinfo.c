// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build_info.h" /* INSTALLER_VERSION, INSTALLER_COMMIT: the Makefile makes it */
#include "expose/nodeinfo.h"
#include "expose/timing.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/prom.h"

/* Earlier releases' labels file: it sorted after GFD's "gfd" and overrode GFD's labels. */
#define LABELS_FILE_OLD "/etc/kubernetes/node-feature-discovery/features.d/nvidia-driver"
/* The label only we write: how a labels file of ours is known. */
#define OUR_LABEL_KEY "nvidia.com/gpu.driver-installer.version"
#define OUR_LABEL OUR_LABEL_KEY "="
/*
 * The loaded driver's module flavour. GPU feature discovery writes no label for it (its
 * labels are gpu.*, cuda.*, mig.*, mps.*, vgpu.* and gfd.timestamp), so it goes under
 * our own prefix, beside our version label, where no GFD key can ever override it.
 */
#define MODULE_TYPE_LABEL_KEY "nvidia.com/gpu.driver-installer.kernel-module-type"

/*
 * nvidia.com/gpu.product as GPU feature discovery writes it (k8s-device-plugin,
 * internal/lm/resource.go, sanitise()): characters outside [A-Za-z0-9-_. ] deleted,
 * the words between runs of blanks joined with '-', nothing cut or trimmed. Returns
 * false when that is no Kubernetes label value (over 63 characters, or not beginning
 * and ending with a letter or digit): NFD ignores GFD's label then, and we write none.
 */
static bool is_alnum(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool gfd_product(const char *name, char *out, size_t size)
{
	size_t n = 0;
	bool blank = false;

	for (; *name; name++) {
		char c = *name;

		if (c == ' ') {
			blank = n > 0;
			continue;
		}
		if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
			continue;
		if (blank && n + 1 < size)
			out[n++] = '-';
		blank = false;
		if (n + 1 < size)
			out[n++] = c;
	}
	out[n] = '\0';
	return n == 0 || (n <= 63 && is_alnum(out[0]) && is_alnum(out[n - 1]));
}

/* FILE's body is "KEY=VALUE" lines; appends one. */
static void add(char *buf, size_t size, size_t *len, const char *key, const char *value)
{
	if (*len < size)
		*len += (size_t)snprintf(buf + *len, size - *len, "%s=%s\n", key, value);
}

/*
 * MIG's labels as GFD writes them (k8s-device-plugin, internal/lm/nvml.go and
 * mig-strategy.go, resource.go): mig.capable for the node; the MIG devices' product
 * ("MODEL-MIG-PROFILE", '+' written '.'), count, memory (MiB), multiprocessors, slices and
 * engines from each device's attributes. GFD's strategy is a setting; ours follows the
 * layout, as the device plugin would advertise it: none while no GPU is in MIG mode (no
 * mig.strategy), "single" (those labels under gpu.*, over the whole GPUs') when every GPU
 * holds MIG devices of one profile, else "mixed" (one mig-PROFILE.* set per profile).
 */
static void mig_attrs(char *buf, size_t size, size_t *len, const char *prefix,
		      const struct part_mig *m, unsigned count)
{
	static const char *const keys[] = {"count",	      "memory",		 "multiprocessors",
					   "slices.gi",	      "slices.ci",	 "engines.copy",
					   "engines.decoder", "engines.encoder", "engines.jpeg",
					   "engines.ofa"};
	unsigned long long values[] = {count,	     (unsigned long long)m->memory_mib,
				       m->sms,	     m->gi_slices,
				       m->ci_slices, m->copy,
				       m->decoders,  m->encoders,
				       m->jpegs,     m->ofas};
	char key[128], v[32];

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		snprintf(key, sizeof(key), "%s.%s", prefix, keys[i]);
		snprintf(v, sizeof(v), "%llu", values[i]);
		add(buf, size, len, key, v);
	}
}

static void mig_product(const struct nvml_report *r, const struct part_mig *m, char *out,
			size_t size)
{
	char model[96], name[192];

	if (!gfd_product(r->gpus[m->gpu].name, model, sizeof(model)) ||
	    snprintf(name, sizeof(name), "%s-MIG-%s", model, m->profile) >= (int)sizeof(name)) {
		out[0] = '\0';
		return;
	}
	for (char *c = name; *c; c++)
		*c = *c == '+' ? '.' : *c;
	if (!gfd_product(name, out, size))
		out[0] = '\0';
}

/* Whether R's GPUs are all in MIG mode, holding MIG devices of one profile. */
static bool mig_single(const struct nvml_report *r)
{
	bool single = r && r->n_migs > 0;

	for (unsigned i = 0; single && i < r->n_gpus; i++)
		single = r->gpus[i].mig_mode == 1;
	for (unsigned i = 1; single && i < r->n_migs; i++)
		single = strcmp(r->migs[i].profile, r->migs[0].profile) == 0;
	return single;
}

static void mig_labels(char *buf, size_t size, size_t *len, const struct nvml_report *r,
		       bool single)
{
	struct part_profile_count ps[NVML_MAX_MIGS];
	size_t n = partition_profiles(r->migs, r->n_migs, ps, ARRAY_SIZE(ps));
	bool capable = false;
	char v[96], prefix[96];

	for (unsigned i = 0; i < r->n_gpus; i++)
		capable |= r->gpus[i].mig_mode >= 0;
	add(buf, size, len, "nvidia.com/mig.capable", capable ? "true" : "false");
	if (r->n_migs == 0)
		return;
	add(buf, size, len, "nvidia.com/mig.strategy", single ? "single" : "mixed");
	for (size_t i = 0; i < n; i++) {
		snprintf(prefix, sizeof(prefix), "nvidia.com/%s%s", single ? "gpu" : "mig-",
			 single ? "" : ps[i].first->profile);
		for (char *c = prefix; *c; c++)
			*c = *c == '+' ? '.' : *c;
		mig_product(r, ps[i].first, v, sizeof(v));
		if (v[0]) {
			char key[128];

			snprintf(key, sizeof(key), "%s.product", prefix);
			add(buf, size, len, key, v);
		}
		mig_attrs(buf, size, len, prefix, ps[i].first, ps[i].count);
	}
}

char *labels_render(const struct driver_id *d, const struct nvml_report *r, size_t pci_gpus)
{
	const char *version = d->version;
	char buf[16384], v[96], parts[3][16] = {"", "", ""};
	size_t len = 0;
	bool single = mig_single(r);

	buf[0] = '\0';
	add(buf, sizeof(buf), &len, "nvidia.com/gpu.present", pci_gpus ? "true" : "false");
	snprintf(v, sizeof(v), "%zu", r ? (size_t)r->n_gpus : pci_gpus);
	/* Under MIG's single strategy, product, count and memory are the MIG devices'. */
	if (!single)
		add(buf, sizeof(buf), &len, "nvidia.com/gpu.count", v);
	if (r && r->n_gpus > 0) {
		if (!single && gfd_product(r->gpus[0].name, v, sizeof(v)))
			add(buf, sizeof(buf), &len, "nvidia.com/gpu.product", v);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)r->gpus[0].memory_mib);
		if (!single)
			add(buf, sizeof(buf), &len, "nvidia.com/gpu.memory", v);
		snprintf(v, sizeof(v), "%d", r->gpus[0].cc_major);
		add(buf, sizeof(buf), &len, "nvidia.com/gpu.compute.major", v);
		snprintf(v, sizeof(v), "%d", r->gpus[0].cc_minor);
		add(buf, sizeof(buf), &len, "nvidia.com/gpu.compute.minor", v);
	}
	/* GFD's cuda.driver-version is the driver's version; runtime-version is CUDA's. */
	sscanf(version, "%15[0-9].%15[0-9].%15[0-9]", parts[0], parts[1], parts[2]);
	add(buf, sizeof(buf), &len, "nvidia.com/cuda.driver-version.full", version);
	add(buf, sizeof(buf), &len, "nvidia.com/cuda.driver-version.major", parts[0]);
	add(buf, sizeof(buf), &len, "nvidia.com/cuda.driver-version.minor", parts[1]);
	add(buf, sizeof(buf), &len, "nvidia.com/cuda.driver-version.revision", parts[2]);
	if (r && r->cuda_version > 0) {
		snprintf(v, sizeof(v), "%d.%d", r->cuda_version / 1000,
			 r->cuda_version % 1000 / 10);
		add(buf, sizeof(buf), &len, "nvidia.com/cuda.runtime-version.full", v);
		snprintf(v, sizeof(v), "%d", r->cuda_version / 1000);
		add(buf, sizeof(buf), &len, "nvidia.com/cuda.runtime-version.major", v);
		snprintf(v, sizeof(v), "%d", r->cuda_version % 1000 / 10);
		add(buf, sizeof(buf), &len, "nvidia.com/cuda.runtime-version.minor", v);
	}
	if (r)
		mig_labels(buf, sizeof(buf), &len, r, single);
	add(buf, sizeof(buf), &len, OUR_LABEL_KEY, version);
	if (d->module_type)
		add(buf, sizeof(buf), &len, MODULE_TYPE_LABEL_KEY, d->module_type);
	return strdup(buf);
}

/*
 * Opens the directory of PATH, one of our fixed absolute paths, under root_fd (made
 * with CREATE); its last component goes to *BASE. Returns an fd or -1.
 */
static int open_parent(int root_fd, const char *path, bool create, const char **base, struct err *e)
{
	char dir[PATH_MAX];

	*base = strrchr(path, '/') + 1;
	snprintf(dir, sizeof(dir), "%.*s", (int)(*base - path - 1), path);
	return fs_dir_in_root(root_fd, dir, create, e);
}

/* nodeinfo.h */
int nodeinfo_write_file(int root_fd, const char *path, const char *text, struct err *e)
{
	const char *base;
	_cleanup_close_ int dfd = open_parent(root_fd, path, true, &base, e);
	_cleanup_free_ char *old = NULL;
	size_t len;

	if (dfd < 0)
		return -1;
	if (fs_read_at(dfd, base, 1 << 20, &old, &len, e) == 0 && strcmp(old, text) == 0)
		return 0;
	err_clear(e);
	return fs_write_atomic_at(dfd, base, text, strlen(text), 0644, e) < 0 ? -1 : 1;
}

static int remove_file(int root_fd, const char *path, struct err *e);

/* Removes the old release's labels file: only one that carries our own label. */
static int remove_old_labels(int root_fd, struct err *e)
{
	const char *base;
	_cleanup_close_ int dfd = open_parent(root_fd, LABELS_FILE_OLD, false, &base, e);
	_cleanup_free_ char *old = NULL;
	size_t len;

	if (dfd < 0 || fs_read_at(dfd, base, 1 << 20, &old, &len, e) < 0) {
		err_clear(e);
		return 0;
	}
	if (strncmp(old, OUR_LABEL, strlen(OUR_LABEL)) != 0 && !strstr(old, "\n" OUR_LABEL))
		return 0;
	return remove_file(root_fd, LABELS_FILE_OLD, e);
}

int labels_write(int root_fd, const struct driver_id *d, const struct nvml_report *r,
		 size_t pci_gpus, struct err *e)
{
	_cleanup_free_ char *text = labels_render(d, r, pci_gpus);
	int w;

	if (!text)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "labels");
	w = nodeinfo_write_file(root_fd, LABELS_FILE, text, e);
	if (w < 0 || remove_old_labels(root_fd, e) < 0)
		return err_wrap(e, "labels");
	return w;
}

/*
 * Where the GPU Operator's driver validator looks for a host driver's nvidia-smi
 * (gpu-operator cmd/nvidia-validator/main.go, hostNvidiaSMISearchPaths, taken by
 * resolveHostNvidiaSMI(): a regular, non-empty file with an execute bit, inside the host root).
 */
static bool host_nvidia_smi(int root_fd)
{
	static const char *const paths[] = {
		"/usr/bin/nvidia-smi", "/usr/sbin/nvidia-smi",	      "/bin/nvidia-smi",
		"/sbin/nvidia-smi",    "/usr/lib/wsl/lib/nvidia-smi", "/opt/bin/nvidia-smi"};

	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		struct err e;
		struct stat st;
		_cleanup_close_ int fd =
			fs_open_in_root(root_fd, paths[i], O_PATH | O_CLOEXEC, 0, 0, &e);

		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
		    (st.st_mode & 0111))
			return true;
	}
	return false;
}

/* Whether INSTALL_DIR has a dev/ directory (the validator's driver.Root.GetDevRoot()). */
static bool has_dev_root(int root_fd, const char *install_dir)
{
	char path[PATH_MAX];
	struct err e;
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "%s/dev", install_dir);
	fd = fs_dir_in_root(root_fd, path, false, &e);
	return fd >= 0;
}

int readiness_write(int root_fd, const char *install_dir, const char *version, struct err *e)
{
	_cleanup_free_ char *text = NULL;
	bool host = host_nvidia_smi(root_fd), dev = !host && has_dev_root(root_fd, install_dir);

	/*
	 * The five keys the Operator's validator writes (createStatusFile(), getDriverInfo()),
	 * with the values it finds for our layout: a host driver where a standard path has a
	 * nvidia-smi, else a driver root at INSTALL_DIR (hostPaths.driverInstallDir); then
	 * ours. Consumers source the file with sh: config.c admits no control characters in
	 * INSTALL_DIR, and the validator writes it unquoted too.
	 */
	if (asprintf(&text,
		     "IS_HOST_DRIVER=%s\nNVIDIA_DRIVER_ROOT=%s\nDRIVER_ROOT_CTR_PATH=%s\n"
		     "NVIDIA_DEV_ROOT=%s\nDEV_ROOT_CTR_PATH=%s\nNVIDIA_DRIVER_VERSION=%s\n"
		     "NVIDIA_INSTALL_DIR=%s\n",
		     host ? "true" : "false", host ? "/" : install_dir,
		     host ? "/host" : "/driver-root", dev ? install_dir : "/",
		     dev ? "/driver-root" : "/host", version, install_dir) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "readiness");
	return nodeinfo_write_file(root_fd, READY_FILE, text, e) < 0 ? err_wrap(e, "readiness") : 0;
}

static int remove_file(int root_fd, const char *path, struct err *e)
{
	const char *base;
	_cleanup_close_ int dfd = open_parent(root_fd, path, false, &base, e);

	if (dfd < 0) {
		err_clear(e);
		return 0;
	}
	if (unlinkat(dfd, base, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "remove '%s'", path);
	return 0;
}

void readiness_remove(int root_fd)
{
	struct err e;

	if (remove_file(root_fd, READY_FILE, &e) < 0)
		log_msg(LOG_WARN, "readiness", "%s", e.msg);
}

int labels_pending_write(int root_fd, const char *version, const char *reason, struct err *e)
{
	_cleanup_free_ char *text = NULL;

	if (!version)
		return remove_file(root_fd, LABELS_PENDING_FILE, e) < 0 ? err_wrap(e, "labels") : 0;
	if (asprintf(&text, PENDING_LABEL_KEY "=%s\n" PENDING_REASON_LABEL_KEY "=%s\n", version,
		     reason) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "labels");
	return nodeinfo_write_file(root_fd, LABELS_PENDING_FILE, text, e) < 0
		       ? err_wrap(e, "labels")
		       : 0;
}

int labels_pending_failed_write(int root_fd, const char *version, struct err *e)
{
	_cleanup_free_ char *text = NULL;

	if (!version)
		return remove_file(root_fd, LABELS_PENDING_FAILED_FILE, e) < 0
			       ? err_wrap(e, "labels")
			       : 0;
	if (asprintf(&text, PENDING_FAILED_LABEL_KEY "=%s\n", version) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "labels");
	return nodeinfo_write_file(root_fd, LABELS_PENDING_FAILED_FILE, text, e) < 0
		       ? err_wrap(e, "labels")
		       : 0;
}

int nodeinfo_remove_driver(int root_fd, struct err *e)
{
	return remove_file(root_fd, READY_FILE, e) < 0 ||
			       remove_file(root_fd, LABELS_FILE, e) < 0 ||
			       remove_old_labels(root_fd, e) < 0
		       ? -1
		       : 0;
}

int nodeinfo_remove(int root_fd, struct err *e)
{
	return nodeinfo_remove_driver(root_fd, e) < 0 ||
			       remove_file(root_fd, LABELS_PENDING_FILE, e) < 0 ||
			       remove_file(root_fd, LABELS_PENDING_FAILED_FILE, e) < 0
		       ? -1
		       : 0;
}

#define M "nvidia_driver_installer_"

static const struct prom_family
	fam_success = {M "success", PROM_GAUGE, "Whether the last install succeeded."},
	fam_exit_code = {M "exit_code", PROM_GAUGE, "The last install's exit code."},
	fam_last_run = {M "last_run_timestamp_seconds", PROM_GAUGE, "When it ended."},
	fam_driver = {M "driver_info", PROM_GAUGE, "The driver the last install wanted."},
	fam_build = {M "build_info", PROM_GAUGE,
		     "The installer's release and the commit it was built from."},
	fam_from_cache =
		{M "index_from_cache", PROM_GAUGE,
		 "Whether the last install asked the mirrors and used the node's cached index instead, by reason: unreachable, unverified, not_found (a likely wrong repository URL)."},
	fam_pending =
		{M "upgrade_pending", PROM_GAUGE,
		 "Whether a driver version (or new module parameters) is staged and verified, waiting for the GPUs to be idle or the node to boot."},
	fam_failed =
		{M "upgrade_failed", PROM_GAUGE,
		 "Whether a pending driver version failed (verification, its staged tree, publish or load) and was withdrawn, the current version loaded instead; exit_code is the failure's."},
	fam_waiting =
		{M "waiting_for_package", PROM_GAUGE,
		 "Whether the install waits for the repository to serve a package for this node's kernel (--wait-for-package)."},
	fam_waiting_since = {M "waiting_since_seconds", PROM_GAUGE,
			     "When the wait for a package began, Unix time; 0 when none."},
	fam_stage = {M "stage_duration_seconds", PROM_GAUGE, "Time spent per stage.", 6},
	fam_insert = {
		M "module_insert_duration_seconds", PROM_GAUGE,
		"Time the kernel spent in the run's module insertion calls (signature check, relocation, the modules' init), part of the kernel stage.",
		6};

/* One gauge per stage that ran to its end, in pipeline order; with the kernel stage, the
 * part of it the kernel spent in the module insertion calls. */
static void metric_stages(FILE *f, const struct timing *t)
{
	prom_head(f, &fam_stage);
	for (int i = 0; t && i < TIMING_N; i++)
		if (t->seen[i])
			prom_sample(
				f, &fam_stage,
				&(struct prom_label){"stage", timing_name((enum timing_stage)i)}, 1,
				(double)t->us[i] / 1e6);
	if (t && t->seen[TIMING_KERNEL])
		prom_single(f, &fam_insert, (double)t->insert_us / 1e6);
}

/* One gauge per reason the cached index served (source_fallback_name), 1 for REASON. */
static void metric_fallback(FILE *f, const char *reason)
{
	static const char *const reasons[] = {"unreachable", "unverified", "not_found"};

	prom_head(f, &fam_from_cache);
	for (size_t i = 0; i < ARRAY_SIZE(reasons); i++)
		prom_sample(f, &fam_from_cache, &(struct prom_label){"reason", reasons[i]}, 1,
			    reason && strcmp(reason, reasons[i]) == 0);
}

/* The upgrade that waits, and the pending version that failed. */
static void metric_upgrade(FILE *f, const struct pending *pd, const struct pending_failure *failed)
{
	char code[16];

	prom_head(f, &fam_pending);
	prom_sample(f, &fam_pending,
		    (const struct prom_label[]){{"version", pd ? pd->driver_version : NULL},
						{"reason", pd ? pd->reason : NULL}},
		    2, pd != NULL);
	snprintf(code, sizeof(code), "%d", failed ? failed->exit_code : 0);
	prom_head(f, &fam_failed);
	prom_sample(f, &fam_failed,
		    (const struct prom_label[]){{"version", failed ? failed->driver_version : NULL},
						{"exit_code", code}},
		    2, failed != NULL);
}

/* A wait for a package: what for (empty labels and 0 when none), and since when. */
static void metric_waiting(FILE *f, const struct waiting *w)
{
	prom_head(f, &fam_waiting);
	prom_sample(f, &fam_waiting,
		    (const struct prom_label[]){{"kernel", w ? w->kernel : NULL},
						{"driver_version", w ? w->driver_version : NULL},
						{"flavour", w ? w->flavour : NULL},
						{"arch", w ? w->arch : NULL}},
		    4, w != NULL);
	prom_single(f, &fam_waiting_since, w ? (double)w->since : 0);
}

/* The run's outcome, and the driver and the installer it was. */
static void metric_run(FILE *f, const struct metrics_report *r)
{
	/* The flavour where the index states it; no label otherwise (the series as before). */
	const struct prom_label driver[] = {{"version", r->driver.version},
					    {"kernel", r->driver.kernel},
					    {"module_type", r->driver.module_type}};

	prom_single(f, &fam_success, r->exit_code == 0);
	prom_single(f, &fam_exit_code, r->exit_code);
	prom_single(f, &fam_last_run, (double)time(NULL));
	prom_head(f, &fam_driver);
	prom_sample(f, &fam_driver, driver, r->driver.module_type ? 3 : 2, 1);
	prom_head(f, &fam_build);
	prom_sample(f, &fam_build,
		    (const struct prom_label[]){{"version", INSTALLER_VERSION},
						{"commit", INSTALLER_COMMIT}},
		    2, 1);
}

int metrics_write(int root_fd, const char *path, const struct metrics_report *r, struct err *e)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return err_errno(e, EXIT_UNEXPECTED, errno, "metrics: out of memory");
	metric_run(f, r);
	metric_fallback(f, r->index_fallback);
	metric_upgrade(f, r->pending, r->failed);
	metric_waiting(f, r->waiting);
	metric_stages(f, r->times);
	if (fclose(f) != 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "metrics: out of memory");
	return nodeinfo_write_file(root_fd, path, text, e) < 0 ? err_wrap(e, "metrics") : 0;
}
