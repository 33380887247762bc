// SPDX-License-Identifier: Apache-2.0
/*
 * The node agent's driver upgrades: decided by agent/upgrade, carried out here (see
 * agent/upgrader.h and docs/design.md, "Upgrades that finish by themselves").
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/upgrader.h"
#include "agent/daemons.h"
#include "util/cleanup.h"
#include "util/interrupt.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/prom.h"
#include "util/str.h"

/* A look's API calls end within this, so that the agent's loop is never held long. */
#define UPGRADE_CALL_DEADLINE_S 5
/* A look's evictions (each up to a call's deadline) end within its interval, but no less
 * than a call's deadline nor more than this: a drain of a hundred pods on a slow API server
 * goes on over several looks, never past the agent's liveness bound (LOOP_STALL_S, 180 s,
 * in cmd/agent.c). */
#define EVICT_LOOK_MAX_S 60
#define COMPONENT "nvidia-driver-installer"

static uint64_t mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec;
}

/* The selectors parsed (config checked them: a failure here is the program's). 0 or -1. */
static int pod_options(struct upgrader *u, const struct agent_upgrade_opts *o, struct err *e)
{
	char why[200];

	if (o->wait_for && o->wait_for[0] &&
	    labelsel_parse(o->wait_for, &u->wait_for, why, sizeof(why)) < 0)
		return err_set(e, EXIT_USAGE, "--upgrade-wait-for: %s", why);
	if (o->drain_select && o->drain_select[0] &&
	    labelsel_parse(o->drain_select, &u->drain_select, why, sizeof(why)) < 0)
		return err_set(e, EXIT_USAGE, "--upgrade-drain-selector: %s", why);
	if (o->dra_drivers && !claims_drivers_ok(o->dra_drivers, why, sizeof(why)))
		return err_set(
			e, EXIT_USAGE,
			"--upgrade-dra-drivers: %s; list the drivers whose claims hold GPUs, comma-separated (the default: " CLAIMS_DRIVERS_DEFAULT
			"), or none",
			why);
	u->claims.drivers = o->dra_drivers ? o->dra_drivers : CLAIMS_DRIVERS_DEFAULT;
	u->pod_opts = (struct upgrade_pod_opts){
		.wait_for = o->wait_for && o->wait_for[0] ? &u->wait_for : NULL,
		.evict_force = o->evict_force,
		.evict_emptydir = o->evict_emptydir,
		.drain = o->drain,
		.drain_select = o->drain_select && o->drain_select[0] ? &u->drain_select : NULL,
		.drain_force = o->drain_force,
		.drain_emptydir = o->drain_emptydir,
		.claims = &u->claims};
	return 0;
}

int upgrader_start(struct upgrader *u, const struct agent_upgrade_opts *o, unsigned interval_s,
		   const struct agent_calls *calls, struct err *e)
{
	struct err ke;

	memset(u, 0, sizeof(*u));
	u->o = o;
	u->calls = calls;
	u->slots.held = -1;
	u->evict_look_s = interval_s < UPGRADE_CALL_DEADLINE_S ? UPGRADE_CALL_DEADLINE_S
			  : interval_s > EVICT_LOOK_MAX_S      ? EVICT_LOOK_MAX_S
							       : interval_s;
	if (o->off) {
		log_msg(LOG_INFO, "agent", "driver upgrades off (--upgrades off)");
		return 0;
	}
	if (!o->node_name) {
		log_kv(LOG_INFO, "agent", "driver upgrades off: no node name", "fix",
		       "set NVIDIA_NODE_NAME from the downward API (fieldRef spec.nodeName), as the shipped DaemonSets do",
		       LOG_END);
		return 0;
	}
	if (kube_config_in_cluster(o->sa_dir, &u->kc, &ke) < 0) {
		log_kv(LOG_WARN, "agent", "driver upgrades off: not in a cluster", "error", ke.msg,
		       "fix", "give the pod a service account (the shipped DaemonSets do)",
		       LOG_END);
		return 0;
	}
	u->kc.deadline_s = UPGRADE_CALL_DEADLINE_S;
	if (pod_options(u, o, e) < 0)
		return -1;
	u->k = kube_new(&u->kc, e);
	if (!u->k)
		return err_wrap(e, "agent: driver upgrades");
	u->policy = (struct upgrade_policy){.cordon = o->cordon,
					    .deadline_s = o->deadline_s,
					    .on_deadline = o->evict_on_deadline ? UPG_DEADLINE_EVICT
										: UPG_DEADLINE_WAIT,
					    .validate_s = o->validate_s,
					    .wait_timeout_s = o->wait_timeout_s,
					    .drain = o->drain,
					    .drain_timeout_s = o->drain_timeout_s};
	/* Renewed at every look: lost only after several looks missed. */
	u->slots = (struct slots){.k = u->k,
				  .ns = u->kc.namespace,
				  .holder = o->node_name,
				  .duration_s = 6 * interval_s < 30 ? 30 : 6 * interval_s,
				  .held = -1};
	u->on = true;
	log_kv(LOG_INFO, "agent", "driver upgrades on", "node", o->node_name, "namespace",
	       u->kc.namespace, "limit", o->limit, "cordon", o->cordon ? "yes" : "no",
	       U64("deadline_s", o->deadline_s), "on_deadline",
	       o->evict_on_deadline ? "evict" : "wait", LOG_END);
	return 0;
}

