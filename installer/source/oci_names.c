// SPDX-License-Identifier: Apache-2.0
/*
 * What names an OCI repository (oci.h): "oci://HOST[:PORT]/NAME[:TAG|@DIGEST]" by the
 * distribution spec's grammar, and "oci-layout:PATH[:TAG]"; what a registry's
 * WWW-Authenticate challenge and its token endpoint's answer say.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "source/oci_names.h"
#include "util/jsonc.h"

DEFINE_POINTER_CLEANUP(json_tokener, json_tokener_free)

bool oci_is_registry(const char *s)
{
	return strncasecmp(s, OCI_SCHEME, strlen(OCI_SCHEME)) == 0;
}

bool oci_is_layout(const char *s)
{
	return strncasecmp(s, OCI_LAYOUT_SCHEME, strlen(OCI_LAYOUT_SCHEME)) == 0;
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool oci_digest_is_valid(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s + 7) != 64)
		return false;
	for (const char *p = s + 7; *p; p++)
		if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
			return false;
	return true;
}

/*
 * One path component of a name: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* (distribution-spec,
 * "Pulling manifests": the <name> grammar). The reason it is not one, or NULL.
 */
static const char *component_fault(const char *c, size_t n)
{
	size_t i = 0;

	if (n == 0)
		return "an empty path component";
	if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
		return "a '.' or '..' path component";
	for (size_t k = 0; k < n; k++)
		if (c[k] >= 'A' && c[k] <= 'Z')
			return "an upper-case letter (names are lower case)";
	while (i < n) {
		size_t run = 0;

		while (i < n && is_lower_alnum(c[i]))
			i++, run++;
		if (run == 0)
			return "a component that does not start and end with [a-z0-9]";
		if (i == n)
			return NULL;
		if (c[i] == '.' || (c[i] == '_' && (i + 1 >= n || c[i + 1] != '_')))
			i++;
		else if (c[i] == '_')
			i += 2;
		else if (c[i] == '-')
			while (i < n && c[i] == '-')
				i++;
		else
			return "a character other than [a-z0-9._-]";
		if (i == n)
			return "a component that does not start and end with [a-z0-9]";
	}
	return NULL;
}

static bool tag_is_valid(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > OCI_TAG_MAX || !(isalnum((unsigned char)t[0]) || t[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)t[i]) && !strchr("._-", t[i]))
			return false;
	return true;
}

/* HOST[:PORT]: a DNS name or IPv4 address, or [IPv6], and a port 1-65535. */
static int host_check(const char *s, const char *h, struct err *e)
{
	const char *port = NULL, *p = h;

	if (*h == '\0')
		return err_set(e, EXIT_USAGE, "'%s': no registry host after oci://", s);
	if (strchr(h, '@'))
		return err_set(
			e, EXIT_USAGE,
			"'%s': user information in the registry host: credentials go in --registry-auth, not the reference",
			s);
	if (*p == '[') {
		p = strchr(h, ']');
		if (!p || p == h + 1)
			return err_set(e, EXIT_USAGE, "'%s': an IPv6 host without its ']'", s);
		for (const char *q = h + 1; q < p; q++)
			if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
				return err_set(e, EXIT_USAGE, "'%s': '%s' is not an IPv6 host", s,
					       h);
		p++;
	} else {
		for (; *p && *p != ':'; p++)
			if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-')
				return err_set(e, EXIT_USAGE,
					       "'%s': the registry host '%s' holds '%c'", s, h, *p);
		if (p == h)
			return err_set(e, EXIT_USAGE, "'%s': an empty registry host", s);
	}
	if (*p == ':') {
		char *end;
		unsigned long v;

		port = p + 1;
		errno = 0;
		v = strtoul(port, &end, 10);
		if (!isdigit((unsigned char)*port) || *end || errno || v == 0 || v > 65535)
			return err_set(e, EXIT_USAGE, "'%s': the port '%s' is not 1 to 65535", s,
				       port);
	} else if (*p) {
		return err_set(e, EXIT_USAGE, "'%s': the registry host '%s' is not HOST[:PORT]", s,
			       h);
	}
	return 0;
}

