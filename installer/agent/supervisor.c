// SPDX-License-Identifier: Apache-2.0
/*
 * The driver's daemons, a table (agent/supervisor.h): a row each, its function deciding at
 * every look whether it runs and with what, in the rows' order. See docs/design.md,
 * "Daemons and the installer".
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/supervisor.h"
#include "agent/control.h"
#include "expose/expose.h"
#include "host/host.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

#define PERSISTENCED "nvidia-persistenced"
#define NVLSM EXPOSE_NVLSM
#define FABRICMANAGER EXPOSE_FABRICMANAGER
#define FABRICMANAGER_CFG "share/nvidia/nvswitch/fabricmanager.cfg"
#define MPS_CONTROL "nvidia-cuda-mps-control"
#define NVLSM_CFG "share/nvidia/nvlsm/nvlsm.conf"
/*
 * Fabric Manager starts once NVLSM has made their IPC socket (FM_SM_IPC_INTERFACE in
 * Fabric Manager's config, this path by default), or has run NVLSM_SETTLE_S without one,
 * as NVIDIA's start script waits for it.
 */
#define NVLSM_SETTLE_S 5
#define FM_SM_IPC_DEFAULT "/var/run/nvidia-fabricmanager/fm_sm_ipc.socket"

/* ---- what the rows share ------------------------------------------------------- */

/* Whether PID is one of the daemons, or the first process of one. */
static bool known(const struct supervisor *sv, pid_t pid)
{
	for (int i = 0; i < N_DAEMONS; i++)
		if (pid == sv->daemons[i].pid || pid == sv->daemons[i].launcher)
			return true;
	return false;
}

/*
 * A child of ours that no daemon knows and that runs NAME: what a daemon's first process
 * left when it forked into the background and exited (we are a child subreaper; two
 * daemons starting at once are told apart by their programs). 0 when there is none.
 */
static pid_t orphan_child(const struct supervisor *sv, const char *name)
{
	char path[64], buf[512], *p, *end;
	_cleanup_free_ char *text = NULL;
	size_t len;
	struct err e;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	if (fs_read_path(path, 4096, &text, &len, &e) < 0)
		return 0;
	snprintf(buf, sizeof(buf), "%s", text);
	for (p = buf;; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			return 0;
		if (pid > 0 && !known(sv, (pid_t)pid) && daemon_runs((pid_t)pid, name))
			return (pid_t)pid;
	}
}

/* Starts D from the install dir's bin/ (resolved as it is now, under --root), when due. */
static void start_daemon(struct daemon *d, const char *dir)
{
	char path[PATH_MAX];
	struct err e;

	if (!daemon_due(d, now_ns()))
		return;
	snprintf(path, sizeof(path), "%s/bin/%s", dir, d->name);
	if (access(path, X_OK) < 0)
		return;
	if (daemon_start(d, path, &e) < 0)
		log_kv(LOG_WARN, "agent", "a daemon could not be started", "daemon", d->name,
		       "error", e.msg, LOG_END);
}

/* ---- the rows' functions ------------------------------------------------------ */

/*
 * NVIDIA's persistence daemon, persistence mode on, as root, wherever the driver has one. It
 * does not count in readiness: the GPUs run jobs without it, each start paying the driver's
 * initialisation.
 */
static void run_persistenced(struct supervisor *sv, struct daemon *d, const struct daemon_look *l)
{
	(void)sv;
	start_daemon(d, l->dir);
}

/*
 * The socket Fabric Manager reaches NVLSM by, into BUF: the Unix path the package's config
 * names (FM_SM_IPC_INTERFACE), or its default; NULL for an IP address.
 */
static const char *nvlsm_socket(const char *dir, char *buf, size_t size)
{
	_cleanup_free_ char *cfg = NULL;
	char path[PATH_MAX + 64];
	const char *sock = FM_SM_IPC_DEFAULT;
	size_t len;
	struct err e;

	snprintf(path, sizeof(path), "%s/" FABRICMANAGER_CFG, dir);
	if (fs_read_path(path, 1 << 20, &cfg, &len, &e) == 0)
		for (char *line = cfg, *next; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			if (strncmp(line, "FM_SM_IPC_INTERFACE=", 20) == 0)
				sock = line + 20;
		}
	if (sock[0] != '/')
		return NULL;
	snprintf(buf, size, "%s", sock);
	return buf;
}

