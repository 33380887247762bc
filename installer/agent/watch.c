// SPDX-License-Identifier: Apache-2.0
/*
 * The node agent's start and end, and the events its loop hands it between looks: the
 * kernel log, an installer asking to hold the daemons (agent/control.h) and its hold's end,
 * a child's end, the upgrade's slot kept. The look itself is agent/look.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/look.h"
#include "agent/control.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/log.h"

#define KMSG_PATH "/dev/kmsg"

struct agent *agent_new(const struct agent_opts *o, const struct agent_calls *calls, struct err *e)
{
	_cleanup_(agent_freep) struct agent *a = calloc(1, sizeof(*a));
	struct err ke;

	if (!a)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "agent"), NULL;
	a->o = o;
	a->calls = calls;
	a->start_ns = now_ns();
	a->kmsg.fd = -1;
	a->ctl_fd = -1;
	supervisor_init(&a->sv, look_reap, a);
	agent_rdma_init(&a->rdma);
	/* A daemon forks into the background: its process stays our child all the same. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "agent: PR_SET_CHILD_SUBREAPER"), NULL;
	a->ctl_fd = control_listen(o->root_fd, e);
	if (a->ctl_fd < 0)
		return NULL;
	if (upgrader_start(&a->up, &o->upgrade, o->interval_s, calls, e) < 0)
		return NULL;
	nodecond_start(&a->nc, &o->condition, &o->upgrade, &a->up, o->interval_s);
	/* The upgrader's client, or the condition's: either reads this node's pods. */
	if (draplugin_start(&a->dp, o->dra_plugin_selector, a->up.k ? a->up.k : a->nc.k,
			    o->upgrade.node_name, e) < 0)
		return NULL;
	if (kmsg_open(&a->kmsg, o->root_fd, KMSG_PATH, &ke) < 0)
		log_kv(LOG_WARN, "agent", "the kernel log cannot be read: Xids are not watched",
		       "error", ke.msg, "fix", "run the agent privileged, with the host's /dev",
		       LOG_END);
	return TAKE_PTR(a);
}

void agent_free(struct agent *a)
{
	if (!a)
		return;
	kmsg_close(&a->kmsg);
	/* The daemons end before the agent, in order; holders see their connections close. */
	supervisor_stop(&a->sv);
	for (size_t i = 0; i < a->n_holds; i++)
		close(a->holds[i]);
	if (a->ctl_fd >= 0)
		close(a->ctl_fd);
	/* Last on the Node, with the upgrader's client (if shared) still there. */
	nodecond_stop(&a->nc, interrupt_signal() == SIGINT    ? "SIGINT"
			      : interrupt_signal() == SIGTERM ? "SIGTERM"
							      : "its end");
	draplugin_stop(&a->dp);
	upgrader_stop(&a->up);
	free(a);
}

const char *agent_kernel_log(const struct agent *a)
{
	return a->kmsg.fd >= 0 ? KMSG_PATH : "none";
}

size_t agent_fds(const struct agent *a, struct pollfd *p)
{
	p[0] = (struct pollfd){.fd = a->kmsg.is_device ? a->kmsg.fd : -1, .events = POLLIN};
	p[1] = (struct pollfd){.fd = a->ctl_fd, .events = POLLIN};
	for (size_t i = 0; i < a->n_holds; i++)
		p[2 + i] = (struct pollfd){.fd = a->holds[i], .events = POLLIN};
	return 2 + a->n_holds;
}

/* An installer asks: the daemons stop, and stay stopped while it holds the connection. */
static void on_control(struct agent *a)
{
	int fd = accept4(a->ctl_fd, NULL, NULL, SOCK_CLOEXEC);
	char why[CONTROL_MAX_LINE], reply[32];
	unsigned stopped = 0;

	if (fd < 0)
		return;
	if (a->n_holds == AGENT_MAX_HOLDS || control_read_request(fd, why, sizeof(why)) != 1) {
		close(fd);
		return;
	}
	stopped = supervisor_stop(&a->sv);
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

void agent_events(struct agent *a, const struct pollfd *p, size_t n)
{
	if (n > 0 && (p[0].revents & POLLIN))
		look_read_kmsg(a);
	if (n > 1 && (p[1].revents & POLLIN))
		on_control(a);
	/* From the last: a hold that ends moves the last one into its place. */
	for (size_t i = n > 2 ? n - 2 : 0; i-- > 0;)
		if (p[2 + i].revents)
			on_hold(a, i);
}

bool agent_look_soon(struct agent *a)
{
	bool soon = a->look_soon;

	a->look_soon = false;
	return soon;
}

int agent_keep_slot(struct agent *a)
{
	return upgrader_keep_slot(&a->up);
}
