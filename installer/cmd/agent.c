// SPDX-License-Identifier: Apache-2.0
/*
 * agent: the node agent, a long-running container of the installer's pod. It owns the
 * node's readiness after the install: every --interval it looks at the node (what is
 * installed and loaded, NVML, the kernel log's Xids, and CUDA while not ready or every
 * --cuda-interval), withdraws the readiness marker and the driver's labels when a CUDA job
 * could not run, restores them when it could again, and serves what it judged over HTTP
 * (/metrics, /healthz, /readyz) and in a textfile. See docs/design.md, "The node agent".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "expose/expose.h"
#include "kernel/kernel.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

#define KMSG_PATH "/dev/kmsg"
#define MAX_HOLDS 4
/*
 * /healthz says the loop is stuck when it has not moved for this long: longer than its
 * longest step (a CUDA check's 60 s, a look's API calls at 5 s each, the daemons' stops).
 */
#define LOOP_STALL_S 180
/*
 * How long a request waits for what the loop's step in progress is about to say (its next
 * share): a scrape, longer than the kubelet's probe may (its timeout is 1 s by default).
 */
#define METRICS_WAIT_MS 5000
#define READYZ_WAIT_MS 500
/* After an upgrade's step, the next look this soon (a CUDA check may need the time). */
#define UPGRADE_NEXT_LOOK_MS 200
/*
 * The driver's daemons, in the order they start (and stop in reverse): NVIDIA's persistence
 * daemon, persistence mode on, as root; on NVLink 5 systems NVIDIA's NVLink Subnet Manager
 * on the first management port, in the foreground, logging to stdout; on NVSwitch systems
 * Fabric Manager, with the package's config made to point into the install dir
 * (fabric_manager_config), or its default path when the package has none, and on NVLink 5
 * the same port's GUID; where the node pool asks for MPS (GKE's gpu_config.json), the MPS
 * control daemon in the foreground, its pipe directory where GKE's device plugin mounts it
 * from.
 */
enum { D_PERSISTENCED, D_NVLSM, D_FABRICMANAGER, D_MPS, N_DAEMONS };
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

/* What NVML showed of MIG at the last look that it answered: the agent's MIG series. */
#define MIG_PROFILE_SERIES 16
struct mig_view {
	unsigned n_gpus;
	int mode[NVML_MAX_GPUS], pending[NVML_MAX_GPUS]; /* -1: the GPU has no MIG */
	struct {
		char profile[MIG_SIZE_MAX];
		unsigned count;
	} profiles[MIG_PROFILE_SERIES];
	size_t n_profiles;
};

struct agent {
	const struct config *c;
	int root_fd;
	struct kmsg_reader kmsg; /* fd -1 when the kernel log cannot be read */
	struct health h;
	uint64_t start_ns;
	uint64_t cuda_ok_ns; /* the last CUDA check that passed, 0 for none since a change */
	char fatal_xid[96];  /* the fatal Xid in effect since the driver loaded, or "" */
	char version[64];    /* the installed version at the last look, or "" */
	struct daemon daemons[N_DAEMONS];
	/* The config Fabric Manager is started with ("": its default), and why it was not. */
	char fm_cfg[PATH_MAX + 64];
	char fm_refused[256];
	char fm_refused_for[64]; /* the driver version fm_refused was found for */
	char nvlsm_wait[256];	 /* on NVLink 5, why Fabric Manager waits for NVLSM, or "" */
	char nvlsm_cfg[PATH_MAX + 64];
	/* MPS's directories on the host, resolved, as its environment gives them. */
	char mps_pipe_env[PATH_MAX + 32], mps_log_env[PATH_MAX + 32];
	int ctl_fd;	      /* the control socket (agent/control.h), or -1 */
	int holds[MAX_HOLDS]; /* installers holding the daemons stopped */
	size_t n_holds;
	struct agent_upgrade_opts upo; /* what upgrades read of the configuration */
	struct agent_calls calls;      /* what the program does for them */
	struct upgrader up;	       /* driver upgrades (agent/upgrader.h) */
	bool look_soon;		       /* an upgrade moved on: the next look without the interval */
	uint64_t hup_ns;      /* when a stale spec's producer was last asked to rewrite it */
	char stale[PATH_MAX]; /* the other producer's spec found stale at the last look, or "" */
	struct mig_view mig;
	struct httpd *http; /* serves what share() last gave it */
};

static void share(struct agent *a);

/* ---- the kernel log -------------------------------------------------------- */

static void on_record(const char *rec, size_t len, void *arg)
{
	struct agent *a = arg;
	struct xid_event ev;
	enum xid_class cls;

	switch (xid_parse(rec, len, &ev)) {
	case KMSG_DRIVER_LOADED:
		/* A load resets the GPUs: an Xid from before it is history. */
		if (a->fatal_xid[0])
			log_kv(LOG_INFO, "agent",
			       "the driver was loaded again: the fatal Xid before it no longer counts",
			       "xid", a->fatal_xid, LOG_END);
		a->fatal_xid[0] = '\0';
		return;
	case KMSG_XID:
		break;
	case KMSG_FROM_USER:
		/* Any root process can write to /dev/kmsg; only the kernel speaks for the driver. */
		log_kv(LOG_WARN, "agent",
		       "the driver's words in a record user space wrote to the kernel log: ignored",
		       U64("facility", ev.facility), LOG_END);
		return;
	default:
		return;
	}
	cls = xid_classify(ev.code);
	health_count_xid(&a->h, &ev);
	log_kv(cls == XID_FATAL ? LOG_ERROR : LOG_WARN, "agent", "GPU error (Xid)", "gpu", ev.bdf,
	       U64("xid", ev.code), "class", xid_class_name(cls), LOG_END);
	if (cls == XID_FATAL && !a->fatal_xid[0])
		snprintf(a->fatal_xid, sizeof(a->fatal_xid), "Xid %u on GPU %s", ev.code, ev.bdf);
}

