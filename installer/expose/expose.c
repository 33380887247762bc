// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expose/cdi.h"
#include "expose/cuda.h"
#include "kernel/kernel.h"
#include "expose/expose.h"
#include "stage/stage.h"
#include "expose/ldcache.h"
#include "expose/mounts.h"
#include "expose/nodeinfo.h"
#include "expose/partition.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

static int do_mounts(const struct expose_opts *o, int root_fd, int install_fd, struct err *e)
{
	_cleanup_close_ int record_fd = -1;
	char paths[8][PATH_MAX], *targets[8];
	size_t n = 0;
	int made;

	if (mkdir(EXPOSE_RUN_DIR, 0700) < 0 && errno != EEXIST)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mounts: create %s", EXPOSE_RUN_DIR);
	record_fd = fs_dir_in_root(root_fd, EXPOSE_RUN_DIR, true, e);
	if (record_fd < 0)
		return err_wrap(e, "mounts");
	for (size_t i = 0; i < o->n_host_mounts && n < ARRAY_SIZE(paths); i++) {
		_cleanup_close_ int fd = fs_dir_in_root(root_fd, o->host_mounts[i], true, e);

		if (fd < 0 || fs_fd_path(fd, paths[n], sizeof(paths[n])) < 0)
			return err_wrap(e, "mounts: --host-mount");
		targets[n] = paths[n];
		n++;
	}
	made = mounts_expose(install_fd, EXPOSE_RUN_DIR, targets, n, record_fd, e);
	return made < 0 ? -1 : 0;
}

/*
 * The devices for the CDI spec, from NVML: the GPUs served whole, and the MIG devices of
 * those in MIG mode with the capability nodes of their instances (a MIG device whose
 * capabilities the driver does not show is left out: a container could not open it).
 */
static void cdi_gpus(int root_fd, const struct nvml_report *r, struct cdi_input *in)
{
	for (unsigned i = 0; r && i < r->n_gpus && in->n_gpus < CDI_MAX_GPUS; i++) {
		if (r->gpus[i].mig_mode == 1)
			continue;
		in->gpus[in->n_gpus].index = i;
		in->gpus[in->n_gpus].minor = r->gpus[i].minor;
		snprintf(in->gpus[in->n_gpus].uuid, sizeof(in->gpus[0].uuid), "%s",
			 r->gpus[i].uuid);
		in->n_gpus++;
	}
	for (unsigned i = 0; r && i < r->n_migs && in->n_migs < CDI_MAX_MIGS; i++) {
		const struct part_mig *m = &r->migs[i];
		struct cdi_mig *c = &in->migs[in->n_migs];

		c->gpu = m->gpu;
		c->index = m->index;
		c->gpu_minor = r->gpus[m->gpu].minor;
		c->gi_cap = devnodes_mig_cap_minor(root_fd, c->gpu_minor, m->gi, -1);
		c->ci_cap = devnodes_mig_cap_minor(root_fd, c->gpu_minor, m->gi, (int)m->ci);
		snprintf(c->uuid, sizeof(c->uuid), "%s", m->uuid);
		if (c->gi_cap >= 0 && c->ci_cap >= 0)
			in->n_migs++;
	}
}

/* Where our CDI spec goes under ROOT_FD, and what it points at, as O says. */
static struct cdi_place cdi_place_of(const struct expose_opts *o, int root_fd)
{
	return (struct cdi_place){
		.root_fd = root_fd, .cdi_dir = o->cdi_dir, .install_dir = o->install_dir};
}

/*
 * Another producer's spec of our kind on the node (NVIDIA Container Toolkit's
 * `nvidia-ctk cdi generate`): the rule of cdi_settle (theirs win, or --cdi-replace sets
 * them aside; --cdi-kind writes ours under a kind of its own), which the node agent
 * applies too. Returns 1 when ours is to be written at AT, 0 when not, -1 on error.
 */
