// SPDX-License-Identifier: Apache-2.0
#include <limits.h>
#include <string.h>

#include "util/jtext.h"

const char *jtext_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

const char *jtext_string(const char *p, const char *end)
{
	if (p >= end || *p != '"')
		return NULL;
	for (p++; p < end; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c != '\\')
			continue;
		if (++p >= end)
			return NULL;
		if (*p != 'u') {
			if (!memchr("\"\\/bfnrt", *p, 8))
				return NULL;
			continue;
		}
		for (int i = 0; i < 4; i++)
			if (++p >= end || !is_hex(*p))
				return NULL;
	}
	return NULL;
}

static const char *digits(const char *p, const char *end)
{
	while (p < end && is_digit(*p))
		p++;
	return p;
}

/* A number at P: past it, or NULL. */
static const char *number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p >= end || !is_digit(*p))
		return NULL;
	p = *p == '0' ? p + 1 : digits(p, end);
	if (p < end && *p == '.') {
		if (++p >= end || !is_digit(*p))
			return NULL;
		p = digits(p, end);
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !is_digit(*p))
			return NULL;
		p = digits(p, end);
	}
	return p;
}

/* A string, number or literal at P: past it, or NULL. */
static const char *scalar(const char *p, const char *end)
{
	static const char *const literals[] = {"true", "false", "null"};

	if (p < end && *p == '"')
		return jtext_string(p, end);
	for (size_t i = 0; i < sizeof(literals) / sizeof(*literals); i++) {
		size_t n = strlen(literals[i]);

		if ((size_t)(end - p) >= n && memcmp(p, literals[i], n) == 0)
			return p + n;
	}
	return number(p, end);
}

/* A member's key and its ':' at P (whitespace before each): past the ':', or NULL; *RET_KEY
 * (when not NULL) the key, quotes included. */
static const char *key(const char *p, const char *end, struct jtext_span *ret_key)
{
	const char *k = jtext_ws(p, end), *after = jtext_string(k, end);

	if (!after)
		return NULL;
	p = jtext_ws(after, end);
	if (p >= end || *p != ':')
		return NULL;
	if (ret_key)
		*ret_key = (struct jtext_span){k, after};
	return p + 1;
}

/* The brackets open, one bit each: set for an object. */
struct stack {
	unsigned char is_object[JTEXT_DEPTH_MAX / CHAR_BIT];
	size_t depth;
};

static bool top_is_object(const struct stack *st)
{
	size_t i = st->depth - 1;

	return st->is_object[i / CHAR_BIT] >> (i % CHAR_BIT) & 1;
}

static void push(struct stack *st, bool is_object)
{
	size_t i = st->depth++;
	unsigned char bit = (unsigned char)(1u << (i % CHAR_BIT));

	if (is_object)
		st->is_object[i / CHAR_BIT] |= bit;
	else
		st->is_object[i / CHAR_BIT] &= (unsigned char)~bit;
}

/*
 * After a value that ends at P inside ST's brackets: past each bracket that closes there,
 * then past the ',' (and in an object the next key and its ':') before the next value. NULL
 * where the text goes on otherwise; ST->depth 0 once the outermost value is closed.
 */
static const char *after_value(const char *p, const char *end, struct stack *st)
{
	while (st->depth) {
		bool is_object = top_is_object(st);

		p = jtext_ws(p, end);
		if (p < end && *p == ',')
			return is_object ? key(p + 1, end, NULL) : p + 1;
		if (p >= end || *p != (is_object ? '}' : ']'))
			return NULL;
		p++;
		st->depth--;
	}
	return p;
}

const char *jtext_value(const char *p, const char *end, size_t depth_max)
{
	struct stack st;

	st.depth = 0;
	if (depth_max > JTEXT_DEPTH_MAX)
		depth_max = JTEXT_DEPTH_MAX;
	do {
		p = jtext_ws(p, end);
		if (p < end && (*p == '{' || *p == '[')) {
			bool is_object = *p == '{';

			if (st.depth == depth_max)
				return NULL;
			push(&st, is_object);
			p = jtext_ws(p + 1, end);
			if (p >= end || *p != (is_object ? '}' : ']')) {
				/* The first member (its key, in an object) follows. */
				if (is_object && !(p = key(p, end, NULL)))
					return NULL;
				continue;
			}
			p++;
			st.depth--;
		} else if (!(p = scalar(p, end))) {
			return NULL;
		}
		if (!(p = after_value(p, end, &st)))
			return NULL;
	} while (st.depth);
	return p;
}

int jtext_walk_start(struct jtext_walk *w, const char *p, const char *end)
{
	p = jtext_ws(p, end);
	if (p >= end || (*p != '{' && *p != '['))
		return -1;
	*w = (struct jtext_walk){
		.p = p + 1, .end = end, .close = *p == '{' ? '}' : ']', .is_first = true};
	return 0;
}

int jtext_walk_next(struct jtext_walk *w, struct jtext_span *ret_key)
{
	const char *p = jtext_ws(w->p, w->end);
	struct jtext_span k = {NULL, NULL};

	if (p < w->end && *p == w->close) {
		w->p = p + 1;
		return 0;
	}
	if (!w->is_first) {
		if (p >= w->end || *p != ',')
			return -1;
		p++;
	}
	if (w->close == '}' && !(p = key(p, w->end, &k)))
		return -1;
	w->p = jtext_ws(p, w->end);
	w->is_first = false;
	if (ret_key)
		*ret_key = k;
	return 1;
}

int jtext_walk_member(struct jtext_walk *w, size_t depth_max, struct jtext_member *ret)
{
	struct jtext_span k;
	const char *value, *after;
	int r = jtext_walk_next(w, &k);

	if (r <= 0)
		return r;
	value = w->p;
	if (!(after = jtext_value(value, w->end, depth_max)))
		return -1;
	w->p = after;
	*ret = (struct jtext_member){k, {value, after}};
	return 1;
}
