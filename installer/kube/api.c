// SPDX-License-Identifier: Apache-2.0
/*
 * kube/api: the calls the node agent makes, as the API's paths and objects (core/v1 Node,
 * Pod and Event, policy/v1 Eviction, coordination.k8s.io/v1 Lease, resource.k8s.io's
 * ResourceClaim). See kube/kube.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>

#include "kube/internal.h"
#include "util/jsonc.h"
#include "util/str.h"

bool kube_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 253 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n;
}

static bool lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

bool kube_subdomain_ok(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0, start = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (i == start || !lower_alnum(s[start]) || !lower_alnum(s[i - 1]))
				return false;
			start = i + 1;
		} else if (!lower_alnum(s[i]) && s[i] != '-') {
			return false;
		}
	}
	return true;
}

bool kube_qualified_name_ok(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n), *name = slash ? slash + 1 : s;
	const char *alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t len = n - (size_t)(name - s);

	if (slash && !kube_subdomain_ok(s, (size_t)(slash - s), 253))
		return false;
	if (len == 0 || len > 63 || !name[0] || !strchr(alnum, name[0]) || !name[len - 1] ||
	    !strchr(alnum, name[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name[i] || (!strchr(alnum, name[i]) && !strchr("-_.", name[i])))
			return false;
	return true;
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
 * What the agent reads of a pod (agent/upgrade.c: which pods hold GPUs, by a resource or
 * a DRA claim, may be evicted, are leaving, match a selector): the rest of a pod, its
 * environment, its volumes but whether each is an emptyDir, managedFields and status, any
 * tenant can make as large as etcd takes, so it is never parsed. (The API server's only
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
/* The DRA claims it uses (agent/claims.c): core/v1 PodResourceClaim and
 * PodResourceClaimStatus, the one's name and claim or template, the other's name and claim. */
static const struct kube_keep claim_ref_keep[] = {
	{"name"}, {"resourceClaimName"}, {"resourceClaimTemplateName"}, {NULL}};
/* The claim the scheduler made for the extended resources DRA backs (Kubernetes 1.34 on,
 * DRAExtendedResource): core/v1 PodExtendedResourceClaimStatus.resourceClaimName (its
 * requestMappings are not read). */
static const struct kube_keep ext_claim_keep[] = {{"resourceClaimName"}, {NULL}};
/* A container's status: when its running container started, or why it does not run
 * (CrashLoopBackOff, ImagePullBackOff: the reason agent/draplugin.c says). */
static const struct kube_keep reason_keep[] = {{"reason"}, {NULL}};
static const struct kube_keep cstatus_keep[] = {
	{"name"},
	{"state",
	 (const struct kube_keep[]){{"running", (const struct kube_keep[]){{"startedAt"}, {NULL}}},
				    {"waiting", reason_keep},
				    {"terminated", reason_keep},
				    {NULL}}},
	{NULL}};
