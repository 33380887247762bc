/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent's word on the Node (docs/design.md, "The node agent"): the condition
 * KUBE_CONDITION_TYPE in its status, an Event at each change of its status or reason, the
 * startup taint taken off once a CUDA job can run, and the health taint while a fatal Xid
 * or a broken fabric holds.
 *
 * nodecond_decide is pure: what the agent last wrote and what it judged now go in; what to
 * write, and which taint to change, come out. The agent carries it out (nodecond_look)
 * through the API server, with the upgrader's client or one of its own made the same way,
 * each call within a look's deadline, a failure said once and tried again after a wait that
 * doubles from the look's interval up to the heartbeat, never holding the loop;
 * nodecond_stop writes the condition Unknown, last.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/health.h"
#include "agent/upgrade.h"
#include "agent/upgrader.h"
#include "kube/kube.h"

/* The condition's reasons besides the health judgement's (SPEC49). */
#define NODECOND_READY "CUDAReady"
#define NODECOND_UPGRADING "DriverUpgrading"
#define NODECOND_UPGRADE_FAILED "DriverUpgradeFailed"
#define NODECOND_STOPPED "AgentStopped"
#define NODECOND_MESSAGE_MAX 1024

/* The condition's reason for health reason R: "CUDAReady", "FatalXid", ... */
const char *nodecond_reason(enum health_reason r);

/* The agent's kinds of call to the API server, each with its own wait after a failure. */
enum nodecond_call { NODECOND_CONDITION, NODECOND_TAINTS, NODECOND_EVENT, NODECOND_N_CALLS };

/* What the agent last wrote (or found written) of its condition and taints. */
struct nodecond_memory {
	bool written; /* the condition below is on the Node */
	char status[16], reason[64], message[NODECOND_MESSAGE_MAX];
	uint64_t written_at;   /* when (monotonic seconds) */
	bool startup_checked;  /* since the node was last judged ready */
	uint64_t startup_at;   /* when (monotonic seconds) */
	bool health_known;     /* HEALTH_VALUE is what the Node carries of the health taint */
	char health_value[32]; /* the health taint's value on the Node, "" for none */
	/* After a failed call of each kind: not tried again before RETRY_AT; RETRY_S the wait. */
	uint64_t retry_at[NODECOND_N_CALLS];
	unsigned retry_s[NODECOND_N_CALLS];
};

/* What one look judged. */
struct nodecond_view {
	bool judged;		    /* the agent has judged the node once */
	enum health_reason health;  /* its judgement */
	const char *cause;	    /* why not ready, as /readyz says it */
	const char *version;	    /* the installed version, or "" */
	enum upgrade_state upgrade; /* the upgrade state the Node records (UPG_IDLE: none) */
	const char *upgrade_version, *upgrade_reason; /* the record's, or "" */
	uint64_t now;				      /* monotonic seconds */
};

/* What the agent's options ask. */
struct nodecond_policy {
	bool condition;	      /* write the condition (--node-condition) */
	unsigned heartbeat_s; /* at least this often (--condition-heartbeat) */
	unsigned look_s;      /* the looks' interval: the first wait after a failed call */
	bool startup_taint;   /* a startup taint to take off (--startup-taint) */
	bool health_taint;    /* a health taint to keep (--health-taint) */
};

enum nodecond_taint_op { NODECOND_TAINT_KEEP, NODECOND_TAINT_ADD, NODECOND_TAINT_REMOVE };

/* What one look does, in this order: the condition, the Event, the taints. */
struct nodecond_step {
	bool write; /* the condition below: it changed, or its heartbeat is due */
	char status[16], reason[64], message[NODECOND_MESSAGE_MAX];
	bool check_startup;	       /* take every startup taint off, if the Node has one */
	enum nodecond_taint_op health; /* the health taint */
	char health_value[32];	       /* its value when added */
};

/*
 * The step after M for V under P. The condition is True (CUDAReady) when V judged the node
 * ready, False with the upgrade's reason while it activates, validates or has failed, else
 * False with the health reason; it is written when its status, reason or message differ
 * from M's, or HEARTBEAT_S after M's write. The startup taint is looked for only while the
 * node is judged ready: when it is judged so, and every HEARTBEAT_S after (a taint put back
 * is taken off again), never else, whether the condition's write succeeds or not. The health
 * taint follows the health reason (XID, FABRIC: added with the condition's reason as value;
 * else removed) when it changes or is not known. Nothing before the first judgement, and no
 * call of a kind that failed before its RETRY_AT.
 */
struct nodecond_step nodecond_decide(const struct nodecond_memory *m, const struct nodecond_view *v,
				     const struct nodecond_policy *p);

/*
 * A call of kind WHICH failed at NOW: not tried again for a wait that starts at P's look_s
 * and doubles at each failure after, up to P's heartbeat_s.
 */
void nodecond_failed(struct nodecond_memory *m, enum nodecond_call which, uint64_t now,
		     const struct nodecond_policy *p);

/* A call of kind WHICH succeeded: the next failure waits P's look_s again. */
void nodecond_answered(struct nodecond_memory *m, enum nodecond_call which);

/*
 * The Event of a write of condition STATUS/REASON over what the Node had (OLD_STATUS and
 * OLD_REASON, "" for none): its reason, and its type into *TYPE, when the status or the
 * reason changed; NULL when not.
 */
const char *nodecond_event(const char *old_status, const char *old_reason, const char *status,
			   const char *reason, const char **type);

/* The agent's side: the client, what it wrote, and what it said of failures. */
struct nodecond {
	const struct agent_condition_opts *o;
	const char *node; /* the Node's name */
	bool on;	  /* a client, a node name, and something to do */
	struct kube *k;	  /* the upgrader's, or OWN */
	struct kube *own;
	struct kube_config kc; /* OWN's */
	const char *ns;	       /* where Events go */
	struct nodecond_policy policy;
	char health_key[256], health_effect[32];
	struct nodecond_memory m;
	bool event_due;		   /* the last change's Event not posted yet */
	char event_old_status[16]; /* what it changed from */
	char event_old_reason[129];
	char error[NODECOND_N_CALLS][256]; /* the last error said of each kind of call */
	uint64_t writes, failures, conflicts;
};

/*
 * Starts the condition and taints as O says, for UP's node (UP's client when it has one,
 * else one made as UP makes its own: in-cluster configuration, --node-name; without them,
 * off, said once), the agent looking every LOOK_S. O and UP outlive C.
 */
void nodecond_start(struct nodecond *c, const struct agent_condition_opts *o,
		    const struct agent_upgrade_opts *uo, const struct upgrader *up,
		    unsigned look_s);

/* One look's step for V, carried out. */
void nodecond_look(struct nodecond *c, const struct nodecond_view *v);

/* The agent stops: the condition Unknown (AgentStopped) and its Event; the client freed. */
void nodecond_stop(struct nodecond *c, const char *why);

/* The condition's Prometheus series (docs/metrics.md, "The node agent"), malloc'd, or NULL. */
char *nodecond_render(const struct nodecond *c);
