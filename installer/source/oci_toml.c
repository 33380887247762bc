// SPDX-License-Identifier: Apache-2.0
/*
 * The part of TOML v1.0.0 (https://toml.io/en/v1.0.0) that containerd's hosts.toml is written
 * in (containerd docs/hosts.md), read strictly: comments, [table] headers of dotted keys,
 * KEY = VALUE lines with a bare, "basic" or 'literal' key, and values that are basic or
 * literal one-line strings, booleans, decimal integers and arrays of them (over several
 * lines, with comments and a trailing comma). What TOML has beyond that (multi-line strings,
 * inline tables, arrays of tables, dotted keys on the left of '=', floats and dates) is
 * refused by name, as is what TOML itself refuses: a table or a key defined twice, an
 * unterminated string, a bad escape, a control character, bytes that are not UTF-8.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/oci_toml.h"

/* Arrays nested deeper than this are refused: hosts.toml's deepest is two (client pairs). */
#define TOML_DEPTH_MAX 4

struct tp {
	const char *s, *end;
	unsigned line;
	const char *path;
	struct err *e;
	/*
	 * What is defined so far, for TOML's rule that nothing is defined twice: "T" and the
	 * parts of each table given a [header], "K" and the parts of each key given a value
	 * (its table's, then its own), parts ended by '\x1f'. A hosts.toml is small
	 * (OCI_HOSTS_FILE_MAX), so a list scanned each time does.
	 */
	char **defined;
	size_t n_defined;
	char *table; /* the current table's parts, each ended by '\x1f' ("" for the root) */
};

static int tp_vfail(struct tp *t, unsigned line, const char *fmt, va_list ap) _printf_(3, 0);
static int tp_vfail(struct tp *t, unsigned line, const char *fmt, va_list ap)
{
	char what[256];

	vsnprintf(what, sizeof(what), fmt, ap);
	return err_set(t->e, EXIT_USAGE, "'%s' line %u: %s", t->path, line, what);
}

/* Refuses the text at the reader's line. */
static int tp_fail(struct tp *t, const char *fmt, ...) _printf_(2, 3);
static int tp_fail(struct tp *t, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = tp_vfail(t, t->line, fmt, ap);
	va_end(ap);
	return r;
}

/* Refuses the expression that began at LINE. */
static int tp_fail_at(struct tp *t, unsigned line, const char *fmt, ...) _printf_(3, 4);
static int tp_fail_at(struct tp *t, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = tp_vfail(t, line, fmt, ap);
	va_end(ap);
	return r;
}

static int tp_nomem(struct tp *t)
{
	return err_errno(t->e, EXIT_UNEXPECTED, ENOMEM, "'%s'", t->path);
}

void toml_value_done(struct toml_value *v)
{
	if (!v)
		return;
	free(v->s);
	for (size_t i = 0; i < v->n; i++)
		toml_value_done(&v->items[i]);
	free(v->items);
	*v = (struct toml_value){0};
}

void toml_key_done(struct toml_key *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->parts[i]);
	*k = (struct toml_key){0};
}

/* Whether the N bytes at S are UTF-8 (RFC 3629: no overlongs, no surrogates). */
static bool utf8_valid(const unsigned char *s, size_t n, size_t *ret_bad)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], need = c < 0x80		  ? 0
					  : c >= 0xc2 && c < 0xe0 ? 1
					  : c >= 0xe0 && c < 0xf0 ? 2
					  : c >= 0xf0 && c < 0xf5 ? 3
								  : 9;
		unsigned lo = 0x80, hi = 0xbf;

		if (need == 9 || i + need >= n + (need ? 0 : 1))
			goto bad;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		else if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		for (unsigned k = 1; k <= need; k++) {
			if (s[i + k] < (k == 1 ? lo : 0x80) || s[i + k] > (k == 1 ? hi : 0xbf))
				goto bad;
		}
		i += need + 1;
		continue;
	bad:
		*ret_bad = i;
		return false;
	}
	return true;
}

