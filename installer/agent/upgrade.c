// SPDX-License-Identifier: Apache-2.0
/*
 * agent/upgrade: a node's driver upgrade as states, decided from what is recorded and what
 * is seen (see agent/upgrade.h), the GPU pods of a PodList, and the record's JSON.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/upgrade.h"
#include "util/jsonc.h"
#include "util/str.h"

/* The kubelet's mark on a static pod's mirror (k8s.io/api core/v1 MirrorPodAnnotationKey). */
#define MIRROR_POD_ANNOTATION "kubernetes.io/config.mirror"

static const char *const state_names[UPG_N_STATES] = {
	[UPG_IDLE] = "",
	[UPG_PENDING] = "pending",
	[UPG_CORDONED] = "cordoned",
	[UPG_WAITING] = "waiting",
	[UPG_EVICTING] = "evicting",
	[UPG_DRAINING] = "draining",
	[UPG_ACTIVATING] = "activating",
	[UPG_VALIDATING] = "validating",
	[UPG_DONE] = "done",
	[UPG_FAILED] = "failed",
};

const char *upgrade_state_name(enum upgrade_state s)
{
	return (unsigned)s < UPG_N_STATES ? state_names[s] : "?";
}

const char *upgrade_action_name(enum upgrade_action a)
{
	static const char *const names[] = {
		[UPG_ACT_NONE] = "none",	 [UPG_ACT_TAKE_SLOT] = "take-slot",
		[UPG_ACT_CORDON] = "cordon",	 [UPG_ACT_EVICT] = "evict",
		[UPG_ACT_ACTIVATE] = "activate", [UPG_ACT_UNCORDON] = "uncordon",
		[UPG_ACT_RELEASE] = "release",	 [UPG_ACT_ROLLBACK] = "rollback",
		[UPG_ACT_DRAIN] = "drain",
	};

	return (unsigned)a < ARRAY_SIZE(names) ? names[a] : "?";
}

/* ---- the decision -------------------------------------------------------------------- */

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void enter(struct upgrade_step *s, enum upgrade_state state, const struct upgrade_view *v)
{
	if (s->next.state != state)
		s->next.since = v->now;
	s->next.state = state;
}

/* A new upgrade to the pending version, from what serves now. */
static void begin(struct upgrade_step *s, const struct upgrade_view *v)
{
	bool cordoned = s->next.cordoned;
	unsigned slot = s->next.slot;

	memset(&s->next, 0, sizeof(s->next));
	s->next.slot = slot;
	s->next.state = UPG_PENDING;
	s->next.since = v->now;
	s->next.cordoned = cordoned; /* a failed upgrade's cordon is the new one's to lift */
	snprintf(s->next.version, sizeof(s->next.version), "%s", v->pending);
	snprintf(s->next.from, sizeof(s->next.from), "%s", v->current ? v->current : "");
	snprintf(s->next.reason, sizeof(s->next.reason), "waiting for a slot of the fleet's limit");
}

/* The end of an upgrade, one action at a time: the cordon lifted, the slot given back. */
static void wind_down(struct upgrade_step *s, const struct upgrade_view *v,
		      enum upgrade_state final)
{
	if (s->next.cordoned) {
		s->action = UPG_ACT_UNCORDON;
		s->next.cordoned = false;
		return;
	}
	if (v->slot) {
		s->action = UPG_ACT_RELEASE;
		return;
	}
	enter(s, final, v);
	if (final == UPG_IDLE)
		memset(&s->next, 0, sizeof(s->next));
	else
		s->next.reason[0] = '\0';
}

static void fail(struct upgrade_step *s, const struct upgrade_view *v, const char *why)
{
	enter(s, UPG_FAILED, v);
	snprintf(s->next.reason, sizeof(s->next.reason), "%s", why);
}

/* What the GPU pods the options keep mean past the deadline (the eviction is all or
 * nothing, as kubectl drain's: GetPodsForDeletion refuses the lot for one pod kept). */