void upgrader_stop(struct upgrader *u)
{
	kube_free(u->k);
	u->k = NULL;
	u->on = false;
	labelsel_free(&u->wait_for);
	labelsel_free(&u->drain_select);
}

/* An API call failed: said once until the error changes, and the look ends. */
static void api_down(struct upgrader *u, const char *what, const struct err *e)
{
	char msg[sizeof(u->api_error)];

	u->api_up = false;
	/* Stopped by SIGTERM: the agent is leaving, its own line says so, nothing failed. */
	if (e->code > INTERRUPT_EXIT_BASE)
		return;
	str_fmt_cut(msg, sizeof(msg), "%s: %s", what, e->msg);
	if (strcmp(msg, u->api_error) == 0)
		return;
	snprintf(u->api_error, sizeof(u->api_error), "%s", msg);
	log_kv(LOG_WARN, "agent",
	       "driver upgrade: a call to the API server failed; nothing changes until one succeeds",
	       "error", msg, LOG_END);
}

/* The limit now: N, or P% of the DaemonSet's nodes. 0, or -1 (API error said). */
static int current_limit(struct upgrader *u, unsigned *ret)
{
	unsigned total = 0;
	struct err e;

	if (slots_limit_is_percent(u->o->limit) &&
	    kube_daemonset_desired(u->k, u->kc.namespace, u->o->daemonset, &total, &e) < 0) {
		api_down(u, "the DaemonSet's node count", &e);
		return -1;
	}
	return slots_limit(u->o->limit, total, ret) < 0 ? -1 : 0;
}

/* ---- the slot, kept while the agent works -------------------------------------------------- */

int upgrader_keep_slot(struct upgrader *u)
{
	uint64_t now = mono_s(), at;
	struct err e;

	if (!u->on || u->slots.held < 0)
		return -1;
	at = slots_renew_at(&u->slots);
	if (at < u->keep_retry)
		at = u->keep_retry; /* a renewal failed: not again at once */
	if (now >= at) {
		if (slots_renew(&u->slots, now, &e) < 0) {
			api_down(u, "renewing the slot", &e);
			u->keep_retry = now + 2;
			return 2000;
		}
		if (u->slots.held < 0)
			return -1; /* lost: the next look sees it and asks for a slot first */
		at = slots_renew_at(&u->slots);
	}
	return at > now ? (int)(at - now) * 1000 : 1000;
}

/* ---- the installer, run by the agent ------------------------------------------------------ */