/* Spaces and tabs; then a comment, whose characters TOML limits as a string's. */
static int skip_blank(struct tp *t)
{
	while (t->s < t->end && (*t->s == ' ' || *t->s == '\t'))
		t->s++;
	if (t->s < t->end && *t->s == '#') {
		for (; t->s < t->end && *t->s != '\n'; t->s++) {
			unsigned char c = (unsigned char)*t->s;

			if ((c < 0x20 && c != '\t' &&
			     !(c == '\r' && t->s + 1 < t->end && t->s[1] == '\n')) ||
			    c == 0x7f)
				return tp_fail(t, "a control character in a comment");
		}
	}
	return 0;
}

/* The end of a line (after blanks and a comment): "\n", "\r\n" or the end of the text. */
static int end_of_line(struct tp *t)
{
	if (skip_blank(t) < 0)
		return -1;
	if (t->s == t->end)
		return 0;
	if (*t->s == '\r' && t->s + 1 < t->end && t->s[1] == '\n')
		t->s++;
	if (*t->s != '\n')
		return tp_fail(t, "unexpected '%c' after the value (one key = value a line)",
			       *t->s);
	t->s++;
	t->line++;
	return 0;
}

/* Blank lines and comments, in arrays and between expressions. */
static int skip_lines(struct tp *t)
{
	for (;;) {
		if (skip_blank(t) < 0)
			return -1;
		if (t->s < t->end && *t->s == '\r' && t->s + 1 < t->end && t->s[1] == '\n')
			t->s++;
		if (t->s == t->end || *t->s != '\n')
			return 0;
		t->s++;
		t->line++;
	}
}

/* Appends the code point CP as UTF-8 to OUT at *LEN. 0, or -1 for one TOML refuses. */
static int put_utf8(char *out, size_t *len, unsigned long cp)
{
	if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return -1; /* NUL: a C string cannot hold it */
	if (cp < 0x80) {
		out[(*len)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*len)++] = (char)(0xc0 | cp >> 6);
		out[(*len)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*len)++] = (char)(0xe0 | cp >> 12);
		out[(*len)++] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[(*len)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*len)++] = (char)(0xf0 | cp >> 18);
		out[(*len)++] = (char)(0x80 | (cp >> 12 & 0x3f));
		out[(*len)++] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[(*len)++] = (char)(0x80 | (cp & 0x3f));
	}
	return 0;
}

/* A basic string's escape at T->s (after the '\'), appended to OUT. */
static int escape(struct tp *t, char *out, size_t *len)
{
	static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
	const char *hit = t->s < t->end && *t->s ? strchr(from, *t->s) : NULL;
	unsigned long cp = 0;
	size_t digits;

	if (hit) {
		out[(*len)++] = to[hit - from];
		t->s++;
		return 0;
	}
	if (t->s == t->end || (*t->s != 'u' && *t->s != 'U'))
		return tp_fail(
			t,
			"a bad escape in a string (TOML has \\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX)");
	digits = *t->s++ == 'u' ? 4 : 8;
	for (size_t i = 0; i < digits; i++, t->s++) {
		char c = t->s < t->end ? *t->s : '\0';
		int v = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;

		if (v < 0)
			return tp_fail(t, "a bad \\u escape in a string");
		cp = cp << 4 | (unsigned long)v;
	}
	if (put_utf8(out, len, cp) < 0)
		return tp_fail(t, "a \\u escape of NUL, a surrogate or past U+10FFFF");
	return 0;
}

