// SPDX-License-Identifier: Apache-2.0
/*
 * kube/keep: an answer read for the few fields a caller needs (see kube/kube.h,
 * kube_keep_parse). The API server cannot be asked for fields (no projection but
 * metadata-only, and a pod's GPUs are in its spec), and json-c spends some 50 bytes of
 * memory for each byte of an object it parses (a 15 MB pod list took the agent to 740 MiB),
 * so what is not kept is stepped over as text (util/jtext.h, which checks it is JSON) and
 * only what is kept becomes objects. Recursion follows the caller's table, never the input:
 * a value skipped is crossed in a loop with a stack of the brackets open (512 deep at most).
 */
#include <string.h>

#include "kube/internal.h"
#include "util/jtext.h"

/* Nesting deeper than this in a value skipped is refused: a pod's deepest (managedFields) is
 * some 20. */
#define SKIP_DEPTH_MAX 512
_Static_assert(SKIP_DEPTH_MAX <= JTEXT_DEPTH_MAX, "jtext_value holds fewer brackets");

struct scan {
	const char *end;
	size_t kept;
};

/* Past the value at *P, stepped over as text; false when it is not JSON. */
static bool skip(const struct scan *s, const char **p)
{
	const char *after = jtext_value(*p, s->end, SKIP_DEPTH_MAX);

	if (!after)
		return false;
	*p = after;
	return true;
}

/* The value at *P, whole, through json-c; *P past it. NULL when it is not JSON. */
static json_object *whole(struct scan *s, const char **p)
{
	const char *start = *p, *after = jtext_value(start, s->end, SKIP_DEPTH_MAX);
	json_tokener *tok;
	json_object *o;
	size_t n;

	if (!after)
		return NULL;
	/* A number ends where the next character is: json-c is given that one too. */
	n = (size_t)(after - start) + (after < s->end);
	if (n > (size_t)INT32_MAX || !(tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH)))
		return NULL;
	o = json_tokener_parse_ex(tok, start, (int)n);
	json_tokener_free(tok);
	if (o) {
		s->kept += n;
		*p = after;
	}
	return o;
}

static json_object *object(struct scan *s, const char **p, const struct kube_keep *keys);

/* The array at *P ('['), its elements that are objects kept by KEYS; other elements are left
 * out. *P past it; NULL when it is not JSON. */
static json_object *each(struct scan *s, const char **p, const struct kube_keep *keys)
{
	json_object *out = json_object_new_array();
	struct jtext_walk w;
	int r;

	if (!out)
		return NULL;
	if (jtext_walk_start(&w, *p, s->end) < 0)
		goto fail;
	while ((r = jtext_walk_next(&w, NULL)) > 0) {
		json_object *v;

		if (w.p < s->end && *w.p == '{') {
			if (!(v = object(s, &w.p, keys)))
				goto fail;
			json_object_array_add(out, v);
		} else if (!skip(s, &w.p)) {
			goto fail;
		}
	}
	if (r < 0)
		goto fail;
	*p = w.p;
	return out;
fail:
	json_object_put(out);
	return NULL;
}

/* The value at *P of a member K names, kept as its row says; *RET NULL when it is not kept.
 * *P past it; false: not JSON. */
static bool member(struct scan *s, const char **p, const struct kube_keep *k, json_object **ret)
{
	char open = !k || !k->keys ? 0 : k->each ? '[' : '{';

	*ret = NULL;
	if (!k || (open && (*p >= s->end || **p != open)))
		return skip(s, p); /* not asked for, or not the shape asked for */
	*ret = !open ? whole(s, p) : k->each ? each(s, p, k->keys) : object(s, p, k->keys);
	return *ret != NULL;
}

/* The row of KEYS for the key KEY (a JSON string, quotes included), or NULL. Compared as
 * written: the API server escapes no character of a field's name. */
static const struct kube_keep *row(const struct kube_keep *keys, struct jtext_span key)
{
	const char *name = key.p + 1;
	size_t len = (size_t)(key.end - key.p) - 2;

	for (const struct kube_keep *r = keys; r->key; r++)
		if (strlen(r->key) == len && memcmp(r->key, name, len) == 0)
			return r;
	return NULL;
}

/* The object at *P ('{'), with only the members KEYS names. *P past it; NULL when it is not
 * JSON. */
static json_object *object(struct scan *s, const char **p, const struct kube_keep *keys)
{
	json_object *out = json_object_new_object();
	struct jtext_span key;
	struct jtext_walk w;
	int r;

	if (!out)
		return NULL;
	if (jtext_walk_start(&w, *p, s->end) < 0)
		goto fail;
	while ((r = jtext_walk_next(&w, &key)) > 0) {
		const struct kube_keep *k = row(keys, key);
		json_object *v;

		if (!member(s, &w.p, k, &v))
			goto fail;
		if (v)
			json_object_object_add(out, k->key, v);
	}
	if (r < 0)
		goto fail;
	*p = w.p;
	return out;
fail:
	json_object_put(out);
	return NULL;
}

json_object *kube_keep_parse(const char *text, size_t len, const struct kube_keep *keys,
			     size_t *ret_kept)
{
	struct scan s = {.end = text + len};
	const char *p = jtext_ws(text, s.end);
	json_object *o;

	if (p >= s.end || *p != '{' || !(o = object(&s, &p, keys)))
		return NULL;
	if (jtext_ws(p, s.end) != s.end) {
		json_object_put(o);
		return NULL;
	}
	if (ret_kept)
		*ret_kept = s.kept;
	return o;
}