static void read_kmsg(struct agent *a)
{
	struct err e;

	if (a->kmsg.fd < 0)
		return;
	if (kmsg_read(&a->kmsg, on_record, a, &e) < 0) {
		log_kv(LOG_WARN, "agent",
		       "the kernel log cannot be read any more: Xids are not watched", "error",
		       e.msg, LOG_END);
		kmsg_close(&a->kmsg);
	}
}

/* ---- the daemons ----------------------------------------------------------- */

/* Whether PID is one of our daemons, or the first process of one. */
static bool known(const struct agent *a, pid_t pid)
{
	for (int i = 0; i < N_DAEMONS; i++)
		if (pid == a->daemons[i].pid || pid == a->daemons[i].launcher)
			return true;
	return false;
}

/* Whether process PID runs the program NAME (its executable's file name). */
static bool runs(pid_t pid, const char *name)
{
	char link[64], exe[PATH_MAX];
	ssize_t n;
	const char *base;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	/* An executable replaced since it started reads "PATH (deleted)". */
	if (n > 10 && strcmp(exe + n - 10, " (deleted)") == 0)
		exe[n - 10] = '\0';
	base = strrchr(exe, '/');
	return strcmp(base ? base + 1 : exe, name) == 0;
}

/*
 * A child of ours that no daemon knows and that runs NAME: what a daemon's first process
 * left when it forked into the background and exited (we are a child subreaper; two
 * daemons starting at once are told apart by their programs). 0 when there is none.
 */
static pid_t orphan_child(const struct agent *a, const char *name)
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
		if (pid > 0 && !known(a, (pid_t)pid) && runs((pid_t)pid, name))
			return (pid_t)pid;
	}
}

static void reap(struct agent *a)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (upgrader_reaped(&a->up, pid, status)) {
			a->look_soon = true;
			continue;
		}
		for (int i = 0; i < N_DAEMONS; i++) {
			struct daemon *d = &a->daemons[i];
			pid_t orphan = pid == d->launcher ? orphan_child(a, d->name) : 0;

			if (daemon_reaped(d, pid, status, orphan))
				break;
		}
	}
}

/*
 * A daemon still starting has its first process running, which is about to leave the
 * daemon to us: it is given up to 2 s to do so, so that the daemon, not only that first
 * process, is what gets stopped.
 */
static void settle(struct agent *a)
{
	for (int tries = 0; tries < 100; tries++) {
		bool starting = false;

		reap(a);
		for (int i = 0; i < N_DAEMONS; i++)
			starting |= a->daemons[i].state == DAEMON_STARTING;
		if (!starting)
			return;
		nanosleep(&(struct timespec){.tv_nsec = 20 * 1000000}, NULL);
	}
}

/* Stops every daemon, Fabric Manager first. Returns how many ran. */
static unsigned stop_daemons(struct agent *a)
{
	unsigned n = 0;

	settle(a);
	for (int i = N_DAEMONS; i-- > 0;)
		n += daemon_stop(&a->daemons[i], CONTROL_STOP_TIMEOUT_S);
	return n;
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

/*
 * Fabric Manager must be the driver's own version (NVIDIA's requirement): asked with
 * --version before each start (the caller asks only when one is due). Returns true when
 * it may start; else why not goes to a->fm_refused.
 */
static bool fabric_manager_matches(struct agent *a, const struct nodestate *s, const char *dir)
{
	char path[PATH_MAX + 64], v[64];

	/* Refused once for this driver: the same files, the same answer; said once. */
	if (a->fm_refused[0] && strcmp(a->fm_refused_for, s->manifest.driver_version) == 0)
		return false;
	a->fm_refused[0] = '\0';
	snprintf(a->fm_refused_for, sizeof(a->fm_refused_for), "%s", s->manifest.driver_version);
	snprintf(path, sizeof(path), "%s/bin/" FABRICMANAGER, dir);
	if (access(path, X_OK) < 0)
		return true;
	if (daemon_version(path, 5, v, sizeof(v)) < 0)
		snprintf(a->fm_refused, sizeof(a->fm_refused),
			 "Fabric Manager's version could not be read (bin/" FABRICMANAGER
			 " --version): not started");
	else if (strcmp(v, s->manifest.driver_version) != 0)
		snprintf(
			a->fm_refused, sizeof(a->fm_refused),
			"Fabric Manager %s is not the driver's version %s: not started (NVIDIA requires the same version)",
			v, s->manifest.driver_version);
	if (a->fm_refused[0])
		log_kv(LOG_ERROR, "agent", a->fm_refused, "fix",
		       "package Fabric Manager of the driver's own version", LOG_END);
	return !a->fm_refused[0];
}

/*
 * The package's fabricmanager.cfg (PKG_CFG) names its files by the paths of NVIDIA's own
 * packages (/usr/share/nvidia/nvswitch); in this container they are in the install dir
 * (DIR). The config Fabric Manager is started with is the package's, with the topology and
 * database paths pointed there and LOG_FILE_NAME empty (Fabric Manager then logs to stderr,
 * the container's log), written to our own directory under the host's /run
 * (CONTROL_DIR/fabricmanager.cfg) into a->fm_cfg. Returns 0 or -1.
 */
static int fabric_manager_config(struct agent *a, const char *pkg_cfg, const char *dir)
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
	    (run_fd = fs_dir_in_root(a->root_fd, CONTROL_DIR, true, &e)) < 0)
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
	snprintf(a->fm_cfg, sizeof(a->fm_cfg), "%s/fabricmanager.cfg", run_dir);
	return 0;
failed:
	str_fmt_cut(a->fm_refused, sizeof(a->fm_refused),
		    "Fabric Manager's config could not be prepared (%s): not started",
		    e.msg[0] ? e.msg : "out of memory");
	log_msg(LOG_ERROR, "agent", "%s", a->fm_refused);
	return -1;
}

