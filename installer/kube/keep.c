// SPDX-License-Identifier: Apache-2.0
/*
 * kube/keep: an answer read for the few fields a caller needs (see kube/kube.h,
 * kube_keep_parse). The API server cannot be asked for fields (no projection but
 * metadata-only, and a pod's GPUs are in its spec), and json-c spends some 50 bytes of
 * memory for each byte of an object it parses (a 15 MB pod list took the agent to 740 MiB),
 * so what is not kept is stepped over as text and only what is kept becomes objects.
 * Recursion follows the caller's table, never the input: a value skipped is crossed
 * in a loop with a stack of the brackets open (512 deep at most).
 */
#include <string.h>

#include "kube/kube.h"

struct scan {
	const char *p, *end;
	size_t kept;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void ws(struct scan *s)
{
	while (s->p < s->end && is_space(*s->p))
		s->p++;
}

/* Past the string at s->p (its '"'). false when it does not end. */
static bool skip_string(struct scan *s)
{
	for (s->p++; s->p < s->end; s->p++) {
		if (*s->p == '\\') {
			if (s->end - s->p < 2)
				return false;
			s->p++;
		} else if (*s->p == '"') {
			s->p++;
			return true;
		}
	}
	return false;
}

/* Nesting deeper than this is refused: a pod's deepest (managedFields) is some 20. */
#define SKIP_DEPTH_MAX 512

/* Past one value, as text: strings, scalars and brackets, each bracket closed by its
 * own kind; what separates members is not checked, as nothing of it is kept. */
static bool skip_value(struct scan *s)
{
	char open[SKIP_DEPTH_MAX];
	size_t depth = 0;

	do {
		const char *start;

		ws(s);
		if (s->p >= s->end)
			return false;
		switch (*s->p) {
		case '"':
			if (!skip_string(s))
				return false;
			break;
		case '{':
		case '[':
			if (depth == SKIP_DEPTH_MAX)
				return false;
			open[depth++] = *s->p == '{' ? '}' : ']';
			s->p++;
			break;
		case '}':
		case ']':
			if (!depth || open[depth - 1] != *s->p)
				return false;
			depth--;
			s->p++;
			break;
		case ',':
		case ':':
			if (!depth)
				return false;
			s->p++;
			break;
		default: /* a number, true, false, null */
			start = s->p;
			while (s->p < s->end && *s->p && !is_space(*s->p) &&
			       !strchr(",:{}[]\"", *s->p))
				s->p++;
			if (s->p == start)
				return false;
		}
	} while (depth);
	return true;
}

/* The value at s->p, whole, through json-c. NULL when it is not JSON. */
static json_object *whole(struct scan *s)
{
	const char *start;
	json_tokener *tok;
	json_object *o;
	size_t n;

	ws(s);
	start = s->p;
	if (!skip_value(s))
		return NULL;
	/* A number ends where the next character is: json-c is given that one too. */
	n = (size_t)(s->p - start) + (s->p < s->end);
	if (n > (size_t)INT32_MAX || !(tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH)))
		return NULL;
	o = json_tokener_parse_ex(tok, start, (int)n);
	json_tokener_free(tok);
	if (o)
		s->kept += n;
	return o;
}

static json_object *object(struct scan *s, const struct kube_keep *keys);

/* An array whose elements are objects kept by KEYS; other elements are left out. */
static json_object *each(struct scan *s, const struct kube_keep *keys)
{
	json_object *out = json_object_new_array();

	if (!out)
		return NULL;
	s->p++; /* '[' */
	ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return out;
	}
	for (;;) {
		json_object *v = NULL;

		ws(s);
		if (s->p < s->end && *s->p == '{') {
			if (!(v = object(s, keys)))
				goto fail;
			json_object_array_add(out, v);
		} else if (!skip_value(s)) {
			goto fail;
		}
		ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
		} else if (s->p < s->end && *s->p == ']') {
			s->p++;
			return out;
		} else {
			goto fail;
		}
	}
fail:
	json_object_put(out);
	return NULL;
}

/* The value of KEY, kept as its row says; *RET NULL when it is not kept. false: not JSON. */
static bool member(struct scan *s, const struct kube_keep *k, json_object **ret)
{
	char open = !k || !k->keys ? 0 : k->each ? '[' : '{';

	*ret = NULL;
	ws(s);
	if (!k || (open && (s->p >= s->end || *s->p != open)))
		return skip_value(s); /* not asked for, or not the shape asked for */
	*ret = !open ? whole(s) : k->each ? each(s, k->keys) : object(s, k->keys);
	return *ret != NULL;
}

/* The object at s->p ('{'), with only the members KEYS names. NULL when it is not JSON. */
static json_object *object(struct scan *s, const struct kube_keep *keys)
{
	json_object *out = json_object_new_object();

	if (!out)
		return NULL;
	s->p++; /* '{' */
	ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		return out;
	}
	for (;;) {
		const struct kube_keep *k = NULL;
		const char *name;
		json_object *v;
		size_t len;

		ws(s);
		if (s->p >= s->end || *s->p != '"')
			goto fail;
		name = s->p + 1;
		if (!skip_string(s))
			goto fail;
		/* Compared as written: the API server escapes no character of a field's name. */
		len = (size_t)(s->p - 1 - name);
		for (const struct kube_keep *r = keys; r->key && !k; r++)
			if (strlen(r->key) == len && memcmp(r->key, name, len) == 0)
				k = r;
		ws(s);
		if (s->p >= s->end || *s->p != ':')
			goto fail;
		s->p++;
		if (!member(s, k, &v))
			goto fail;
		if (v)
			json_object_object_add(out, k->key, v);
		ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
		} else if (s->p < s->end && *s->p == '}') {
			s->p++;
			return out;
		} else {
			goto fail;
		}
	}
fail:
	json_object_put(out);
	return NULL;
}

json_object *kube_keep_parse(const char *text, size_t len, const struct kube_keep *keys,
			     size_t *ret_kept)
{
	struct scan s = {.p = text, .end = text + len};
	json_object *o;

	ws(&s);
	if (s.p >= s.end || *s.p != '{' || !(o = object(&s, keys)))
		return NULL;
	ws(&s);
	if (s.p != s.end) {
		json_object_put(o);
		return NULL;
	}
	if (ret_kept)
		*ret_kept = s.kept;
	return o;
}
