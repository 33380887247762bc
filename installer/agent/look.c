// SPDX-License-Identifier: Apache-2.0
/*
 * One look at the node (agent/agent.h, agent_look): what status reads (agent/nodestate.c),
 * the kernel log's Xids, NVML, the daemons, the CDI specs, CUDA while not ready or every
 * --cuda-interval, judged (agent/health.h); the readiness marker and the driver's labels
 * made to say so; an upgrade moved on. And what the agent renders of it for Prometheus.
 * See docs/design.md, "The node agent".
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/look.h"
#include "expose/expose.h"
#include "kernel/kernel.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/prom.h"
#include "util/str.h"

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
		/*
		 * Any root process can write to /dev/kmsg; only the kernel speaks for the
		 * driver.
		 */
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

void look_read_kmsg(struct agent *a)
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

/* ---- children ------------------------------------------------------------- */

void agent_reap(struct agent *a)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (upgrader_reaped(&a->up, pid, status))
			a->look_soon = true;
		else
			(void)supervisor_reaped(&a->sv, pid, status);
	}
}

void look_reap(void *a)
{
	agent_reap(a);
}

/* ---- metrics ---------------------------------------------------------------- */

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

static const struct prom_family
	fam_mig_mode =
		{"nvidia_driver_installer_agent_gpu_mig_mode", PROM_GAUGE,
		 "Each MIG-capable GPU's MIG mode as NVML reported it at the agent's last look: 1 on, 0 off."},
	fam_mig_pending =
		{"nvidia_driver_installer_agent_gpu_mig_reset_pending", PROM_GAUGE,
		 "Whether the GPU's MIG mode waits for a GPU reset (its pending mode is not its current one)."},
	fam_mig_devices = {"nvidia_driver_installer_agent_mig_devices", PROM_GAUGE,
			   "The MIG devices NVML lists, by profile."};

/* The MIG series (docs/metrics.md, "GPU partitions"); none while NVML has not answered. */
static char *mig_render(const struct mig_view *v)
{
	char *text = NULL, gpu[16];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	prom_head(f, &fam_mig_mode);
	for (unsigned i = 0; i < v->n_gpus; i++)
		if (v->mode[i] >= 0) {
			snprintf(gpu, sizeof(gpu), "%u", i);
			prom_sample(f, &fam_mig_mode, &(struct prom_label){"gpu", gpu}, 1,
				    v->mode[i]);
		}
	prom_head(f, &fam_mig_pending);
	for (unsigned i = 0; i < v->n_gpus; i++)
		if (v->mode[i] >= 0) {
			snprintf(gpu, sizeof(gpu), "%u", i);
			prom_sample(f, &fam_mig_pending, &(struct prom_label){"gpu", gpu}, 1,
				    v->pending[i] >= 0 && v->pending[i] != v->mode[i]);
		}
	prom_head(f, &fam_mig_devices);
	for (size_t i = 0; i < v->n_profiles; i++)
		prom_sample(f, &fam_mig_devices,
			    &(struct prom_label){"profile", v->profiles[i].profile}, 1,
			    v->profiles[i].count);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

char *agent_render(const struct agent *a)
{
	_cleanup_free_ char *h = health_render(&a->h, a->version), *d = supervisor_render(&a->sv),
			    *u = upgrader_render(&a->up), *m = mig_render(&a->mig),
			    *n = nodecond_render(&a->nc), *p = draplugin_render(&a->dp),
			    *r = agent_rdma_render(&a->rdma, a->o->rdma.mode);
	char *all = NULL;

	if (!h || !d || !u || !m || !n || !p || !r ||
	    asprintf(&all, "%s%s%s%s%s%s%s", h, d, u, n, p, m, r) < 0)
		return NULL;
	return all;
}

bool agent_ready(const struct agent *a)
{
	return a->h.judged && a->h.reason == HEALTH_READY;
}

char *agent_not_ready(const struct agent *a)
{
	char *text = NULL;

	if (asprintf(&text, "not ready (%s): %s\n", health_reason_name(a->h.reason),
		     a->h.judged ? a->h.cause : "not looked at yet") < 0)
		return NULL;
	return text;
}

static void write_textfile(struct agent *a)
{
	_cleanup_free_ char *text = NULL;
	struct err e;

	if (!a->o->metrics_file)
		return;
	text = agent_render(a);
	if (!text || nodeinfo_write_file(a->o->root_fd, a->o->metrics_file, text, &e) < 0)
		log_kv(LOG_WARN, "agent", "metrics textfile not written", "file",
		       a->o->metrics_file, "error", text ? e.msg : "out of memory", LOG_END);
}

/* ---- one look at the node --------------------------------------------------- */

/* CUDA, while not ready or every --cuda-interval: a context on every device costs seconds. */
static bool cuda_due(const struct agent *a)
{
	return a->h.reason != HEALTH_READY || a->cuda_ok_ns == 0 ||
	       now_ns() - a->cuda_ok_ns >= (uint64_t)a->o->cuda_interval_s * 1000000000ull;
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
	dir_fd = fs_dir_in_root(a->o->root_fd, a->o->node.install_dir, false, &e);
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
		if (nodeinfo_remove_driver(a->o->root_fd, &e) < 0)
			log_kv(LOG_WARN, "agent", "withdrawing readiness", "error", e.msg, LOG_END);
		return;
	}
	if (labels_write(
		    a->o->root_fd,
		    &(struct driver_id){.version = s->manifest.driver_version,
					.module_type = s->loaded_type[0] ? s->loaded_type : NULL,
					.kernel = s->host.kernel},
		    &s->nvml, s->host.n_gpus, &e) < 0 ||
	    readiness_write(a->o->root_fd, a->o->node.install_dir, s->manifest.driver_version, &e) <
		    0)
		log_kv(LOG_WARN, "agent", "restoring readiness", "error", e.msg, LOG_END);
}