/* Fabric Manager's arguments: its config, and on NVLink 5 the management port NVLSM has. */
static void fabric_manager_args(struct agent *a, const struct nodestate *s)
{
	const char **args = a->daemons[D_FABRICMANAGER].args;
	size_t n = 0;

	if (a->fm_cfg[0]) {
		args[n++] = "-c";
		args[n++] = a->fm_cfg;
	}
	if (s->host.nvlink.n_ports > 0) {
		args[n++] = "-g";
		args[n++] = s->host.nvlink.ports[0].guid_text;
	}
	args[n] = NULL;
}

/*
 * Whether NVLSM has made the socket Fabric Manager reaches it by: the Unix path the
 * package's config names (FM_SM_IPC_INTERFACE), or its default; false for an IP address.
 */
static bool nvlsm_socket_ready(const char *dir)
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
	return sock[0] == '/' && access(sock, F_OK) == 0;
}

/*
 * On NVLink 5, NVLSM must serve before Fabric Manager starts: ib_umad loaded, bin/nvlsm in
 * the package, started (when due) on the first management port, and its socket made (or
 * NVLSM_SETTLE_S passed). Returns true when Fabric Manager may start; else why not goes to
 * a->nvlsm_wait.
 */
static bool nvlsm_serves(struct agent *a, const struct nodestate *s, const char *dir)
{
	struct daemon *d = &a->daemons[D_NVLSM];
	const struct nvlink_port *port = &s->host.nvlink.ports[0];
	char path[PATH_MAX + 64];
	uint64_t up_s;
	size_t n = 0;

	if (!s->host.nvlink.ib_umad) {
		snprintf(
			a->nvlsm_wait, sizeof(a->nvlsm_wait),
			"ib_umad is not loaded: NVLSM cannot reach the NVLink 5 NVSwitches behind %s",
			port->ibdev);
		daemon_stop(d, CONTROL_STOP_TIMEOUT_S);
		return false;
	}
	snprintf(path, sizeof(path), "%s/bin/" NVLSM, dir);
	if (access(path, X_OK) < 0) {
		snprintf(
			a->nvlsm_wait, sizeof(a->nvlsm_wait),
			"this node's NVLink 5 fabric needs NVLSM and the installed driver has none (bin/" NVLSM
			")");
		return false;
	}
	snprintf(a->nvlsm_cfg, sizeof(a->nvlsm_cfg), "%s/" NVLSM_CFG, dir);
	if (access(a->nvlsm_cfg, R_OK) == 0) {
		d->args[n++] = "--config";
		d->args[n++] = a->nvlsm_cfg;
	}
	d->args[n++] = "--guid";
	d->args[n++] = port->guid_text;
	d->args[n++] = "--log_file";
	d->args[n++] = "stdout";
	d->args[n] = NULL;
	start_daemon(d, dir);
	up_s = (now_ns() - d->started_ns) / 1000000000ull;
	if (d->state == DAEMON_BACKOFF)
		snprintf(a->nvlsm_wait, sizeof(a->nvlsm_wait),
			 "NVLSM ended (%s) on management port %s; started again in %u s",
			 d->last_end, port->guid_text, d->backoff_s);
	else if (d->state != DAEMON_RUNNING || (up_s < NVLSM_SETTLE_S && !nvlsm_socket_ready(dir)))
		snprintf(a->nvlsm_wait, sizeof(a->nvlsm_wait),
			 "NVLSM is starting on management port %s (%s); Fabric Manager follows",
			 port->guid_text, port->ibdev);
	return !a->nvlsm_wait[0];
}

/*
 * MIG_MPS_PIPE_DIR or MIG_MPS_LOG_DIR under the host root, made where missing and judged
 * where it resolves (a link planted there cannot send the daemon's sockets elsewhere),
 * as "VAR=PATH" into BUF; the pipe directory with SELinux's container label where the host
 * has one (host/selinux.h). Returns 0 or -1.
 */