/* A one-line string at T->s (its quote), basic ("...") or literal ('...'), into *RET. */
static int string(struct tp *t, char **ret)
{
	char quote = *t->s++;
	size_t len = 0;
	char *out;

	if (t->end - t->s >= 2 && t->s[0] == quote && t->s[1] == quote)
		return tp_fail(t, "a multi-line string (not part of hosts.toml)");
	out = malloc((size_t)(t->end - t->s) + 1);
	if (!out)
		return tp_nomem(t);
	for (;;) {
		unsigned char c = t->s < t->end ? (unsigned char)*t->s : '\n';

		if (c == '\n' || (c == '\r' && t->s + 1 < t->end && t->s[1] == '\n')) {
			free(out);
			return tp_fail(t, "an unterminated string");
		}
		t->s++;
		if (c == (unsigned char)quote)
			break;
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			free(out);
			return tp_fail(t,
				       "a control character in a string (write it as an escape)");
		}
		if (c == '\\' && quote == '"') {
			if (escape(t, out, &len) < 0) {
				free(out);
				return -1;
			}
			continue;
		}
		out[len++] = (char)c;
	}
	out[len] = '\0';
	*ret = out;
	return 0;
}

static bool is_bare(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* A key of dotted parts (bare, basic or literal), blanks around the dots, into *RET. */
static int key(struct tp *t, struct toml_key *ret)
{
	struct toml_key k = {0};

	for (;;) {
		char *part = NULL;

		while (t->s < t->end && (*t->s == ' ' || *t->s == '\t'))
			t->s++;
		if (k.n == TOML_KEY_PARTS_MAX) {
			toml_key_done(&k);
			return tp_fail(t, "a key of more than %d dotted parts", TOML_KEY_PARTS_MAX);
		}
		if (t->s < t->end && (*t->s == '"' || *t->s == '\'')) {
			if (string(t, &part) < 0) {
				toml_key_done(&k);
				return -1;
			}
		} else {
			const char *b = t->s;

			while (t->s < t->end && is_bare(*t->s))
				t->s++;
			if (t->s == b) {
				toml_key_done(&k);
				return tp_fail(
					t,
					"a key expected (bare keys are A-Za-z0-9_-, else quote it)");
			}
			part = strndup(b, (size_t)(t->s - b));
			if (!part) {
				toml_key_done(&k);
				return tp_nomem(t);
			}
		}
		k.parts[k.n++] = part;
		while (t->s < t->end && (*t->s == ' ' || *t->s == '\t'))
			t->s++;
		if (t->s == t->end || *t->s != '.')
			break;
		t->s++;
	}
	*ret = k;
	return 0;
}

static int value(struct tp *t, struct toml_value *ret, unsigned depth);

/* An array at T->s (its '['): values, commas, lines and comments, a trailing comma. */
static int array(struct tp *t, struct toml_value *ret, unsigned depth)
{
	struct toml_value a = {.type = TOML_ARRAY};

	if (depth >= TOML_DEPTH_MAX)
		return tp_fail(t, "arrays nested deeper than %d", TOML_DEPTH_MAX);
	t->s++;
	for (;;) {
		struct toml_value *items;

		if (skip_lines(t) < 0)
			goto fail;
		if (t->s < t->end && *t->s == ']')
			break;
		items = reallocarray(a.items, a.n + 1, sizeof(*items));
		if (!items) {
			tp_nomem(t);
			goto fail;
		}
		a.items = items;
		if (value(t, &a.items[a.n], depth + 1) < 0)
			goto fail;
		a.n++;
		if (skip_lines(t) < 0)
			goto fail;
		if (t->s < t->end && *t->s == ',') {
			t->s++;
			continue;
		}
		if (t->s == t->end || *t->s != ']') {
			tp_fail(t, "an unterminated array (',' or ']' expected)");
			goto fail;
		}
		break;
	}
	t->s++;
	*ret = a;
	return 0;
fail:
	toml_value_done(&a);
	return -1;
}

/* A decimal integer (TOML's: a sign, no leading zero, '_' between digits); kept as text. */
static int integer(struct tp *t, struct toml_value *ret)
{
	const char *b = t->s, *p = t->s;

	if (*p == '+' || *p == '-')
		p++;
	if (p == t->end || *p < '0' || *p > '9' ||
	    (*p == '0' && p + 1 < t->end && p[1] >= '0' && p[1] <= '9'))
		return tp_fail(
			t,
			"a value this reader does not take (strings, booleans, decimal integers and arrays of them)");
	for (; p < t->end && ((*p >= '0' && *p <= '9') ||
			      (*p == '_' && p + 1 < t->end && p[1] >= '0' && p[1] <= '9'));
	     p++)
		;
	if (p < t->end && !strchr(" \t\r\n,]#", *p))
		return tp_fail(
			t,
			"a value this reader does not take (strings, booleans, decimal integers and arrays of them)");
	t->s = p;
	*ret = (struct toml_value){.type = TOML_INT, .s = strndup(b, (size_t)(p - b))};
	return ret->s ? 0 : tp_nomem(t);
}

static bool word(struct tp *t, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(t->end - t->s) < n || memcmp(t->s, w, n) != 0)
		return false;
	if (t->s + n < t->end && is_bare(t->s[n]))
		return false;
	t->s += n;
	return true;
}