/* Runs the installer: the pending version as it was requested, or ROLLBACK_TO (not NULL). */
static int spawn(struct upgrader *u, const char *rollback_to)
{
	const char *what = rollback_to ? "rollback" : "activation";
	struct pending pd, *p = NULL;
	const char *version = rollback_to, *argv[AGENT_MAX_ARGV];
	pid_t pid;

	if (!rollback_to) {
		if (u->calls->pending(u->calls->arg, &pd) != 1) {
			log_msg(LOG_WARN, "agent", "driver upgrade: nothing pending to activate");
			return -1;
		}
		p = &pd;
		version = pd.driver_version;
	}
	u->calls->installer_argv(u->calls->arg, version, p, argv);
	pid = fork();
	if (pid < 0) {
		log_kv(LOG_WARN, "agent", "driver upgrade: the installer could not be started",
		       "what", what, "error", strerror(errno), LOG_END);
		return -1;
	}
	if (pid == 0)
		daemon_exec_child("/proc/self/exe", argv);
	u->child = pid;
	u->child_what = what;
	log_kv(LOG_INFO, "agent", "driver upgrade: the installer runs", "what", what, "version",
	       version, U64("pid", pid), LOG_END);
	return 0;
}

bool upgrader_reaped(struct upgrader *u, pid_t pid, int status)
{
	char how[64];

	if (!u->child || pid != u->child)
		return false;
	daemon_describe_status(status, how, sizeof(how));
	str_fmt_cut(u->last_run, sizeof(u->last_run), "%s: %s", u->child_what, how);
	log_kv(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? LOG_INFO : LOG_WARN, "agent",
	       "driver upgrade: the installer ended", "what", u->child_what, "how", how, LOG_END);
	u->child = 0;
	return true;
}

/* ---- recording ---------------------------------------------------------------------------- */

static bool same_record(const struct upgrade_record *a, const struct upgrade_record *b)
{
	return a->state == b->state && a->cordoned == b->cordoned && a->since == b->since &&
	       a->wait_from == b->wait_from && a->slot == b->slot && a->evented == b->evented &&
	       strcmp(a->version, b->version) == 0 && strcmp(a->from, b->from) == 0 &&
	       strcmp(a->reason, b->reason) == 0;
}

/* Posts R's Event: 0, or -1 (said once until the error changes). */
static int event(struct upgrader *u, const struct upgrade_record *r)
{
	static const char *const reasons[UPG_N_STATES] = {
		[UPG_IDLE] = "DriverUpgradeIdle",
		[UPG_PENDING] = "DriverUpgradePending",
		[UPG_CORDONED] = "DriverUpgradeCordoned",
		[UPG_WAITING] = "DriverUpgradeWaiting",
		[UPG_EVICTING] = "DriverUpgradeEvicting",
		[UPG_DRAINING] = "DriverUpgradeDraining",
		[UPG_ACTIVATING] = "DriverUpgradeActivating",
		[UPG_VALIDATING] = "DriverUpgradeValidating",
		[UPG_DONE] = "DriverUpgradeDone",
		[UPG_FAILED] = "DriverUpgradeFailed",
	};
	char msg[512];
	struct err e;

	str_fmt_cut(msg, sizeof(msg), "driver upgrade %s%s%s%s%s%s%s%s",
		    r->state == UPG_IDLE ? "over" : upgrade_state_name(r->state),
		    r->version[0] ? ": " : "", r->version, r->from[0] ? " (from " : "", r->from,
		    r->from[0] ? ")" : "", r->reason[0] ? "; " : "", r->reason);
	if (kube_event(u->k, u->kc.namespace,
		       &(struct kube_event){.node = u->o->node_name,
					    .type = r->state == UPG_FAILED ? "Warning" : "Normal",
					    .reason = reasons[r->state],
					    .message = msg,
					    .component = COMPONENT,
					    .action = "DriverUpgrade"},
		       &e) < 0) {
		char said[sizeof(u->event_error)];

		str_fmt_cut(said, sizeof(said), "%s", e.msg);
		if (strcmp(said, u->event_error) != 0)
			log_kv(LOG_WARN, "agent",
			       "driver upgrade: the event was not recorded; posted again at the next look",
			       "error", e.msg, LOG_END);
		memcpy(u->event_error, said, sizeof(said));
		return -1;
	}
	u->event_error[0] = '\0';
	return 0;
}

/*
 * The Event the recorded state lacks (upgrade_event_due), posted, then its posting recorded
 * on the Node. Killed between the state's record and its Event, the next agent finds it due
 * and posts it; killed between the Event and its record, the Event is posted twice: at
 * least once, never lost. 0, or -1 (an API error, said).
 */