static int mps_dir_env(const struct agent *a, const char *var, const char *dir, char *buf,
		       size_t size, struct err *e)
{
	_cleanup_close_ int fd = mig_mps_dir(a->root_fd, dir, e);
	char path[PATH_MAX];
	struct selinux se;

	if (fd < 0 || fs_fd_path(fd, path, sizeof(path)) < 0)
		return -1;
	/* The pipe directory is mounted into containers: labelled as the install labels it. */
	if (strcmp(dir, MIG_MPS_PIPE_DIR) == 0) {
		selinux_probe(a->root_fd, &se);
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
static void run_mps(struct agent *a, const char *dir)
{
	struct daemon *d = &a->daemons[D_MPS];
	struct mig_request req;
	struct err e;

	err_clear(&e);
	if (mig_read_gke_config(a->root_fd, &req, &e) != 0 || req.sharing != MIG_SHARING_MPS) {
		if (daemon_stop(d, CONTROL_STOP_TIMEOUT_S))
			log_msg(LOG_INFO, "agent",
				"the MPS control daemon stopped: the node pool no longer asks for MPS");
		return;
	}
	if (!daemon_due(d, now_ns()))
		return;
	if (mps_dir_env(a, "CUDA_MPS_PIPE_DIRECTORY", MIG_MPS_PIPE_DIR, a->mps_pipe_env,
			sizeof(a->mps_pipe_env), &e) < 0 ||
	    mps_dir_env(a, "CUDA_MPS_LOG_DIRECTORY", MIG_MPS_LOG_DIR, a->mps_log_env,
			sizeof(a->mps_log_env), &e) < 0) {
		log_kv(LOG_WARN, "agent", "MPS's directories cannot be made: no MPS control daemon",
		       "error", e.msg, LOG_END);
		return;
	}
	d->env[0] = a->mps_pipe_env;
	d->env[1] = a->mps_log_env;
	start_daemon(d, dir);
}

/*
 * The daemons run while the installed driver is loaded and no installer holds them: the
 * persistence daemon where the driver has one, Fabric Manager where the host has NVSwitches.
 * The persistence daemon does not count in readiness (the GPUs run jobs without it, each
 * start paying the driver's initialisation); Fabric Manager does (health_input.fabric).
 */
static void run_daemons(struct agent *a, const struct nodestate *s)
{
	_cleanup_close_ int dir_fd = -1;
	char dir[PATH_MAX], cfg[PATH_MAX + 64], desc[96];
	struct err e;

	a->nvlsm_wait[0] = '\0';
	if (!s->installed || strcmp(s->loaded_version, s->manifest.driver_version) != 0 ||
	    a->n_holds > 0) {
		if (stop_daemons(a) > 0)
			log_msg(LOG_INFO, "agent",
				"the daemons stopped: the installed driver is not loaded");
		return;
	}
	dir_fd = fs_dir_in_root(a->root_fd, a->c->install_dir, false, &e);
	if (dir_fd < 0 || fs_fd_path(dir_fd, dir, sizeof(dir)) < 0)
		return;
	start_daemon(&a->daemons[D_PERSISTENCED], dir);
	run_mps(a, dir);
	if (!host_fabric(&s->host, desc, sizeof(desc)))
		return;
	if (s->host.nvlink.n_ports > 0 && !nvlsm_serves(a, s, dir))
		return;
	if (!daemon_due(&a->daemons[D_FABRICMANAGER], now_ns()) ||
	    !fabric_manager_matches(a, s, dir))
		return;
	snprintf(cfg, sizeof(cfg), "%s/" FABRICMANAGER_CFG, dir);
	a->fm_cfg[0] = '\0';
	if (access(cfg, R_OK) == 0 && fabric_manager_config(a, cfg, dir) < 0)
		return;
	fabric_manager_args(a, s);
	start_daemon(&a->daemons[D_FABRICMANAGER], dir);
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
static const char *fabric_error(const struct agent *a, const struct nodestate *s, char *buf,
				size_t size)
{
	const struct daemon *d = &a->daemons[D_FABRICMANAGER];
	_cleanup_close_ int dir_fd = -1;
	char path[PATH_MAX], desc[96];
	const char *fabric = host_fabric(&s->host, desc, sizeof(desc));
	struct err e;

	if (!fabric)
		return NULL;
	/* On NVLink 5, NVLSM first: without it Fabric Manager trains nothing. */
	if (a->nvlsm_wait[0]) {
		snprintf(buf, size, "%s", a->nvlsm_wait);
		return buf;
	}
	if (d->state == DAEMON_RUNNING)
		return fabric_state_error(s, buf, size);
	if (a->fm_refused[0]) {
		snprintf(buf, size, "%s", a->fm_refused);
		return buf;
	}
	dir_fd = fs_dir_in_root(a->root_fd, a->c->install_dir, false, &e);
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

/* An installer asks: the daemons stop, and stay stopped while it holds the connection. */
static void on_control(struct agent *a)
{
	int fd = accept4(a->ctl_fd, NULL, NULL, SOCK_CLOEXEC);
	char why[CONTROL_MAX_LINE], reply[32];
	unsigned stopped = 0;

	if (fd < 0)
		return;
	if (a->n_holds == MAX_HOLDS || control_read_request(fd, why, sizeof(why)) != 1) {
		close(fd);
		return;
	}
	stopped = stop_daemons(a);
	log_kv(LOG_INFO, "agent", "an installer holds the daemons stopped", "why", why,
	       U64("stopped", stopped), LOG_END);
	snprintf(reply, sizeof(reply), "held %u\n", stopped);
	if (fs_write_all(fd, reply, strlen(reply)) < 0) {
		close(fd);
		return;
	}
	a->holds[a->n_holds++] = fd;
}

/* A holder's connection readable: its end (or stray bytes, ignored). */
static void on_hold(struct agent *a, size_t i)
{
	char buf[64];
	ssize_t n = read(a->holds[i], buf, sizeof(buf));

	if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN)))
		return;
	close(a->holds[i]);
	a->holds[i] = a->holds[--a->n_holds];
	if (a->n_holds == 0)
		log_msg(LOG_INFO, "agent", "the installer released the daemons");
}

/* The MIG modes and MIG devices by profile of REP (an NVML report that answered). */
static void mig_view_of(const struct nvml_report *rep, struct mig_view *v)
{
	struct part_profile_count ps[MIG_PROFILE_SERIES];
	size_t n;

	memset(v, 0, sizeof(*v));
	v->n_gpus = rep->n_gpus;
	for (unsigned i = 0; i < rep->n_gpus; i++) {
		v->mode[i] = rep->gpus[i].mig_mode;
		v->pending[i] = rep->gpus[i].mig_pending;
	}
	n = partition_profiles(rep->migs, rep->n_migs, ps, MIG_PROFILE_SERIES);
	for (size_t i = 0; i < n; i++) {
		snprintf(v->profiles[i].profile, MIG_SIZE_MAX, "%s", ps[i].first->profile);
		v->profiles[i].count = ps[i].count;
	}
	v->n_profiles = n;
}

/* The MIG series (docs/metrics.md, "GPU partitions"); none while NVML has not answered. */
static char *mig_render(const struct mig_view *v)
{
	char *text = NULL, p[96];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fputs("# HELP nvidia_driver_installer_agent_gpu_mig_mode Each MIG-capable GPU's MIG mode as NVML reported it at the agent's last look: 1 on, 0 off.\n"
	      "# TYPE nvidia_driver_installer_agent_gpu_mig_mode gauge\n",
	      f);
	for (unsigned i = 0; i < v->n_gpus; i++)
		if (v->mode[i] >= 0)
			fprintf(f, "nvidia_driver_installer_agent_gpu_mig_mode{gpu=\"%u\"} %d\n", i,
				v->mode[i]);
	fputs("# HELP nvidia_driver_installer_agent_gpu_mig_reset_pending Whether the GPU's MIG mode waits for a GPU reset (its pending mode is not its current one).\n"
	      "# TYPE nvidia_driver_installer_agent_gpu_mig_reset_pending gauge\n",
	      f);
	for (unsigned i = 0; i < v->n_gpus; i++)
		if (v->mode[i] >= 0)
			fprintf(f,
				"nvidia_driver_installer_agent_gpu_mig_reset_pending{gpu=\"%u\"} %d\n",
				i, v->pending[i] >= 0 && v->pending[i] != v->mode[i]);
	fputs("# HELP nvidia_driver_installer_agent_mig_devices The MIG devices NVML lists, by profile.\n"
	      "# TYPE nvidia_driver_installer_agent_mig_devices gauge\n",
	      f);
	for (size_t i = 0; i < v->n_profiles; i++)
		fprintf(f, "nvidia_driver_installer_agent_mig_devices{profile=\"%s\"} %u\n",
			metrics_label_escape(v->profiles[i].profile, p, sizeof(p)),
			v->profiles[i].count);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static char *render(const struct agent *a)
{
	const struct daemon *ds[] = {&a->daemons[D_PERSISTENCED], &a->daemons[D_NVLSM],
				     &a->daemons[D_FABRICMANAGER], &a->daemons[D_MPS]};
	_cleanup_free_ char *h = health_render(&a->h, a->version),
			    *d = daemon_render(ds, ARRAY_SIZE(ds)), *u = upgrader_render(&a->up),
			    *m = mig_render(&a->mig);
	char *all = NULL;

	if (!h || !d || !u || !m || asprintf(&all, "%s%s%s%s", h, d, u, m) < 0)
		return NULL;
	return all;
}

/* ---- one look at the node --------------------------------------------------- */

/* CUDA, while not ready or every --cuda-interval: a context on every device costs seconds. */
static bool cuda_due(const struct agent *a)
{
	return a->h.reason != HEALTH_READY || a->cuda_ok_ns == 0 ||
	       now_ns() - a->cuda_ok_ns >= (uint64_t)a->c->cuda_interval_s * 1000000000ull;
}

/*
 * CUDA as the installer asks it (expose/cuda.h): the GPUs NVML shows outside MIG mode in one
 * process, each MIG device in its own; S's NVML answer says which (the look asks only once
 * NVML has passed).
 */
static void check_cuda(struct agent *a, const struct nodestate *s, char *err, size_t size)
{
	_cleanup_close_ int dir_fd = -1;
	struct cuda_report r;
	struct cuda_plan plan;
	char lib[PATH_MAX], desc[96];
	struct err e;

	err[0] = '\0';
	if (s->host.n_gpus == 0 || !cuda_due(a))
		return;
	/* The install dir as it resolves under the host root, not as its name reads. */
	dir_fd = fs_dir_in_root(a->root_fd, a->c->install_dir, false, &e);
	if (dir_fd < 0) {
		str_fmt_cut(err, size, "%s", e.msg);
		return;
	}
	snprintf(lib, sizeof(lib), "/proc/self/fd/%d/lib64/libcuda.so.1", dir_fd);
	if (cuda_probe_node(lib, &s->nvml, CUDA_CHECK_TIMEOUT_S, &plan, &r, &e) < 0 ||
	    cuda_check(&r, host_fabric(&s->host, desc, sizeof(desc)), &e) < 0) {
		str_fmt_cut(err, size, "%s", e.msg);
		a->cuda_ok_ns = 0;
		return;
	}
	a->cuda_ok_ns = now_ns();
}

/* The readiness marker and the driver's labels, made to say what was judged. */
static void publish(struct agent *a, const struct nodestate *s, bool ready)
{
	struct err e;

	/* Without an install of ours, a marker or labels there are someone else's. */
	if (!ready && !s->installed)
		return;
	if (!ready) {
		if (nodeinfo_remove_driver(a->root_fd, &e) < 0)
			log_kv(LOG_WARN, "agent", "withdrawing readiness", "error", e.msg, LOG_END);
		return;
	}
	if (labels_write(
		    a->root_fd,
		    &(struct driver_id){.version = s->manifest.driver_version,
					.module_type = s->loaded_type[0] ? s->loaded_type : NULL,
					.kernel = s->host.kernel},
		    &s->nvml, s->host.n_gpus, &e) < 0 ||
	    readiness_write(a->root_fd, a->c->install_dir, s->manifest.driver_version, &e) < 0)
		log_kv(LOG_WARN, "agent", "restoring readiness", "error", e.msg, LOG_END);
}

/* Processes other than the agent and its daemons with the driver open. */
static unsigned other_holders(void *arg)
{
	const struct agent *a = arg;
	pid_t ours[1 + 2 * N_DAEMONS] = {getpid()};
	size_t n = 1;
	char why[1024] = "";

	for (int i = 0; i < N_DAEMONS; i++) {
		if (a->daemons[i].pid > 0)
			ours[n++] = a->daemons[i].pid;
		if (a->daemons[i].launcher > 0)
			ours[n++] = a->daemons[i].launcher;
	}
	return (unsigned)kmods_open_users(a->root_fd, ours, n, why, sizeof(why));
}

/* ---- other producers' CDI specs ------------------------------------------- */

/*
 * The device plugin writes its CDI spec when it starts and when it restarts its plugins,
 * which it does on SIGHUP (k8s-device-plugin, cmd/nvidia-device-plugin/main.go, the
 * restart loop and startPlugins -> GetPlugins -> CreateSpecFile). NVIDIA's discovery
 * resolves our links, so its spec names .versions/ID/...: after a switch the files it
 * names are gone. The plugin shares the pod's PID namespace (shareProcessNamespace in
 * daemonset-generic.yaml), so the agent sees it in /proc.
 */
#define CDI_PRODUCER "nvidia-device-plugin"
/* One request a minute: a plugin that cannot rewrite its spec is not asked in a loop. */
#define HUP_INTERVAL_NS (60ull * 1000000000ull)

/* SIGHUP to each process running CDI_PRODUCER; how many were signalled. */
static unsigned hup_producers(void)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned n = 0;

	while (d && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 1 || pid == (long)getpid() || !runs((pid_t)pid, CDI_PRODUCER))
			continue;
		if (kill((pid_t)pid, SIGHUP) == 0) {
			log_kv(LOG_INFO, "agent", "asked the device plugin to rewrite its CDI spec",
			       U64("pid", (uint64_t)pid), LOG_END);
			n++;
		}
	}
	return n;
}