/* SOCK as it is now into M: which file, and when its status last changed. */
static void nvlsm_mark(const char *sock, struct nvlsm_mark *m)
{
	struct stat st;

	*m = (struct nvlsm_mark){0};
	if (sock && stat(sock, &st) == 0)
		*m = (struct nvlsm_mark){
			.present = true, .dev = st.st_dev, .ino = st.st_ino, .ctim = st.st_ctim};
}

/*
 * Whether the NVLSM started last has made its socket (nvlsm_socket of DIR): there, and
 * another file than before the start, or the same one changed since (NVLSM makes it anew
 * when it serves). A killed NVLSM leaves its socket behind; counted, it would let Fabric
 * Manager start, and the node read ready, before the next NVLSM serves. No clock is read:
 * a step of the wall clock cannot make the old socket new. A socket made within the file
 * system's clock tick of the mark, on the same inode, reads as unchanged: the node then
 * waits NVLSM_SETTLE_S.
 */
static bool nvlsm_socket_ready(const struct supervisor *sv, const char *dir)
{
	const struct nvlsm_mark *b = &sv->nvlsm_before;
	struct nvlsm_mark now;
	char sock[PATH_MAX];

	nvlsm_mark(nvlsm_socket(dir, sock, sizeof(sock)), &now);
	return now.present &&
	       (!b->present || now.dev != b->dev || now.ino != b->ino ||
		now.ctim.tv_sec != b->ctim.tv_sec || now.ctim.tv_nsec != b->ctim.tv_nsec);
}

/*
 * On NVLink 5, NVLSM must serve before Fabric Manager starts: ib_umad loaded, bin/nvlsm in
 * the package, started (when due) on the first management port, and its socket made (or
 * NVLSM_SETTLE_S passed). Returns true when Fabric Manager may start; else why not goes to
 * sv->nvlsm_wait.
 */
static bool nvlsm_serves(struct supervisor *sv, struct daemon *d, const struct nodestate *s,
			 const char *dir)
{
	const struct nvlink_port *port = &s->host.nvlink.ports[0];
	char path[PATH_MAX + 64], sock[PATH_MAX];
	uint64_t up_s;
	size_t n = 0;

	if (!s->host.nvlink.ib_umad) {
		snprintf(
			sv->nvlsm_wait, sizeof(sv->nvlsm_wait),
			"ib_umad is not loaded: NVLSM cannot reach the NVLink 5 NVSwitches behind %s",
			port->ibdev);
		daemon_stop(d, CONTROL_STOP_TIMEOUT_S);
		return false;
	}
	snprintf(path, sizeof(path), "%s/bin/" NVLSM, dir);
	if (access(path, X_OK) < 0) {
		snprintf(
			sv->nvlsm_wait, sizeof(sv->nvlsm_wait),
			"this node's NVLink 5 fabric needs NVLSM and the installed driver has none (bin/" NVLSM
			")");
		return false;
	}
	snprintf(sv->nvlsm_cfg, sizeof(sv->nvlsm_cfg), "%s/" NVLSM_CFG, dir);
	if (access(sv->nvlsm_cfg, R_OK) == 0) {
		d->args[n++] = "--config";
		d->args[n++] = sv->nvlsm_cfg;
	}
	d->args[n++] = "--guid";
	d->args[n++] = port->guid_text;
	d->args[n++] = "--log_file";
	d->args[n++] = "stdout";
	d->args[n] = NULL;
	if (d->state != DAEMON_RUNNING)
		nvlsm_mark(nvlsm_socket(dir, sock, sizeof(sock)), &sv->nvlsm_before);
	start_daemon(d, dir);
	up_s = (now_ns() - d->started_ns) / 1000000000ull;
	if (d->state == DAEMON_BACKOFF)
		snprintf(sv->nvlsm_wait, sizeof(sv->nvlsm_wait),
			 "NVLSM ended (%s) on management port %s; started again in %u s",
			 d->last_end, port->guid_text, d->backoff_s);
	else if (d->state != DAEMON_RUNNING ||
		 (up_s < NVLSM_SETTLE_S && !nvlsm_socket_ready(sv, dir)))
		snprintf(sv->nvlsm_wait, sizeof(sv->nvlsm_wait),
			 "NVLSM is starting on management port %s (%s); Fabric Manager follows",
			 port->guid_text, port->ibdev);
	return !sv->nvlsm_wait[0];
}

/*
 * On NVLink 5 (management ports behind the GPU baseboard's bridge), NVIDIA's NVLink Subnet
 * Manager on the first one, in the foreground, logging to stdout: Fabric Manager waits for
 * it (sv->nvlsm_wait).
 */