static int post_due_event(struct upgrader *u)
{
	_cleanup_(json_object_putp) json_object *patch = NULL;
	struct upgrade_record next = u->rec;
	struct err e;

	if (!upgrade_event_due(&u->rec) || event(u, &u->rec) < 0)
		return 0;
	next.evented = next.state;
	patch = upgrade_node_patch(&next, -1);
	if (!patch) {
		log_msg(LOG_WARN, "agent", "driver upgrade: out of memory");
		return -1;
	}
	if (kube_node_patch(u->k, u->o->node_name, patch, &e) < 0) {
		api_down(u, "recording the event's posting on the node", &e);
		return -1;
	}
	u->rec = next;
	return 0;
}

/* Records NEXT on the Node (with the cordon as UNSCHEDULABLE: -1 as it is). 0 or -1. */
static int record(struct upgrader *u, const struct upgrade_record *next, int unschedulable)
{
	_cleanup_(json_object_putp) json_object *patch = NULL;
	bool moved = next->state != u->rec.state;
	struct err e;

	if (same_record(next, &u->rec) && unschedulable < 0 && !u->label_stale)
		return 0;
	patch = upgrade_node_patch(next, unschedulable);
	if (!patch) {
		log_msg(LOG_WARN, "agent", "driver upgrade: out of memory");
		return -1;
	}
	if (kube_node_patch(u->k, u->o->node_name, patch, &e) < 0) {
		api_down(u, "recording the state on the node", &e);
		return -1;
	}
	u->rec = *next;
	u->label_stale = false;
	if (moved)
		log_kv(next->state == UPG_FAILED ? LOG_ERROR : LOG_INFO, "agent", "driver upgrade",
		       "state", next->state == UPG_IDLE ? "idle" : upgrade_state_name(next->state),
		       "version", next->version, "from", next->from, "reason", next->reason,
		       LOG_END);
	/* Back to idle the record is gone: its Event cannot be recorded as posted, so it is
	 * posted once, here, and not after a restart. */
	if (moved && next->state == UPG_IDLE)
		(void)event(u, next);
	else
		(void)post_due_event(u); /* the state is recorded: its action goes on */
	return 0;
}

/* ---- one look ----------------------------------------------------------------------------- */

/*
 * --upgrade-max-unavailable before a slot is taken: the DaemonSet's nodes, its count of
 * them (a P% of them, rounded up) and those unavailable, into V. 0, or -1 (said).
 */
static int budget(struct upgrader *u, struct upgrade_view *v, char *names, size_t size)
{
	_cleanup_(json_object_putp) json_object *nodes = NULL;
	struct err e;
	int r;

	r = kube_daemonset_nodes(u->k, u->kc.namespace, u->o->daemonset, UPGRADE_ANNOTATION, &nodes,
				 &e);
	if (r == -2) {
		/* Not the API server's failure: the fleet is past what the agent reads. */
		if (!u->budget_bound_said)
			log_kv(LOG_WARN, "agent",
			       "driver upgrade: --upgrade-max-unavailable cannot be judged; no slot is taken",
			       "error", e.msg, LOG_END);
		u->budget_bound_said = true;
		u->api_up = true;
		return -1;
	}
	if (r < 0) {
		api_down(u, "listing the DaemonSet's nodes", &e);
		return -1;
	}
	u->budget_bound_said = false;
	/* None (a wrong --upgrade-daemonset): no budget to read, so no slot, said once. */
	if (r == 1 || json_object_array_length(nodes) == 0) {
		if (!u->no_ds_nodes_said)
			log_kv(LOG_WARN, "agent",
			       "driver upgrade: --upgrade-max-unavailable finds no node with a pod of the DaemonSet; no slot is taken",
			       "daemonset", u->o->daemonset, "fix",
			       "set --upgrade-daemonset to the DaemonSet the agent runs in",
			       LOG_END);
		u->no_ds_nodes_said = true;
		u->api_up = true; /* it answered: the look ends here all the same */
		return -1;
	}
	u->no_ds_nodes_said = false;
	if (upgrade_max_unavailable(u->o->max_unavailable,
				    (unsigned)json_object_array_length(nodes),
				    &v->max_unavailable) < 0)
		return -1;
	/* A node counts itself out: upgrading a node already unavailable makes no other so. */
	v->unavailable = upgrade_unavailable(nodes, u->o->node_name, names, size);
	v->unavailable_names = names;
	return 0;
}