static bool evict_blocked(struct upgrade_step *s, const struct upgrade_view *v,
			  const struct upgrade_policy *p)
{
	if (!v->pods || !v->pods->blocked[0])
		return false;
	if (s->next.state != UPG_EVICTING)
		enter(s, UPG_WAITING, v);
	str_fmt_cut(s->next.reason, sizeof(s->next.reason),
		    "past the %us deadline, no GPU pod evicted: %s", p->deadline_s,
		    v->pods->blocked);
	s->evict_blocked = true;
	return true;
}

/* The pods --upgrade-wait-for names hold the upgrade, until they end or its timeout. */
static bool waiting_for_selected(struct upgrade_step *s, const struct upgrade_view *v,
				 const struct upgrade_policy *p)
{
	if (!v->pods || v->pods->wait_for == 0)
		return false;
	/* Past the timeout, as pod_manager.go HandleTimeoutOnPodCompletions (lines 354-358)
	 * moves the node on to pod deletion: no longer waited for. */
	if (p->wait_timeout_s && v->now >= s->next.wait_from + p->wait_timeout_s)
		return false;
	enter(s, UPG_WAITING, v);
	str_fmt_cut(s->next.reason, sizeof(s->next.reason),
		    "waiting for %u pod(s) matching --upgrade-wait-for (%s)%s", v->pods->wait_for,
		    v->pods->wait_for_first, p->wait_timeout_s ? ", until its timeout" : "");
	return true;
}

static void activate(struct upgrade_step *s, const struct upgrade_view *v)
{
	enter(s, UPG_ACTIVATING, v);
	s->next.reason[0] = '\0';
	s->action = UPG_ACT_ACTIVATE;
}

/*
 * The drain (NVIDIA's drain.enable, drain_manager.go lines 76-132): the pods it moves asked
 * to leave, budgets honoured; one it may not move fails the upgrade at once, as
 * kubectl drain refuses the node (the drain's error, line 121-127, is UpgradeStateFailed),
 * and so does its timeout with pods left.
 */
static void drain(struct upgrade_step *s, const struct upgrade_view *v,
		  const struct upgrade_policy *p)
{
	const struct upgrade_pods *pods = v->pods;
	char why[sizeof(s->next.reason)];

	if (s->next.state != UPG_DRAINING)
		enter(s, UPG_DRAINING, v);
	if (pods && pods->drain_blocked[0]) {
		str_fmt_cut(why, sizeof(why), "the drain refused: %s", pods->drain_blocked);
		fail(s, v, why);
		return;
	}
	if (!pods || pods->drain_left == 0) {
		s->next.drained = true;
		if (v->holders == 0) {
			activate(s, v);
		} else {
			enter(s, UPG_WAITING, v);
			str_fmt_cut(s->next.reason, sizeof(s->next.reason),
				    "drained; %u process(es) outside pods hold the GPUs",
				    v->holders);
		}
		return;
	}
	if (p->drain_timeout_s && v->now >= s->next.since + p->drain_timeout_s) {
		str_fmt_cut(
			why, sizeof(why),
			"the drain did not end within %us (--upgrade-drain-timeout): %u pod(s) left, %s first",
			p->drain_timeout_s, pods->drain_left, pods->drain_first);
		fail(s, v, why);
		return;
	}
	str_fmt_cut(s->next.reason, sizeof(s->next.reason), "draining: %u pod(s) left, %s first",
		    pods->drain_left, pods->drain_first);
	if (pods->drain_movable > 0)
		s->action = UPG_ACT_DRAIN;
}

