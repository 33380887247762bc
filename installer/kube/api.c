// SPDX-License-Identifier: Apache-2.0
/*
 * kube/api: the calls the node agent makes, as the API's paths and objects (core/v1 Node,
 * Pod and Event, policy/v1 Eviction, coordination.k8s.io/v1 Lease). See kube/kube.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kube/internal.h"
#include "util/jsonc.h"
#include "util/str.h"

bool kube_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 253 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n;
}

/* An object name or namespace as the API takes it in a path: a DNS subdomain's characters. */
static int path_name(const char *what, const char *s, struct err *e)
{
	if (!kube_name_ok(s))
		return err_set(e, EXIT_UNEXPECTED, "kube: %s '%.64s' is not a Kubernetes name",
			       what, s);
	return 0;
}

/* GET PATH's object into *RET. 0, or -1 with R's status (404 for none). */
static int get(struct kube *k, const char *path, struct kube_reply *r, json_object **ret,
	       struct err *e)
{
	const struct kube_request q = {.method = "GET", .path = path};

	*ret = NULL;
	if (kube_call(k, &q, r, e) < 0)
		return -1;
	if (!r->body)
		return err_set(e, EXIT_UNEXPECTED, "kube: GET %s: the answer is not JSON", path);
	*ret = TAKE_PTR(r->body);
	return 0;
}

/* Q on Node NAME (its path made here); the answer's object into *RET when given. 0 or -1. */
static int node_call(struct kube *k, const char *name, struct kube_request *q, json_object **ret,
		     struct err *e)
{
	struct kube_reply r;
	char path[320];
	int rc;

	if (path_name("node", name, e) < 0)
		return -1;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
	q->path = path;
	rc = kube_call(k, q, &r, e);
	if (rc == 0 && ret && !(*ret = TAKE_PTR(r.body)))
		rc = err_set(e, EXIT_UNEXPECTED, "kube: %s %s: the answer is not JSON", q->method,
			     path);
	kube_reply_done(&r);
	return rc;
}

int kube_node_get(struct kube *k, const char *name, json_object **ret, struct err *e)
{
	struct kube_request q = {.method = "GET"};

	*ret = NULL;
	return node_call(k, name, &q, ret, e);
}

int kube_node_patch(struct kube *k, const char *name, json_object *patch, struct err *e)
{
	struct kube_request q = {
		.method = "PATCH", .content_type = "application/merge-patch+json", .body = patch};

	return node_call(k, name, &q, NULL, e);
}

/*
 * What the agent reads of a pod (agent/upgrade.c: which pods hold GPUs, may be evicted, are
 * leaving, match a selector): the rest of a pod, its environment, its volumes but whether
 * each is an emptyDir, managedFields and status, any tenant can make as large as etcd takes,
 * so it is never parsed. (The API server's only
 * projection, metadata alone, apiserver pkg/endpoints/handlers/response.go
 * asPartialObjectMetadataList, has no resources and keeps managedFields.) Pages as the
 * API server pages a list from etcd: apiserver pkg/storage/etcd3/store.go, GetList.
 */
static const struct kube_keep container_keep[] = {
	{"name"}, {"resources"}, {"restartPolicy"}, {NULL}};
/* A volume is kept only as whether it is an emptyDir (kubectl drain's localStorageFilter asks
 * no more): {"emptyDir": {}} or {}. */
static const struct kube_keep volume_keep[] = {{"emptyDir", (const struct kube_keep[]){{NULL}}},
					       {NULL}};
static const struct kube_keep pod_keep[] = {
	{"metadata", (const struct kube_keep[]){{"name"},
						{"namespace"},
						{"labels"},
						{"annotations"},
						{"ownerReferences"},
						{"deletionTimestamp"},
						{NULL}}},
	{"spec", (const struct kube_keep[]){{"containers", container_keep, true},
					    {"initContainers", container_keep, true},
					    {"volumes", volume_keep, true},
					    {NULL}}},
	{"status", (const struct kube_keep[]){{"phase"}, {NULL}}},
	{NULL}};
static const struct kube_keep pod_list_keep[] = {
	{"kind"},
	{"metadata", (const struct kube_keep[]){{"continue"}, {NULL}}},
	{"items", pod_keep, true},
	{NULL}};