/*
 * A pending node about to ask for a slot, under --upgrade-max-unavailable: the budget's
 * lists are read only when a slot is free (slots_free), so that a fleet of pending nodes
 * waiting for the limit reads the leases each look, not every pod of the DaemonSet and its
 * Nodes. ST decided again with the budget, or its action none when no slot is free.
 * 0, or -1 (said): the look ends.
 */
static int budget_step(struct upgrader *u, struct upgrade_view *v, struct upgrade_step *st,
		       char *names, size_t size)
{
	unsigned limit = 0;
	struct err e;
	int r;

	if (st->action != UPG_ACT_TAKE_SLOT || u->rec.state != UPG_PENDING ||
	    !u->o->max_unavailable || !u->o->max_unavailable[0])
		return 0;
	if (current_limit(u, &limit) < 0)
		return -1;
	r = slots_free(&u->slots, limit, mono_s(), &e);
	if (r < 0) {
		api_down(u, "reading the slots", &e);
		return -1;
	}
	if (r == 0) {
		st->action = UPG_ACT_NONE; /* the reason says it waits for a slot */
		return 0;
	}
	if (budget(u, v, names, size) < 0)
		return -1;
	*st = upgrade_decide(&u->rec, v, &u->policy);
	return 0;
}

/* Says once a look's claims it could not read (E; the API server's answer, or its silence):
 * their pods count as GPU pods. */
static void claims_failed(struct upgrader *u, const char *ns, const char *name, const struct err *e)
{
	if (u->claims_error_said)
		return;
	u->claims_error_said = true;
	log_kv(LOG_WARN, "agent",
	       "driver upgrade: a resource claim could not be read; the pods of the claims not read count as GPU pods",
	       "claim", ns, "name", name, "error", e->msg, LOG_END);
}

/* Reads the claims POD (not finished, in namespace NS) uses that the look has not read yet,
 * while the look's bound (CLAIMS_READ_MAX) and time (u->evict_look_s from START) allow; a
 * claim not read (past them, or its read failed) stays out of u->claims: a GPU claim.
 * 0, or -1 when the agent is stopped meanwhile. */
static int read_pod_claims(struct upgrader *u, json_object *pod, const char *ns, uint64_t start)
{
	const char *names[CLAIMS_READ_MAX];
	size_t n = claims_of_pod(pod, names, CLAIMS_READ_MAX);

	if (n > CLAIMS_READ_MAX) {
		u->claims.unread += (unsigned)(n - CLAIMS_READ_MAX);
		n = CLAIMS_READ_MAX;
	}
	for (size_t i = 0; i < n; i++) {
		_cleanup_(json_object_putp) json_object *claim = NULL;
		struct err e;
		int r;

		if (claims_find(&u->claims, ns, names[i]) >= 0)
			continue; /* shared with a pod before: read once a look */
		if (u->claims.n >= CLAIMS_READ_MAX || mono_s() - start >= u->evict_look_s) {
			u->claims.unread++;
			continue;
		}
		r = kube_resourceclaim_get(u->k, ns, names[i], &claim, &e);
		if (r < 0 && e.code > INTERRUPT_EXIT_BASE)
			return -1;
		if (r < 0) {
			u->claims.failed++;
			claims_failed(u, ns, names[i], &e);
			continue;
		}
		/* A claim gone (its pod's end deleted it) holds nothing. */
		(void)claims_add(&u->claims, ns, names[i],
				 r == 0 && claims_allocated_by(claim, u->claims.drivers));
	}
	return 0;
}

/*
 * What the look knows of the DRA claims of PODS (the node's), in the states that count GPU
 * pods (upgrade_state_counts_pods): each claim an unfinished pod uses read once, at most
 * CLAIMS_READ_MAX and for at most u->evict_look_s; those past them, and those whose read
 * failed, count as GPU claims (said once). Nothing is kept from the look before. 0, or -1
 * when the agent is stopped meanwhile.
 */