/* Slot held, node cordoned as the policy says: wait, evict, drain, or activate. */
static void wait_or_activate(struct upgrade_step *s, const struct upgrade_view *v,
			     const struct upgrade_policy *p)
{
	char *why = s->next.reason;
	size_t size = sizeof(s->next.reason);
	bool late;

	if (s->next.wait_from == 0)
		s->next.wait_from = v->now;
	if (waiting_for_selected(s, v, p))
		return;
	if (v->gpu_pods == 0 && p->drain && !s->next.drained) {
		drain(s, v, p);
		return;
	}
	if (v->gpu_pods == 0 && v->holders == 0) {
		activate(s, v);
		return;
	}
	late = v->now >= s->next.wait_from + p->deadline_s;
	if (late && p->on_deadline == UPG_DEADLINE_EVICT && v->evictable > 0) {
		if (evict_blocked(s, v, p))
			return;
		enter(s, UPG_EVICTING, v);
		str_fmt_cut(why, size, "past the %us deadline: evicting %u GPU pod(s)",
			    p->deadline_s, v->evictable);
		s->action = UPG_ACT_EVICT;
		return;
	}
	if (s->next.state != UPG_EVICTING)
		enter(s, UPG_WAITING, v);
	if (late && v->gpu_pods > v->evictable && p->on_deadline == UPG_DEADLINE_EVICT)
		str_fmt_cut(
			why, size,
			"past the deadline: %u GPU pod(s) no eviction moves (DaemonSets', static pods', or already leaving) and %u other process(es) hold the GPUs",
			v->gpu_pods - v->evictable, v->holders);
	else if (late && p->on_deadline == UPG_DEADLINE_EVICT)
		str_fmt_cut(why, size,
			    "past the deadline: %u process(es) outside pods hold the GPUs",
			    v->holders);
	else
		str_fmt_cut(why, size, "%s%u GPU pod(s) and %u process(es) hold the GPUs",
			    late ? "past the deadline, waiting as the policy says: " : "",
			    v->gpu_pods, v->holders);
}

/* Switched in: a CUDA job can run (done), or not in time (failed, and back to FROM). */
static void validate(struct upgrade_step *s, const struct upgrade_record *r,
		     const struct upgrade_view *v, const struct upgrade_policy *p)
{
	char why[sizeof(r->reason)];

	if (!same(v->current, r->version)) {
		str_fmt_cut(why, sizeof(why), "%s no longer installed while validating (%s is)",
			    r->version, v->current ? v->current : "nothing");
		fail(s, v, why);
	} else if (v->ready) {
		wind_down(s, v, UPG_DONE);
	} else if (v->now >= r->since + p->validate_s) {
		str_fmt_cut(why, sizeof(why), "%s not ready within %us: %s%s%s", r->version,
			    p->validate_s, v->not_ready ? v->not_ready : "not judged",
			    r->from[0] ? "; rolled back to " : "", r->from);
		fail(s, v, why);
		if (r->from[0])
			s->action = UPG_ACT_ROLLBACK;
	}
}

/* Pending without a slot: one asked for, unless --upgrade-max-unavailable's budget is spent
 * (GetUpgradesAvailable, common_manager.go lines 761-770: none while the nodes unavailable
 * reach it). */
static void take_slot(struct upgrade_step *s, const struct upgrade_view *v)
{
	if (v->max_unavailable && v->unavailable >= v->max_unavailable) {
		str_fmt_cut(
			s->next.reason, sizeof(s->next.reason),
			"waiting: %u of the DaemonSet's other nodes unavailable (%s), --upgrade-max-unavailable allows %u",
			v->unavailable, v->unavailable_names ? v->unavailable_names : "",
			v->max_unavailable);
		return;
	}
	snprintf(s->next.reason, sizeof(s->next.reason), "waiting for a slot of the fleet's limit");
	s->action = UPG_ACT_TAKE_SLOT;
}