/* A page of the list: 50 pods; halved, down to 1, while a page is past the bound, and
 * doubled again after each page read. */
#define PODS_PAGE 50
#define PODS_PAGES_MAX 10000

/* Appends the items of page LIST to ALL; its continue token into NEXT ("" at the end). */
static int list_page(json_object *list, json_object *all, char *next, size_t size, const char *path,
		     struct err *e)
{
	json_object *items, *meta, *c;
	size_t n;

	if (!json_object_object_get_ex(list, "items", &items) ||
	    !json_object_is_type(items, json_type_array))
		return err_set(e, EXIT_UNEXPECTED, "kube: GET %s: not a list", path);
	n = json_object_array_length(items);
	for (size_t i = 0; i < n; i++)
		if (json_object_array_add(all,
					  json_object_get(json_object_array_get_idx(items, i))) < 0)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	next[0] = '\0';
	if (json_object_object_get_ex(list, "metadata", &meta) &&
	    json_object_object_get_ex(meta, "continue", &c) &&
	    json_object_is_type(c, json_type_string) &&
	    kube_query_escape(json_object_get_string(c), next, size) < 0)
		return err_set(e, EXIT_UNEXPECTED, "kube: GET %s: the continue token is too long",
			       path);
	return 0;
}

/*
 * The items of the list at BASE (a path, with or without a query), each as KEEP keeps it,
 * into *RET: read in pages of PODS_PAGE, a page made smaller while it is past KUBE_BODY_MAX,
 * and -1 when what is kept is past KUBE_PODS_KEPT_MAX (WHAT names the list in the error).
 */
static int list_all(struct kube *k, const char *base, const struct kube_keep *keep,
		    const char *what, json_object **ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *all = json_object_new_array();
	unsigned limit = PODS_PAGE;
	size_t kept = 0;
	char next[1024] = "", path[2000];

	*ret = NULL;
	if (!all)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	for (unsigned pages = 0; pages < PODS_PAGES_MAX; pages++) {
		_cleanup_(json_object_putp) json_object *list = NULL;
		struct kube_request q = {.method = "GET", .path = path, .keep = keep};
		struct kube_reply r;
		int rc;

		snprintf(path, sizeof(path), "%s%climit=%u%s%s", base,
			 strchr(base, '?') ? '&' : '?', limit, next[0] ? "&continue=" : "", next);
		rc = kube_call(k, &q, &r, e);
		list = TAKE_PTR(r.body);
		kube_reply_done(&r);
		if (rc < 0 && r.too_large && limit > 1) {
			limit /= 2; /* the same page again, smaller */
			err_clear(e);
			continue;
		}
		if (rc < 0)
			return -1;
		if (!list)
			return err_set(e, EXIT_UNEXPECTED, "kube: GET %s: the answer is not JSON",
				       path);
		kept += r.kept;
		if (kept > KUBE_PODS_KEPT_MAX)
			return err_set(
				e, EXIT_UNEXPECTED,
				"kube: GET %s: what the agent reads of %s is past its bound of %u MiB",
				path, what, KUBE_PODS_KEPT_MAX >> 20);
		if (list_page(list, all, next, sizeof(next), path, e) < 0)
			return -1;
		/* Items past a large one are read in larger pages again. */
		limit = limit * 2 < PODS_PAGE ? limit * 2 : PODS_PAGE;
		if (!next[0]) {
			*ret = TAKE_PTR(all);
			return 0;
		}
	}
	return err_set(e, EXIT_UNEXPECTED, "kube: GET %s: more than %u pages", path,
		       PODS_PAGES_MAX);
}

int kube_pods_on_node(struct kube *k, const char *node, json_object **ret, struct err *e)
{
	char sel[600], base[700];

	*ret = NULL;
	if (path_name("node", node, e) < 0)
		return -1;
	snprintf(base, sizeof(base), "spec.nodeName=%s", node);
	if (kube_query_escape(base, sel, sizeof(sel)) < 0)
		return err_set(e, EXIT_UNEXPECTED, "kube: node name too long");
	snprintf(base, sizeof(base), "/api/v1/pods?fieldSelector=%s", sel);
	return list_all(k, base, pod_list_keep, "the node's pods", ret, e);
}