static void refresh_other_specs(struct agent *a)
{
	const struct cdi_place at = {
		.root_fd = a->root_fd, .cdi_dir = a->c->cdi_dir, .install_dir = a->c->install_dir};
	struct cdi_stale st = {.spec = ""};
	uint64_t now = now_ns();

	if (!cdi_find_stale(&at, &st)) {
		if (a->stale[0])
			log_kv(LOG_INFO, "agent", "another producer's CDI spec is current again",
			       "spec", a->stale, LOG_END);
		a->stale[0] = '\0';
		return;
	}
	if (a->hup_ns && now - a->hup_ns < HUP_INTERVAL_NS && strcmp(a->stale, st.spec) == 0)
		return;
	str_fmt_cut(a->stale, sizeof(a->stale), "%s", st.spec);
	a->hup_ns = now;
	if (hup_producers() > 0)
		log_kv(LOG_WARN, "agent",
		       "another producer's CDI spec names files of a driver version no longer "
		       "installed: its producer was asked to rewrite it",
		       "spec", st.spec, "missing", st.missing, LOG_END);
	else
		log_kv(LOG_WARN, "agent",
		       "another producer's CDI spec names files of a driver version no longer "
		       "installed, and no " CDI_PRODUCER " runs in this pod: restart its "
		       "producer, which rewrites it",
		       "spec", st.spec, "missing", st.missing, LOG_END);
}

