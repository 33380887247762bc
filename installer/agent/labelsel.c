// SPDX-License-Identifier: Apache-2.0
/*
 * agent/labelsel: a label selector parsed and matched (see agent/labelsel.h). The tokens
 * are apimachinery's lexer's (pkg/labels/selector.go, Lexer.Lex): an identifier runs until
 * a blank or one of = ! ( ) , > <, and the identifiers "in" and "notin" are the set
 * operators where an operator is expected, identifiers where a key or a value is (its
 * Parser reads those in the Values context: lookahead and consume turn InToken and
 * NotInToken into IdentifierToken); the grammar is its Parser's (parseRequirement,
 * parseKeyAndInferOperator, parseOperator, parseValues: "()" is the set {""}).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/labelsel.h"
#include "kube/kube.h"
#include "util/str.h"

enum tok {
	T_END,
	T_IDENT,
	T_COMMA,
	T_OPEN,
	T_CLOSE,
	T_NOT,
	T_EQ,
	T_EQEQ,
	T_NE,
	T_GT,
	T_LT,
	T_IN,
	T_NOTIN
};

struct lexer {
	const char *s, *p;
	const char *start; /* of the last token */
	size_t len;
	char *why;
	size_t why_size;
};

static bool special(char c)
{
	return c && strchr("=!(),><", c) != NULL;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static enum tok lex(struct lexer *l)
{
	while (blank(*l->p))
		l->p++;
	l->start = l->p;
	if (!*l->p)
		return T_END;
	if (special(*l->p)) {
		/* The longest operator: == and != before = and !. */
		if ((l->p[0] == '=' || l->p[0] == '!') && l->p[1] == '=') {
			l->p += 2;
			l->len = 2;
			return l->start[0] == '=' ? T_EQEQ : T_NE;
		}
		l->len = 1;
		switch (*l->p++) {
		case '(':
			return T_OPEN;
		case ')':
			return T_CLOSE;
		case ',':
			return T_COMMA;
		case '!':
			return T_NOT;
		case '=':
			return T_EQ;
		case '>':
			return T_GT;
		default:
			return T_LT;
		}
	}
	while (*l->p && !blank(*l->p) && !special(*l->p))
		l->p++;
	l->len = (size_t)(l->p - l->start);
	if (l->len == 2 && memcmp(l->start, "in", 2) == 0)
		return T_IN;
	if (l->len == 5 && memcmp(l->start, "notin", 5) == 0)
		return T_NOTIN;
	return T_IDENT;
}

/* A token where a key or a value is expected: in and notin are identifiers there. */
static enum tok as_value(enum tok t)
{
	return t == T_IN || t == T_NOTIN ? T_IDENT : t;
}

static int bad(struct lexer *l, const char *fmt, ...) _printf_(2, 3);
static int bad(struct lexer *l, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	str_fmt_cut(l->why, l->why_size, "%s at column %zu", what, (size_t)(l->start - l->s) + 1);
	return -1;
}

/* IsValidLabelValue: empty, or at most 63 of A-Z a-z 0-9 - _ ., alphanumeric at both ends. */
static bool label_value(const char *s, size_t n)
{
	const char *alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

	if (n == 0)
		return true;
	if (n > 63 || !strchr(alnum, s[0]) || !strchr(alnum, s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr(alnum, s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

static int add_value(struct lexer *l, struct labelsel_req *r, const char *v, size_t n)
{
	char **vs;

	if (!label_value(v, n))
		return bad(l,
			   "'%.*s' is not a label value (at most 63 of A-Z a-z 0-9 - _ ., "
			   "alphanumeric at both ends)",
			   (int)(n > 80 ? 80 : n), v);
	vs = realloc(r->values, (r->n_values + 1) * sizeof(*vs));
	if (!vs)
		return bad(l, "out of memory");
	r->values = vs;
	if (!(vs[r->n_values] = strndup(v, n)))
		return bad(l, "out of memory");
	r->n_values++;
	return 0;
}

/* The set after in/notin: "(" values separated by commas ")"; an empty member is "", and
 * so is the set "()". */
static int set_values(struct lexer *l, struct labelsel_req *r)
{
	enum tok t;

	if (lex(l) != T_OPEN)
		return bad(l, "'(' expected after in or notin");
	for (;;) {
		const char *v = "";
		size_t n = 0;

		t = as_value(lex(l)); /* "()": the one value "" */
		if (t == T_IDENT) {
			v = l->start;
			n = l->len;
			t = lex(l);
		}
		if (add_value(l, r, v, n) < 0)
			return -1;
		if (t == T_CLOSE)
			return 0;
		if (t != T_COMMA)
			return bad(l, "',' or ')' expected in a set of values");
	}
}

/* The one value after = == != > <: an identifier, or none before a comma or the end. */
static int one_value(struct lexer *l, struct labelsel_req *r, bool integer)
{
	const char *mark = l->p;
	enum tok t = as_value(lex(l));
	char *end;

	if (t == T_END || t == T_COMMA) {
		l->p = mark; /* the comma is the requirement's end */
		if (integer)
			return bad(l, "> and < take an integer");
		return add_value(l, r, "", 0);
	}
	if (t != T_IDENT)
		return bad(l, "a value expected");
	if (add_value(l, r, l->start, l->len) < 0)
		return -1;
	errno = 0;
	if (integer && (strtoll(r->values[0], &end, 10), errno || *end || !*r->values[0]))
		return bad(l, "> and < take an integer, not '%s'", r->values[0]);
	return 0;
}

static int requirement(struct lexer *l, struct labelsel_req *r)
{
	enum tok t = as_value(lex(l));
	bool negated = t == T_NOT;

	if (negated)
		t = as_value(lex(l));
	if (t != T_IDENT)
		return bad(l, "a label key expected");
	if (!kube_qualified_name_ok(l->start, l->len))
		return bad(l,
			   "'%.*s' is not a label key ([prefix/]name: the prefix a DNS-1123 "
			   "subdomain, the name at most 63 of A-Z a-z 0-9 - _ ., alphanumeric at "
			   "both ends)",
			   (int)(l->len > 80 ? 80 : l->len), l->start);
	if (!(r->key = strndup(l->start, l->len)))
		return bad(l, "out of memory");
	{
		const char *mark = l->p;

		t = lex(l);
		if (t == T_END || t == T_COMMA) {
			l->p = mark;
			r->op = negated ? LABELSEL_NOT_EXISTS : LABELSEL_EXISTS;
			return 0;
		}
	}
	if (negated)
		return bad(l, "!key takes no operator");
	switch (t) {
	case T_EQ:
	case T_EQEQ:
		r->op = LABELSEL_IN;
		return one_value(l, r, false);
	case T_NE:
		r->op = LABELSEL_NOT_IN;
		return one_value(l, r, false);
	case T_GT:
	case T_LT:
		r->op = t == T_GT ? LABELSEL_GT : LABELSEL_LT;
		return one_value(l, r, true);
	case T_IN:
	case T_NOTIN:
		r->op = t == T_IN ? LABELSEL_IN : LABELSEL_NOT_IN;
		return set_values(l, r);
	default:
		return bad(l, "an operator expected (=, ==, !=, in, notin, >, <)");
	}
}

void labelsel_free(struct labelsel *sel)
{
	for (size_t i = 0; i < sel->n; i++) {
		for (size_t j = 0; j < sel->reqs[i].n_values; j++)
			free(sel->reqs[i].values[j]);
		free(sel->reqs[i].values);
		free(sel->reqs[i].key);
	}
	free(sel->reqs);
	sel->reqs = NULL;
	sel->n = 0;
}

int labelsel_parse(const char *s, struct labelsel *ret, char *why, size_t why_size)
{
	struct lexer l = {.s = s, .p = s, .start = s, .why = why, .why_size = why_size};
	struct labelsel sel = {0};

	memset(ret, 0, sizeof(*ret));
	while (blank(*l.p))
		l.p++;
	if (!*l.p)
		return 0; /* Everything */
	for (;;) {
		struct labelsel_req *reqs = realloc(sel.reqs, (sel.n + 1) * sizeof(*reqs));
		enum tok t;

		if (!reqs) {
			bad(&l, "out of memory");
			goto fail;
		}
		sel.reqs = reqs;
		memset(&reqs[sel.n], 0, sizeof(reqs[sel.n]));
		sel.n++;
		if (requirement(&l, &reqs[sel.n - 1]) < 0)
			goto fail;
		t = lex(&l);
		if (t == T_END)
			break;
		if (t != T_COMMA) {
			bad(&l, "',' or the end expected after a requirement");
			goto fail;
		}
	}
	*ret = sel;
	return 0;
fail:
	labelsel_free(&sel);
	return -1;
}

int labelsel_check(const char *s, char *why, size_t why_size)
{
	struct labelsel sel;

	if (labelsel_parse(s, &sel, why, why_size) < 0)
		return -1;
	labelsel_free(&sel);
	return 0;
}

static bool has_value(const struct labelsel_req *r, const char *v)
{
	for (size_t i = 0; i < r->n_values; i++)
		if (strcmp(r->values[i], v) == 0)
			return true;
	return false;
}

static bool req_matches(const struct labelsel_req *r, json_object *labels)
{
	json_object *o = NULL;
	const char *v = labels && json_object_object_get_ex(labels, r->key, &o) &&
					json_object_is_type(o, json_type_string)
				? json_object_get_string(o)
				: NULL;
	long long have, want;
	char *end;

	switch (r->op) {
	case LABELSEL_EXISTS:
		return v != NULL;
	case LABELSEL_NOT_EXISTS:
		return v == NULL;
	case LABELSEL_IN:
		return v && has_value(r, v);
	case LABELSEL_NOT_IN:
		return !v || !has_value(r, v);
	case LABELSEL_GT:
	case LABELSEL_LT:
		if (!v || !*v)
			return false;
		errno = 0;
		have = strtoll(v, &end, 10);
		if (errno || *end)
			return false;
		want = strtoll(r->values[0], NULL, 10);
		return r->op == LABELSEL_GT ? have > want : have < want;
	}
	return false;
}

bool labelsel_matches(const struct labelsel *sel, json_object *labels)
{
	for (size_t i = 0; i < sel->n; i++)
		if (!req_matches(&sel->reqs[i], labels))
			return false;
	return true;
}