static void run_nvlsm(struct supervisor *sv, struct daemon *d, const struct daemon_look *l)
{
	char desc[96];

	if (host_fabric(&l->s->host, desc, sizeof(desc)) && l->s->host.nvlink.n_ports > 0)
		(void)nvlsm_serves(sv, d, l->s, l->dir);
}

/*
 * Fabric Manager must be the driver's own version (NVIDIA's requirement): asked with
 * --version before each start (the caller asks only when one is due). Returns true when
 * it may start; else why not goes to sv->fm_refused.
 */
static bool fabric_manager_matches(struct supervisor *sv, const struct nodestate *s,
				   const char *dir)
{
	char path[PATH_MAX + 64], v[64];

	/* Refused once for this driver: the same files, the same answer; said once. */
	if (sv->fm_refused[0] && strcmp(sv->fm_refused_for, s->manifest.driver_version) == 0)
		return false;
	sv->fm_refused[0] = '\0';
	snprintf(sv->fm_refused_for, sizeof(sv->fm_refused_for), "%s", s->manifest.driver_version);
	snprintf(path, sizeof(path), "%s/bin/" FABRICMANAGER, dir);
	if (access(path, X_OK) < 0)
		return true;
	if (daemon_version(path, 5, v, sizeof(v)) < 0)
		snprintf(sv->fm_refused, sizeof(sv->fm_refused),
			 "Fabric Manager's version could not be read (bin/" FABRICMANAGER
			 " --version): not started");
	else if (strcmp(v, s->manifest.driver_version) != 0)
		snprintf(
			sv->fm_refused, sizeof(sv->fm_refused),
			"Fabric Manager %s is not the driver's version %s: not started (NVIDIA requires the same version)",
			v, s->manifest.driver_version);
	if (sv->fm_refused[0])
		log_kv(LOG_ERROR, "agent", sv->fm_refused, "fix",
		       "package Fabric Manager of the driver's own version", LOG_END);
	return !sv->fm_refused[0];
}

/*
 * The package's fabricmanager.cfg (PKG_CFG) names its files by the paths of NVIDIA's own
 * packages (/usr/share/nvidia/nvswitch); in this container they are in the install dir
 * (DIR). The config Fabric Manager is started with is the package's, with the topology and
 * database paths pointed there and LOG_FILE_NAME empty (Fabric Manager then logs to stderr,
 * the container's log), written to our own directory under the host's /run
 * (CONTROL_DIR/fabricmanager.cfg) into sv->fm_cfg. Returns 0 or -1.
 */
static int fabric_manager_config(struct supervisor *sv, int root_fd, const char *pkg_cfg,
				 const char *dir)
{
	static const char *const ours[] = {
		"TOPOLOGY_FILE_PATH=", "DATABASE_PATH=", "LOG_FILE_NAME="};
	_cleanup_free_ char *in = NULL, *out = NULL;
	_cleanup_close_ int run_fd = -1;
	size_t len, olen = 0;
	char run_dir[PATH_MAX];
	FILE *f;
	struct err e;

	err_clear(&e);
	if (fs_read_path(pkg_cfg, 1 << 20, &in, &len, &e) < 0 ||
	    (run_fd = fs_dir_in_root(root_fd, CONTROL_DIR, true, &e)) < 0)
		goto failed;
	f = open_memstream(&out, &olen);
	if (!f)
		goto failed;
	for (char *line = in, *next; line && *line; line = next) {
		bool replaced = false;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		for (size_t i = 0; i < ARRAY_SIZE(ours); i++)
			replaced |= strncmp(line, ours[i], strlen(ours[i])) == 0;
		if (!replaced)
			fprintf(f, "%s\n", line);
	}
	fprintf(f,
		"# nvidia-driver-installer agent: the package's files, logs to stderr\n"
		"TOPOLOGY_FILE_PATH=%s/share/nvidia/nvswitch\nDATABASE_PATH=%s/share/nvidia/nvswitch\n"
		"LOG_FILE_NAME=\n",
		dir, dir);
	if (fclose(f) != 0 ||
	    fs_write_atomic_at(run_fd, "fabricmanager.cfg", out, olen, 0644, &e) < 0 ||
	    fs_fd_path(run_fd, run_dir, sizeof(run_dir)) < 0)
		goto failed;
	snprintf(sv->fm_cfg, sizeof(sv->fm_cfg), "%s/fabricmanager.cfg", run_dir);
	return 0;
failed:
	str_fmt_cut(sv->fm_refused, sizeof(sv->fm_refused),
		    "Fabric Manager's config could not be prepared (%s): not started",
		    e.msg[0] ? e.msg : "out of memory");
	log_msg(LOG_ERROR, "agent", "%s", sv->fm_refused);
	return -1;
}

