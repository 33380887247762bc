// SPDX-License-Identifier: Apache-2.0
/*
 * The node agent's condition, Events and taints on its Node (agent/nodecond.h; docs/design.md,
 * "The node agent"): decided by nodecond_decide, carried out by nodecond_look.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nodecond.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/prom.h"
#include "util/str.h"

/* A look's API calls end within this, as the upgrader's (agent/upgrader.c). */
#define NODECOND_CALL_DEADLINE_S 5
/*
 * The stop's calls, within this each: a read and a write, again for each conflict (at most
 * KUBE_CONFLICT_RETRIES), then the Event; at most 13 s in all, 1 s when the API server does
 * not answer (docs/design.md, "The node agent"), and a call that does not answer in it
 * leaves the condition to go stale.
 */
#define NODECOND_STOP_DEADLINE_S 1
#define COMPONENT "nvidia-driver-installer"
#define ACTION "NodeCondition"

static const char *const reasons[HEALTH_N_REASONS] = {
	[HEALTH_READY] = NODECOND_READY,	 [HEALTH_NOT_INSTALLED] = "DriverNotInstalled",
	[HEALTH_NOT_LOADED] = "DriverNotLoaded", [HEALTH_OTHER_LOADED] = "OtherDriverLoaded",
	[HEALTH_NVML] = "NVMLNotAnswering",	 [HEALTH_XID] = "FatalXid",
	[HEALTH_FABRIC] = "FabricNotReady",	 [HEALTH_CDI] = "CDIConflict",
	[HEALTH_CUDA] = "CUDANotReady",
};

const char *nodecond_reason(enum health_reason r)
{
	return r < HEALTH_N_REASONS ? reasons[r] : "Unknown";
}

/* ---- deciding ----------------------------------------------------------------------------- */

/* The condition V says, into ST. */
static void condition_of(const struct nodecond_view *v, struct nodecond_step *st)
{
	const char *status = "False", *reason = nodecond_reason(v->health);

	if (v->upgrade == UPG_ACTIVATING || v->upgrade == UPG_VALIDATING) {
		reason = NODECOND_UPGRADING;
		str_fmt_cut(st->message, sizeof(st->message), "driver upgrade to %s: %s",
			    v->upgrade_version, upgrade_state_name(v->upgrade));
	} else if (v->upgrade == UPG_FAILED) {
		reason = NODECOND_UPGRADE_FAILED;
		str_fmt_cut(st->message, sizeof(st->message), "driver upgrade to %s failed: %s",
			    v->upgrade_version, v->upgrade_reason);
	} else if (v->health == HEALTH_READY) {
		status = "True";
		str_fmt_cut(st->message, sizeof(st->message), "a CUDA job can run (driver %s)",
			    v->version);
	} else {
		str_fmt_cut(st->message, sizeof(st->message), "%s", v->cause);
	}
	snprintf(st->status, sizeof(st->status), "%s", status);
	snprintf(st->reason, sizeof(st->reason), "%s", reason);
}

struct nodecond_step nodecond_decide(const struct nodecond_memory *m, const struct nodecond_view *v,
				     const struct nodecond_policy *p)
{
	struct nodecond_step st = {.health = NODECOND_TAINT_KEEP};
	const char *want = "";

	if (!v->judged)
		return st;
	condition_of(v, &st);
	st.write = (!m->written || strcmp(m->status, st.status) != 0 ||
		    strcmp(m->reason, st.reason) != 0 || strcmp(m->message, st.message) != 0 ||
		    v->now - m->written_at >= p->heartbeat_s) &&
		   v->now >= m->retry_at[NODECOND_CONDITION];
	/* Per appearance: when judged ready, and again each heartbeat, whatever the writes do. */
	st.check_startup = p->startup_taint && strcmp(st.status, "True") == 0 &&
			   (!m->startup_checked || v->now - m->startup_at >= p->heartbeat_s) &&
			   v->now >= m->retry_at[NODECOND_TAINTS];
	if (!p->health_taint || v->now < m->retry_at[NODECOND_TAINTS])
		return st;
	if (v->health == HEALTH_XID || v->health == HEALTH_FABRIC)
		want = nodecond_reason(v->health);
	if (!m->health_known || strcmp(m->health_value, want) != 0) {
		st.health = want[0] ? NODECOND_TAINT_ADD : NODECOND_TAINT_REMOVE;
		snprintf(st.health_value, sizeof(st.health_value), "%s", want);
	}
	return st;
}

