/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A node's driver upgrade, carried out by the node agent (docs/design.md, "Upgrades that
 * finish by themselves"): when the installer left a version pending on a busy node
 * (--when-busy defer), the agent takes a slot of the fleet-wide limit, cordons the node,
 * waits for the GPU pods to end (or, past the deadline and by policy, evicts them through
 * the Eviction API), activates the pending version in place, validates it, uncordons the
 * node if it cordoned it, and gives the slot back. The controls NVIDIA's upgrade policy has
 * (NVIDIA/k8s-operator-libs at 11e747a, api/upgrade/v1alpha1/upgrade_spec.go) come in
 * where its controller has them: a budget of unavailable nodes before the slot, pods
 * waited for before the GPU pods, which GPU pods an eviction may move, and a drain of the
 * node's other pods before the activation.
 *
 * Pure: the state the node records (its annotation), what the agent observes now, and the
 * policy go in; the next state and the one action that leads there come out. The agent
 * carries out the action (agent/upgrader.c) and records the state after it, so that an agent,
 * installer or node restarted at any step decides again from what is recorded and what is
 * seen: an action already done is seen done and not done twice.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "agent/claims.h"
#include "agent/labelsel.h"
#include "util/err.h"

/* The label that shows the state, and the annotation that records it whole. */
#define UPGRADE_LABEL "nvidia.com/gpu.driver-installer.upgrade-state"
#define UPGRADE_ANNOTATION "nvidia.com/gpu.driver-installer.upgrade"

enum upgrade_state {
	UPG_IDLE,	/* nothing pending: no label */
	UPG_PENDING,	/* a version is pending: waiting for a slot */
	UPG_CORDONED,	/* a slot taken, the node cordoned (or left schedulable, by policy) */
	UPG_WAITING,	/* waiting for the GPU pods and the driver's other users to end */
	UPG_EVICTING,	/* past the deadline: the GPU pods asked to leave, budgets honoured */
	UPG_DRAINING,	/* --upgrade-drain: the node's other pods asked to leave, likewise */
	UPG_ACTIVATING, /* the pending version being switched in */
	UPG_VALIDATING, /* switched in: waiting for a CUDA job to be able to run */
	UPG_DONE,	/* serving the new version; uncordoned, the slot given back */
	UPG_FAILED,	/* rolled back, left cordoned, the reason on the node; stopped, the
			 * slot kept: a fleet's rollout halts after the limit's worth of failures */
	UPG_N_STATES,
};

/* The state's name, the label's value: "pending", "cordoned", ... ("" for UPG_IDLE). */
const char *upgrade_state_name(enum upgrade_state s);

enum upgrade_deadline_policy {
	UPG_DEADLINE_WAIT,  /* past the deadline, keep waiting (and say so) */
	UPG_DEADLINE_EVICT, /* past the deadline, evict the GPU pods */
};

struct upgrade_policy {
	bool cordon;	     /* cordon the node before waiting */
	unsigned deadline_s; /* how long the GPU pods may run on before the deadline policy */
	enum upgrade_deadline_policy on_deadline;
	unsigned validate_s; /* how long the new version may take to be judged ready */
	/* NVIDIA's waitForCompletion, drain (k8s-operator-libs upgrade_spec.go) */
	unsigned wait_timeout_s;  /* how long the --upgrade-wait-for pods hold it; 0: no end */
	bool drain;		  /* drain the node's other pods before activating */
	unsigned drain_timeout_s; /* past it with pods left, the upgrade fails; 0: no end */
};

/* Which pods the options name and let be moved (struct agent_upgrade_opts). */
struct upgrade_pod_opts {
	const struct labelsel *wait_for; /* the pods waited for first, or NULL: none */
	bool evict_force, evict_emptydir;
	bool drain;
	const struct labelsel *drain_select; /* NULL: every pod */
	bool drain_force, drain_emptydir;
	const struct claims *claims; /* the DRA claims the look read (agent/claims.h), or NULL */
};

/* What the node's pods are to the upgrade (upgrade_pods_count). */
struct upgrade_pods {
	unsigned gpu, evictable; /* as upgrade_gpu_pods counts them */
	char blocked[200];	 /* the first evictable GPU pod the options keep, and why; "" */
	unsigned wait_for;	 /* the pods matching --upgrade-wait-for, Running or Pending */
	char wait_for_first[160];
	unsigned drain_left;	 /* the pods the drain moves, still there (leaving or not) */
	unsigned drain_movable;	 /* of them, those to ask (not yet leaving) */
	char drain_blocked[200]; /* the first the drain's options keep, and why; "" */
	char drain_first[160];
};