/* Fabric Manager's arguments: its config, and on NVLink 5 the management port NVLSM has. */
static void fabric_manager_args(struct supervisor *sv, struct daemon *d, const struct nodestate *s)
{
	const char **args = d->args;
	size_t n = 0;

	if (sv->fm_cfg[0]) {
		args[n++] = "-c";
		args[n++] = sv->fm_cfg;
	}
	if (s->host.nvlink.n_ports > 0) {
		args[n++] = "-g";
		args[n++] = s->host.nvlink.ports[0].guid_text;
	}
	args[n] = NULL;
}

/*
 * Fabric Manager, on a host with NVSwitches, after NVLSM on NVLink 5: of the driver's own
 * version, with the package's config pointed into the install dir (or its default path when
 * the package has none), and on NVLink 5 NVLSM's port. It counts in readiness.
 */
static void run_fabricmanager(struct supervisor *sv, struct daemon *d, const struct daemon_look *l)
{
	char cfg[PATH_MAX + 64], desc[96];

	if (!host_fabric(&l->s->host, desc, sizeof(desc)) || sv->nvlsm_wait[0])
		return;
	if (!daemon_due(d, now_ns()) || !fabric_manager_matches(sv, l->s, l->dir))
		return;
	snprintf(cfg, sizeof(cfg), "%s/" FABRICMANAGER_CFG, l->dir);
	sv->fm_cfg[0] = '\0';
	if (access(cfg, R_OK) == 0 && fabric_manager_config(sv, l->root_fd, cfg, l->dir) < 0)
		return;
	fabric_manager_args(sv, d, l->s);
	start_daemon(d, l->dir);
}

/*
 * Fabric Manager runs: every GPU whose NVML reports a fabric (Hopper and later) must have
 * it trained and registered (nvmlDeviceGetGpuFabricInfo). Why not into BUF, or NULL.
 */
static const char *fabric_state_error(const struct nodestate *s, char *buf, size_t size)
{
	for (unsigned i = 0; s->nvml_ok && i < s->nvml.n_gpus; i++) {
		const struct nvml_gpu *g = &s->nvml.gpus[i];

		if (g->fabric_state == NVML_FABRIC_NOT_STARTED ||
		    g->fabric_state == NVML_FABRIC_IN_PROGRESS) {
			snprintf(
				buf, size,
				"the NVLink fabric is not trained: GPU %s reports its fabric %s (Fabric Manager runs)",
				g->uuid, nvml_fabric_state_name(g->fabric_state));
			return buf;
		}
		if (g->fabric_state == NVML_FABRIC_COMPLETED && g->fabric_status != 0) {
			snprintf(
				buf, size,
				"GPU %s was not registered with the NVLink fabric (NVML status %d): see Fabric Manager's log",
				g->uuid, g->fabric_status);
			return buf;
		}
	}
	return NULL;
}

/*
 * On an NVSwitch system, why Fabric Manager does not serve (into BUF), or NULL when it
 * runs or the host has no NVSwitch.
 */
static const char *fabricmanager_not_ready(const struct supervisor *sv, const struct daemon *d,
					   const struct daemon_look *l, char *buf, size_t size)
{
	const struct nodestate *s = l->s;
	_cleanup_close_ int dir_fd = -1;
	char path[PATH_MAX], desc[96];
	const char *fabric = host_fabric(&s->host, desc, sizeof(desc));
	struct err e;

	if (!fabric)
		return NULL;
	if (d->state == DAEMON_RUNNING)
		return fabric_state_error(s, buf, size);
	if (sv->fm_refused[0]) {
		snprintf(buf, size, "%s", sv->fm_refused);
		return buf;
	}
	dir_fd = fs_dir_in_root(l->root_fd, l->install_dir, false, &e);
	snprintf(path, sizeof(path), "/proc/self/fd/%d/bin/" FABRICMANAGER, dir_fd);
	if (dir_fd < 0 || access(path, X_OK) < 0)
		snprintf(
			buf, size,
			"this node has %s and the installed driver has no Fabric Manager (bin/" FABRICMANAGER
			")",
			fabric);
	else if (d->state == DAEMON_BACKOFF)
		snprintf(buf, size,
			 "Fabric Manager ended (%s) on this node of %s; started again in %u s",
			 d->last_end, fabric, d->backoff_s);
	else
		snprintf(buf, size, "Fabric Manager is starting on this node of %s", fabric);
	return buf;
}