/* Processes other than the agent and its daemons with the driver open. */
static unsigned other_holders(void *arg)
{
	const struct agent *a = arg;
	pid_t ours[1 + 2 * N_DAEMONS] = {getpid()};
	size_t n = 1 + supervisor_pids(&a->sv, ours + 1);
	char why[1024] = "";

	return (unsigned)kmods_open_users(a->o->root_fd, ours, n, why, sizeof(why));
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

		if (*end || pid <= 1 || pid == (long)getpid() ||
		    !daemon_runs((pid_t)pid, CDI_PRODUCER))
			continue;
		if (kill((pid_t)pid, SIGHUP) == 0) {
			log_kv(LOG_INFO, "agent", "asked the device plugin to rewrite its CDI spec",
			       U64("pid", (uint64_t)pid), LOG_END);
			n++;
		}
	}
	return n;
}

/* Where our CDI spec goes and what it points at, for the expose calls of a look. */
static struct cdi_place cdi_place_of(const struct agent *a)
{
	return (struct cdi_place){.root_fd = a->o->root_fd,
				  .cdi_dir = a->o->node.cdi_dir,
				  .install_dir = a->o->node.install_dir};
}

static void refresh_other_specs(struct agent *a)
{
	const struct cdi_place at = cdi_place_of(a);
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
	const struct cdi_place at = cdi_place_of(a);
	char kind[256];
	const struct cdi_rule rule = {
		.kind = cdi_our_kind(&at, kind, sizeof(kind)) == 0 ? kind : a->o->node.cdi_kind,
		.replace = a->o->cdi_replace && s->cdi_present};
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
	if (devnodes_sync_mig(a->o->root_fd, &r, &e) < 0)
		log_kv(LOG_WARN, "agent", "the MIG instances' device nodes could not be made",
		       "error", e.msg, LOG_END);
	else if (r.created || r.replaced || r.fixed)
		log_kv(LOG_INFO, "agent", "MIG instances' device nodes made",
		       U64("created", r.created), U64("replaced", r.replaced),
		       U64("fixed", r.fixed), LOG_END);
}

/*
 * The daemons run while the installed driver is loaded and no installer holds them, each
 * as its row of the table decides (agent/supervisor.c). On an NVSwitch system, why Fabric
 * Manager does not serve, into BUF; NULL when it does, or the host has no NVSwitch.
 */
static const char *run_daemons(struct agent *a, const struct nodestate *s, char *buf, size_t size)
{
	struct daemon_look l = {
		.root_fd = a->o->root_fd, .install_dir = a->o->node.install_dir, .s = s};
	bool run = s->installed && strcmp(s->loaded_version, s->manifest.driver_version) == 0 &&
		   a->n_holds == 0;

	supervisor_run(&a->sv, &l, run);
	return supervisor_not_ready(&a->sv, &l, HEALTH_FABRIC, buf, size);
}

/*
 * NVIDIA's DRA kubelet plugin started on the files of a version switched out since: its
 * pods evicted once the installed version is loaded and the switch is over (not during the
 * agent's own upgrade run, nor while its record says activating; another's installer run
 * holds the lock, and the look waits for it). An upgrade validating is over its switch:
 * the pods are evicted then, while the node is still cordoned. False while some are left
 * to evict or are still leaving: the upgrade keeps its cordon
 * (draplugin_look).
 */
static bool restart_dra_plugin(struct agent *a, const struct nodestate *s)
{
	bool switching = a->up.on && (a->up.child > 0 || a->up.rec.state == UPG_ACTIVATING);

	if (!a->dp.on)
		return true;
	return draplugin_look(&a->dp, &(struct draplugin_look){
					      .root_fd = a->o->root_fd,
					      .install_dir = a->o->node.install_dir,
					      .active = s->installed && !switching &&
							strcmp(s->loaded_version,
							       s->manifest.driver_version) == 0});
}