static int value(struct tp *t, struct toml_value *ret, unsigned depth)
{
	*ret = (struct toml_value){0};
	if (t->s == t->end || *t->s == '\n' || *t->s == '\r')
		return tp_fail(t, "a value expected after '='");
	if (*t->s == '"' || *t->s == '\'') {
		ret->type = TOML_STRING;
		return string(t, &ret->s);
	}
	if (*t->s == '[')
		return array(t, ret, depth);
	if (*t->s == '{')
		return tp_fail(t,
			       "an inline table (not part of hosts.toml: write it as a [table])");
	if (word(t, "true")) {
		*ret = (struct toml_value){.type = TOML_BOOL, .b = true};
		return 0;
	}
	if (word(t, "false")) {
		*ret = (struct toml_value){.type = TOML_BOOL, .b = false};
		return 0;
	}
	return integer(t, ret);
}

/* One "[a.b]" line, the '[' at T->s, into *RET. */
static int table_header(struct tp *t, struct toml_key *ret)
{
	t->s++;
	if (t->s < t->end && *t->s == '[')
		return tp_fail(t, "an array of tables ([[...]]) (not part of hosts.toml)");
	if (key(t, ret) < 0)
		return -1;
	if (t->s == t->end || *t->s != ']') {
		toml_key_done(ret);
		return tp_fail(t, "an unterminated table header (']' expected)");
	}
	t->s++;
	if (end_of_line(t) < 0) {
		toml_key_done(ret);
		return -1;
	}
	return 0;
}

/* One "key = value" line into *RET_KEY and *RET_VALUE. */
static int key_value(struct tp *t, struct toml_key *ret_key, struct toml_value *ret_value)
{
	if (key(t, ret_key) < 0)
		return -1;
	if (ret_key->n > 1) {
		toml_key_done(ret_key);
		return tp_fail(
			t,
			"a dotted key on the left of '=' (not part of hosts.toml: write a [table])");
	}
	if (t->s == t->end || *t->s != '=') {
		toml_key_done(ret_key);
		return tp_fail(t, "'=' expected after the key");
	}
	t->s++;
	while (t->s < t->end && (*t->s == ' ' || *t->s == '\t'))
		t->s++;
	if (value(t, ret_value, 0) < 0 || end_of_line(t) < 0) {
		toml_key_done(ret_key);
		toml_value_done(ret_value);
		return -1;
	}
	return 0;
}

/* The parts of K joined, each ended by '\x1f', after PREFIX; NULL on ENOMEM. */
static char *joined(const char *prefix, const struct toml_key *k)
{
	size_t len = strlen(prefix) + 1;
	char *out, *p;

	for (size_t i = 0; i < k->n; i++)
		len += strlen(k->parts[i]) + 1;
	out = malloc(len);
	if (!out)
		return NULL;
	p = stpcpy(out, prefix);
	for (size_t i = 0; i < k->n; i++) {
		p = stpcpy(p, k->parts[i]);
		*p++ = '\x1f';
	}
	*p = '\0';
	return out;
}