static const struct kube_keep pod_keep[] = {
	{"metadata", (const struct kube_keep[]){{"name"},
						{"namespace"},
						{"uid"},
						{"labels"},
						{"annotations"},
						{"ownerReferences"},
						{"deletionTimestamp"},
						{NULL}}},
	{"spec", (const struct kube_keep[]){{"containers", container_keep, true},
					    {"initContainers", container_keep, true},
					    {"volumes", volume_keep, true},
					    {"resourceClaims", claim_ref_keep, true},
					    {NULL}}},
	{"status", (const struct kube_keep[]){{"phase"},
					      {"resourceClaimStatuses", claim_ref_keep, true},
					      {"extendedResourceClaimStatus", ext_claim_keep},
					      {"containerStatuses", cstatus_keep, true},
					      {NULL}}},
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

/* An item a list keeps (list_all's WANT): true to keep it. */
typedef bool list_want_fn(json_object *item, void *arg);

/* How list_all reads a list: what it keeps of each item, which items (WANT, NULL: all),
 * the bound on what is kept, and the list's name and the fix for the bound's error. */
struct list_how {
	const struct kube_keep *keep;
	list_want_fn *want;
	void *arg;
	size_t max;
	const char *what, *fix;
};

/*
 * Appends the items of page LIST to ALL, those H->want takes when given; its continue token
 * into NEXT (1024 bytes; "" at the end). Returns the bytes of the items H->want took (0
 * without it), or -1.
 */
static ssize_t list_page(json_object *list, json_object *all, const struct list_how *h, char *next,
			 const char *path, struct err *e)
{
	json_object *items, *meta, *c;
	size_t n, kept = 0;

	if (!json_object_object_get_ex(list, "items", &items) ||
	    !json_object_is_type(items, json_type_array))
		return err_set(e, EXIT_UNEXPECTED, "kube: GET %s: not a list", path);
	n = json_object_array_length(items);
	for (size_t i = 0; i < n; i++) {
		json_object *item = json_object_array_get_idx(items, i);

		if (h->want && !h->want(item, h->arg))
			continue;
		if (h->want)
			kept += strlen(
				json_object_to_json_string_ext(item, JSON_C_TO_STRING_PLAIN));
		if (json_object_array_add(all, json_object_get(item)) < 0)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	}
	next[0] = '\0';
	if (json_object_object_get_ex(list, "metadata", &meta) &&
	    json_object_object_get_ex(meta, "continue", &c) &&
	    json_object_is_type(c, json_type_string) &&
	    kube_query_escape(json_object_get_string(c), next, 1024) < 0)
		return err_set(e, EXIT_UNEXPECTED, "kube: GET %s: the continue token is too long",
			       path);
	return (ssize_t)kept;
}

/*
 * The items of the list at BASE (a path, with or without a query), each as H->keep keeps it,
 * into *RET: read in pages of PODS_PAGE, a page made smaller while it is past KUBE_BODY_MAX.
 * 0, -1, or -2 when what is kept is past H->max (E names the list, the bound and its fix).
 */
static int list_all(struct kube *k, const char *base, const struct list_how *h, json_object **ret,
		    struct err *e)
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
		struct kube_request q = {.method = "GET", .path = path, .keep = h->keep};
		struct kube_reply r;
		ssize_t got;
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
		got = list_page(list, all, h, next, path, e);
		if (got < 0)
			return -1;
		kept += h->want ? (size_t)got : r.kept;
		if (kept > h->max) {
			err_set(e, EXIT_UNEXPECTED,
				"kube: GET %s: what the agent reads of %s is past its bound of %zu MiB%s%s",
				path, h->what, h->max >> 20, h->fix ? "; " : "",
				h->fix ? h->fix : "");
			return -2;
		}
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
	return list_all(k, base,
			&(const struct list_how){.keep = pod_list_keep,
						 .max = KUBE_PODS_KEPT_MAX,
						 .what = "the node's pods"},
			ret, e) < 0
		       ? -1
		       : 0;
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

/* What kube_daemonset_nodes reads of the DaemonSet's pods: whose they are, and where. */
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
/* And of the DaemonSet: its pods' selector and the nodes its pods are placed on. */
static const struct kube_keep ds_keep[] = {
	{"spec",
	 (const struct kube_keep[]){
		 {"selector"},
		 {"template",
		  (const struct kube_keep[]){
			  {"spec", (const struct kube_keep[]){{"nodeSelector"}, {NULL}}}, {NULL}}},
		 {NULL}}},
	{NULL}};

/* Appends FMT's text to selector BUF (a comma first unless it is empty). 0, or -1 when full. */
_printf_(3, 4) static int sel_add(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;
	int w;

	if (used && used + 1 < size)
		buf[used++] = ',';
	va_start(ap, fmt);
	w = used < size ? vsnprintf(buf + used, size - used, fmt, ap) : -1;
	va_end(ap);
	return w < 0 || (size_t)w >= size - used ? -1 : 0;
}

/*
 * A metav1.LabelSelector (matchLabels, matchExpressions) or a nodeSelector (MAP: a map of
 * labels) as the labelSelector query's text, as LabelSelectorAsSelector makes it
 * (apimachinery pkg/apis/meta/v1/helpers.go): "k=v", "k in (a,b)", "k notin (a,b)", "k",
 * "!k", ANDed by commas. "" for none. 0, or -1 for an unknown operator or a text past SIZE.
 */
static int selector_text(json_object *sel, bool map, char *buf, size_t size)
{
	json_object *labels = sel, *exprs = NULL;
	size_t n;

	buf[0] = '\0';
	if (!sel)
		return 0;
	if (!map && !json_object_object_get_ex(sel, "matchLabels", &labels))
		labels = NULL;
	if (labels && json_object_is_type(labels, json_type_object)) {
		json_object_object_foreach(labels, key, val)
		{
			if (sel_add(buf, size, "%s=%s", key, json_object_get_string(val)) < 0)
				return -1;
		}
	}
	if (map || !json_object_object_get_ex(sel, "matchExpressions", &exprs) ||
	    !json_object_is_type(exprs, json_type_array))
		return 0;
	n = json_object_array_length(exprs);
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(exprs, i), *k, *op, *vals = NULL;
		const char *o;
		size_t nv;

		if (!json_object_object_get_ex(x, "key", &k) ||
		    !json_object_object_get_ex(x, "operator", &op))
			return -1;
		o = json_object_get_string(op);
		if (strcmp(o, "Exists") == 0 || strcmp(o, "DoesNotExist") == 0) {
			if (sel_add(buf, size, "%s%s", o[0] == 'D' ? "!" : "",
				    json_object_get_string(k)) < 0)
				return -1;
			continue;
		}
		if (strcmp(o, "In") != 0 && strcmp(o, "NotIn") != 0)
			return -1;
		if (sel_add(buf, size, "%s %s (", json_object_get_string(k),
			    o[0] == 'I' ? "in" : "notin") < 0)
			return -1;
		nv = json_object_object_get_ex(x, "values", &vals) &&
				     json_object_is_type(vals, json_type_array)
			     ? json_object_array_length(vals)
			     : 0;
		for (size_t j = 0; j < nv; j++) {
			size_t used = strlen(buf);
			int w = snprintf(
				buf + used, size - used, "%s%s", j ? "," : "",
				json_object_get_string(json_object_array_get_idx(vals, j)));

			if (w < 0 || (size_t)w >= size - used)
				return -1;
		}
		if (strlen(buf) + 1 >= size)
			return -1;
		strcat(buf, ")");
	}
	return 0;
}