struct upgrade_step upgrade_decide(const struct upgrade_record *r, const struct upgrade_view *v,
				   const struct upgrade_policy *p)
{
	struct upgrade_step s = {.next = *r, .action = UPG_ACT_NONE};
	char why[sizeof(r->reason)];

	switch (r->state) {
	case UPG_IDLE:
	case UPG_DONE:
		if (v->pending)
			begin(&s, v);
		else if (r->cordoned || v->slot)
			wind_down(&s, v, r->state);
		break;
	case UPG_FAILED:
		/* Stopped: a person clears the record, or a rollout brings another version. */
		if (v->pending && !same(v->pending, r->version))
			begin(&s, v);
		break;
	case UPG_PENDING:
		if (!v->pending) {
			/* The rollout went back, or the version came in another way (a restart). */
			wind_down(&s, v, same(v->current, r->version) ? UPG_DONE : UPG_IDLE);
		} else if (!same(v->pending, r->version)) {
			begin(&s, v); /* a newer rollout replaced the version */
		} else if (!v->slot) {
			take_slot(&s, v);
		} else if (p->cordon && !v->unschedulable) {
			enter(&s, UPG_CORDONED, v);
			s.next.cordoned = true;
			s.next.reason[0] = '\0';
			s.action = UPG_ACT_CORDON;
		} else {
			enter(&s, UPG_CORDONED, v);
			s.next.reason[0] = '\0';
		}
		break;
	case UPG_CORDONED:
	case UPG_WAITING:
	case UPG_EVICTING:
	case UPG_DRAINING:
		if (!v->pending)
			wind_down(&s, v, same(v->current, r->version) ? UPG_DONE : UPG_IDLE);
		else if (!same(v->pending, r->version))
			begin(&s, v);
		else if (!v->slot)
			s.action = UPG_ACT_TAKE_SLOT; /* its lease lapsed: again, before anything */
		else
			wait_or_activate(&s, v, p);
		break;
	case UPG_ACTIVATING:
		if (same(v->current, r->version) && !v->pending) {
			enter(&s, UPG_VALIDATING, v);
		} else if (!v->pending) {
			/* The installer withdrew it: what served before serves (its rollback). */
			str_fmt_cut(why, sizeof(why), "activating %s failed; %s serves: %s",
				    r->version, v->current ? v->current : "nothing",
				    v->failed ? v->failed : "see the installer's log");
			fail(&s, v, why);
		} else if (!same(v->pending, r->version)) {
			begin(&s, v);
		} else {
			/* Not switched yet (a restart, or a user came back): as when waiting. */
			wait_or_activate(&s, v, p);
		}
		break;
	case UPG_VALIDATING:
		validate(&s, r, v, p);
		break;
	case UPG_N_STATES:
		break;
	}
	return s;
}

/* ---- GPU pods ------------------------------------------------------------------------ */

/* An NVIDIA GPU resource the device plugins advertise. */
static bool gpu_resource(const char *name)
{
	return strcmp(name, "nvidia.com/gpu") == 0 || strncmp(name, "nvidia.com/gpu.", 15) == 0 ||
	       strncmp(name, "nvidia.com/mig-", 15) == 0;
}

/* A quantity above zero: an extended resource's is a whole number ("1"; "0" asks none). */
static bool positive(json_object *q)
{
	const char *s = json_object_is_type(q, json_type_string) ? json_object_get_string(q) : NULL;

	if (!s)
		return json_object_is_type(q, json_type_int) && json_object_get_int64(q) > 0;
	return strpbrk(s, "123456789") != NULL;
}

static bool asks_gpu(json_object *container)
{
	json_object *res = jsonc_get(container, "resources");

	for (const char *const *k = (const char *const[]){"limits", "requests", NULL}; *k; k++) {
		json_object *m = jsonc_get(res, *k);

		if (!m || !json_object_is_type(m, json_type_object))
			continue;
		json_object_object_foreach(m, name, q)
		{
			if (gpu_resource(name) && positive(q))
				return true;
		}
	}
	return false;
}

static bool any_asks_gpu(json_object *list, bool sidecars_only)
{
	size_t n = jsonc_array_len(list);

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);

		/* A sidecar (an init container restarted Always) runs beside the others. */
		if (sidecars_only && !same(jsonc_str(c, "restartPolicy"), "Always"))
			continue;
		if (asks_gpu(c))
			return true;
	}
	return false;
}

/* A DaemonSet's pod or a static pod's mirror: neither is moved by an eviction. */
static bool daemon_or_mirror(json_object *meta)
{
	json_object *owners = jsonc_get(meta, "ownerReferences");
	size_t n = jsonc_array_len(owners);

	if (jsonc_get(jsonc_get(meta, "annotations"), MIRROR_POD_ANNOTATION))
		return true;
	for (size_t i = 0; i < n; i++) {
		const char *kind = jsonc_str(json_object_array_get_idx(owners, i), "kind");

		if (same(kind, "DaemonSet") || same(kind, "Node"))
			return true;
	}
	return false;
}