/*
 * Records NAME (a table's parts when IS_TABLE, else a key's with its table's first), or
 * refuses it as TOML does: a table given a [header] twice, a key given a value twice, a
 * table whose name a key has, a key under a name that is a table.
 */
static int define(struct tp *t, const char *name, bool is_table, const char *what, unsigned line)
{
	size_t n = strlen(name);
	char **v;

	for (size_t i = 0; i < t->n_defined; i++) {
		const char *d = t->defined[i] + 1;
		bool d_table = t->defined[i][0] == 'T';
		size_t dn = strlen(d);

		if ((dn == n && memcmp(d, name, n) == 0 && (is_table == d_table || !is_table)) ||
		    (is_table && !d_table && dn < n && memcmp(d, name, dn) == 0) ||
		    (!is_table && d_table && n < dn && memcmp(d, name, n) == 0))
			return tp_fail_at(t, line, "%s defined twice (TOML allows once)", what);
	}
	v = reallocarray(t->defined, t->n_defined + 1, sizeof(*v));
	if (!v)
		return tp_nomem(t);
	t->defined = v;
	if (asprintf(&t->defined[t->n_defined], "%c%s", is_table ? 'T' : 'K', name) < 0)
		return tp_nomem(t);
	t->n_defined++;
	return 0;
}

/* A [header]: TOML's rules, then the callee. */
static int on_table(struct tp *t, const struct toml_key *k, unsigned line,
		    const struct toml_calls *calls)
{
	char *name = joined("", k);

	if (!name)
		return tp_nomem(t);
	if (define(t, name, true, "a table", line) < 0) {
		free(name);
		return -1;
	}
	free(t->table);
	t->table = name;
	return calls->table(calls->userdata, k, line, t->e);
}

/* A KEY = VALUE: TOML's rules, then the callee. */
static int on_key_value(struct tp *t, const struct toml_key *k, const struct toml_value *v,
			unsigned line, const struct toml_calls *calls)
{
	char *name = joined(t->table ? t->table : "", k);
	int r;

	if (!name)
		return tp_nomem(t);
	r = define(t, name, false, "a key", line);
	free(name);
	if (r < 0)
		return -1;
	return calls->key_value(calls->userdata, k->parts[0], v, line, t->e);
}

static int read_all(struct tp *t, const struct toml_calls *calls)
{
	for (;;) {
		struct toml_key k = {0};
		struct toml_value v = {0};
		unsigned line;
		int r;

		if (skip_lines(t) < 0)
			return -1;
		if (t->s == t->end)
			return 0;
		line = t->line;
		if (*t->s == '[') {
			if (table_header(t, &k) < 0)
				return -1;
			r = on_table(t, &k, line, calls);
		} else {
			if (key_value(t, &k, &v) < 0)
				return -1;
			r = on_key_value(t, &k, &v, line, calls);
		}
		toml_key_done(&k);
		toml_value_done(&v);
		if (r < 0)
			return -1;
	}
}

int toml_read(const char *text, size_t len, const char *path, const struct toml_calls *calls,
	      struct err *e)
{
	struct tp t = {.s = text, .end = text + len, .line = 1, .path = path, .e = e};
	size_t bad;
	int r;

	if (!utf8_valid((const unsigned char *)text, len, &bad))
		return err_set(e, EXIT_USAGE, "'%s': not UTF-8 at byte %zu", path, bad);
	if (memchr(text, '\0', len))
		return err_set(e, EXIT_USAGE, "'%s': a NUL byte", path);
	r = read_all(&t, calls);
	for (size_t i = 0; i < t.n_defined; i++)
		free(t.defined[i]);
	free(t.defined);
	free(t.table);
	return r;
}