/* NAME: components joined by '/'. */
static int name_check(const char *s, const char *name, struct err *e)
{
	const char *c = name;

	if (*name == '\0')
		return err_set(e, EXIT_USAGE, "'%s': no repository name after the host", s);
	for (;;) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		const char *why = component_fault(c, n);

		if (why)
			return err_set(e, EXIT_USAGE, "'%s': the repository name '%s' has %s", s,
				       name, why);
		if (!slash)
			return 0;
		c = slash + 1;
	}
}

/* The part after the host: NAME, then ":TAG" or "@sha256:HEX". */
static int name_and_ref(const char *s, const char *rest, struct oci_ref *r, struct err *e)
{
	const char *at = strchr(rest, '@'), *colon;
	size_t name_len;

	if (at) {
		if (!oci_digest_is_valid(at + 1))
			return err_set(
				e, EXIT_USAGE,
				"'%s': the digest '%s' is not sha256: and 64 lower-case hex digits",
				s, at + 1);
		snprintf(r->digest, sizeof(r->digest), "%s", at + 1);
		name_len = (size_t)(at - rest);
	} else {
		colon = strchr(rest, ':');
		name_len = colon ? (size_t)(colon - rest) : strlen(rest);
		if (colon && !tag_is_valid(colon + 1))
			return err_set(
				e, EXIT_USAGE,
				"'%s': the tag '%s' is not [A-Za-z0-9_][A-Za-z0-9._-]{0,127}", s,
				colon + 1);
		snprintf(r->tag, sizeof(r->tag), "%s", colon ? colon + 1 : "latest");
	}
	if (name_len >= sizeof(r->name) || strlen(r->host) + 1 + name_len > OCI_NAME_MAX)
		return err_set(e, EXIT_USAGE,
			       "'%s': the host and repository name are longer than %d characters",
			       s, OCI_NAME_MAX);
	memcpy(r->name, rest, name_len);
	r->name[name_len] = '\0';
	return name_check(s, r->name, e);
}

int oci_ref_parse(const char *s, struct oci_ref *ret, struct err *e)
{
	struct oci_ref r = {0};
	const char *h, *slash;
	size_t n;

	if (!oci_is_registry(s))
		return err_set(e, EXIT_USAGE, "'%s' does not start with oci://", s);
	h = s + strlen(OCI_SCHEME);
	if (strpbrk(h, "?#"))
		return err_set(e, EXIT_USAGE,
			       "'%s': a query or fragment ('?', '#') has no place in a reference",
			       s);
	for (const char *p = h; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '%' ||
		    *p == '\\')
			return err_set(e, EXIT_USAGE,
				       "'%s': a space, control, '%%', '\\' or non-ASCII character",
				       s);
	slash = strchr(h, '/');
	n = slash ? (size_t)(slash - h) : strlen(h);
	if (n >= sizeof(r.host))
		return err_set(e, EXIT_USAGE, "'%s': the registry host is too long", s);
	memcpy(r.host, h, n);
	r.host[n] = '\0';
	if (host_check(s, r.host, e) < 0)
		return -1;
	if (!slash)
		return err_set(e, EXIT_USAGE, "'%s': no repository name after the host", s);
	if (name_and_ref(s, slash + 1, &r, e) < 0)
		return -1;
	*ret = r;
	return 0;
}

const char *oci_ref_manifest(const struct oci_ref *r)
{
	return r->digest[0] ? r->digest : r->tag;
}