static bool pod_of_daemonset(json_object *pod, void *name)
{
	return of_daemonset(pod, name);
}

/* Whether NODE's name is a key of SET (the nodes the DaemonSet's pods are on). */
static bool node_in(json_object *node, void *set)
{
	json_object *meta, *nm;

	return json_object_object_get_ex(node, "metadata", &meta) &&
	       json_object_object_get_ex(meta, "name", &nm) &&
	       json_object_object_get_ex(set, json_object_get_string(nm), NULL);
}

/* BASE with "?labelSelector=" SEL (escaped) when SEL is not empty, into BUF. 0 or -1. */
static int with_selector(char *buf, size_t size, const char *base, const char *sel, struct err *e)
{
	char esc[3 * KUBE_SELECTOR_MAX];

	if (!sel[0]) {
		snprintf(buf, size, "%s", base);
		return 0;
	}
	if (kube_query_escape(sel, esc, sizeof(esc)) < 0 ||
	    (size_t)snprintf(buf, size, "%s?labelSelector=%s", base, esc) >= size)
		return err_set(e, EXIT_UNEXPECTED, "kube: the selector '%.64s...' is too long",
			       sel);
	return 0;
}

#define DS_BOUND_FIX                                                                               \
	"leave --upgrade-max-unavailable unset on a fleet this large (--upgrade-limit bounds the " \
	"upgrades alone)"

/*
 * The names of the Nodes DaemonSet NS/NAME (its spec.selector SEL) has a pod on, as the keys
 * of *SET (the caller puts it). 0, -1 or -2 (list_all's).
 */