static int cdi_yield(const struct expose_opts *o, const struct cdi_place *at, struct err *e)
{
	const struct cdi_rule rule = {.kind = o->cdi_kind, .replace = o->cdi_replace};
	struct cdi_settled s;
	int w = cdi_settle(at, &rule, &s, e);

	if (s.n_set_aside)
		log_kv(LOG_WARN, "cdi", "another producer's CDI spec set aside (--cdi-replace)",
		       "spec", s.set_aside, "now", CDI_SET_ASIDE, U64("specs", s.n_set_aside),
		       LOG_END);
	if (w == 0)
		log_kv(LOG_WARN, "cdi",
		       "another producer's CDI spec declares our kind: not writing ours, the node's devices are theirs",
		       "spec", s.theirs, "kind", o->cdi_kind, "fix",
		       "--cdi-kind for a kind of our own, or --cdi-replace to set theirs aside",
		       LOG_END);
	return w;
}

/*
 * MPS's pipe directory when the node pool asks for MPS (made here, so that a runtime can
 * mount it before the node agent's daemon has started), else NULL.
 */
static const char *mps_pipe_dir(int root_fd, const char *label)
{
	struct mig_request req;
	struct err e;
	_cleanup_close_ int fd = -1;

	err_clear(&e);
	if (mig_read_gke_config(root_fd, &req, &e) != 0 || req.sharing != MIG_SHARING_MPS)
		return NULL;
	fd = mig_mps_dir(root_fd, MIG_MPS_PIPE_DIR, &e);
	if (fd < 0) {
		log_kv(LOG_WARN, "cdi", "MPS's pipe directory cannot be made: not in the spec",
		       "dir", MIG_MPS_PIPE_DIR, "error", e.msg, LOG_END);
		return NULL;
	}
	/* Its clients' containers make their sockets there: the container label, as a volume's. */
	if (label && selinux_label_at(fd, NULL, label, false, NULL, &e) < 0)
		log_kv(LOG_WARN, "cdi", "MPS's pipe directory cannot be labelled for containers",
		       "dir", MIG_MPS_PIPE_DIR, "error", e.msg, LOG_END);
	return MIG_MPS_PIPE_DIR;
}

/*
 * The helpers libexec_install just wrote (the CDI hook the runtime runs) carry the label
 * of the rest of the install dir (host/selinux.h). Returns 0 or -1.
 */
static int label_helpers(int install_fd, const struct host *h, struct err *e)
{
	const char *label = selinux_label(&h->selinux);
	int r = label ? selinux_label_at(install_fd, HELPERS_DIR, label, true, NULL, e) : 0;

	if (r >= 0 || err_errnum(e) != EOPNOTSUPP)
		return r < 0 ? err_wrap(e, "cdi") : 0;
	err_clear(e); /* publish_label said so for the whole install dir */
	return 0;
}

/*
 * Whether PATH ("share/DIR/FILE") under the install dir is a regular file reached through
 * no link but the install dir's own first component (share -> .current/share, resolved
 * inside the install dir). A dangling link or a folder in the spec would make runc refuse
 * every GPU container; the unpack refused such packages (stage/locate.c), and this holds
 * for an install dir changed by hand since.
 */