/* Whether POD's controller is DaemonSet NAME (metadata.ownerReferences, controller true). */
static bool of_daemonset(json_object *pod, const char *name)
{
	json_object *meta, *owners;
	size_t n;

	if (!json_object_object_get_ex(pod, "metadata", &meta) ||
	    !json_object_object_get_ex(meta, "ownerReferences", &owners) ||
	    !json_object_is_type(owners, json_type_array))
		return false;
	n = json_object_array_length(owners);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(owners, i), *v;
		const char *kind = json_object_object_get_ex(o, "kind", &v)
					   ? json_object_get_string(v)
					   : "",
			   *oname = json_object_object_get_ex(o, "name", &v)
					    ? json_object_get_string(v)
					    : "";

		if (json_object_object_get_ex(o, "controller", &v) && json_object_get_boolean(v) &&
		    strcmp(kind, "DaemonSet") == 0 && strcmp(oname, name) == 0)
			return true;
	}
	return false;
}

/* Whether a pod of PODS is on the node named NAME. */
static bool runs_on(json_object *pods, const char *name)
{
	size_t n = json_object_array_length(pods);

	for (size_t i = 0; i < n; i++) {
		json_object *spec, *node;

		if (json_object_object_get_ex(json_object_array_get_idx(pods, i), "spec", &spec) &&
		    json_object_object_get_ex(spec, "nodeName", &node) &&
		    strcmp(json_object_get_string(node), name) == 0)
			return true;
	}
	return false;
}

/* What kube_daemonset_nodes reads of its namespace's pods: whose they are, and where. */
static const struct kube_keep ds_pod_keep[] = {
	{"metadata", (const struct kube_keep[]){{"ownerReferences"}, {NULL}}},
	{"spec", (const struct kube_keep[]){{"nodeName"}, {NULL}}},
	{NULL}};
static const struct kube_keep ds_pods_keep[] = {
	{"kind"},
	{"metadata", (const struct kube_keep[]){{"continue"}, {NULL}}},
	{"items", ds_pod_keep, true},
	{NULL}};
static const struct kube_keep condition_keep[] = {{"type"}, {"status"}, {NULL}};

int kube_daemonset_nodes(struct kube *k, const char *ns, const char *name, const char *annotation,
			 json_object **ret, struct err *e)
{
	const struct kube_keep ann_keep[] = {{annotation}, {NULL}};
	const struct kube_keep meta_keep[] = {{"name"}, {"annotations", ann_keep}, {NULL}};
	const struct kube_keep node_keep[] = {
		{"metadata", meta_keep},
		{"spec", (const struct kube_keep[]){{"unschedulable"}, {NULL}}},
		{"status",
		 (const struct kube_keep[]){{"conditions", condition_keep, true}, {NULL}}},
		{NULL}};
	const struct kube_keep nodes_keep[] = {
		{"kind"},
		{"metadata", (const struct kube_keep[]){{"continue"}, {NULL}}},
		{"items", node_keep, true},
		{NULL}};
	_cleanup_(json_object_putp) json_object *pods = NULL, *nodes = NULL, *mine = NULL;
	char path[600];
	size_t n;

	*ret = NULL;
	if (path_name("namespace", ns, e) < 0 || path_name("daemonset", name, e) < 0)
		return -1;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
	if (list_all(k, path, ds_pods_keep, "the namespace's pods", &pods, e) < 0 ||
	    list_all(k, "/api/v1/nodes", nodes_keep, "the nodes", &nodes, e) < 0)
		return -1;
	/* Only the DaemonSet's own pods say where it runs. */
	n = json_object_array_length(pods);
	for (size_t i = n; i-- > 0;)
		if (!of_daemonset(json_object_array_get_idx(pods, i), name))
			json_object_array_del_idx(pods, i, 1);
	if (!(mine = json_object_new_array()))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	n = json_object_array_length(nodes);
	for (size_t i = 0; i < n; i++) {
		json_object *node = json_object_array_get_idx(nodes, i), *meta, *nm;

		if (json_object_object_get_ex(node, "metadata", &meta) &&
		    json_object_object_get_ex(meta, "name", &nm) &&
		    runs_on(pods, json_object_get_string(nm)) &&
		    json_object_array_add(mine, json_object_get(node)) < 0)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	}
	*ret = TAKE_PTR(mine);
	return 0;
}