static int ds_node_names(struct kube *k, const char *ns, const char *name, json_object *sel,
			 json_object **set, struct err *e)
{
	_cleanup_(json_object_putp) json_object *pods = NULL;
	char path[600], text[KUBE_SELECTOR_MAX], url[3 * KUBE_SELECTOR_MAX + 700];
	size_t n;
	int rc;

	*set = NULL;
	/* Only this DaemonSet's pods, by its own selector (apps/v1 requires one). */
	if (selector_text(sel, false, text, sizeof(text)) < 0)
		return err_set(e, EXIT_UNEXPECTED,
			       "kube: DaemonSet %s/%s: its spec.selector cannot be read", ns, name);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
	if (with_selector(url, sizeof(url), path, text, e) < 0)
		return -1;
	rc = list_all(k, url,
		      &(const struct list_how){.keep = ds_pods_keep,
					       .want = pod_of_daemonset,
					       .arg = (void *)name,
					       .max = KUBE_PODS_KEPT_MAX,
					       .what = "the DaemonSet's pods",
					       .fix = DS_BOUND_FIX},
		      &pods, e);
	if (rc < 0)
		return rc;
	if (!(*set = json_object_new_object()))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	n = json_object_array_length(pods);
	for (size_t i = 0; i < n; i++) {
		json_object *ps, *node;

		if (json_object_object_get_ex(json_object_array_get_idx(pods, i), "spec", &ps) &&
		    json_object_object_get_ex(ps, "nodeName", &node) &&
		    json_object_is_type(node, json_type_string))
			json_object_object_add(*set, json_object_get_string(node), NULL);
	}
	return 0;
}

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
	_cleanup_(json_object_putp) json_object *ds = NULL, *set = NULL, *nodes = NULL;
	json_object *spec = NULL, *tmpl = NULL, *tspec = NULL, *nsel = NULL, *sel = NULL;
	char path[600], text[KUBE_SELECTOR_MAX], url[3 * KUBE_SELECTOR_MAX + 700];
	struct kube_request q = {.method = "GET", .path = path, .keep = ds_keep};
	struct kube_reply r;
	int rc;

	*ret = NULL;
	if (path_name("namespace", ns, e) < 0 || path_name("daemonset", name, e) < 0)
		return -1;
	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/daemonsets/%s", ns, name);
	rc = kube_call(k, &q, &r, e);
	ds = TAKE_PTR(r.body);
	kube_reply_done(&r);
	if (rc < 0 && r.status == 404) {
		err_clear(e);
		return 1;
	}
	if (rc < 0)
		return -1;
	if (!json_object_object_get_ex(ds, "spec", &spec) ||
	    !json_object_object_get_ex(spec, "selector", &sel))
		return err_set(e, EXIT_UNEXPECTED, "kube: DaemonSet %s/%s has no spec.selector", ns,
			       name);
	rc = ds_node_names(k, ns, name, sel, &set, e);
	if (rc < 0)
		return rc;
	/* The Nodes: those its pods may go to (the template's nodeSelector), of them only
	 * those it has a pod on kept, so that what is kept grows with the DaemonSet's nodes. */
	if (json_object_object_length(set) == 0) {
		*ret = json_object_new_array();
		return *ret ? 0 : err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
	}
	if (json_object_object_get_ex(spec, "template", &tmpl) &&
	    json_object_object_get_ex(tmpl, "spec", &tspec))
		json_object_object_get_ex(tspec, "nodeSelector", &nsel);
	if (selector_text(nsel, true, text, sizeof(text)) < 0)
		return err_set(e, EXIT_UNEXPECTED,
			       "kube: DaemonSet %s/%s: its nodeSelector is too long", ns, name);
	if (with_selector(url, sizeof(url), "/api/v1/nodes", text, e) < 0)
		return -1;
	rc = list_all(k, url,
		      &(const struct list_how){.keep = nodes_keep,
					       .want = node_in,
					       .arg = set,
					       .max = KUBE_DS_NODES_KEPT_MAX,
					       .what = "the DaemonSet's nodes",
					       .fix = DS_BOUND_FIX},
		      &nodes, e);
	if (rc < 0)
		return rc;
	*ret = TAKE_PTR(nodes);
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