/*
 * Whether an eviction can move POD, as kubectl drain judges (kubernetes/kubectl
 * pkg/drain/filters.go): not a DaemonSet's (daemonSetFilter: its controller brings it back
 * at once), not a static pod's mirror (mirrorPodFilter: the annotation
 * kubernetes.io/config.mirror; the kubelet also makes the Node its owner, and deleting the
 * mirror leaves the static pod running), and not already leaving (a deletionTimestamp: the
 * eviction was accepted, or the pod deleted; asking again changes nothing, the pod is
 * waited for).
 */
static bool can_evict(json_object *meta)
{
	return !jsonc_get(meta, "deletionTimestamp") && !daemon_or_mirror(meta);
}

bool upgrade_state_counts_pods(enum upgrade_state s)
{
	switch (s) {
	case UPG_CORDONED:
	case UPG_WAITING:
	case UPG_EVICTING:
	case UPG_DRAINING:
	case UPG_ACTIVATING:
		return true;
	case UPG_IDLE:
	case UPG_PENDING:
	case UPG_VALIDATING:
	case UPG_DONE:
	case UPG_FAILED:
	case UPG_N_STATES:
		break;
	}
	return false;
}

bool upgrade_pod_finished(json_object *pod)
{
	const char *phase = jsonc_str(jsonc_get(pod, "status"), "phase");

	return same(phase, "Succeeded") || same(phase, "Failed");
}

bool upgrade_pod_holds_gpu(json_object *pod, const struct claims *claims, bool *evictable)
{
	json_object *spec = jsonc_get(pod, "spec");
	const char *phase = jsonc_str(jsonc_get(pod, "status"), "phase");

	*evictable = true;
	if (upgrade_pod_finished(pod))
		return false;
	/* Init containers run one by one before the others: while the pod is Pending. */
	if (!any_asks_gpu(jsonc_get(spec, "containers"), false) &&
	    !any_asks_gpu(jsonc_get(spec, "initContainers"), !same(phase, "Pending") && phase) &&
	    !claims_pod_holds(claims, pod))
		return false;
	*evictable = can_evict(jsonc_get(pod, "metadata"));
	return true;
}

unsigned upgrade_gpu_pods(json_object *items, const struct claims *claims, unsigned *evictable,
			  char *names, size_t names_size)
{
	size_t n = jsonc_array_len(items);
	unsigned count = 0;
	size_t used = 0;
	bool full = names_size == 0;

	*evictable = 0;
	if (names_size)
		names[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		json_object *pod = json_object_array_get_idx(items, i),
			    *meta = jsonc_get(pod, "metadata");
		const char *ns = jsonc_str(meta, "namespace"), *name = jsonc_str(meta, "name");
		bool ev;
		int w;

		if (!upgrade_pod_holds_gpu(pod, claims, &ev))
			continue;
		count++;
		*evictable += ev;
		/* Whole names only: the first that does not fit ends the list. */
		if (full)
			continue;
		w = snprintf(names + used, names_size - used, "%s%s/%s", used ? ", " : "",
			     ns ? ns : "?", name ? name : "?");
		if (w < 0 || (size_t)w >= names_size - used) {
			names[used] = '\0';
			full = true;
		} else {
			used += (size_t)w;
		}
	}
	return count;
}

/* ---- what the options make of the pods ------------------------------------------------ */

static bool has_emptydir(json_object *pod)
{
	json_object *vols = jsonc_get(jsonc_get(pod, "spec"), "volumes");
	size_t n = jsonc_array_len(vols);

	for (size_t i = 0; i < n; i++)
		if (jsonc_get(json_object_array_get_idx(vols, i), "emptyDir"))
			return true;
	return false;
}

/* metav1.GetControllerOf: an owner reference with controller true. */
static bool has_controller(json_object *meta)
{
	json_object *owners = jsonc_get(meta, "ownerReferences");
	size_t n = jsonc_array_len(owners);

	for (size_t i = 0; i < n; i++) {
		json_object *c = jsonc_get(json_object_array_get_idx(owners, i), "controller");

		if (c && json_object_get_boolean(c))
			return true;
	}
	return false;
}

char upgrade_pod_kept(json_object *pod, bool force, bool emptydir)
{
	if (!emptydir && has_emptydir(pod))
		return 'e';
	if (!force && !has_controller(jsonc_get(pod, "metadata")))
		return 'f';
	return 0;
}