/* nvidia-peermem after the RDMA stack (agent/rdma.h), on the installed driver once loaded. */
static void look_rdma(struct agent *a, const struct nodestate *s)
{
	_cleanup_close_ int lock = -1;
	const char *busy = NULL;

	if (a->o->rdma.mode == KERNEL_RDMA_OFF || !s->installed ||
	    strcmp(s->loaded_version, s->manifest.driver_version) != 0)
		return;
	/* No insertion beside an installer run (its lock, held shared across the reload) nor
	 * beside the agent's own upgrade child, which is about to run one. */
	if (a->up.child)
		busy = "the agent's upgrade runs the installer";
	else if (a->calls->installer_lock_shared &&
		 (lock = a->calls->installer_lock_shared(a->calls->arg)) < 0)
		busy = "an installer run holds the lock";
	agent_rdma_look(&a->rdma, &(struct agent_rdma_look){.o = &a->o->rdma,
							    .root_fd = a->o->root_fd,
							    .install_dir = a->o->node.install_dir,
							    .release = s->host.kernel,
							    .version = s->manifest.driver_version,
							    .install_id = s->install_id,
							    .module_type = s->manifest.module_type,
							    .busy = busy});
}

/* One look: false when it judged nothing (an installer run holds the lock, the node unread). */
static bool look(struct agent *a)
{
	_cleanup_(nodestate_done) struct nodestate s;
	char nvml_err[512] = "", cuda_err[512] = "", cdi_err[512] = "", fm_err[256], cause[512];
	const char *cdi = "none";
	struct health_input in = {0};
	enum health_reason r;
	bool plugin_done;
	struct err e;

	memset(&s, 0, sizeof(s));
	look_read_kmsg(a);
	/* A run of the installer changes what is looked at: the next look, after it. */
	if (a->calls->installer_running(a->calls->arg)) {
		log_msg(LOG_DEBUG, "agent", "an installer run holds the lock: looking later");
		return false;
	}
	if (nodestate_collect(&a->o->node, a->o->root_fd, &s, &e) < 0) {
		log_kv(LOG_WARN, "agent", "the node cannot be read", "error", e.msg, LOG_END);
		return false;
	}
	in.installed = s.installed ? s.manifest.driver_version : NULL;
	in.loaded = s.loaded_version;
	if (s.nvml_ok)
		mig_view_of(&s.nvml, &a->mig);
	else
		memset(&a->mig, 0, sizeof(a->mig));
	if (in.loaded && in.loaded[0])
		sync_mig_nodes(a);
	/* Before the daemons and the checks: the RDMA stack may have reloaded since. */
	look_rdma(a, &s);
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
	in.fabric_error = run_daemons(a, &s, fm_err, sizeof(fm_err));
	if (in.installed)
		cdi = settle_cdi(a, &s, cdi_err, sizeof(cdi_err));
	in.cdi_error = cdi_err[0] ? cdi_err : NULL;
	r = health_judge(&in, cause, sizeof(cause));
	if (r == HEALTH_READY) {
		check_cuda(a, &s, cuda_err, sizeof(cuda_err));
		/* Stopped meanwhile: nothing is judged from a check the signal cut short. */
		if (interrupt_signal())
			return false;
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
	a->calls->publish(a->calls->arg);
	if (in.installed)
		refresh_other_specs(a);
	/* The plugin restarted before the upgrade's end lifts the cordon (validate's ready). */
	plugin_done = restart_dra_plugin(a, &s);
	if (r == HEALTH_READY && !plugin_done)
		draplugin_cause(&a->dp, cause, sizeof(cause));
	if (a->up.on && upgrader_look(&a->up, in.installed, r == HEALTH_READY && plugin_done, cause,
				      other_holders, a))
		a->look_soon = true;
	return true;
}

/*
 * The Node told what was judged, also after a look that waited for the agent's own upgrade
 * run: the heartbeat goes on (DriverUpgrading) while the driver is switched.
 */
static void tell_node(struct agent *a)
{
	bool up = a->up.on;

	nodecond_look(&a->nc,
		      &(struct nodecond_view){.judged = a->h.judged,
					      .health = a->h.reason,
					      .cause = a->h.cause,
					      .version = a->version,
					      .upgrade = up ? a->up.rec.state : UPG_IDLE,
					      .upgrade_version = up ? a->up.rec.version : "",
					      .upgrade_reason = up ? a->up.rec.reason : "",
					      .now = now_ns() / 1000000000ull});
}

void agent_look(struct agent *a)
{
	bool judged = look(a);

	/*
	 * Stopped meanwhile: the stop writes the condition, last. A look that judged nothing
	 * (another's installer run holds the lock, the node unread) says nothing on the Node:
	 * the last judgement may no longer hold (a run by hand may have the driver unloaded),
	 * and the run's own word (Installing) is not overwritten.
	 */
	if (!interrupt_signal() && (judged || (a->up.on && a->up.child > 0)))
		tell_node(a);
	write_textfile(a);
}