/*
 * resource.k8s.io's versions that carry a ResourceClaim's status.allocation.devices.results
 * (v1 from Kubernetes 1.34, v1beta2 from 1.33, v1beta1 from 1.32), newest first. What is kept
 * of a claim: the drivers of its allocation (a device allocated for admin access counts as
 * any, agent/claims.c: its adminAccess is not kept; a claim's status may also carry each
 * device's data, which the driver writes and the agent never reads).
 */
static const char *const claim_versions[] = {"v1", "v1beta2", "v1beta1"};
#define CLAIM_VERSIONS (sizeof(claim_versions) / sizeof(claim_versions[0]))
static const struct kube_keep result_keep[] = {
	{"request"}, {"driver"}, {"pool"}, {"device"}, {NULL}};
static const struct kube_keep claim_keep[] = {
	{"apiVersion"},
	{"metadata", (const struct kube_keep[]){{"name"}, {"namespace"}, {"uid"}, {NULL}}},
	{"status",
	 (const struct kube_keep[]){
		 {"allocation",
		  (const struct kube_keep[]){
			  {"devices",
			   (const struct kube_keep[]){{"results", result_keep, true}, {NULL}}},
			  {NULL}}},
		 {NULL}}},
	{NULL}};

/*
 * kube-apiserver answers a GET of a missing object with the registry's NotFound
 * (k8s.io/apiserver at 24a394e, pkg/registry/generic/registry/store.go:926 through
 * pkg/storage/errors/storage.go:44-47, errors.NewNotFound: a Status whose details.kind is
 * the resource), and a path no group version serves with net/http's NotFound, the text
 * "404 page not found" (pkg/util/notfoundhandler/not_found_handler.go:64, the end of the
 * delegation chain once the paths are installed).
 */
bool kube_status_not_found(json_object *body, const char *resource)
{
	const char *kind = jsonc_str(body, "kind"), *reason = jsonc_str(body, "reason");
	const char *of = jsonc_str(jsonc_get(body, "details"), "kind");

	return kind && strcmp(kind, "Status") == 0 && reason && strcmp(reason, "NotFound") == 0 &&
	       of && strcmp(of, resource) == 0;
}

int kube_resourceclaim_get(struct kube *k, const char *ns, const char *name, json_object **ret,
			   struct err *e)
{
	unsigned *at = kube_claim_version(k);
	char path[700];

	*ret = NULL;
	if (path_name("namespace", ns, e) < 0 || path_name("resourceclaim", name, e) < 0)
		return -1;
	/* The version that answered last first, then the others, newest first. */
	for (unsigned i = 0; i < CLAIM_VERSIONS; i++) {
		unsigned v = i == 0 ? *at : (i <= *at ? i - 1 : i);
		struct kube_request q = {.method = "GET", .path = path, .keep = claim_keep};
		struct kube_reply r;
		bool gone;
		int rc;

		snprintf(path, sizeof(path),
			 "/apis/resource.k8s.io/%s/namespaces/%s/resourceclaims/%s",
			 claim_versions[v], ns, name);
		rc = kube_call(k, &q, &r, e);
		gone = rc < 0 && r.status == 404 && kube_status_not_found(r.body, "resourceclaims");
		if (rc == 0 && !(*ret = TAKE_PTR(r.body)))
			rc = err_set(e, EXIT_UNEXPECTED, "kube: GET %s: the answer is not JSON",
				     path);
		kube_reply_done(&r);
		if (rc == 0 || gone)
			*at = v; /* served: the claim, or its NotFound */
		if (gone) {
			err_clear(e);
			return 1;
		}
		if (rc == 0 || r.status != 404)
			return rc;
		err_clear(e); /* this version is not served: the next */
	}
	/* No version answered with its NotFound: nothing says the claim is gone. */
	return err_set(
		e, EXIT_UNEXPECTED,
		"kube: no version of resource.k8s.io (v1, v1beta2, v1beta1) serves resourceclaims: "
		"GET of %s/%s answered 404 by each; a cluster without DRA has no claims to read",
		ns, name);
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