int kube_evict(struct kube *k, const char *ns, const char *name, struct err *e)
{
	_cleanup_(json_object_putp) json_object *ev = json_object_new_object(),
						*meta = json_object_new_object();
	struct kube_request q = {.method = "POST", .body = ev, .no_retry_429 = true};
	struct kube_reply r;
	char path[600];
	int rc;

	if (path_name("namespace", ns, e) < 0 || path_name("pod", name, e) < 0)
		return -1;
	if (!ev || !meta)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	json_object_object_add(meta, "name", json_object_new_string(name));
	json_object_object_add(meta, "namespace", json_object_new_string(ns));
	json_object_object_add(ev, "apiVersion", json_object_new_string("policy/v1"));
	json_object_object_add(ev, "kind", json_object_new_string("Eviction"));
	json_object_object_add(ev, "metadata", TAKE_PTR(meta));
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", ns, name);
	q.path = path;
	rc = kube_call(k, &q, &r, e);
	kube_reply_done(&r);
	if (rc == 0 || r.status == 404) {
		err_clear(e);
		return 0;
	}
	if (r.status == 429) {
		err_clear(e);
		return 1;
	}
	return -1;
}

int kube_daemonset_desired(struct kube *k, const char *ns, const char *name, unsigned *ret,
			   struct err *e)
{
	_cleanup_(json_object_putp) json_object *ds = NULL;
	json_object *status, *n;
	struct kube_reply r;
	char path[600];
	int rc;

	*ret = 0;
	if (path_name("namespace", ns, e) < 0 || path_name("daemonset", name, e) < 0)
		return -1;
	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/daemonsets/%s", ns, name);
	rc = get(k, path, &r, &ds, e);
	kube_reply_done(&r);
	if (rc < 0)
		return -1;
	if (!json_object_object_get_ex(ds, "status", &status) ||
	    !json_object_object_get_ex(status, "desiredNumberScheduled", &n) ||
	    !json_object_is_type(n, json_type_int) || json_object_get_int64(n) < 0)
		return err_set(e, EXIT_UNEXPECTED, "kube: DaemonSet %s/%s has no node count", ns,
			       name);
	*ret = (unsigned)json_object_get_int64(n);
	return 0;
}

static void lease_path(char *buf, size_t size, const char *ns, const char *name)
{
	snprintf(buf, size, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s", ns,
		 name ? "/" : "", name ? name : "");
}

int kube_lease_get(struct kube *k, const char *ns, const char *name, json_object **ret,
		   struct err *e)
{
	struct kube_reply r;
	char path[600];
	int rc;

	*ret = NULL;
	if (path_name("namespace", ns, e) < 0 || path_name("lease", name, e) < 0)
		return -1;
	lease_path(path, sizeof(path), ns, name);
	rc = get(k, path, &r, ret, e);
	kube_reply_done(&r);
	if (rc < 0 && r.status == 404) {
		err_clear(e);
		return 1;
	}
	return rc;
}

int kube_lease_put(struct kube *k, const char *ns, json_object *lease, bool replace,
		   json_object **ret, struct err *e)
{
	struct kube_request q = {.method = replace ? "PUT" : "POST", .body = lease};
	json_object *meta, *name;
	struct kube_reply r;
	char path[600];
	int rc;

	if (ret)
		*ret = NULL;
	if (!json_object_object_get_ex(lease, "metadata", &meta) ||
	    !json_object_object_get_ex(meta, "name", &name))
		return err_set(e, EXIT_UNEXPECTED, "kube: a lease without metadata.name");
	if (path_name("namespace", ns, e) < 0 ||
	    path_name("lease", json_object_get_string(name), e) < 0)
		return -1;
	lease_path(path, sizeof(path), ns, replace ? json_object_get_string(name) : NULL);
	q.path = path;
	rc = kube_call(k, &q, &r, e);
	if (rc < 0 && r.status == 409) {
		kube_reply_done(&r);
		err_clear(e);
		return 1;
	}
	if (rc == 0 && ret)
		*ret = TAKE_PTR(r.body);
	kube_reply_done(&r);
	return rc;
}