static bool is_loader_file(int install_fd, const char *path)
{
	const char *rest = strchr(path, '/'), *base = strrchr(path, '/');
	char top[64], dir[PATH_MAX];
	_cleanup_close_ int top_fd = -1, dfd = -1;
	struct stat st;
	struct err ie;

	if (!rest || rest == base || (size_t)(rest - path) >= sizeof(top))
		return false;
	snprintf(top, sizeof(top), "%.*s", (int)(rest - path), path);
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - rest - 1), rest + 1);
	top_fd = fs_open_in_root(install_fd, top, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0, &ie);
	if (top_fd < 0 || (dfd = fs_dir_nofollow(top_fd, dir)) < 0)
		return false;
	return fstatat(dfd, base + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/*
 * Whether the current version was installed for graphics: its manifest's capabilities
 * (stage.h), not this run's --driver-capabilities, so that a run without the option (a
 * boot, an agent's) keeps the mounts the node pool asked for.
 */
static bool is_installed_for_graphics(int install_fd)
{
	struct manifest m;
	unsigned caps = 0;
	struct err me;

	if (publish_current_at(install_fd, &m, &me) != 0)
		return false;
	if (m.capabilities && repo_caps_parse(m.capabilities, &caps) < 0)
		caps = 0;
	manifest_done(&m);
	return caps & REPO_CAP_GRAPHICS;
}

static int publish_cdi(const struct expose_opts *o, int root_fd, int install_fd,
		       const struct host *h, const struct nvml_report *r, struct err *e)
{
	static const char *const shared[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
					     "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};
	/*
	 * GDRCopy's and GPUDirect Storage's nodes (kernel/devnodes.c), in devices of their own
	 * (cdi.h), and only at the numbers the kernel gives them now: a node a reload left
	 * naming another driver's device is never handed out.
	 */
	static const char *const gpudirect[] = {
		"/dev/gdrdrv",	    "/dev/nvidia-fs0",	"/dev/nvidia-fs1",  "/dev/nvidia-fs2",
		"/dev/nvidia-fs3",  "/dev/nvidia-fs4",	"/dev/nvidia-fs5",  "/dev/nvidia-fs6",
		"/dev/nvidia-fs7",  "/dev/nvidia-fs8",	"/dev/nvidia-fs9",  "/dev/nvidia-fs10",
		"/dev/nvidia-fs11", "/dev/nvidia-fs12", "/dev/nvidia-fs13", "/dev/nvidia-fs14",
		"/dev/nvidia-fs15"};
	char hook[PATH_MAX + 64];
	struct cdi_input in = {.kind = o->cdi_kind,
			       .install_dir = o->install_dir,
			       .container_dir = o->container_dir,
			       .hook_path = hook};
	const struct cdi_place at = cdi_place_of(o, root_fd);
	int w = cdi_yield(o, &at, e);

	if (w <= 0)
		return w;
	for (size_t i = 0; i < ARRAY_SIZE(shared); i++) {
		struct err ie;
		_cleanup_close_ int fd = fs_open_in_root(root_fd, shared[i], O_PATH, 0, 0, &ie);

		if (fd >= 0)
			in.shared_nodes[in.n_shared++] = shared[i];
	}
	for (size_t i = 0; i < ARRAY_SIZE(gpudirect); i++) {
		const char *name = gpudirect[i] + sizeof("/dev/") - 1;
		struct stat st;
		struct err ie;
		_cleanup_close_ int fd = fs_open_in_root(root_fd, gpudirect[i], O_PATH, 0, 0, &ie);

		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) ||
		    !devnodes_gpudirect_live(root_fd, name, st.st_rdev))
			continue;
		if (i == 0)
			in.gdrcopy_nodes[in.n_gdrcopy++] = gpudirect[i];
		else
			in.gds_nodes[in.n_gds++] = gpudirect[i];
	}
	cdi_gpus(root_fd, r, &in);
	/* Graphics' loader files the package carries, when the version was installed for it. */
	bool graphics = is_installed_for_graphics(install_fd);

	for (unsigned i = 0; graphics && cdi_graphics_files[i].package_path; i++) {
		if (is_loader_file(install_fd, cdi_graphics_files[i].package_path))
			in.config_files |= 1u << i;
	}
	/* And each GPU's /dev/dri nodes, as the toolkit's graphics modifier adds them. */
	for (size_t i = 0; graphics && i < in.n_gpus; i++)
		cdi_drm_nodes(root_fd, &in.gpus[i]);
	in.mps_pipe_dir = mps_pipe_dir(root_fd, selinux_label(&h->selinux));
	/* The hook the spec names is there before the spec is. */
	if (libexec_install(install_fd, e) < 0 || label_helpers(install_fd, h, e) < 0)
		return -1;
	snprintf(hook, sizeof(hook), "%s/" HELPERS_DIR "/" HELPER_CDI_HOOK,
		 strcmp(o->install_dir, "/") == 0 ? "" : o->install_dir);
	w = cdi_write(&at, &in, e);
	if (w < 0)
		return -1;
	log_kv(LOG_INFO, "cdi", w ? "CDI spec written" : "CDI spec unchanged", "file", o->cdi_dir,
	       "kind", o->cdi_kind, U64("devices", in.n_gpus), U64("mig_devices", in.n_migs),
	       LOG_END);
	return 0;
}

