// SPDX-License-Identifier: Apache-2.0
/*
 * kube/node: a Node's status condition and its taints, each read, decided and written with
 * the resourceVersion read, so that another writer between the two is a 409 Conflict and
 * the decision is made again over what it wrote. See kube/kube.h.
 *
 * The condition is kept as node-problem-detector keeps its own (node-problem-detector
 * pkg/exporters/k8sexporter/problemclient/problem_client.go, SetConditions, lines 107-128:
 * lastHeartbeatTime set at every write, the conditions sent as {"status": {"conditions":
 * [...]}} through PatchStatus, a strategic merge patch that core/v1 NodeStatus.Conditions
 * merges by type, patchMergeKey "type"), with two differences: lastTransitionTime is
 * decided here from the Node's own condition rather than from the writer's memory, so a
 * restarted writer keeps it (the API conventions: "the last time the condition transitioned
 * from one status to another", apimachinery pkg/apis/meta/v1/types.go, Condition), and the
 * write carries metadata.resourceVersion, where node-problem-detector retries any error
 * blindly (problem_client.go line 116, retry.OnError).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/internal.h"
#include "util/jsonc.h"
#include "util/str.h"

/* The API conventions' bounds, apimachinery pkg/apis/meta/v1/types.go, Condition: a reason
 * of UpperCamelCase words; a message for people, cut here as the Event's is. */
#define REASON_MAX 128
#define MESSAGE_MAX 1024

/* O's member KEY when it is a string, else NULL (O may be NULL). */
static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* O's member KEY when it is an array, else NULL. */
static json_object *array_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

static json_object *object_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

/* ---- the condition's next value ----------------------------------------------------------- */

static bool is_reason(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > 0 && n <= REASON_MAX && s[0] >= 'A' && s[0] <= 'Z' &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == n;
}

/* S cut to MESSAGE_MAX bytes on a UTF-8 character's start, "..." saying so, into BUF. */
static void message_cut(const char *s, char buf[MESSAGE_MAX + 1])
{
	size_t n = strlen(s);

	if (n <= MESSAGE_MAX) {
		memcpy(buf, s, n + 1);
		return;
	}
	n = MESSAGE_MAX - 3;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
}

static int condition_check(const struct kube_condition *c, struct err *e)
{
	if (!c->type || !c->type[0] || strlen(c->type) > 316)
		return err_set(e, EXIT_UNEXPECTED, "kube: a condition without a type");
	if (!c->status || (strcmp(c->status, "True") != 0 && strcmp(c->status, "False") != 0 &&
			   strcmp(c->status, "Unknown") != 0))
		return err_set(e, EXIT_UNEXPECTED,
			       "kube: condition %s: status '%.16s' is not True, False or Unknown",
			       c->type, c->status ? c->status : "");
	if (!is_reason(c->reason))
		return err_set(
			e, EXIT_UNEXPECTED,
			"kube: condition %s: reason '%.140s' is not one UpperCamelCase word of at most %d characters",
			c->type, c->reason ? c->reason : "", REASON_MAX);
	return 0;
}

json_object *kube_condition_next(json_object *old, const struct kube_condition *c, const char *now,
				 struct kube_condition_result *ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	const char *status = str_of(old, "status"), *reason = str_of(old, "reason"),
		   *message = str_of(old, "message"), *since = str_of(old, "lastTransitionTime");
	struct kube_condition_result r = {.conflicts = 0};
	char msg[MESSAGE_MAX + 1];

	if (condition_check(c, e) < 0)
		return NULL;
	message_cut(c->message ? c->message : "", msg);
	r.transitioned = !status || strcmp(status, c->status) != 0;
	r.changed = r.transitioned || !reason || strcmp(reason, c->reason) != 0 ||
		    strcmp(message ? message : "", msg) != 0;
	snprintf(r.old_status, sizeof(r.old_status), "%s", status ? status : "");
	snprintf(r.old_reason, sizeof(r.old_reason), "%s", reason ? reason : "");
	o = json_object_new_object();
	if (!o) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
		return NULL;
	}
	json_object_object_add(o, "type", json_object_new_string(c->type));
	json_object_object_add(o, "status", json_object_new_string(c->status));
	json_object_object_add(o, "lastHeartbeatTime", json_object_new_string(now));
	json_object_object_add(o, "lastTransitionTime",
			       json_object_new_string(r.transitioned || !since ? now : since));
	json_object_object_add(o, "reason", json_object_new_string(c->reason));
	json_object_object_add(o, "message", json_object_new_string(msg));
	*ret = r;
	return TAKE_PTR(o);
}