const char *kube_event_namespace(const char *ns)
{
	return strcmp(ns, "kube-system") == 0 ? ns : "default";
}

/* Now as metav1.MicroTime's JSON (RFC3339Micro: six digits of fraction) into BUF. */
static void micro_now(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char s[STR_UTC_SIZE];

	clock_gettime(CLOCK_REALTIME, &ts);
	if (!gmtime_r(&ts.tv_sec, &tm) || strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(s, sizeof(s), "1970-01-01T00:00:00");
	snprintf(buf, size, "%s.%06uZ", s, (unsigned)(ts.tv_nsec / 1000) % 1000000u);
}

/*
 * The Event as kube-apiserver takes it about a Node (kubernetes
 * pkg/apis/core/validation/events.go, legacyValidateEvent): one without eventTime about a
 * cluster-scoped object only in namespace "default"; with eventTime, also in "kube-system",
 * and then with reportingComponent (a qualified name), reportingInstance and action (at
 * most 128 characters each), reason (128) and message (1024).
 */
int kube_event(struct kube *k, const char *ns, const struct kube_event *v, struct err *e)
{
	_cleanup_(json_object_putp) json_object *ev = json_object_new_object();
	json_object *meta = json_object_new_object(), *obj = json_object_new_object(),
		    *src = json_object_new_object();
	struct kube_request q = {.method = "POST", .body = ev};
	struct kube_reply r;
	char path[320], now[STR_UTC_SIZE], micro[64], prefix[300], instance[129], message[1025];
	int rc;

	if (!ev || !meta || !obj || !src) {
		json_object_put(meta);
		json_object_put(obj);
		json_object_put(src);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	}
	json_object_object_add(ev, "metadata", meta);
	json_object_object_add(ev, "involvedObject", obj);
	json_object_object_add(ev, "source", src);
	if (path_name("namespace", ns, e) < 0 || path_name("node", v->node, e) < 0)
		return -1;
	ns = kube_event_namespace(ns);
	/* The API server names it: NODE.<random>, as kubelet's events read. */
	snprintf(prefix, sizeof(prefix), "%s.", v->node);
	/* One agent per node: the node names the instance (cut to the server's 128). */
	snprintf(instance, sizeof(instance), "%s", v->node);
	str_fmt_cut(message, sizeof(message), "%s", v->message);
	str_utc_now(now);
	micro_now(micro, sizeof(micro));
	json_object_object_add(meta, "generateName", json_object_new_string(prefix));
	json_object_object_add(meta, "namespace", json_object_new_string(ns));
	json_object_object_add(obj, "kind", json_object_new_string("Node"));
	json_object_object_add(obj, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(obj, "name", json_object_new_string(v->node));
	json_object_object_add(src, "component", json_object_new_string(v->component));
	json_object_object_add(src, "host", json_object_new_string(v->node));
	json_object_object_add(ev, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(ev, "kind", json_object_new_string("Event"));
	json_object_object_add(ev, "type", json_object_new_string(v->type));
	json_object_object_add(ev, "reason", json_object_new_string(v->reason));
	json_object_object_add(ev, "message", json_object_new_string(message));
	json_object_object_add(ev, "eventTime", json_object_new_string(micro));
	/* Go's field ReportingController is "reportingComponent" in JSON. */
	json_object_object_add(ev, "reportingComponent", json_object_new_string(v->component));
	json_object_object_add(ev, "reportingInstance", json_object_new_string(instance));
	json_object_object_add(ev, "action",
			       json_object_new_string(v->action ? v->action : v->reason));
	/* What kubectl get events shows as LAST SEEN and COUNT, as kubelet's events have. */
	json_object_object_add(ev, "firstTimestamp", json_object_new_string(now));
	json_object_object_add(ev, "lastTimestamp", json_object_new_string(now));
	json_object_object_add(ev, "count", json_object_new_int(1));
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
	q.path = path;
	rc = kube_call(k, &q, &r, e);
	kube_reply_done(&r);
	return rc;
}