/* On NVLink 5, NVLSM first: without it Fabric Manager trains nothing. */
static const char *nvlsm_not_ready(const struct supervisor *sv, const struct daemon *d,
				   const struct daemon_look *l, char *buf, size_t size)
{
	char desc[96];

	(void)d;
	if (!host_fabric(&l->s->host, desc, sizeof(desc)) || !sv->nvlsm_wait[0])
		return NULL;
	snprintf(buf, size, "%s", sv->nvlsm_wait);
	return buf;
}

/*
 * MIG_MPS_PIPE_DIR or MIG_MPS_LOG_DIR under the host root, made where missing and judged
 * where it resolves (a link planted there cannot send the daemon's sockets elsewhere),
 * as "VAR=PATH" into BUF; the pipe directory with SELinux's container label where the host
 * has one (host/selinux.h). Returns 0 or -1.
 */
static int mps_dir_env(int root_fd, const char *var, const char *dir, char *buf, size_t size,
		       struct err *e)
{
	_cleanup_close_ int fd = mig_mps_dir(root_fd, dir, e);
	char path[PATH_MAX];
	struct selinux se;

	if (fd < 0 || fs_fd_path(fd, path, sizeof(path)) < 0)
		return -1;
	/* The pipe directory is mounted into containers: labelled as the install labels it. */
	if (strcmp(dir, MIG_MPS_PIPE_DIR) == 0) {
		selinux_probe(root_fd, &se);
		if (selinux_label(&se) &&
		    selinux_label_at(fd, NULL, se.context, false, NULL, e) < 0)
			return -1;
	}
	return str_fmt(buf, size, "%s=%s", var, path) < 0
		       ? err_set(e, EXIT_UNEXPECTED, "%s: path too long", dir)
		       : 0;
}

/*
 * The MPS control daemon runs while the node pool asks for MPS sharing; it stops when the
 * pool no longer does (a file that GKE's plugin would not take asks for nothing).
 */
static void run_mps(struct supervisor *sv, struct daemon *d, const struct daemon_look *l)
{
	struct mig_request req;
	struct err e;

	err_clear(&e);
	if (mig_read_gke_config(l->root_fd, &req, &e) != 0 || req.sharing != MIG_SHARING_MPS) {
		if (daemon_stop(d, CONTROL_STOP_TIMEOUT_S))
			log_msg(LOG_INFO, "agent",
				"the MPS control daemon stopped: the node pool no longer asks for MPS");
		return;
	}
	if (!daemon_due(d, now_ns()))
		return;
	if (mps_dir_env(l->root_fd, "CUDA_MPS_PIPE_DIRECTORY", MIG_MPS_PIPE_DIR, sv->mps_pipe_env,
			sizeof(sv->mps_pipe_env), &e) < 0 ||
	    mps_dir_env(l->root_fd, "CUDA_MPS_LOG_DIRECTORY", MIG_MPS_LOG_DIR, sv->mps_log_env,
			sizeof(sv->mps_log_env), &e) < 0) {
		log_kv(LOG_WARN, "agent", "MPS's directories cannot be made: no MPS control daemon",
		       "error", e.msg, LOG_END);
		return;
	}
	d->env[0] = sv->mps_pipe_env;
	d->env[1] = sv->mps_log_env;
	start_daemon(d, l->dir);
}

/* ---- the table ---------------------------------------------------------------- */

/* A daemon of the driver: a row of the table below. */
struct daemon_row {
	const char *name;		   /* its program in the install dir's bin/ */
	const char *args[DAEMON_MAX_ARGS]; /* its arguments, when its function sets none */
	bool foreground;		   /* stays in the foreground (else it forks away) */
	/* Decides at a look whether it runs, and starts it when due (start_daemon). */
	void (*run)(struct supervisor *sv, struct daemon *d, const struct daemon_look *l);
	/* For a daemon the node's readiness depends on: READINESS, and why it does not serve. */
	enum health_reason readiness;
	const char *(*not_ready)(const struct supervisor *sv, const struct daemon *d,
				 const struct daemon_look *l, char *buf, size_t size);
};