static int read_claims(struct upgrader *u, json_object *pods)
{
	size_t n = jsonc_array_len(pods);
	uint64_t start = mono_s();

	u->claims.n = u->claims.unread = u->claims.failed = 0;
	if (!u->claims.drivers[0] || !upgrade_state_counts_pods(u->rec.state))
		return 0;
	for (size_t i = 0; i < n; i++) {
		json_object *pod = json_object_array_get_idx(pods, i);
		const char *ns = jsonc_str(jsonc_get(pod, "metadata"), "namespace");

		if (upgrade_pod_finished(pod) || !ns)
			continue;
		if (read_pod_claims(u, pod, ns, start) < 0)
			return -1;
	}
	if (u->claims.unread && !u->claims_bound_said)
		log_kv(LOG_WARN, "agent",
		       "driver upgrade: the node's pods use more resource claims than a look reads in its bound or time; the pods of those not read count as GPU pods",
		       U64("read", u->claims.n), U64("not_read", u->claims.unread),
		       U64("bound", CLAIMS_READ_MAX), U64("budget_s", u->evict_look_s), LOG_END);
	u->claims_bound_said = u->claims.unread > 0;
	if (!u->claims.failed)
		u->claims_error_said = false; /* said again when it comes back */
	return 0;
}

/* Whether the action asks POD to leave: a GPU pod an eviction moves, or a pod the drain does. */
static bool to_ask(const struct upgrader *u, json_object *pod, bool drain)
{
	bool evictable;

	if (drain)
		return upgrade_pod_drains(pod, &u->pod_opts);
	return upgrade_pod_holds_gpu(pod, &u->claims, &evictable) && evictable &&
	       !upgrade_pod_kept(pod, u->pod_opts.evict_force, u->pod_opts.evict_emptydir);
}

/* Asks the pods the action names to leave (DRAIN: the drain's, else the GPU pods), for as
 * long as the look's time for it (u->evict_look_s) lasts; the rest at the next look. */
static void evict(struct upgrader *u, json_object *pods, bool drain)
{
	size_t n = json_object_array_length(pods);
	uint64_t start = mono_s();
	unsigned left = 0;

	for (size_t i = 0; i < n; i++) {
		json_object *pod = json_object_array_get_idx(pods, i), *meta = NULL, *ns, *name;
		struct err e;
		int r;

		if (!to_ask(u, pod, drain) || !json_object_object_get_ex(pod, "metadata", &meta) ||
		    !json_object_object_get_ex(meta, "namespace", &ns) ||
		    !json_object_object_get_ex(meta, "name", &name))
			continue;
		if (left || mono_s() - start >= u->evict_look_s) {
			left++; /* counted, asked at the next look */
			continue;
		}
		/* Each eviction may take a call's deadline: the slot is kept meanwhile. */
		(void)upgrader_keep_slot(u);
		r = kube_evict(u->k, json_object_get_string(ns), json_object_get_string(name), &e);
		if (r < 0) {
			api_down(u, "an eviction", &e);
			return;
		}
		if (drain)
			*(r == 1 ? &u->drain_refused : &u->drained) += 1;
		else
			*(r == 1 ? &u->evictions_refused : &u->evictions) += 1;
		log_kv(r == 1 ? LOG_WARN : LOG_INFO, "agent",
		       r == 1 ? "driver upgrade: a disruption budget refuses the eviction now; asked again at the next look"
		       : drain ? "driver upgrade: pod drained"
			       : "driver upgrade: GPU pod evicted",
		       "namespace", json_object_get_string(ns), "pod", json_object_get_string(name),
		       LOG_END);
	}
	if (left)
		log_kv(LOG_INFO, "agent",
		       "driver upgrade: the look's time for evictions is spent; the rest are asked at the next look",
		       U64("left", left), U64("budget_s", u->evict_look_s), LOG_END);
}