/* The version of the live nvidia module, or "", and its flavour (TYPE), or "". */
static void loaded_version(int root_fd, const char *release, char *buf, size_t size, char *type,
			   size_t type_size)
{
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	struct err e;

	buf[0] = '\0';
	type[0] = '\0';
	if (kmods_new(root_fd, release, &k, &e) < 0 ||
	    kmods_loaded_version(k, "nvidia", buf, size) < 0)
		buf[0] = '\0';
	if (k && kmods_loaded_module_type(k, "nvidia", type, type_size) < 0)
		type[0] = '\0';
}

/*
 * Whether the package has what trains this host's fabric, for the node agent to start:
 * Fabric Manager, and on NVLink 5 NVLSM too.
 */
static bool fabric_daemons_shipped(int install_fd, const struct host *h)
{
	return faccessat(install_fd, "bin/" EXPOSE_FABRICMANAGER, X_OK, 0) == 0 &&
	       (h->nvlink.n_ports == 0 || faccessat(install_fd, "bin/" EXPOSE_NVLSM, X_OK, 0) == 0);
}

/* What verify_cuda found, said once it passed. */
static void log_cuda_ready(const struct cuda_plan *p, const struct cuda_report *c,
			   const struct host *h, uint64_t t0)
{
	if (p->n == 0) {
		log_kv(LOG_INFO, "verify",
		       "CUDA check skipped: every GPU is in MIG mode without a MIG device, none CUDA could open (the instances are the layout's or another tool's to make)",
		       U64("mig_gpus_without_instances", p->idle), LOG_END);
		return;
	}
	if (p->migs == 0 && p->idle == 0) {
		log_kv(LOG_INFO, "verify", "CUDA ready: a context on every GPU",
		       U64("cuda_driver_version", (uint64_t)c->driver_version),
		       U64("devices", p->whole), U64("nvswitches", h->n_nvswitches),
		       U64("duration_ms", (now_ns() - t0) / 1000000), LOG_END);
		return;
	}
	log_kv(LOG_INFO, "verify",
	       "CUDA ready: a context on every GPU outside MIG mode and on every MIG device, each MIG device in a process of its own",
	       U64("cuda_driver_version", (uint64_t)c->driver_version), U64("devices", p->whole),
	       U64("mig_devices", p->migs), U64("mig_gpus_without_instances", p->idle),
	       U64("processes", p->n), U64("nvswitches", h->n_nvswitches),
	       U64("duration_ms", (now_ns() - t0) / 1000000), LOG_END);
}

/*
 * What a CUDA job sees, on the devices NVML's report R shows (cuda.h: the GPUs outside MIG
 * mode in one process, each MIG device in its own): libcuda initialises and takes a context
 * on each. On an NVSwitch system whose package has Fabric Manager, 802 (the fabric not
 * trained) is not a failure here: Fabric Manager is the node agent's to start, after this
 * run, and the agent makes the node ready once the fabric is trained. Returns 1 when CUDA
 * is ready (or there is no GPU to ask), 2 when it waits for the agent's Fabric Manager, -1
 * otherwise.
 */
static int verify_cuda(int install_fd, const struct host *h, const struct nvml_report *r,
		       struct err *e)
{
	struct cuda_report c;
	struct cuda_plan plan;
	char lib[PATH_MAX], desc[96];
	const char *fabric;
	uint64_t t0 = now_ns();