void nodecond_failed(struct nodecond_memory *m, enum nodecond_call which, uint64_t now,
		     const struct nodecond_policy *p)
{
	unsigned first = p->look_s ? p->look_s : 1, s = m->retry_s[which];

	s = s ? (s < p->heartbeat_s / 2 ? 2 * s : p->heartbeat_s) : first;
	m->retry_s[which] = s > first ? s : first;
	m->retry_at[which] = now + m->retry_s[which];
}

void nodecond_answered(struct nodecond_memory *m, enum nodecond_call which)
{
	m->retry_s[which] = 0;
	m->retry_at[which] = 0;
}

const char *nodecond_event(const char *old_status, const char *old_reason, const char *status,
			   const char *reason, const char **type)
{
	if (strcmp(old_status, status) == 0 && strcmp(old_reason, reason) == 0)
		return NULL;
	if (strcmp(status, "True") == 0) {
		*type = "Normal";
		return "GPUDriverReady";
	}
	if (strcmp(status, "False") == 0) {
		*type = "Warning";
		return "GPUDriverNotReady";
	}
	*type = "Normal";
	return "GPUDriverUnknown";
}

/* ---- the options' taints ----------------------------------------------------------------- */

/* A taint's key is a qualified name, as validateNodeTaints checks it (kube_qualified_name_ok). */
bool nodecond_taint_ok(const char *spec, bool with_effect)
{
	const char *colon = strrchr(spec, ':');

	if (!with_effect)
		return kube_qualified_name_ok(spec, strlen(spec));
	return colon && kube_qualified_name_ok(spec, (size_t)(colon - spec)) &&
	       (strcmp(colon + 1, "NoSchedule") == 0 ||
		strcmp(colon + 1, "PreferNoSchedule") == 0 || strcmp(colon + 1, "NoExecute") == 0);
}

/* ---- carrying out ------------------------------------------------------------------------- */

void nodecond_start(struct nodecond *c, const struct agent_condition_opts *o,
		    const struct agent_upgrade_opts *uo, const struct upgrader *up, unsigned look_s)
{
	const char *colon = o->health_taint ? strrchr(o->health_taint, ':') : NULL;
	struct err e;

	memset(c, 0, sizeof(*c));
	c->o = o;
	c->node = uo->node_name;
	c->policy = (struct nodecond_policy){.condition = !o->off,
					     .heartbeat_s = o->heartbeat_s,
					     .look_s = look_s,
					     .startup_taint = o->startup_taint != NULL,
					     .health_taint = colon != NULL};
	if (colon) {
		str_fmt_cut(c->health_key, sizeof(c->health_key), "%.*s",
			    (int)(colon - o->health_taint), o->health_taint);
		snprintf(c->health_effect, sizeof(c->health_effect), "%s", colon + 1);
	}
	if (!c->policy.condition && !c->policy.startup_taint && !c->policy.health_taint)
		return;
	if (!c->node) {
		log_kv(LOG_INFO, "agent",
		       "the Node's condition and taints are not kept: no node name", "fix",
		       "set NVIDIA_NODE_NAME from the downward API (fieldRef spec.nodeName), as the shipped DaemonSets do",
		       LOG_END);
		return;
	}
	if (up->k) {
		c->k = up->k;
		c->kc = up->kc;
		c->ns = c->kc.namespace;
	} else {
		if (kube_config_in_cluster(uo->sa_dir, &c->kc, &e) < 0) {
			log_kv(LOG_WARN, "agent",
			       "the Node's condition and taints are not kept: not in a cluster",
			       "error", e.msg, "fix",
			       "give the pod a service account (the shipped DaemonSets do)",
			       LOG_END);
			return;
		}
		c->kc.deadline_s = NODECOND_CALL_DEADLINE_S;
		c->own = kube_new(&c->kc, &e);
		if (!c->own) {
			log_kv(LOG_WARN, "agent", "the Node's condition and taints are not kept",
			       "error", e.msg, LOG_END);
			return;
		}
		c->k = c->own;
		c->ns = c->kc.namespace;
	}
	c->on = true;
	log_kv(LOG_INFO, "agent", "keeping the Node's condition", "node", c->node, "condition",
	       c->policy.condition ? KUBE_CONDITION_TYPE : "no", U64("heartbeat_s", o->heartbeat_s),
	       "startup_taint", o->startup_taint ? o->startup_taint : "none", "health_taint",
	       o->health_taint ? o->health_taint : "none", LOG_END);
}