/* The node's record and cordon, from NODE. */
static void read_node(struct upgrader *u, json_object *node, struct upgrade_view *v)
{
	json_object *meta = NULL, *ann = NULL, *val = NULL, *spec = NULL, *un = NULL;
	struct err e;

	v->unschedulable = json_object_object_get_ex(node, "spec", &spec) &&
			   json_object_object_get_ex(spec, "unschedulable", &un) &&
			   json_object_get_boolean(un);
	if (json_object_object_get_ex(node, "metadata", &meta) &&
	    json_object_object_get_ex(meta, "annotations", &ann) &&
	    json_object_object_get_ex(ann, UPGRADE_ANNOTATION, &val) &&
	    json_object_is_type(val, json_type_string)) {
		if (upgrade_record_parse(json_object_get_string(val), &u->rec, &e) < 0)
			log_kv(LOG_WARN, "agent",
			       "driver upgrade: the node's record is damaged; taken as idle",
			       "error", e.msg, "fix",
			       "look at the node, then remove the annotation (kubectl annotate node NODE " UPGRADE_ANNOTATION
			       "-)",
			       LOG_END);
	} else {
		memset(&u->rec, 0, sizeof(u->rec));
	}
	/* The label says the record's state: one left behind (a person removed the
	 * annotation, as runbook 2 says to release a failed node) is made to agree. */
	{
		json_object *labels = NULL, *l = NULL;
		const char *shown =
			json_object_object_get_ex(meta, "labels", &labels) &&
					json_object_object_get_ex(labels, UPGRADE_LABEL, &l)
				? json_object_get_string(l)
				: "";

		u->label_stale = strcmp(shown, upgrade_state_name(u->rec.state)) != 0;
	}
	/* A restarted agent knows its slot from the record. */
	if (u->slots.held < 0 && u->rec.slot > 0)
		u->slots.held = (int)u->rec.slot - 1;
}

/*
 * Carries STEP out. Returns true when the node moved on and the next step may follow at
 * once (a new record or cordon), false when it waits for time to pass or for the world
 * (nothing changed, pods asked to leave, the installer running, an API error).
 */
static bool carry_out(struct upgrader *u, struct upgrade_step *st, json_object *pods)
{
	int unschedulable = st->action == UPG_ACT_CORDON     ? 1
			    : st->action == UPG_ACT_UNCORDON ? 0
							     : -1;
	unsigned limit = 0;
	bool changed;
	struct err e;

	switch (st->action) {
	case UPG_ACT_TAKE_SLOT:
		if (current_limit(u, &limit) < 0)
			return false;
		if (slots_take(&u->slots, limit, mono_s(), &e) < 0) {
			api_down(u, "taking a slot", &e);
			return false;
		}
		break;
	case UPG_ACT_RELEASE:
		if (current_limit(u, &limit) < 0)
			return false;
		if (slots_release(&u->slots, limit, &e) < 0) {
			api_down(u, "giving the slot back", &e);
			return false;
		}
		break;
	default:
		break;
	}
	st->next.slot = u->slots.held < 0 ? 0 : (unsigned)u->slots.held + 1;
	changed = !same_record(&st->next, &u->rec) || unschedulable >= 0;
	if (record(u, &st->next, unschedulable) < 0)
		return false;
	switch (st->action) {
	case UPG_ACT_EVICT:
	case UPG_ACT_DRAIN:
		evict(u, pods, st->action == UPG_ACT_DRAIN);
		return false;
	case UPG_ACT_ACTIVATE:
		spawn(u, NULL);
		return false;
	case UPG_ACT_ROLLBACK:
		spawn(u, st->next.from);
		return false;
	default:
		return changed;
	}
}