/* NODE's condition of TYPE, or NULL. */
static json_object *condition_of(json_object *node, const char *type)
{
	json_object *list = array_of(object_of(node, "status"), "conditions");
	size_t n = list ? json_object_array_length(list) : 0;

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		const char *t = str_of(c, "type");

		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

/* ---- the taint list's next value --------------------------------------------------------- */

static bool is_effect(const char *s)
{
	return s && (strcmp(s, "NoSchedule") == 0 || strcmp(s, "PreferNoSchedule") == 0 ||
		     strcmp(s, "NoExecute") == 0);
}

/* Whether taint X is of KEY, and of EFFECT when that is not NULL. */
static bool taint_is(json_object *x, const char *key, const char *effect)
{
	const char *k = str_of(x, "key"), *f = str_of(x, "effect");

	return k && strcmp(k, key) == 0 && (!effect || (f && strcmp(f, effect) == 0));
}

/* T as a core/v1 Taint; timeAdded "is only written for NoExecute taints" (core/v1 Taint). */
static json_object *taint_new(const struct kube_taint *t, const char *now)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "key", json_object_new_string(t->key));
	if (t->value && t->value[0])
		json_object_object_add(o, "value", json_object_new_string(t->value));
	json_object_object_add(o, "effect", json_object_new_string(t->effect));
	if (strcmp(t->effect, "NoExecute") == 0)
		json_object_object_add(o, "timeAdded", json_object_new_string(now));
	return o;
}

/* X (a reference taken) onto LIST; 0 or -1 (out of memory). */
static int push(json_object *list, json_object *x)
{
	if (!x || json_object_array_add(list, x) < 0) {
		json_object_put(x);
		return -1;
	}
	return 0;
}

int kube_taints_next(json_object *taints, const struct kube_taint *t, bool add, const char *now,
		     json_object **ret)
{
	_cleanup_(json_object_putp) json_object *out = json_object_new_array();
	size_t n = taints && json_object_is_type(taints, json_type_array)
			   ? json_object_array_length(taints)
			   : 0;
	const char *want = t->value ? t->value : "";
	bool found = false, change = false;

	*ret = NULL;
	if (!out)
		return -1;
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(taints, i);
		const char *v = str_of(x, "value");

		if (!taint_is(x, t->key, add ? t->effect : NULL)) {
			if (push(out, json_object_get(x)) < 0)
				return -1;
			continue;
		}
		change |= !add || found || strcmp(v ? v : "", want) != 0;
		if (!add || found) /* removed, or a second of its key and effect */
			continue;
		found = true;
		if (push(out, strcmp(v ? v : "", want) == 0 ? json_object_get(x)
							    : taint_new(t, now)) < 0)
			return -1;
	}
	if (add && !found) {
		change = true;
		if (push(out, taint_new(t, now)) < 0)
			return -1;
	}
	if (!change)
		return 0;
	*ret = TAKE_PTR(out);
	return 1;
}

/* ---- the writes ------------------------------------------------------------------------- */

/*
 * PATCH PATH with BODY of type CTYPE, *STATUS the answer's status. A patch that carries
 * metadata.resourceVersion fails with 409 when the object's is another: the API server
 * applies the patch to the stored object and updates it with the resourceVersion the
 * result holds as a precondition (apiserver pkg/endpoints/handlers/patch.go, then
 * pkg/registry/generic/registry/store.go, Update: "the object has been modified").
 */
static int patch(struct kube *k, const char *path, const char *ctype, json_object *body,
		 long *status, struct err *e)
{
	const struct kube_request q = {
		.method = "PATCH", .path = path, .content_type = ctype, .body = body};
	struct kube_reply r;
	int rc = kube_call(k, &q, &r, e);

	*status = r.status;
	kube_reply_done(&r);
	return rc;
}

/* {"metadata": {"resourceVersion": RV}, WHERE: {KEY: VALUE}}, VALUE taken. NULL: no memory. */
static json_object *patch_new(const char *rv, const char *where, const char *key,
			      json_object *value)
{
	json_object *o = json_object_new_object(), *meta = json_object_new_object(),
		    *in = json_object_new_object();

	if (!o || !meta || !in) {
		json_object_put(o);
		json_object_put(meta);
		json_object_put(in);
		json_object_put(value);
		return NULL;
	}
	json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
	json_object_object_add(o, "metadata", meta);
	json_object_object_add(in, key, value);
	json_object_object_add(o, where, in);
	return o;
}