/* A call failed: said once until its error changes (nothing when the agent is stopping). */
static void failed(struct nodecond *c, int which, const char *what, const struct err *e)
{
	char msg[sizeof(c->error[0])];

	if (e->code > INTERRUPT_EXIT_BASE)
		return;
	str_fmt_cut(msg, sizeof(msg), "%s: %s", what, e->msg);
	if (strcmp(msg, c->error[which]) == 0)
		return;
	snprintf(c->error[which], sizeof(c->error[which]), "%s", msg);
	if (interrupt_signal())
		log_kv(LOG_WARN, "agent",
		       "the Node's condition not told that the agent stops: it goes stale instead",
		       "error", msg, LOG_END);
	else
		log_kv(LOG_WARN, "agent",
		       "the Node's condition: a call to the API server failed; tried again after the look's interval, then twice as long each time up to the heartbeat",
		       "error", msg, LOG_END);
}

static void answered(struct nodecond *c, int which)
{
	if (!c->error[which][0])
		return;
	log_kv(LOG_INFO, "agent", "the Node's condition: the API server answers again", "was",
	       c->error[which], LOG_END);
	c->error[which][0] = '\0';
}

/* The Event of the last change (event_due): posted, or left due for a later look. */
static void post_event(struct nodecond *c, uint64_t now)
{
	const char *type = "Normal", *reason;
	char msg[NODECOND_MESSAGE_MAX];
	struct err e;

	reason = nodecond_event(c->event_old_status, c->event_old_reason, c->m.status, c->m.reason,
				&type);
	if (!reason) {
		c->event_due = false; /* changed back meanwhile: nothing to tell */
		return;
	}
	str_fmt_cut(msg, sizeof(msg), "%s (%s): %s", KUBE_CONDITION_TYPE, c->m.reason,
		    c->m.message);
	if (kube_event(c->k, c->ns,
		       &(struct kube_event){.node = c->node,
					    .type = type,
					    .reason = reason,
					    .message = msg,
					    .component = COMPONENT,
					    .action = ACTION},
		       &e) < 0) {
		failed(c, NODECOND_EVENT, "posting the condition's event", &e);
		nodecond_failed(&c->m, NODECOND_EVENT, now, &c->policy);
		return;
	}
	answered(c, NODECOND_EVENT);
	nodecond_answered(&c->m, NODECOND_EVENT);
	c->event_due = false;
}

/* Writes STATUS, REASON, MESSAGE (when the condition is on) and remembers it. 0 or -1. */
static int write_condition(struct nodecond *c, const char *status, const char *reason,
			   const char *message, uint64_t now)
{
	struct kube_condition_result r;
	bool turned;
	struct err e;

	memset(&r, 0, sizeof(r));
	if (c->policy.condition &&
	    kube_node_condition_set(c->k, c->node,
				    &(struct kube_condition){.type = KUBE_CONDITION_TYPE,
							     .status = status,
							     .reason = reason,
							     .message = message},
				    &r, &e) < 0) {
		c->failures++;
		failed(c, NODECOND_CONDITION, "writing the condition", &e);
		nodecond_failed(&c->m, NODECOND_CONDITION, now, &c->policy);
		return -1;
	}
	turned = !c->m.written || strcmp(c->m.status, status) != 0 ||
		 strcmp(c->m.reason, reason) != 0;
	if (c->policy.condition) {
		const char *type;

		c->writes++;
		c->conflicts += r.conflicts;
		answered(c, NODECOND_CONDITION);
		nodecond_answered(&c->m, NODECOND_CONDITION);
		/* From what the Node had: a restarted agent tells no change twice. */
		if (nodecond_event(r.old_status, r.old_reason, status, reason, &type)) {
			c->event_due = true;
			snprintf(c->event_old_status, sizeof(c->event_old_status), "%s",
				 r.old_status);
			snprintf(c->event_old_reason, sizeof(c->event_old_reason), "%s",
				 r.old_reason);
		}
	}
	if (turned)
		log_kv(strcmp(status, "True") == 0 ? LOG_INFO : LOG_WARN, "agent",
		       c->policy.condition
			       ? "the Node's condition written"
			       : "the Node's condition (not written: --node-condition no)",
		       "status", status, "reason", reason, "message", message, LOG_END);
	c->m.written = true;
	snprintf(c->m.status, sizeof(c->m.status), "%s", status);
	snprintf(c->m.reason, sizeof(c->m.reason), "%s", reason);
	snprintf(c->m.message, sizeof(c->m.message), "%s", message);
	c->m.written_at = now;
	return 0;
}