bool upgrader_look(struct upgrader *u, const char *current, bool ready, const char *not_ready,
		   unsigned (*holders)(void *arg), void *arg)
{
	_cleanup_(json_object_putp) json_object *node = NULL, *pods = NULL;
	struct upgrade_view v = {.current = current,
				 .ready = ready,
				 .not_ready = not_ready,
				 .now = (uint64_t)time(NULL)};
	struct upgrade_step st;
	struct upgrade_pods counted;
	char unavailable[200];
	struct pending pd;
	struct pending_failure pf;
	struct err e;
	int r;

	if (!u->on || u->child)
		return false;
	if (kube_node_get(u->k, u->o->node_name, &node, &e) < 0) {
		api_down(u, "reading the node", &e);
		return false;
	}
	read_node(u, node, &v);
	/* What a restarted agent's state lacks (or a refused Event), before anything else. */
	if (post_due_event(u) < 0)
		return false;
	/* The /proc walk only when a version waits: nothing else asks who holds the driver. */
	if (u->calls->pending(u->calls->arg, &pd) == 1) {
		v.pending = pd.driver_version;
		v.holders = holders(arg);
	}
	if (u->calls->pending_failed(u->calls->arg, &pf) == 1 &&
	    strcmp(pf.driver_version, u->rec.version) == 0)
		v.failed = pf.cause;
	if (u->slots.held >= 0) {
		r = slots_renew(&u->slots, mono_s(), &e);
		if (r < 0) {
			api_down(u, "renewing the slot", &e);
			return false;
		}
	}
	v.slot = u->slots.held >= 0;
	if (kube_pods_on_node(u->k, u->o->node_name, &pods, &e) < 0) {
		api_down(u, "listing the node's pods", &e);
		return false;
	}
	if (read_claims(u, pods) < 0)
		return false;
	upgrade_pods_count(pods, &u->pod_opts, &counted);
	v.gpu_pods = counted.gpu;
	v.evictable = counted.evictable;
	v.pods = &counted;
	st = upgrade_decide(&u->rec, &v, &u->policy);
	if (budget_step(u, &v, &st, unavailable, sizeof(unavailable)) < 0)
		return false;
	u->evict_blocked = st.evict_blocked;
	if (!u->api_up && u->api_error[0])
		log_msg(LOG_INFO, "agent", "driver upgrade: the API server answers again");
	u->api_up = true;
	u->api_error[0] = '\0';
	return carry_out(u, &st, pods);
}

/* ---- metrics ------------------------------------------------------------------------------ */

#define P "nvidia_driver_installer_agent_"

static const struct prom_family
	fam_enabled =
		{P "upgrades_enabled", PROM_GAUGE,
		 "Whether the agent carries out pending driver upgrades (--upgrades, a node name and a service account)."},
	fam_state = {P "upgrade_state", PROM_GAUGE,
		     "The node's driver upgrade state as last recorded: 1 for the state it is in."},
	fam_api_up = {P "upgrade_api_up", PROM_GAUGE,
		      "Whether the API server answered the agent's last look."},
	fam_slot = {P "upgrade_slot_held", PROM_GAUGE,
		    "Whether this node holds a slot of the fleet's upgrade limit."},
	fam_evictions = {P "upgrade_evictions_total", PROM_COUNTER,
			 "GPU pods the agent asked to leave, by the API server's answer."},
	fam_drain =
		{P "upgrade_drain_evictions_total", PROM_COUNTER,
		 "Other pods the agent's drain (--upgrade-drain) asked to leave, by the API server's answer."},
	fam_blocked = {
		P "upgrade_evictions_blocked", PROM_GAUGE,
		"1 while, past the deadline, a GPU pod --upgrade-evict-force or --upgrade-evict-emptydir keeps blocks the eviction."};

char *upgrader_render(const struct upgrader *u)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	prom_single(f, &fam_enabled, u->on);
	if (u->on) {
		prom_head(f, &fam_state);
		for (int s = 0; s < UPG_N_STATES; s++)
			prom_sample(f, &fam_state,
				    &(struct prom_label){
					    "state", s == UPG_IDLE ? "idle"
								   : upgrade_state_name((
									     enum upgrade_state)s)},
				    1, (int)u->rec.state == s);
		prom_single(f, &fam_api_up, u->api_up);
		prom_single(f, &fam_slot, u->slots.held >= 0);
		prom_head(f, &fam_evictions);
		prom_sample(f, &fam_evictions, &(struct prom_label){"result", "evicted"}, 1,
			    (double)u->evictions);
		prom_sample(f, &fam_evictions, &(struct prom_label){"result", "refused"}, 1,
			    (double)u->evictions_refused);
		prom_head(f, &fam_drain);
		prom_sample(f, &fam_drain, &(struct prom_label){"result", "evicted"}, 1,
			    (double)u->drained);
		prom_sample(f, &fam_drain, &(struct prom_label){"result", "refused"}, 1,
			    (double)u->drain_refused);
		prom_single(f, &fam_blocked, u->evict_blocked);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
