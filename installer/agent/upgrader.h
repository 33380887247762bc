/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent's driver upgrades (docs/design.md, "Upgrades that finish by themselves"):
 * at each look, what the node records and what the agent sees go into upgrade_decide
 * (agent/upgrade.h), and the action that comes out is carried out here through the API
 * server (kube/) and the installer: a slot taken or given back (agent/slots.h), the node
 * cordoned or uncordoned, GPU pods evicted, the pending version activated by the
 * installer itself (`install --when-busy defer`, a child of the agent, so that its switch
 * can ask the agent to stop the driver's daemons; its command line and the records it
 * reads are the program's, through struct agent_calls), or the version before brought back.
 * The new state is then recorded on the Node (a label and an annotation), as an Event
 * and in the agent's metrics.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "agent/slots.h"
#include "agent/upgrade.h"
#include "kube/kube.h"

struct upgrader {
	const struct agent_upgrade_opts *o;
	const struct agent_calls *calls;
	bool on;
	struct kube *k;
	struct kube_config kc;
	struct upgrade_policy policy;
	struct slots slots;
	struct upgrade_record rec; /* as the node recorded it at the last look */
	bool api_up;		   /* the last look's calls were answered */
	bool label_stale;	   /* the node's label does not say the record's state */
	char api_error[256];	   /* the last API error, logged once until it changes */
	char event_error[256];	   /* the last Event's error, logged once until it changes */
	pid_t child;		   /* the installer run by ACTIVATE or ROLLBACK, or 0 */
	const char *child_what;	   /* "activation" or "rollback" */
	char last_run[128];	   /* how the last such run ended */
	uint64_t evictions, evictions_refused;
	uint64_t drained, drain_refused; /* the drain's evictions, by the answer */
	struct labelsel wait_for, drain_select;
	struct upgrade_pod_opts pod_opts;
	bool no_ds_nodes_said;	/* --upgrade-max-unavailable found no node of the DaemonSet */
	bool budget_bound_said; /* its lists were past their bound (said once) */
	bool evict_blocked;	/* the last look: a kept GPU pod blocks the eviction */
	unsigned evict_look_s;	/* the most a look spends asking pods to leave */
	uint64_t keep_retry;	/* a failed renewal is tried again from then (monotonic s) */
	struct claims claims;	/* the DRA claims the last look read (agent/claims.h) */
	bool claims_bound_said; /* its claims were past the bound or the time (said once) */
	bool claims_error_said; /* a claim's read failed (said once, until all are read again) */
};

/*
 * Starts upgrades as O says: off, or on when a node name and the pod's service account
 * are there (auto: without them, off, said once); the agent looks every INTERVAL_S, and
 * CALLS run the installer and read its records. O and CALLS must outlive U. Returns 0, or
 * -1 with E set.
 */
_must_check_ int upgrader_start(struct upgrader *u, const struct agent_upgrade_opts *o,
				unsigned interval_s, const struct agent_calls *calls,
				struct err *e);
void upgrader_stop(struct upgrader *u);

/*
 * One look: CURRENT is the installed version (or NULL), READY and NOT_READY the agent's
 * judgement; HOLDERS(ARG) counts the processes other than the agent's with the driver open,
 * asked only while a version is pending. Returns true when the upgrade moved on and the
 * next look may come at once, not after the interval (so that an upgrade does not wait an
 * interval per state).
 */
bool upgrader_look(struct upgrader *u, const char *current, bool ready, const char *not_ready,
		   unsigned (*holders)(void *arg), void *arg);

/*
 * Keeps the slot held: renews its Lease when a third of its duration has passed since it
 * was last written (slots_renew_at), whatever the agent is doing between looks (the
 * installer's run, which the looks wait for) or within one (an eviction per pod). The
 * agent's loop calls it at each turn and wakes for it. Returns the milliseconds until it
 * is due again, or -1 when no slot is held.
 */
int upgrader_keep_slot(struct upgrader *u);

/* A child ended: true when it was the installer run it started (look again at once). */
bool upgrader_reaped(struct upgrader *u, pid_t pid, int status);

/* The upgrade's Prometheus series (docs/metrics.md, "The node agent"), malloc'd, or NULL. */
char *upgrader_render(const struct upgrader *u);