static void take_startup_taint(struct nodecond *c, uint64_t now)
{
	bool changed = false;
	struct err e;

	if (kube_node_taint(c->k, c->node, &(struct kube_taint){.key = c->o->startup_taint}, false,
			    &changed, &e) < 0) {
		failed(c, NODECOND_TAINTS, "taking the startup taint off", &e);
		nodecond_failed(&c->m, NODECOND_TAINTS, now, &c->policy);
		return;
	}
	answered(c, NODECOND_TAINTS);
	nodecond_answered(&c->m, NODECOND_TAINTS);
	c->m.startup_checked = true;
	c->m.startup_at = now;
	if (changed)
		log_kv(LOG_INFO, "agent", "startup taint taken off: a CUDA job can run", "taint",
		       c->o->startup_taint, LOG_END);
}

static void set_health_taint(struct nodecond *c, const struct nodecond_step *st, uint64_t now)
{
	bool add = st->health == NODECOND_TAINT_ADD, changed = false;
	struct err e;

	if (kube_node_taint(c->k, c->node,
			    &(struct kube_taint){.key = c->health_key,
						 .value = st->health_value,
						 .effect = c->health_effect},
			    add, &changed, &e) < 0) {
		failed(c, NODECOND_TAINTS,
		       add ? "adding the health taint" : "removing the health taint", &e);
		nodecond_failed(&c->m, NODECOND_TAINTS, now, &c->policy);
		return;
	}
	answered(c, NODECOND_TAINTS);
	nodecond_answered(&c->m, NODECOND_TAINTS);
	c->m.health_known = true;
	snprintf(c->m.health_value, sizeof(c->m.health_value), "%s", st->health_value);
	if (changed)
		log_kv(add ? LOG_WARN : LOG_INFO, "agent",
		       add ? "health taint put on" : "health taint taken off", "taint",
		       c->health_key, "value", st->health_value, "effect", c->health_effect,
		       LOG_END);
}

void nodecond_look(struct nodecond *c, const struct nodecond_view *v)
{
	struct nodecond_step st;

	if (!c->on)
		return;
	st = nodecond_decide(&c->m, v, &c->policy);
	/* Not ready (or not judged): the startup taint is looked for again once ready. */
	if (strcmp(st.status, "True") != 0)
		c->m.startup_checked = false;
	/* A failed call waits its turn (nodecond_failed); the others keep their own schedules. */
	if (st.write)
		(void)write_condition(c, st.status, st.reason, st.message, v->now);
	if (c->event_due && v->now >= c->m.retry_at[NODECOND_EVENT])
		post_event(c, v->now);
	if (st.check_startup)
		take_startup_taint(c, v->now);
	if (st.health != NODECOND_TAINT_KEEP)
		set_health_taint(c, &st, v->now);
}

void nodecond_stop(struct nodecond *c, const char *why)
{
	struct kube_config kc = c->kc;
	uint64_t now = now_ns() / 1000000000ull;
	struct kube *k = NULL;
	char msg[256];
	struct err e;

	kc.deadline_s = NODECOND_STOP_DEADLINE_S;
	if (c->on && c->policy.condition && (k = kube_new(&kc, &e))) {
		str_fmt_cut(
			msg, sizeof(msg),
			"the node agent stopped (%s): nothing keeps this condition until it runs again",
			why);
		c->k = k;
		/* Written whatever stopped the agent: the signal does not end these calls. */
		interrupt_hold(true);
		if (write_condition(c, "Unknown", NODECOND_STOPPED, msg, now) == 0 && c->event_due)
			post_event(c, now);
		interrupt_hold(false);
		kube_free(k);
	}
	kube_free(c->own);
	c->own = c->k = NULL;
	c->on = false;
}

/* ---- metrics ------------------------------------------------------------------------------ */

#define P "nvidia_driver_installer_agent_"

static const struct prom_family
	fam_on =
		{P "node_condition_enabled", PROM_GAUGE,
		 "Whether the agent keeps its condition and taints on the Node (a node name and a service account)."},
	fam_writes = {P "node_condition_writes_total", PROM_COUNTER,
		      "Writes of the agent's Node condition, by result."},
	fam_conflicts = {P "node_condition_conflicts_total", PROM_COUNTER,
			 "Conflicts (409) the condition's writes met and retried."};

char *nodecond_render(const struct nodecond *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	prom_single(f, &fam_on, c->on);
	if (c->on) {
		prom_head(f, &fam_writes);
		prom_sample(f, &fam_writes, &(struct prom_label){"result", "written"}, 1,
			    (double)c->writes);
		prom_sample(f, &fam_writes, &(struct prom_label){"result", "failed"}, 1,
			    (double)c->failures);
		prom_single(f, &fam_conflicts, (double)c->conflicts);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