	/* No GPU: cuInit would say CUDA_ERROR_NO_DEVICE; NVML has answered for the driver. */
	if (h->n_gpus == 0) {
		log_msg(LOG_INFO, "verify", "CUDA check skipped: no NVIDIA GPU on the PCI bus");
		return 1;
	}
	snprintf(lib, sizeof(lib), "/proc/self/fd/%d/lib64/libcuda.so.1", install_fd);
	if (cuda_probe_node(lib, r, CUDA_CHECK_TIMEOUT_S, &plan, &c, e) < 0)
		return err_wrap(e, "verify");
	fabric = host_fabric(h, desc, sizeof(desc));
	if (c.result == CUDA_SYSTEM_NOT_READY && h->nvlink.n_ports > 0 && !h->nvlink.ib_umad) {
		err_set(e, EXIT_DRIVER_CHECK,
			"CUDA is not ready (802): this node has %s and ib_umad is not loaded, so NVLSM cannot train its NVLink fabric",
			fabric);
		err_hint(
			e,
			"load ib_umad on the node (modprobe ib_umad), and list it in /etc/modules-load.d so that it loads at boot");
		return err_wrap(e, "verify");
	}
	if (c.result == CUDA_SYSTEM_NOT_READY && fabric && fabric_daemons_shipped(install_fd, h)) {
		static const char waits[] =
			"CUDA waits for Fabric Manager (802: the NVLink fabric is not trained): the node agent starts it and makes the node ready";

		if (h->nvlink.n_ports > 0)
			log_kv(LOG_INFO, "verify", waits,
			       U64("nvlink_ports", (uint64_t)h->nvlink.n_ports), LOG_END);
		else
			log_kv(LOG_INFO, "verify", waits, U64("nvswitches", h->n_nvswitches),
			       LOG_END);
		return 2;
	}
	if (cuda_check(&c, fabric, e) < 0)
		return err_wrap(e, "verify");
	log_cuda_ready(&plan, &c, h, t0);
	return 1;
}

/*
 * NVML's check: the installed libnvidia-ml.so.1 answers with VERSION and sees every GPU,
 * into R. Returns 1 when it passed, 0 when skipped (--skip-verify, no GPU), -1 otherwise.
 */
static int verify_nvml(const struct expose_opts *o, int install_fd, const struct host *h,
		       const char *version, struct nvml_report *r, struct err *e)
{
	char lib[PATH_MAX];

	if (o->skip_verify) {
		if (h->n_gpus > 0)
			return err_set(e, EXIT_USAGE,
				       "--skip-verify is for hosts without a GPU; this one has %zu",
				       h->n_gpus);
		log_msg(LOG_INFO, "verify", "NVML check skipped (--skip-verify, no GPU)");
		return 0;
	}
	snprintf(lib, sizeof(lib), "/proc/self/fd/%d/lib64/libnvidia-ml.so.1", install_fd);
	if (nvml_query(lib, r, e) < 0 || nvml_check(r, version, h->n_gpus, e) < 0)
		return err_wrap(e, "verify");
	for (unsigned i = 0; i < r->n_gpus; i++)
		log_kv(LOG_INFO, "verify", "GPU", U64("index", i), "name", r->gpus[i].name, "uuid",
		       r->gpus[i].uuid, U64("memory_mib", r->gpus[i].memory_mib), LOG_END);
	return 1;
}

/*
 * The layout --mig-layout asks for (partition.h), once NVML answers: applied, then NVML
 * asked again so that the CDI spec and the labels name the MIG devices there now, whose
 * capability nodes are made. A GPU whose mode waits for a reset leaves the node as it was
 * (its marker, spec and labels untouched) and the run ends EXIT_RESET_REQUIRED: the run
 * after the reboot makes the instances. Returns 0 or -1.
 */
static int partition(const struct expose_opts *o, int root_fd, int install_fd,
		     struct nvml_report *r, struct err *e)
{
	struct part_layout l;
	struct part_result res;
	struct devnodes_report dr;
	char lib[PATH_MAX], name[PART_LAYOUT_NAME_MAX];
	pid_t self = getpid();