/* What the node records (its annotation, UPGRADE_ANNOTATION, as JSON). */
struct upgrade_record {
	enum upgrade_state state;
	char version[64];   /* the version being brought in */
	char from[64];	    /* the version that served when it began */
	bool cordoned;	    /* the agent cordoned the node (and only then uncordons it) */
	uint64_t since;	    /* when the state was entered (Unix seconds) */
	uint64_t wait_from; /* when the waiting began, for the deadline */
	char reason[256];   /* why it failed, or what it waits for */
	bool drained;	    /* the drain found nothing left to move */
	unsigned slot;	    /* the slot held + 1, 0 for none: the caller's, kept for a restart */
	enum upgrade_state evented; /* the state whose Event was posted (UPG_IDLE: none yet) */
};

/* What the agent sees now. */
struct upgrade_view {
	const char *pending;   /* the pending version (.pending.json), or NULL */
	const char *current;   /* the installed version, or NULL */
	bool slot;	       /* the agent holds a live slot */
	bool unschedulable;    /* the Node's spec.unschedulable */
	unsigned gpu_pods;     /* the node's pods that hold GPUs (upgrade_gpu_pods) */
	unsigned evictable;    /* of them, those an eviction can move (upgrade_pod_holds_gpu) */
	unsigned holders;      /* other processes with the driver open (the kernel's view) */
	bool ready;	       /* the agent's last judgement: a CUDA job can run */
	const char *not_ready; /* and why not, or NULL */
	const char
		*failed; /* the installer's report of this version failing (its cause), or NULL */
	uint64_t now;
	const struct upgrade_pods *pods; /* the options' view of the pods, or NULL: none */
	unsigned max_unavailable;	 /* --upgrade-max-unavailable as a count; 0: none */
	unsigned unavailable;		 /* the DaemonSet's other nodes unavailable now */
	const char *unavailable_names;	 /* the first of them, for the reason */
};

enum upgrade_action {
	UPG_ACT_NONE,	   /* record the next state (if it differs), nothing else */
	UPG_ACT_TAKE_SLOT, /* try to take a slot; the next look sees whether it was */
	UPG_ACT_CORDON,	   /* set spec.unschedulable */
	UPG_ACT_EVICT,	   /* ask every evictable GPU pod to leave */
	UPG_ACT_DRAIN,	   /* ask every pod the drain moves to leave (upgrade_pod_drains) */
	UPG_ACT_ACTIVATE,  /* switch the pending version in (the installer, idle check and all) */
	UPG_ACT_UNCORDON,  /* clear spec.unschedulable (only when the record says we set it) */
	UPG_ACT_RELEASE,   /* give the slot back */
	UPG_ACT_ROLLBACK,  /* install the version that served before (from the node's cache) */
};

const char *upgrade_action_name(enum upgrade_action a);

struct upgrade_step {
	struct upgrade_record next; /* what to record once the action is done */
	enum upgrade_action action;
	bool evict_blocked; /* past the deadline, a GPU pod the options keep blocks the eviction */
};

/*
 * The next step from record R (what the node recorded; all zero when nothing), view V and
 * policy P. The caller carries out the action and, when it succeeded, records NEXT; when it
 * failed, it records nothing and decides again at its next look.
 */
struct upgrade_step upgrade_decide(const struct upgrade_record *r, const struct upgrade_view *v,
				   const struct upgrade_policy *p);

/*
 * The pods of a PodList's ITEMS that hold GPUs: not finished (phase neither Succeeded nor
 * Failed), with a container or a running init container that asks for an NVIDIA GPU
 * resource (nvidia.com/gpu, its renamed shares nvidia.com/gpu.*, MIG devices
 * nvidia.com/mig-*) in its limits or requests, or that uses a DRA claim CLAIMS has as a GPU
 * claim (claims_pod_holds; CLAIMS NULL: none). *EVICTABLE counts those an eviction can move,
 * as kubectl drain judges: not a DaemonSet's (evicting it only brings it back), not a static
 * pod's mirror (the annotation kubernetes.io/config.mirror, or a Node as its owner), not one
 * already leaving (a deletionTimestamp: waited for, not asked again). The first NAMES_SIZE
 * bytes' worth of "namespace/name" go into NAMES, comma-separated. Returns the count.
 */
unsigned upgrade_gpu_pods(json_object *items, const struct claims *claims, unsigned *evictable,
			  char *names, size_t names_size);

