// SPDX-License-Identifier: Apache-2.0
/*
 * agent: the node agent, a long-running container of the installer's pod. It owns the
 * node's readiness after the install: every --interval it looks at the node (what is
 * installed and loaded, NVML, the kernel log's Xids, and CUDA while not ready or every
 * --cuda-interval), withdraws the readiness marker and the driver's labels when a CUDA job
 * could not run, restores them when it could again, and serves what it judged over HTTP
 * (/metrics, /healthz, /readyz) and in a textfile. See docs/design.md, "The node agent".
 *
 * Here: the options, read once into struct agent_opts; what only the program can do for
 * the agent (the installer's lock, its records, the installer run), as struct agent_calls;
 * the loop; and HTTP's pages. What a look does, the daemons and the upgrades: agent/.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "util/cleanup.h"
#include "util/interrupt.h"
#include "util/log.h"

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

/* The command's side of the agent: what its calls (struct agent_calls) work with. */
struct agent_cmd {
	const struct config *c;
	int root_fd;
	struct agent *a;
	struct httpd *http; /* serves what share() last gave it */
};

/* ---- what the program does for the agent ------------------------------------ */

static bool installer_running(void *arg)
{
	const struct agent_cmd *ac = arg;

	return session_installer_running(ac->root_fd);
}

static int installer_lock_shared(void *arg)
{
	const struct agent_cmd *ac = arg;

	return session_lock_shared(ac->root_fd);
}

static int pending(void *arg, struct pending *ret)
{
	const struct agent_cmd *ac = arg;

	return session_pending(ac->c, ac->root_fd, ret);
}

static int pending_failed(void *arg, struct pending_failure *ret)
{
	const struct agent_cmd *ac = arg;

	return pfail_read(ac->c, ac->root_fd, ret);
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
	const struct config *c = ((const struct agent_cmd *)arg)->c;
	size_t n = 0;

	argv[n++] = "nvidia-driver-installer";
	argv[n++] = "install";
	argv[n++] = "--when-busy";
	argv[n++] = "defer";
	/* The agent keeps the Node's condition while it runs its installer (agent/nodecond.c). */
	argv[n++] = "--node-condition=no";
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
	/* The agent only passes it on: the new driver's load makes channel0. */
	if (c->imex_channel0)
		argv[n++] = "--imex-channel0";
	/* The upgrade's load decides the RDMA path again, for the new version's flavour. */
	if (c->rdma && strcmp(c->rdma, "off") != 0) {
		argv[n++] = "--rdma";
		argv[n++] = c->rdma;
	}
	if (c->driver_capabilities && strcmp(c->driver_capabilities, "compute,utility") != 0) {
		argv[n++] = "--driver-capabilities";
		argv[n++] = c->driver_capabilities;
	}
	argv[n] = NULL;
}

/* ---- HTTP ------------------------------------------------------------------ */