/* "NS/NAME" of POD into BUF. */
static void pod_name(json_object *pod, char *buf, size_t size)
{
	json_object *meta = jsonc_get(pod, "metadata");
	const char *ns = jsonc_str(meta, "namespace"), *name = jsonc_str(meta, "name");

	str_fmt_cut(buf, size, "%s/%s", ns ? ns : "?", name ? name : "?");
}

/* Why POD is kept (KEPT, from upgrade_pod_kept) and the option that would move it. */
static void kept_why(json_object *pod, char kept, const char *opt, char *buf, size_t size)
{
	char name[160];

	pod_name(pod, name, sizeof(name));
	if (kept == 'e')
		str_fmt_cut(
			buf, size,
			"%s has an emptyDir volume, whose data is lost when it leaves: --upgrade-%s-emptydir=yes moves it",
			name, opt);
	else
		str_fmt_cut(
			buf, size,
			"%s has no controller, so nothing makes it again: --upgrade-%s-force=yes moves it",
			name, opt);
}

/* Whether the drain under O moves POD (leaving or not); *KEPT as upgrade_pod_kept. */
static bool drain_takes(json_object *pod, const struct upgrade_pod_opts *o, char *kept)
{
	json_object *meta = jsonc_get(pod, "metadata");

	*kept = 0;
	if (!o->drain || upgrade_pod_finished(pod) || daemon_or_mirror(meta))
		return false;
	if (o->drain_select && !labelsel_matches(o->drain_select, jsonc_get(meta, "labels")))
		return false;
	if (!jsonc_get(meta, "deletionTimestamp"))
		*kept = upgrade_pod_kept(pod, o->drain_force, o->drain_emptydir);
	return true;
}

bool upgrade_pod_drains(json_object *pod, const struct upgrade_pod_opts *o)
{
	char kept;

	return drain_takes(pod, o, &kept) && !kept &&
	       !jsonc_get(jsonc_get(pod, "metadata"), "deletionTimestamp");
}

static void count_one(json_object *pod, const struct upgrade_pod_opts *o, struct upgrade_pods *r)
{
	json_object *meta = jsonc_get(pod, "metadata");
	const char *phase = jsonc_str(jsonc_get(pod, "status"), "phase");
	bool ev;
	char kept;

	if (upgrade_pod_holds_gpu(pod, o->claims, &ev)) {
		r->gpu++;
		r->evictable += ev;
		kept = ev ? upgrade_pod_kept(pod, o->evict_force, o->evict_emptydir) : 0;
		if (kept && !r->blocked[0])
			kept_why(pod, kept, "evict", r->blocked, sizeof(r->blocked));
	}
	if (o->wait_for && (same(phase, "Running") || same(phase, "Pending")) &&
	    labelsel_matches(o->wait_for, jsonc_get(meta, "labels")) && r->wait_for++ == 0)
		pod_name(pod, r->wait_for_first, sizeof(r->wait_for_first));
	if (!drain_takes(pod, o, &kept))
		return;
	if (kept) {
		if (!r->drain_blocked[0])
			kept_why(pod, kept, "drain", r->drain_blocked, sizeof(r->drain_blocked));
		return;
	}
	if (r->drain_left++ == 0)
		pod_name(pod, r->drain_first, sizeof(r->drain_first));
	r->drain_movable += !jsonc_get(meta, "deletionTimestamp");
}

void upgrade_pods_count(json_object *items, const struct upgrade_pod_opts *o,
			struct upgrade_pods *ret)
{
	size_t n = jsonc_array_len(items);

	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < n; i++)
		count_one(json_object_array_get_idx(items, i), o, ret);
}

/* NodeReady not True (a Node without the condition counts as ready, as
 * isNodeConditionReady, common_manager.go lines 655-664, has it). */
static bool not_ready(json_object *node)
{
	json_object *conds = jsonc_get(jsonc_get(node, "status"), "conditions");
	size_t n = jsonc_array_len(conds);

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(conds, i);

		if (same(jsonc_str(c, "type"), "Ready") && !same(jsonc_str(c, "status"), "True"))
			return true;
	}
	return false;
}