/*
 * Node NAME read into *NODE, with its resourceVersion into *RV (NODE's). 0 or -1. A read
 * from etcd, not node-problem-detector's resourceVersion "0" (problem_client.go line 143,
 * the API server's cache): a stale copy's resourceVersion would only meet a 409.
 */
static int node_read(struct kube *k, const char *name, json_object **node, const char **rv,
		     struct err *e)
{
	if (kube_node_get(k, name, node, e) < 0)
		return -1;
	*rv = str_of(object_of(*node, "metadata"), "resourceVersion");
	if (!*rv || !**rv)
		return err_set(e, EXIT_UNEXPECTED, "kube: Node %s has no metadata.resourceVersion",
			       name);
	return 0;
}

/* The last 409 that ended a write (E holds the API server's message). -1. */
static int still_conflicting(const char *name, const char *what, struct err *e)
{
	return err_wrap(e, "kube: Node %s: %s: another writer changed it each time, %u tries", name,
			what, KUBE_CONFLICT_RETRIES + 1);
}

int kube_node_condition_set(struct kube *k, const char *name, const struct kube_condition *c,
			    struct kube_condition_result *ret, struct err *e)
{
	char path[320];
	unsigned conflicts = 0;

	if (!kube_name_ok(name))
		return err_set(e, EXIT_UNEXPECTED, "kube: node '%.64s' is not a Kubernetes name",
			       name);
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", name);
	for (;;) {
		_cleanup_(json_object_putp) json_object *node = NULL, *body = NULL;
		json_object *cond, *list;
		struct kube_condition_result r;
		char now[STR_UTC_SIZE];
		const char *rv;
		long status;

		if (node_read(k, name, &node, &rv, e) < 0)
			return -1;
		str_utc_now(now);
		cond = kube_condition_next(condition_of(node, c->type), c, now, &r, e);
		if (!cond)
			return -1;
		list = json_object_new_array();
		if (!list || json_object_array_add(list, cond) < 0) {
			json_object_put(cond);
			json_object_put(list);
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
		}
		body = patch_new(rv, "status", "conditions", list);
		if (!body)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
		if (patch(k, path, "application/strategic-merge-patch+json", body, &status, e) ==
		    0) {
			r.conflicts = conflicts;
			*ret = r;
			return 0;
		}
		if (status != 409)
			return -1;
		if (conflicts++ == KUBE_CONFLICT_RETRIES)
			return still_conflicting(name, c->type, e);
		err_clear(e);
	}
}

int kube_node_taint(struct kube *k, const char *name, const struct kube_taint *t, bool add,
		    bool *changed, struct err *e)
{
	char path[320];
	unsigned conflicts = 0;

	*changed = false;
	if (!kube_name_ok(name))
		return err_set(e, EXIT_UNEXPECTED, "kube: node '%.64s' is not a Kubernetes name",
			       name);
	if (!t->key || !t->key[0] || (add && !is_effect(t->effect)))
		return err_set(e, EXIT_UNEXPECTED, "kube: taint '%.64s': no key or no effect",
			       t->key ? t->key : "");
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
	for (;;) {
		_cleanup_(json_object_putp) json_object *node = NULL, *body = NULL;
		json_object *next;
		char now[STR_UTC_SIZE];
		const char *rv;
		long status;
		int r;

		if (node_read(k, name, &node, &rv, e) < 0)
			return -1;
		str_utc_now(now);
		r = kube_taints_next(array_of(object_of(node, "spec"), "taints"), t, add, now,
				     &next);
		if (r < 0)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
		if (r == 0)
			return 0;
		/* None left: the field goes (a merge patch's null, RFC 7386). */
		if (json_object_array_length(next) == 0) {
			json_object_put(next);
			next = NULL;
		}
		body = patch_new(rv, "spec", "taints", next);
		if (!body)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
		if (patch(k, path, "application/merge-patch+json", body, &status, e) == 0) {
			*changed = true;
			return 0;
		}
		if (status != 409)
			return -1;
		if (conflicts++ == KUBE_CONFLICT_RETRIES)
			return still_conflicting(name, add ? "adding a taint" : "removing a taint",
						 e);
		err_clear(e);
	}
}