	if (part_layout_parse(o->mig_layout, root_fd, &l, e) < 0)
		return err_wrap(e, "partition");
	if (part_layout_keeps(&l))
		return 0;
	part_layout_name(&l, name, sizeof(name));
	snprintf(lib, sizeof(lib), "/proc/self/fd/%d/lib64/libnvidia-ml.so.1", install_fd);
	if (partition_apply(&(struct part_apply){.lib = lib,
						 .root_fd = root_fd,
						 .ours = &self,
						 .n_ours = 1,
						 .before_busy_check = o->before_busy_check,
						 .before_busy_arg = o->before_busy_arg},
			    &l, &res, e) < 0) {
		if (e->code != EXIT_IN_USE || !o->defer_busy || !o->result)
			return err_wrap(e, "partition %s (from %s)", name, l.source);
		/* The GPUs keep their layout and serve; the change waits for them to be idle. */
		o->result->layout_deferred = true;
		snprintf(o->result->layout, sizeof(o->result->layout), "%s", name);
		str_fmt_cut(o->result->why, sizeof(o->result->why), "%s", e->msg);
		log_kv(LOG_WARN, "partition",
		       "the GPUs are busy: the layout waits for them to be idle", "layout", name,
		       "from", l.source, "waiting_for", e->msg, LOG_END);
		err_clear(e);
		return 0;
	}
	if (res.reset_pending) {
		err_set(e, EXIT_RESET_REQUIRED,
			"partition %s (from %s): MIG mode waits for a GPU reset on GPU %s", name,
			l.source, res.pending);
		err_hint(
			e,
			"reboot the node (or, with the GPUs idle, nvidia-smi -r); the next run makes the instances");
		return -1;
	}
	log_kv(LOG_INFO, "partition",
	       res.changed ? "GPU layout applied" : "GPU layout already in place", "layout", name,
	       "from", l.source, U64("changed", res.changed), U64("unchanged", res.unchanged),
	       LOG_END);
	if (!res.changed)
		return 0;
	if (nvml_query(lib, r, e) < 0 || devnodes_sync_mig(root_fd, &dr, e) < 0)
		return err_wrap(e, "partition");
	return 0;
}

/*
 * The NVML check failed: nothing may keep saying that a working driver is here. The
 * marker goes first, then the labels and the CDI spec (withdrawn, not rewritten: NFD
 * drops labels that are gone, and a runtime then refuses a GPU pod instead of starting
 * it without a driver). The check's error is the one reported; these only warn.
 */
static void withdraw_after_failure(const struct expose_opts *o, int root_fd)
{
	const struct cdi_place at = cdi_place_of(o, root_fd);
	struct err we;

	if (nodeinfo_remove(root_fd, &we) < 0)
		log_msg(LOG_WARN, "expose", "withdrawing after the failed check: %s", we.msg);
	if (cdi_remove(&at, &we) < 0)
		log_msg(LOG_WARN, "expose", "withdrawing after the failed check: %s", we.msg);
}

int expose_run(const struct expose_opts *o, int root_fd, int install_fd, const struct host *h,
	       const char *version, struct err *e)
{
	_cleanup_close_ int fresh_fd = -1;
	struct nvml_report r;
	char loaded[64], type[16];
	uint64_t t0 = now_ns();
	int verified;

	if (do_mounts(o, root_fd, install_fd, e) < 0 ||
	    ldcache_update(root_fd, o->root, o->install_dir, e) < 0)
		return -1;
	/*
	 * INSTALL_FD was opened before the exec bind mount and still goes through the
	 * noexec mount beneath it: libraries are mapped from a fresh lookup instead.
	 */
	fresh_fd = fs_dir_in_root(root_fd, o->install_dir, false, e);
	if (fresh_fd < 0)
		return err_wrap(e, "expose");
	loaded_version(root_fd, h->kernel, loaded, sizeof(loaded), type, sizeof(type));
	if (strcmp(loaded, version) != 0) {
		log_kv(LOG_INFO, "expose",
		       "the driver is not loaded: verification, CDI, labels and readiness wait for it",
		       "loaded", loaded[0] ? loaded : "none", "installed", version, LOG_END);
		return 0;
	}
	verified = verify_nvml(o, fresh_fd, h, version, &r, e);
	if (verified < 0) {
		withdraw_after_failure(o, root_fd);
		return -1;
	}
	/*
	 * The layout first: CUDA can only be asked about what is there once it is made (a GPU
	 * in MIG mode without instances has no device CUDA can open). A layout refused or
	 * waiting for a reset leaves the node as it was.
	 */
	if (verified == 1 && partition(o, root_fd, fresh_fd, &r, e) < 0)
		return -1;
	if (verified == 1)
		verified = verify_cuda(fresh_fd, h, &r, e);
	if (verified < 0) {
		withdraw_after_failure(o, root_fd);
		return -1;
	}
	if (verified == 2) {
		/* The devices are there: the spec; the labels and the marker are the agent's. */
		if (nodeinfo_remove_driver(root_fd, e) < 0 ||
		    publish_cdi(o, root_fd, fresh_fd, h, &r, e) < 0)
			return -1;
		return 0;
	}
	if (publish_cdi(o, root_fd, fresh_fd, h, verified ? &r : NULL, e) < 0 ||
	    labels_write(root_fd,
			 &(struct driver_id){.version = version,
					     .module_type = type[0] ? type : NULL,
					     .kernel = h->kernel},
			 verified ? &r : NULL, h->n_gpus, e) < 0 ||
	    readiness_write(root_fd, o->install_dir, version, e) < 0)
		return -1;
	if (verified)
		log_kv(LOG_INFO, "expose", "driver ready", "version", version,
		       U64("cuda", r.cuda_version), U64("gpus", r.n_gpus),
		       U64("duration_ms", ms_since(t0)), LOG_END);
	else
		log_kv(LOG_INFO, "expose", "driver ready", "version", version, "cuda", "unknown",
		       U64("gpus", 0), U64("duration_ms", ms_since(t0)), LOG_END);
	return 1;
}