/* A record that holds a slot: taken (recorded), not yet given back. */
static bool holds_slot(json_object *node)
{
	const char *s = jsonc_str(jsonc_get(jsonc_get(node, "metadata"), "annotations"),
				  UPGRADE_ANNOTATION);
	struct upgrade_record r;
	struct err e;

	return s && upgrade_record_parse(s, &r, &e) == 0 && r.slot > 0 && r.state != UPG_IDLE &&
	       r.state != UPG_DONE;
}

unsigned upgrade_unavailable(json_object *nodes, const char *self, char *names, size_t names_size)
{
	size_t n = jsonc_array_len(nodes), used = 0;
	unsigned count = 0;

	if (names_size)
		names[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		json_object *node = json_object_array_get_idx(nodes, i);
		const char *name = jsonc_str(jsonc_get(node, "metadata"), "name");
		json_object *un = jsonc_get(jsonc_get(node, "spec"), "unschedulable");
		int w;

		if (!name || same(name, self))
			continue;
		if (!(un && json_object_get_boolean(un)) && !not_ready(node) && !holds_slot(node))
			continue;
		count++;
		if (used >= names_size)
			continue;
		w = snprintf(names + used, names_size - used, "%s%s", used ? ", " : "", name);
		if (w < 0 || (size_t)w >= names_size - used) {
			names[used] = '\0';
			used = names_size; /* whole names only */
		} else {
			used += (size_t)w;
		}
	}
	return count;
}

int upgrade_max_unavailable(const char *spec, unsigned total, unsigned *ret)
{
	size_t n = strlen(spec);
	bool pct = n > 1 && spec[n - 1] == '%';
	unsigned long v;

	*ret = 0;
	n -= pct;
	if (n == 0 || n > 7 || strspn(spec, "0123456789") != n)
		return -1;
	v = strtoul(spec, NULL, 10);
	if (v == 0 || (pct && v > 100))
		return -1;
	/* intstr.GetScaledValueFromIntOrPercent with roundUp: ceil(v * total / 100). */
	*ret = pct ? (unsigned)((v * total + 99) / 100) : (unsigned)v;
	return 0;
}

/* ---- the record ---------------------------------------------------------------------- */

bool upgrade_record_claims(const struct upgrade_record *r, unsigned slot)
{
	bool under_way = false;

	switch (r->state) {
	case UPG_CORDONED:
	case UPG_WAITING:
	case UPG_EVICTING:
	case UPG_DRAINING:
	case UPG_ACTIVATING:
	case UPG_VALIDATING:
	case UPG_FAILED:
		under_way = true;
		break;
	case UPG_IDLE:
	case UPG_PENDING:
	case UPG_DONE:
	case UPG_N_STATES:
		break;
	}
	return r->slot == slot + 1 && (under_way || r->cordoned);
}

bool upgrade_node_claims(json_object *node, unsigned slot)
{
	const char *s = jsonc_str(jsonc_get(jsonc_get(node, "metadata"), "annotations"),
				  UPGRADE_ANNOTATION);
	struct upgrade_record r;
	struct err e;

	return s && upgrade_record_parse(s, &r, &e) == 0 && upgrade_record_claims(&r, slot);
}

bool upgrade_event_due(const struct upgrade_record *r)
{
	return r->state != UPG_IDLE && r->evented != r->state;
}

/* The state S names ("" names UPG_IDLE) into *RET: true, or false and *RET untouched. */
static bool state_of(const char *s, enum upgrade_state *ret)
{
	for (unsigned i = 0; s && i < UPG_N_STATES; i++)
		if (strcmp(s, state_names[i]) == 0) {
			*ret = (enum upgrade_state)i;
			return true;
		}
	return false;
}