int oci_layout_parse(const char *s, char **ret_path, char ret_tag[OCI_TAG_MAX + 1], struct err *e)
{
	const char *p = s + strlen(OCI_LAYOUT_SCHEME), *slash, *colon;
	size_t n;
	char *path;

	if (!oci_is_layout(s))
		return err_set(e, EXIT_USAGE, "'%s' does not start with oci-layout:", s);
	slash = strrchr(p, '/');
	colon = strrchr(slash ? slash : p, ':');
	n = colon ? (size_t)(colon - p) : strlen(p);
	if (n == 0)
		return err_set(e, EXIT_USAGE, "'%s': no directory after oci-layout:", s);
	if (colon && !tag_is_valid(colon + 1))
		return err_set(e, EXIT_USAGE,
			       "'%s': the tag '%s' is not [A-Za-z0-9_][A-Za-z0-9._-]{0,127}", s,
			       colon + 1);
	if (!(path = strndup(p, n)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "oci-layout");
	snprintf(ret_tag, OCI_TAG_MAX + 1, "%s", colon ? colon + 1 : "latest");
	*ret_path = path;
	return 0;
}

/* ---- WWW-Authenticate ----------------------------------------------------------- */

/* RFC 9110 section 5.6.2's tchar. */
static bool is_tchar(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static const char *token_end(const char *p)
{
	while (is_tchar(*p))
		p++;
	return p;
}

bool oci_is_http_token(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && token_end(s) == s + n;
}

/* A token or quoted-string at P into OUT (cut to SIZE); the end, or NULL when malformed. */
static const char *param_value(const char *p, char *out, size_t size)
{
	size_t n = 0;

	if (*p != '"') {
		const char *end = token_end(p);

		if (end == p)
			return NULL;
		n = (size_t)(end - p) < size - 1 ? (size_t)(end - p) : size - 1;
		memcpy(out, p, n);
		out[n] = '\0';
		return end;
	}
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++;
		if (n + 1 < size)
			out[n++] = *p;
	}
	out[n] = '\0';
	return *p == '"' ? p + 1 : NULL;
}

/* The challenge being read, and whether it is the one kept. */
struct challenge_state {
	enum oci_scheme scheme; /* of the challenge being read */
	struct oci_challenge bearer, basic;
	bool has_bearer, has_basic;
};

/* SRC into DST, cut to SIZE: a longer realm or scope does not work, and says so then. */
static void copy_cut(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void param_keep(struct challenge_state *st, const char *name, size_t n, const char *v)
{
	struct oci_challenge *c = st->scheme == OCI_AUTH_BEARER ? &st->bearer : &st->basic;

	if (st->scheme == OCI_AUTH_NONE)
		return;
	if (n == 5 && strncasecmp(name, "realm", 5) == 0 && !c->realm[0])
		copy_cut(c->realm, sizeof(c->realm), v);
	else if (n == 7 && strncasecmp(name, "service", 7) == 0 && !c->service[0])
		copy_cut(c->service, sizeof(c->service), v);
	else if (n == 5 && strncasecmp(name, "scope", 5) == 0 && !c->scope[0])
		copy_cut(c->scope, sizeof(c->scope), v);
}

/* A new challenge's scheme at P (already a token of length N). */
static void challenge_begin(struct challenge_state *st, const char *p, size_t n)
{
	st->scheme = OCI_AUTH_NONE;
	if (n == 6 && strncasecmp(p, "bearer", 6) == 0 && !st->has_bearer) {
		st->scheme = OCI_AUTH_BEARER;
		st->has_bearer = true;
		st->bearer.scheme = OCI_AUTH_BEARER;
	} else if (n == 5 && strncasecmp(p, "basic", 5) == 0 && !st->has_basic) {
		st->scheme = OCI_AUTH_BASIC;
		st->has_basic = true;
		st->basic.scheme = OCI_AUTH_BASIC;
	}
}

/*
 * RFC 7235 section 4.1: WWW-Authenticate = 1#challenge; challenge = auth-scheme
 * [ 1*SP ( token68 / #auth-param ) ]; auth-param = token BWS "=" BWS ( token /
 * quoted-string ). An item after a comma is a parameter when a token is followed by '=',
 * else a new challenge.
 */
static int challenges_read(const char *v, struct challenge_state *st)
{
	const char *p = v;
	bool in_challenge = false;
	char value[1024];

	for (;;) {
		const char *name, *end;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			return 0;
		name = p;
		end = token_end(p);
		if (end == p)
			return -1;
		p = skip_ows(end);
		if (*p == '=' && in_challenge && p[1] != '=' && p[1] != ',' && p[1]) {
			p = param_value(skip_ows(p + 1), value, sizeof(value));
			if (!p)
				return -1;
			param_keep(st, name, (size_t)(end - name), value);
			continue;
		}
		if (*p == '=')
			return -1;
		/* A scheme; a token68 may follow it ("Basic dXNlcg=="): skipped. */
		challenge_begin(st, name, (size_t)(end - name));
		in_challenge = true;
		if (*p && *p != ',') {
			const char *t = p;

			while (isalnum((unsigned char)*t) || (*t && strchr("-._~+/", *t)))
				t++;
			if (t != p) {
				while (*t == '=')
					t++;
				t = skip_ows(t);
				if (*t == ',' || !*t)
					p = t;
			}
		}
	}
}

int oci_challenge_parse(const char *value, struct oci_challenge *ret, struct err *e)
{
	struct challenge_state st = {0};

	if (challenges_read(value, &st) < 0)
		return err_set(
			e, EXIT_UNREACHABLE,
			"the registry's WWW-Authenticate challenge does not parse (RFC 7235): '%.200s'",
			value);
	if (st.has_bearer) {
		if (!st.bearer.realm[0])
			return err_set(e, EXIT_UNREACHABLE,
				       "the registry's Bearer challenge names no realm: '%.200s'",
				       value);
		*ret = st.bearer;
		return 0;
	}
	if (st.has_basic) {
		*ret = st.basic;
		return 0;
	}
	return err_set(
		e, EXIT_UNREACHABLE,
		"the registry asks for an authentication scheme other than Basic or Bearer: '%.200s'",
		value);
}

/* ---- the token answer ------------------------------------------------------------ */

/* A token is sent in a header: visible ASCII only (RFC 6750 section 2.1's b64token, wider). */
static bool token_is_printable(const char *t)
{
	for (; *t; t++)
		if ((unsigned char)*t <= ' ' || (unsigned char)*t >= 0x7f)
			return false;
	return true;
}

int oci_token_parse(const char *buf, size_t len, char **ret_token, unsigned *ret_expires_s,
		    struct err *e)
{
	_cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new_ex(16);
	_cleanup_(json_object_putp) json_object *root = NULL;
	json_object *t = NULL, *exp = NULL;
	const char *token;
	int64_t expires = OCI_TOKEN_DEFAULT_EXPIRY_S;
	char *copy;

	if (!tok || len > OCI_TOKEN_ANSWER_MAX)
		return err_set(e, EXIT_UNREACHABLE, "the token answer is over %u bytes",
			       OCI_TOKEN_ANSWER_MAX);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len || !json_object_is_type(root, json_type_object))
		return err_set(e, EXIT_UNREACHABLE, "the token answer is not a JSON object");
	if (!json_object_object_get_ex(root, "token", &t) ||
	    !json_object_is_type(t, json_type_string))
		t = NULL;
	if ((!t || json_object_get_string_len(t) == 0) &&
	    json_object_object_get_ex(root, "access_token", &t) &&
	    !json_object_is_type(t, json_type_string))
		t = NULL;
	if (!t || json_object_get_string_len(t) == 0)
		return err_set(e, EXIT_UNREACHABLE,
			       "the token answer has no \"token\" or \"access_token\" string");
	token = json_object_get_string(t);
	if (strlen(token) != (size_t)json_object_get_string_len(t) || !token_is_printable(token))
		return err_set(e, EXIT_UNREACHABLE,
			       "the token answer's token holds a character a header cannot carry");
	if (json_object_object_get_ex(root, "expires_in", &exp)) {
		if (!json_object_is_type(exp, json_type_int) ||
		    (expires = json_object_get_int64(exp)) <= 0 || expires > 86400 * 366)
			return err_set(
				e, EXIT_UNREACHABLE,
				"the token answer's \"expires_in\" is not a positive number of seconds");
	}
	if (!(copy = strdup(token)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "token");
	*ret_token = copy;
	*ret_expires_s = (unsigned)expires;
	return 0;
}