/*
 * Another producer's spec of our kind written since the install (nvidia-ctk cdi generate):
 * the install's rule (cdi_settle: theirs win and ours is withdrawn, or --cdi-replace sets
 * theirs aside while ours is there), applied at this look, before readiness is judged. The
 * kind is the one ours declares (the install's --cdi-kind), whatever the agent was given.
 * ERR says why the node's devices of our kind cannot be resolved (both specs stay), or
 * is "". Returns which specs of our kind stand now: "ours", "theirs", "both", "none".
 */
static const char *settle_cdi(struct agent *a, const struct nodestate *s, char *err, size_t size)
{
	char kind[256];
	const struct cdi_place at = {
		.root_fd = a->root_fd, .cdi_dir = a->c->cdi_dir, .install_dir = a->c->install_dir};
	const struct cdi_rule rule = {
		.kind = cdi_our_kind(&at, kind, sizeof(kind)) == 0 ? kind : a->c->cdi_kind,
		.replace = a->c->cdi_replace && s->cdi_present};
	struct cdi_settled st;
	struct err e;

	err[0] = '\0';
	err_clear(&e);
	if (cdi_settle(&at, &rule, &st, &e) < 0) {
		if (!st.conflict) {
			log_kv(LOG_WARN, "agent",
			       "another producer's CDI spec: the rule not applied", "spec",
			       st.theirs, "error", e.msg, LOG_END);
			return st.theirs[0] ? "theirs" : "none";
		}
		str_fmt_cut(
			err, size,
			"another producer's CDI spec %s declares %s as ours does, and %s (%s): a runtime resolves neither's devices",
			st.theirs, rule.kind,
			rule.replace ? "theirs cannot be set aside" : "ours cannot be withdrawn",
			e.msg);
		return "both";
	}
	if (st.n_set_aside)
		log_kv(LOG_WARN, "agent", "another producer's CDI spec set aside (--cdi-replace)",
		       "spec", st.set_aside, "now", CDI_SET_ASIDE, U64("specs", st.n_set_aside),
		       LOG_END);
	if (st.withdrew)
		log_kv(LOG_WARN, "agent",
		       "another producer's CDI spec declares our kind: ours withdrawn, the node's devices are theirs",
		       "spec", st.theirs, "kind", rule.kind, "fix",
		       "--cdi-kind for a kind of our own, or --cdi-replace (installer and agent) to set theirs aside",
		       LOG_END);
	if (st.theirs[0])
		return "theirs";
	return s->cdi_present ? "ours" : "none";
}

/* Partitions made since the install (a MIG manager's): their device nodes. */
static void sync_mig_nodes(struct agent *a)
{
	struct devnodes_report r;
	struct err e;

	err_clear(&e);
	if (devnodes_sync_mig(a->root_fd, &r, &e) < 0)
		log_kv(LOG_WARN, "agent", "the MIG instances' device nodes could not be made",
		       "error", e.msg, LOG_END);
	else if (r.created || r.replaced || r.fixed)
		log_kv(LOG_INFO, "agent", "MIG instances' device nodes made",
		       U64("created", r.created), U64("replaced", r.replaced),
		       U64("fixed", r.fixed), LOG_END);
}