static bool notice_exists(int root_fd, const char *path)
{
	struct err e;
	_cleanup_close_ int fd = fs_open_in_root(root_fd, path, O_PATH | O_CLOEXEC, 0, 0, &e);

	return fd >= 0;
}

int expose_withdraw_unloaded(const struct expose_opts *o, int root_fd, const char *release)
{
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	const struct cdi_place at = cdi_place_of(o, root_fd);
	struct err we;

	/* A kernel whose state cannot be read proves nothing either way: nothing changes. */
	if (kmods_new(root_fd, release, &k, &we) < 0 ||
	    kmods_get_state(k, "nvidia") != KMODS_ABSENT)
		return 0;
	/* Said when there was something to say it (a fresh install that failed had none). */
	if (notice_exists(root_fd, READY_FILE) || notice_exists(root_fd, LABELS_FILE))
		log_msg(LOG_WARN, "expose",
			"no nvidia module is loaded: the readiness marker, the labels and the CDI spec are withdrawn");
	if (nodeinfo_remove_driver(root_fd, &we) < 0)
		log_msg(LOG_WARN, "expose", "withdrawing without a driver: %s", we.msg);
	if (cdi_remove(&at, &we) < 0)
		log_msg(LOG_WARN, "expose", "withdrawing without a driver: %s", we.msg);
	return 1;
}

int expose_withdraw_notices(const struct expose_opts *o, int root_fd, struct err *e)
{
	const struct cdi_place at = cdi_place_of(o, root_fd);
	char left[PATH_MAX];

	if (nodeinfo_remove(root_fd, e) < 0 || cdi_remove(&at, e) < 0 ||
	    cdi_restore_set_aside(&at, left, sizeof(left), e) < 0)
		return err_wrap(e, "uninstall");
	if (left[0])
		log_kv(LOG_WARN, "uninstall",
		       "a CDI spec set aside stays set aside: no record of ours names it, or its name is taken again",
		       "spec", left, "fix",
		       "rename it back without .replaced-by-nvidia-driver-installer if its producer still serves the node",
		       LOG_END);
	return 0;
}

int expose_withdraw_host(const struct expose_opts *o, int root_fd, struct err *e)
{
	_cleanup_close_ int record_fd = fs_dir_in_root(root_fd, EXPOSE_RUN_DIR, false, e);

	if (record_fd < 0)
		err_clear(e);
	if (ldcache_remove(root_fd, o->root, e) < 0 ||
	    (record_fd >= 0 && mounts_withdraw(record_fd, e) < 0))
		return err_wrap(e, "uninstall");
	return 0;
}