/* In start order (they stop in reverse): the index of each is its enum's (supervisor.h). */
static const struct daemon_row daemon_table[N_DAEMONS] = {
	[D_PERSISTENCED] = {.name = PERSISTENCED,
			    .args = {"--persistence-mode"},
			    .run = run_persistenced},
	[D_NVLSM] = {.name = NVLSM,
		     .foreground = true,
		     .run = run_nvlsm,
		     .readiness = HEALTH_FABRIC,
		     .not_ready = nvlsm_not_ready},
	[D_FABRICMANAGER] = {.name = FABRICMANAGER,
			     .run = run_fabricmanager,
			     .readiness = HEALTH_FABRIC,
			     .not_ready = fabricmanager_not_ready},
	[D_MPS] = {.name = MPS_CONTROL, .args = {"-f"}, .foreground = true, .run = run_mps},
};

void supervisor_init(struct supervisor *sv, void (*reap)(void *arg), void *arg)
{
	memset(sv, 0, sizeof(*sv));
	for (size_t i = 0; i < N_DAEMONS; i++) {
		struct daemon *d = &sv->daemons[i];

		d->name = daemon_table[i].name;
		d->foreground = daemon_table[i].foreground;
		memcpy(d->args, daemon_table[i].args, sizeof(d->args));
	}
	sv->reap = reap;
	sv->reap_arg = arg;
}

/*
 * A daemon still starting has its first process running, which is about to leave the
 * daemon to us: it is given up to 2 s to do so, so that the daemon, not only that first
 * process, is what gets stopped.
 */
static void settle(struct supervisor *sv)
{
	for (int tries = 0; tries < 100; tries++) {
		bool starting = false;

		sv->reap(sv->reap_arg);
		for (int i = 0; i < N_DAEMONS; i++)
			starting |= sv->daemons[i].state == DAEMON_STARTING;
		if (!starting)
			return;
		nanosleep(&(struct timespec){.tv_nsec = 20 * 1000000}, NULL);
	}
}

unsigned supervisor_stop(struct supervisor *sv)
{
	unsigned n = 0;

	settle(sv);
	for (int i = N_DAEMONS; i-- > 0;)
		n += daemon_stop(&sv->daemons[i], CONTROL_STOP_TIMEOUT_S);
	return n;
}

void supervisor_run(struct supervisor *sv, struct daemon_look *l, bool run)
{
	_cleanup_close_ int dir_fd = -1;
	char dir[PATH_MAX];
	struct err e;

	sv->nvlsm_wait[0] = '\0';
	if (!run) {
		if (supervisor_stop(sv) > 0)
			log_msg(LOG_INFO, "agent",
				"the daemons stopped: the installed driver is not loaded");
		return;
	}
	dir_fd = fs_dir_in_root(l->root_fd, l->install_dir, false, &e);
	if (dir_fd < 0 || fs_fd_path(dir_fd, dir, sizeof(dir)) < 0)
		return;
	l->dir = dir;
	for (size_t i = 0; i < N_DAEMONS; i++)
		daemon_table[i].run(sv, &sv->daemons[i], l);
	l->dir = NULL;
}

bool supervisor_reaped(struct supervisor *sv, pid_t pid, int status)
{
	for (int i = 0; i < N_DAEMONS; i++) {
		struct daemon *d = &sv->daemons[i];
		pid_t orphan = pid == d->launcher ? orphan_child(sv, d->name) : 0;

		if (daemon_reaped(d, pid, status, orphan))
			return true;
	}
	return false;
}

const char *supervisor_not_ready(const struct supervisor *sv, const struct daemon_look *l,
				 enum health_reason reason, char *buf, size_t size)
{
	for (size_t i = 0; i < N_DAEMONS; i++) {
		const struct daemon_row *row = &daemon_table[i];

		if (row->readiness == reason && row->not_ready &&
		    row->not_ready(sv, &sv->daemons[i], l, buf, size))
			return buf;
	}
	return NULL;
}

size_t supervisor_pids(const struct supervisor *sv, pid_t *pids)
{
	size_t n = 0;

	for (int i = 0; i < N_DAEMONS; i++) {
		if (sv->daemons[i].pid > 0)
			pids[n++] = sv->daemons[i].pid;
		if (sv->daemons[i].launcher > 0)
			pids[n++] = sv->daemons[i].launcher;
	}
	return n;
}

char *supervisor_render(const struct supervisor *sv)
{
	const struct daemon *ds[N_DAEMONS];

	for (size_t i = 0; i < N_DAEMONS; i++)
		ds[i] = &sv->daemons[i];
	return daemon_render(ds, N_DAEMONS);
}