static void look(struct agent *a)
{
	_cleanup_(nodestate_done) struct nodestate s;
	const struct nodestate_opts no = session_nodestate_opts(a->c);
	char nvml_err[512] = "", cuda_err[512] = "", cdi_err[512] = "", fm_err[256], cause[512];
	const char *cdi = "none";
	struct health_input in = {0};
	enum health_reason r;
	struct err e;

	memset(&s, 0, sizeof(s));
	read_kmsg(a);
	/* A run of the installer changes what is looked at: the next look, after it. */
	if (session_installer_running(a->root_fd)) {
		log_msg(LOG_DEBUG, "agent", "an installer run holds the lock: looking later");
		return;
	}
	if (nodestate_collect(&no, a->root_fd, &s, &e) < 0) {
		log_kv(LOG_WARN, "agent", "the node cannot be read", "error", e.msg, LOG_END);
		return;
	}
	in.installed = s.installed ? s.manifest.driver_version : NULL;
	in.loaded = s.loaded_version;
	if (s.nvml_ok)
		mig_view_of(&s.nvml, &a->mig);
	else
		memset(&a->mig, 0, sizeof(a->mig));
	if (in.loaded && in.loaded[0])
		sync_mig_nodes(a);
	if (in.installed && strcmp(in.installed, a->version) != 0) {
		snprintf(a->version, sizeof(a->version), "%s", in.installed);
		a->cuda_ok_ns = 0;
	}
	if (in.installed && !s.nvml_ok)
		str_fmt_cut(nvml_err, sizeof(nvml_err), "%s", s.nvml_error);
	else if (in.installed && nvml_check(&s.nvml, in.installed, s.host.n_gpus, &e) < 0)
		str_fmt_cut(nvml_err, sizeof(nvml_err), "%s", e.msg);
	in.nvml_error = nvml_err[0] ? nvml_err : NULL;
	in.fatal_xid = a->fatal_xid[0] ? a->fatal_xid : NULL;
	run_daemons(a, &s);
	in.fabric_error = fabric_error(a, &s, fm_err, sizeof(fm_err));
	if (in.installed)
		cdi = settle_cdi(a, &s, cdi_err, sizeof(cdi_err));
	in.cdi_error = cdi_err[0] ? cdi_err : NULL;
	r = health_judge(&in, cause, sizeof(cause));
	if (r == HEALTH_READY) {
		check_cuda(a, &s, cuda_err, sizeof(cuda_err));
		/* Stopped meanwhile: nothing is judged from a check the signal cut short. */
		if (interrupt_signal())
			return;
		in.cuda_error = cuda_err[0] ? cuda_err : NULL;
		r = health_judge(&in, cause, sizeof(cause));
	}
	if (health_update(&a->h, r, cause, (double)(now_ns() - a->start_ns) / 1e9)) {
		if (r == HEALTH_READY)
			log_kv(LOG_INFO, "agent", "node ready: a CUDA job can run", "version",
			       in.installed, U64("transitions", a->h.transitions), LOG_END);
		else
			log_kv(LOG_ERROR, "agent", "node not ready", "reason",
			       health_reason_name(r), "cause", cause, LOG_END);
	}
	publish(a, &s, r == HEALTH_READY);
	log_kv(LOG_DEBUG, "agent", "looked", "ready", r == HEALTH_READY ? "yes" : "no", "reason",
	       health_reason_name(r), "cdi", cdi, LOG_END);
	/* /readyz says what the marker says, while the look goes on. */
	share(a);
	if (in.installed)
		refresh_other_specs(a);
	if (a->up.on &&
	    upgrader_look(&a->up, in.installed, r == HEALTH_READY, cause, other_holders, a))
		a->look_soon = true;
}

static void write_textfile(struct agent *a)
{
	_cleanup_free_ char *text = NULL;
	struct err e;

	if (!a->c->agent_metrics_file)
		return;
	text = render(a);
	if (!text || nodeinfo_write_file(a->root_fd, a->c->agent_metrics_file, text, &e) < 0)
		log_kv(LOG_WARN, "agent", "metrics textfile not written", "file",
		       a->c->agent_metrics_file, "error", text ? e.msg : "out of memory", LOG_END);
}

/* ---- HTTP ------------------------------------------------------------------ */

/* What the probes and Prometheus are answered until the next share. */
static void share(struct agent *a)
{
	_cleanup_free_ char *metrics = render(a), *readyz = NULL;
	bool ready = a->h.judged && a->h.reason == HEALTH_READY;

	if (!ready && asprintf(&readyz, "not ready (%s): %s\n", health_reason_name(a->h.reason),
			       a->h.judged ? a->h.cause : "not looked at yet") < 0)
		readyz = NULL;
	if (httpd_publish(
		    a->http,
		    (const struct httpd_page[]){
			    {"/metrics", metrics ? 200 : 503,
			     "text/plain; version=0.0.4; charset=utf-8", metrics, METRICS_WAIT_MS},
			    {"/healthz", 200, "text/plain; charset=utf-8", "ok\n"},
			    {"/readyz", ready ? 200 : 503, "text/plain; charset=utf-8",
			     ready ? "ready\n" : readyz, READYZ_WAIT_MS},
			    {NULL, 404, "text/plain; charset=utf-8",
			     "not found: /metrics, /healthz, /readyz\n"}},
		    4) < 0)
		log_msg(LOG_WARN, "agent", "HTTP's answers not updated: out of memory");
}

/* ---- what the program does for the agent's upgrades ------------------------- */

static int pending(void *arg, struct pending *ret)
{
	const struct agent *a = arg;

	return session_pending(a->c, a->root_fd, ret);
}

static int pending_failed(void *arg, struct pending_failure *ret)
{
	const struct agent *a = arg;

	return pfail_read(a->c, a->root_fd, ret);
}

/*
 * The installer run's command line, into ARGV: as the agent's own settings say where to work
 * (the rest comes from the environment, the repository's among it), for VERSION, and with P
 * the pending request (its flavour and module parameters; NULL for a rollback, which asks
 * for VERSION only).
 */
static void installer_argv(void *arg, const char *version, const struct pending *p,
			   const char *argv[AGENT_MAX_ARGV])
{
	const struct config *c = ((const struct agent *)arg)->c;
	size_t n = 0;

	argv[n++] = "nvidia-driver-installer";
	argv[n++] = "install";
	argv[n++] = "--when-busy";
	argv[n++] = "defer";
	/* What the agent and the installer share, as the agent has it; the rest from the
	 * environment, which the DaemonSet gives both containers alike. */
	if (c->root_given) {
		argv[n++] = "--root";
		argv[n++] = c->root;
	}
	argv[n++] = "--install-dir";
	argv[n++] = c->install_dir;
	argv[n++] = "--container-dir";
	argv[n++] = c->container_dir;
	argv[n++] = "--cdi-dir";
	argv[n++] = c->cdi_dir;
	argv[n++] = "--cdi-kind";
	argv[n++] = c->cdi_kind;
	if (c->kernel_release) {
		argv[n++] = "--kernel-release";
		argv[n++] = c->kernel_release;
	}
	argv[n++] = "--driver-version";
	argv[n++] = version;
	if (p && p->module_type[0]) {
		argv[n++] = "--kernel-module-type";
		argv[n++] = p->module_type;
	}
	if (p && p->module_args[0]) {
		argv[n++] = "--module-arg";
		argv[n++] = p->module_args;
	}
	if (p && p->mig_layout[0]) {
		argv[n++] = "--mig-layout";
		argv[n++] = p->mig_layout;
	}
	argv[n] = NULL;
}