int upgrade_record_parse(const char *s, struct upgrade_record *r, struct err *e)
{
	json_object *o, *v;
	const char *state;
	bool found = false;

	memset(r, 0, sizeof(*r));
	if (!s)
		return 0;
	o = json_tokener_parse(s);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return err_set(e, EXIT_UNEXPECTED, "the node's %s annotation is not a JSON object",
			       UPGRADE_ANNOTATION);
	}
	state = jsonc_str(o, "state");
	for (unsigned i = 1; state && i < UPG_N_STATES && !found; i++)
		if (strcmp(state, state_names[i]) == 0) {
			r->state = (enum upgrade_state)i;
			found = true;
		}
	if (!found) {
		json_object_put(o);
		return err_set(e, EXIT_UNEXPECTED, "the node's %s annotation has no known state",
			       UPGRADE_ANNOTATION);
	}
	snprintf(r->version, sizeof(r->version), "%s", jsonc_str(o, "version") ?: "");
	snprintf(r->from, sizeof(r->from), "%s", jsonc_str(o, "from") ?: "");
	snprintf(r->reason, sizeof(r->reason), "%s", jsonc_str(o, "reason") ?: "");
	r->cordoned = (v = jsonc_get(o, "cordoned")) && json_object_get_boolean(v);
	/* Absent from an older agent's record: no drain done. */
	r->drained = (v = jsonc_get(o, "drained")) && json_object_get_boolean(v);
	if ((v = jsonc_get(o, "since")) && json_object_is_type(v, json_type_int))
		r->since = (uint64_t)json_object_get_int64(v);
	if ((v = jsonc_get(o, "wait_from")) && json_object_is_type(v, json_type_int))
		r->wait_from = (uint64_t)json_object_get_int64(v);
	if ((v = jsonc_get(o, "slot")) && json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) > 0 && json_object_get_int64(v) <= 4096)
		r->slot = (unsigned)json_object_get_int64(v);
	r->evented = r->state;
	if (jsonc_get(o, "event") && !state_of(jsonc_str(o, "event"), &r->evented))
		r->evented = UPG_IDLE;
	json_object_put(o);
	return 0;
}

char *upgrade_record_format(const struct upgrade_record *r)
{
	json_object *o = json_object_new_object();
	char *s = NULL;

	if (!o)
		return NULL;
	json_object_object_add(o, "state", json_object_new_string(upgrade_state_name(r->state)));
	json_object_object_add(o, "version", json_object_new_string(r->version));
	json_object_object_add(o, "from", json_object_new_string(r->from));
	json_object_object_add(o, "cordoned", json_object_new_boolean(r->cordoned));
	if (r->drained)
		json_object_object_add(o, "drained", json_object_new_boolean(true));
	json_object_object_add(o, "since", json_object_new_int64((int64_t)r->since));
	json_object_object_add(o, "wait_from", json_object_new_int64((int64_t)r->wait_from));
	json_object_object_add(o, "reason", json_object_new_string(r->reason));
	json_object_object_add(o, "slot", json_object_new_int64(r->slot));
	json_object_object_add(o, "event", json_object_new_string(upgrade_state_name(r->evented)));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

json_object *upgrade_node_patch(const struct upgrade_record *r, int unschedulable)
{
	json_object *patch = json_object_new_object(), *meta = json_object_new_object(),
		    *labels = json_object_new_object(), *ann = json_object_new_object();
	char *rec = r->state == UPG_IDLE ? NULL : upgrade_record_format(r);

	if (!patch || !meta || !labels || !ann || (r->state != UPG_IDLE && !rec)) {
		json_object_put(patch);
		json_object_put(meta);
		json_object_put(labels);
		json_object_put(ann);
		free(rec);
		return NULL;
	}
	/* null deletes (RFC 7386): an idle node carries neither. */
	json_object_object_add(labels, UPGRADE_LABEL,
			       rec ? json_object_new_string(upgrade_state_name(r->state)) : NULL);
	json_object_object_add(ann, UPGRADE_ANNOTATION, rec ? json_object_new_string(rec) : NULL);
	free(rec);
	json_object_object_add(meta, "labels", labels);
	json_object_object_add(meta, "annotations", ann);
	json_object_object_add(patch, "metadata", meta);
	if (unschedulable >= 0) {
		json_object *spec = json_object_new_object();

		if (!spec) {
			json_object_put(patch);
			return NULL;
		}
		json_object_object_add(spec, "unschedulable",
				       json_object_new_boolean(unschedulable == 1));
		json_object_object_add(patch, "spec", spec);
	}
	return patch;
}