/* What the probes and Prometheus are answered until the next share. */
static void share(void *arg)
{
	const struct agent_cmd *ac = arg;
	bool ready = agent_ready(ac->a);
	_cleanup_free_ char *metrics = agent_render(ac->a),
			    *readyz = ready ? NULL : agent_not_ready(ac->a);

	if (httpd_publish(
		    ac->http,
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

/* ---- the loop --------------------------------------------------------------- */

/* A look, then what HTTP says; the next look's time. */
static uint64_t look(struct agent_cmd *ac)
{
	uint64_t next;

	httpd_busy(ac->http);
	agent_look(ac->a);
	next = now_ns() + (agent_look_soon(ac->a)
				   ? UPGRADE_NEXT_LOOK_MS * 1000000ull
				   : (uint64_t)ac->c->agent_interval_s * 1000000000ull);
	share(ac);
	httpd_idle(ac->http);
	return next;
}

static int loop(struct agent_cmd *ac, int sig_fd)
{
	uint64_t next = now_ns();

	for (;;) {
		struct pollfd p[1 + AGENT_MAX_FDS] = {{.fd = sig_fd, .events = POLLIN}};
		size_t n = agent_fds(ac->a, p + 1);
		uint64_t now = now_ns();
		int keep_ms, wait_ms;

		/* Also one that came before the signalfd, while the handler took it. */
		if (interrupt_signal())
			return interrupt_signal();
		if (agent_look_soon(ac->a))
			next = now;
		if (now >= next) {
			next = look(ac);
			continue;
		}
		/* An upgrade's slot is renewed on time, whatever else waits (the installer). */
		keep_ms = agent_keep_slot(ac->a);
		wait_ms = (int)((next - now) / 1000000) + 1;
		if (keep_ms >= 0 && keep_ms < wait_ms)
			wait_ms = keep_ms;
		if (poll(p, 1 + n, wait_ms) < 0 && errno != EINTR)
			return -errno;
		httpd_busy(ac->http);
		if (p[0].revents & POLLIN) {
			(void)interrupt_read(sig_fd);
			agent_reap(ac->a);
		} else {
			agent_events(ac->a, p + 1, n);
		}
		share(ac);
		httpd_idle(ac->http);
	}
}

/* --dra-plugin-selector as the agent takes it (agent/draplugin.h): empty or none, NULL. */
static const char *dra_plugin_selector(const struct config *c)
{
	const char *s = c->dra_plugin_selector;

	return !s || !s[0] || strcmp(s, "none") == 0 ? NULL : s;
}

/* What the agent reads of C, once. */
static struct agent_opts options(const struct config *c, int root_fd)
{
	return (struct agent_opts){
		.root_fd = root_fd,
		.node = session_nodestate_opts(c),
		.cdi_replace = c->cdi_replace,
		.metrics_file = c->agent_metrics_file,
		.interval_s = c->agent_interval_s,
		.cuda_interval_s = c->cuda_interval_s,
		.dra_plugin_selector = dra_plugin_selector(c),
		.rdma = {.mode = session_rdma(c),
			 .module_certs = c->module_certs.v,
			 .n_module_certs = c->module_certs.n},
		.upgrade = {.off = strcmp(c->upgrades, "off") == 0,
			    .node_name = c->node_name,
			    .sa_dir = c->kube_sa_dir,
			    .limit = c->upgrade_limit,
			    .daemonset = c->upgrade_daemonset,
			    .cordon = strcmp(c->upgrade_cordon, "yes") == 0,
			    .deadline_s = c->upgrade_deadline_s,
			    .evict_on_deadline = strcmp(c->upgrade_on_deadline, "evict") == 0,
			    .validate_s = c->upgrade_validate_s,
			    .wait_for = c->upgrade_wait_for,
			    .wait_timeout_s = c->upgrade_wait_timeout_s,
			    .evict_force = strcmp(c->upgrade_evict_force, "yes") == 0,
			    .evict_emptydir = strcmp(c->upgrade_evict_emptydir, "yes") == 0,
			    .drain = strcmp(c->upgrade_drain, "yes") == 0,
			    .drain_select = c->upgrade_drain_selector,
			    .drain_force = strcmp(c->upgrade_drain_force, "yes") == 0,
			    .drain_emptydir = strcmp(c->upgrade_drain_emptydir, "yes") == 0,
			    .drain_timeout_s = c->upgrade_drain_timeout_s,
			    .max_unavailable = strcmp(c->upgrade_max_unavailable, "none") == 0
						       ? NULL
						       : c->upgrade_max_unavailable,
			    .dra_drivers = strcmp(c->upgrade_dra_drivers, "none") == 0
						   ? ""
						   : c->upgrade_dra_drivers},
		.condition = {
			.off = !c->node_condition,
			.heartbeat_s = c->condition_heartbeat_s,
			.startup_taint =
				strcmp(c->startup_taint, "none") == 0 ? NULL : c->startup_taint,
			.health_taint =
				strcmp(c->health_taint, "none") == 0 ? NULL : c->health_taint}};
}

/* The agent's run, from its start to SIGTERM or SIGINT: 0, or -1 with E set. */
static int run(struct agent_cmd *ac, int sig_fd, int http_fd, unsigned port, struct err *e)
{
	const struct agent_opts o = options(ac->c, ac->root_fd);
	const struct agent_calls calls = {.arg = ac,
					  .installer_running = installer_running,
					  .installer_lock_shared = installer_lock_shared,
					  .pending = pending,
					  .pending_failed = pending_failed,
					  .installer_argv = installer_argv,
					  .publish = share};
	_cleanup_(agent_freep) struct agent *a = NULL;
	/* Before http_fd is closed: its thread serves it. */
	_cleanup_(httpd_freep) struct httpd *http = NULL;
	int stop;

	a = agent_new(&o, &calls, e);
	if (!a)
		return -1;
	http = httpd_start(
		http_fd, &(struct httpd_options){.live_path = "/healthz", .stall_s = LOOP_STALL_S},
		e);
	if (!http)
		return err_wrap(e, "agent");
	ac->a = a;
	ac->http = http;
	share(ac);
	log_kv(LOG_INFO, "agent", "watching the node", "listen", ac->c->agent_listen,
	       U64("port", port), U64("interval_s", ac->c->agent_interval_s), "kernel_log",
	       agent_kernel_log(a), LOG_END);
	stop = loop(ac, sig_fd);
	agent_free(TAKE_PTR(a));
	if (stop < 0)
		return err_errno(e, EXIT_UNEXPECTED, -stop, "agent: waiting for events");
	log_kv(LOG_INFO, "agent", "stopping", "signal", stop == SIGINT ? "SIGINT" : "SIGTERM",
	       LOG_END);
	return 0;
}

int agent_run(const struct config *c, struct err *e)
{
	struct agent_cmd ac = {.c = c};
	_cleanup_close_ int root_fd = -1, sig_fd = -1, http_fd = -1;
	unsigned port = 0;

	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	ac.root_fd = root_fd;
	sig_fd = interrupt_fd();
	if (sig_fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, -sig_fd, "agent: signals");
	http_fd = httpd_listen(c->agent_listen, &port, e);
	if (http_fd < 0)
		return err_wrap(e, "agent");
	return run(&ac, sig_fd, http_fd, port, e);
}