/* ---- the loop --------------------------------------------------------------- */

static int loop(struct agent *a, int sig_fd)
{
	uint64_t next = now_ns();

	for (;;) {
		struct pollfd p[3 + MAX_HOLDS] = {
			{.fd = sig_fd, .events = POLLIN},
			{.fd = a->kmsg.is_device ? a->kmsg.fd : -1, .events = POLLIN},
			{.fd = a->ctl_fd, .events = POLLIN}};
		uint64_t now = now_ns();
		int keep_ms, wait_ms;

		/* Also one that came before the signalfd, while the handler took it. */
		if (interrupt_signal())
			return interrupt_signal();
		for (size_t i = 0; i < a->n_holds; i++)
			p[3 + i] = (struct pollfd){.fd = a->holds[i], .events = POLLIN};
		if (a->look_soon) {
			a->look_soon = false;
			next = now;
		}
		if (now >= next) {
			httpd_busy(a->http);
			look(a);
			write_textfile(a);
			next = now_ns() +
			       (a->look_soon ? UPGRADE_NEXT_LOOK_MS * 1000000ull
					     : (uint64_t)a->c->agent_interval_s * 1000000000ull);
			a->look_soon = false;
			share(a);
			httpd_idle(a->http);
			continue;
		}
		/* An upgrade's slot is renewed on time, whatever else waits (the installer). */
		keep_ms = upgrader_keep_slot(&a->up);
		wait_ms = (int)((next - now) / 1000000) + 1;
		if (keep_ms >= 0 && keep_ms < wait_ms)
			wait_ms = keep_ms;
		if (poll(p, 3 + a->n_holds, wait_ms) < 0 && errno != EINTR)
			return -errno;
		httpd_busy(a->http);
		if (p[0].revents & POLLIN) {
			(void)interrupt_read(sig_fd);
			reap(a);
			share(a);
			httpd_idle(a->http);
			continue;
		}
		if (p[1].revents & POLLIN)
			read_kmsg(a);
		if (p[2].revents & POLLIN)
			on_control(a);
		/* From the last: a hold that ends moves the last one into its place. */
		for (size_t i = a->n_holds; i-- > 0;)
			if (p[3 + i].revents)
				on_hold(a, i);
		share(a);
		httpd_idle(a->http);
	}
}

int agent_run(const struct config *c, struct err *e)
{
	struct agent a = {
		.c = c,
		.start_ns = now_ns(),
		.kmsg = {.fd = -1},
		.ctl_fd = -1,
		.daemons = {
			[D_PERSISTENCED] = {.name = PERSISTENCED, .args = {"--persistence-mode"}},
			[D_NVLSM] = {.name = NVLSM, .foreground = true},
			[D_FABRICMANAGER] = {.name = FABRICMANAGER},
			[D_MPS] = {.name = MPS_CONTROL, .args = {"-f"}, .foreground = true}}};
	_cleanup_close_ int root_fd = -1, sig_fd = -1, http_fd = -1;
	/* Before http_fd is closed: its thread serves it. */
	_cleanup_(httpd_freep) struct httpd *http = NULL;
	unsigned port = 0;
	struct err ke;
	int stop;

	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	a.root_fd = root_fd;
	sig_fd = interrupt_fd();
	if (sig_fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, -sig_fd, "agent: signals");
	http_fd = httpd_listen(c->agent_listen, &port, e);
	if (http_fd < 0)
		return err_wrap(e, "agent");
	/* A daemon forks into the background: its process stays our child all the same. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "agent: PR_SET_CHILD_SUBREAPER");
	a.ctl_fd = control_listen(root_fd, e);
	if (a.ctl_fd < 0)
		return -1;
	a.upo = (struct agent_upgrade_opts){.off = strcmp(c->upgrades, "off") == 0,
					    .node_name = c->node_name,
					    .sa_dir = c->kube_sa_dir,
					    .limit = c->upgrade_limit,
					    .daemonset = c->upgrade_daemonset,
					    .cordon = strcmp(c->upgrade_cordon, "yes") == 0,
					    .deadline_s = c->upgrade_deadline_s,
					    .evict_on_deadline =
						    strcmp(c->upgrade_on_deadline, "evict") == 0,
					    .validate_s = c->upgrade_validate_s};
	a.calls = (struct agent_calls){.arg = &a,
				       .pending = pending,
				       .pending_failed = pending_failed,
				       .installer_argv = installer_argv};
	if (upgrader_start(&a.up, &a.upo, c->agent_interval_s, &a.calls, e) < 0)
		return -1;
	if (kmsg_open(&a.kmsg, root_fd, KMSG_PATH, &ke) < 0)
		log_kv(LOG_WARN, "agent", "the kernel log cannot be read: Xids are not watched",
		       "error", ke.msg, "fix", "run the agent privileged, with the host's /dev",
		       LOG_END);
	http = httpd_start(
		http_fd, &(struct httpd_options){.live_path = "/healthz", .stall_s = LOOP_STALL_S},
		e);
	if (!http)
		return err_wrap(e, "agent");
	a.http = http;
	share(&a);
	log_kv(LOG_INFO, "agent", "watching the node", "listen", c->agent_listen, U64("port", port),
	       U64("interval_s", c->agent_interval_s), "kernel_log",
	       a.kmsg.fd >= 0 ? KMSG_PATH : "none", LOG_END);
	stop = loop(&a, sig_fd);
	kmsg_close(&a.kmsg);
	/* The daemons end before the agent, in order; holders see their connections close. */
	stop_daemons(&a);
	for (size_t i = 0; i < a.n_holds; i++)
		close(a.holds[i]);
	close(a.ctl_fd);
	upgrader_stop(&a.up);
	if (stop < 0)
		return err_errno(e, EXIT_UNEXPECTED, -stop, "agent: waiting for events");
	log_kv(LOG_INFO, "agent", "stopping", "signal", stop == SIGINT ? "SIGINT" : "SIGTERM",
	       LOG_END);
	return 0;
}
