// SPDX-License-Identifier: Apache-2.0
/*
 * agent: the node agent, a long-running container of the installer's pod. It owns the
 * node's readiness after the install: every --interval it looks at the node (what is
 * installed and loaded, NVML, the kernel log's Xids, and CUDA while not ready or every
 * --cuda-interval), withdraws the readiness marker and the driver's labels when a CUDA job
 * could not run, restores them when it could again, and serves what it judged over HTTP
 * (/metrics, /healthz, /readyz) and in a textfile. See docs/design.md, "The node agent".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/nodestate.h"
#include "cmd/session.h"
#include "expose/expose.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

#define KMSG_PATH "/dev/kmsg"

struct agent {
	const struct config *c;
	int root_fd;
	struct kmsg_reader kmsg; /* fd -1 when the kernel log cannot be read */
	struct health h;
	uint64_t start_ns;
	uint64_t cuda_ok_ns; /* the last CUDA check that passed, 0 for none since a change */
	char fatal_xid[96];  /* the fatal Xid in effect since the driver loaded, or "" */
	char version[64];    /* the installed version at the last look, or "" */
};

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

/* ---- one look at the node --------------------------------------------------- */

/* CUDA, while not ready or every --cuda-interval: a context on every GPU costs seconds. */
static bool cuda_due(const struct agent *a)
{
	return a->h.reason != HEALTH_READY || a->cuda_ok_ns == 0 ||
	       now_ns() - a->cuda_ok_ns >= (uint64_t)a->c->cuda_interval_s * 1000000000ull;
}

static void check_cuda(struct agent *a, const struct nodestate *s, char *err, size_t size)
{
	_cleanup_close_ int dir_fd = -1;
	struct cuda_report r;
	char lib[PATH_MAX];
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
	if (cuda_probe(lib, CUDA_CHECK_TIMEOUT_S, &r, &e) < 0 ||
	    cuda_check(&r, s->host.n_gpus, s->host.n_nvswitches, &e) < 0) {
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

static void look(struct agent *a)
{
	_cleanup_(nodestate_done) struct nodestate s;
	char nvml_err[512] = "", cuda_err[512] = "", cause[512];
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
	if (nodestate_collect(a->c, a->root_fd, &s, &e) < 0) {
		log_kv(LOG_WARN, "agent", "the node cannot be read", "error", e.msg, LOG_END);
		return;
	}
	in.installed = s.installed ? s.manifest.driver_version : NULL;
	in.loaded = s.loaded_version;
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
	r = health_judge(&in, cause, sizeof(cause));
	if (r == HEALTH_READY) {
		check_cuda(a, &s, cuda_err, sizeof(cuda_err));
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
}

static void write_textfile(struct agent *a)
{
	_cleanup_free_ char *text = NULL;
	struct err e;

	if (!a->c->agent_metrics_file)
		return;
	text = health_render(&a->h, a->version);
	if (!text || nodeinfo_write_file(a->root_fd, a->c->agent_metrics_file, text, &e) < 0)
		log_kv(LOG_WARN, "agent", "metrics textfile not written", "file",
		       a->c->agent_metrics_file, "error", text ? e.msg : "out of memory", LOG_END);
}

/* ---- HTTP ------------------------------------------------------------------ */

static void route(const char *path, struct httpd_reply *reply, void *arg)
{
	const struct agent *a = arg;
	bool ready = a->h.judged && a->h.reason == HEALTH_READY;

	reply->status = 200;
	if (strcmp(path, "/metrics") == 0) {
		reply->content_type = "text/plain; version=0.0.4; charset=utf-8";
		reply->body = health_render(&a->h, a->version);
		if (!reply->body)
			reply->status = 503;
	} else if (strcmp(path, "/healthz") == 0) {
		reply->body = strdup("ok\n");
	} else if (strcmp(path, "/readyz") == 0) {
		reply->status = ready ? 200 : 503;
		if ((ready ? asprintf(&reply->body, "ready\n")
			   : asprintf(&reply->body, "not ready (%s): %s\n",
				      health_reason_name(a->h.reason),
				      a->h.judged ? a->h.cause : "not looked at yet")) < 0)
			reply->body = NULL;
	} else {
		reply->status = 404;
		reply->body = strdup("not found: /metrics, /healthz, /readyz\n");
	}
}

/* ---- the loop --------------------------------------------------------------- */

static int signals_fd(struct err *e)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "agent: signals");
	return fd;
}

/* Reads the pending signals: the one that stops the agent (SIGTERM, SIGINT), or 0. */
static int take_signals(int fd)
{
	struct signalfd_siginfo si;
	int stop = 0;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			stop = (int)si.ssi_signo;
	return stop;
}

static int loop(struct agent *a, int sig_fd, int http_fd)
{
	uint64_t next = now_ns();

	for (;;) {
		struct pollfd p[3] = {
			{.fd = sig_fd, .events = POLLIN},
			{.fd = http_fd, .events = POLLIN},
			{.fd = a->kmsg.is_device ? a->kmsg.fd : -1, .events = POLLIN}};
		uint64_t now = now_ns();
		int stop;

		if (now >= next) {
			look(a);
			write_textfile(a);
			next = now_ns() + (uint64_t)a->c->agent_interval_s * 1000000000ull;
			continue;
		}
		if (poll(p, 3, (int)((next - now) / 1000000) + 1) < 0 && errno != EINTR)
			return -errno;
		if ((p[0].revents & POLLIN) && (stop = take_signals(sig_fd)) != 0)
			return stop;
		if (p[1].revents & POLLIN)
			httpd_serve(http_fd, route, a);
		if (p[2].revents & POLLIN)
			read_kmsg(a);
	}
}

int agent_run(const struct config *c, struct err *e)
{
	struct agent a = {.c = c, .start_ns = now_ns(), .kmsg = {.fd = -1}};
	_cleanup_close_ int root_fd = -1, sig_fd = -1, http_fd = -1;
	unsigned port = 0;
	struct err ke;
	int stop;

	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	a.root_fd = root_fd;
	sig_fd = signals_fd(e);
	if (sig_fd < 0)
		return -1;
	http_fd = httpd_listen(c->agent_listen, &port, e);
	if (http_fd < 0)
		return err_wrap(e, "agent");
	if (kmsg_open(&a.kmsg, root_fd, KMSG_PATH, &ke) < 0)
		log_kv(LOG_WARN, "agent", "the kernel log cannot be read: Xids are not watched",
		       "error", ke.msg, "fix", "run the agent privileged, with the host's /dev",
		       LOG_END);
	log_kv(LOG_INFO, "agent", "watching the node", "listen", c->agent_listen, U64("port", port),
	       U64("interval_s", c->agent_interval_s), "kernel_log",
	       a.kmsg.fd >= 0 ? KMSG_PATH : "none", LOG_END);
	stop = loop(&a, sig_fd, http_fd);
	kmsg_close(&a.kmsg);
	if (stop < 0)
		return err_errno(e, EXIT_UNEXPECTED, -stop, "agent: waiting for events");
	log_kv(LOG_INFO, "agent", "stopping", "signal", stop == SIGINT ? "SIGINT" : "SIGTERM",
	       LOG_END);
	return 0;
}