/*
 * Whether upgrade_decide reads the view's GPU pods (gpu_pods, evictable, pods) in state S:
 * where the upgrade waits for them, evicts or drains them (cordoned, waiting, evicting,
 * draining, and activating, which waits again when a user came back). Elsewhere the agent
 * need not read the pods' DRA claims.
 */
bool upgrade_state_counts_pods(enum upgrade_state s);

/* Whether POD has finished (status.phase Succeeded or Failed): it holds nothing. */
bool upgrade_pod_finished(json_object *pod);

/* Whether POD holds a GPU as upgrade_gpu_pods counts it, and whether it can be evicted. */
bool upgrade_pod_holds_gpu(json_object *pod, const struct claims *claims, bool *evictable);

/*
 * What ITEMS (a PodList's items) are to an upgrade under options O into *RET: the GPU pods
 * and those an eviction may move (upgrade_gpu_pods), the first the options keep
 * (upgrade_pod_kept), the pods O->wait_for matches that are Running or Pending (as
 * k8s-operator-libs' pod_manager.go IsPodRunningOrPending, lines 371-391), and with a drain
 * the pods it moves (upgrade_pod_drains), asked or leaving, and the first it may not.
 */
void upgrade_pods_count(json_object *items, const struct upgrade_pod_opts *o,
			struct upgrade_pods *ret);

/*
 * Why options FORCE and EMPTYDIR keep an eviction or a drain from moving POD, as kubectl
 * drain's filters judge (kubernetes/kubectl pkg/drain/filters.go, localStorageFilter then
 * unreplicatedFilter): 'e' for an emptyDir volume (its data goes with the pod) without
 * EMPTYDIR, 'f' for no controller (nothing makes the pod again) without FORCE; 0: moved.
 */
char upgrade_pod_kept(json_object *pod, bool force, bool emptydir);

/*
 * Whether a drain under O asks POD to leave now: not finished, not a DaemonSet's or a
 * static pod's mirror (kubectl drain's daemonSetFilter and mirrorPodFilter), not already
 * leaving, matching O->drain_select, and not kept by the drain's options.
 */
bool upgrade_pod_drains(json_object *pod, const struct upgrade_pod_opts *o);

/*
 * Nodes NODES (kube_daemonset_nodes' answer) unavailable to --upgrade-max-unavailable, this
 * node (SELF) left out: cordoned or not Ready, as k8s-operator-libs' common_manager.go
 * GetCurrentUnavailableNodes (lines 145-165) counts them, or holding a slot of the upgrade
 * limit and not yet cordoned (its record), as GetUpgradesAvailable adds those about to be
 * (lines 761-764). The first NAMES_SIZE bytes' worth of names go into NAMES.
 */
unsigned upgrade_unavailable(json_object *nodes, const char *self, char *names, size_t names_size);

/*
 * Whether record R holds slot SLOT (0-based) whatever its Lease says: the record names the
 * slot and the node is in an upgrade's disruptive part, from cordoned to validating, or
 * failed (which keeps its slot), or still under the agent's cordon. Such a node counts
 * against the fleet's limit until its agent finishes or a person removes the record, even
 * when its agent is down and its Lease has lapsed.
 */
bool upgrade_record_claims(const struct upgrade_record *r, unsigned slot);

/* The same of the record on NODE (a core/v1 Node); a node without one, or with one that
 * does not parse, claims nothing. */
bool upgrade_node_claims(json_object *node, unsigned slot);

/*
 * Whether R's state still lacks its Event: recorded, and its Event not yet posted (an agent
 * killed between the two, or an API server that refused it). The idle record has none to
 * post: it is not on the node.
 */
bool upgrade_event_due(const struct upgrade_record *r);

/*
 * The record from the annotation's value S (NULL: none, the idle record). A record without
 * "event" (written by an agent that posted each Event right after recording its state) is
 * taken as having posted its state's. 0, or -1 with E.
 */
int upgrade_record_parse(const char *s, struct upgrade_record *r, struct err *e);

/* The record as the annotation's value (the caller frees it), or NULL without memory. */
char *upgrade_record_format(const struct upgrade_record *r);

/*
 * The JSON merge patch that records R on the Node: the label and the annotation (both
 * removed for UPG_IDLE), and spec.unschedulable when UNSCHEDULABLE is 0 or 1 (-1: as it
 * is). NULL without memory.
 */
json_object *upgrade_node_patch(const struct upgrade_record *r, int unschedulable);
