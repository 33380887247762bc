// SPDX-License-Identifier: Apache-2.0
/*
 * The registry client (oci.h): one repository on one endpoint, its requests sent
 * anonymously first and, on a 401, again with what the challenge asks for: Basic with
 * the host's credentials, or a Bearer token from the realm (distribution's token spec,
 * https://distribution.github.io/distribution/spec/auth/token/; the OAuth2 refresh-token
 * form for an identity token, .../spec/auth/oauth/). Credentials travel only through
 * libcurl's own authentication (fetch.h's struct fetch_http), never to another host.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "source/oci.h"
#include "util/log.h"

/* A token is renewed this long before the registry would refuse it. */
#define TOKEN_SLACK_NS (5ull * 1000000000u)
#define OCI_CLIENT_ID "nvidia-driver-installer"

struct oci_client {
	char *endpoint, *api; /* API: ENDPOINT/v2/NAME/ */
	char *host, *name, *actions, *ca_file;
	char *username, *password, *identity_token; /* copies; NULL: none */
	char **headers;				    /* copies, NULL-ended, or NULL */
	size_t n_headers;
	bool send_basic; /* the registry asked for Basic */
	char *token;	 /* the Bearer token, or NULL */
	uint64_t token_expiry_ns;
	struct oci_challenge challenge; /* the last Bearer challenge */
	bool primed;			/* CHALLENGE is a kept one: ask for a token first */
};

static char *dup_or_null(const char *s, bool *failed)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*failed = true;
	return d;
}

int oci_client_new(const struct oci_client_opts *o, struct oci_client **ret, struct err *e)
{
	_cleanup_(oci_client_freep) struct oci_client *c = calloc(1, sizeof(*c));
	bool failed = false;

	if (!c)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	c->endpoint = dup_or_null(o->endpoint, &failed);
	c->host = dup_or_null(o->host, &failed);
	c->name = dup_or_null(o->name, &failed);
	c->actions = dup_or_null(o->actions ? o->actions : "pull", &failed);
	c->ca_file = dup_or_null(o->ca_file, &failed);
	c->username = dup_or_null(o->username, &failed);
	c->password = dup_or_null(o->password, &failed);
	c->identity_token = dup_or_null(o->identity_token, &failed);
	while (o->headers && o->headers[c->n_headers])
		c->n_headers++;
	if (c->n_headers && !(c->headers = calloc(c->n_headers + 1, sizeof(char *))))
		failed = true;
	for (size_t i = 0; c->headers && i < c->n_headers; i++)
		c->headers[i] = dup_or_null(o->headers[i], &failed);
	if (failed || asprintf(&c->api, "%s%s/%s/", o->endpoint, o->override_path ? "" : "/v2",
			       o->name) < 0) {
		c->api = NULL;
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	}
	*ret = TAKE_PTR(c);
	return 0;
}

/* A secret's bytes are wiped before they are freed. */
void oci_client_free(struct oci_client *c)
{
	if (!c)
		return;
	free(c->endpoint);
	free(c->api);
	free(c->host);
	free(c->name);
	free(c->actions);
	free(c->ca_file);
	for (size_t i = 0; c->headers && i < c->n_headers; i++)
		free(c->headers[i]);
	free(c->headers);
	free(c->username);
	str_free_wiped(c->password);
	str_free_wiped(c->identity_token);
	str_free_wiped(c->token);
	free(c);
}

char *oci_client_url(const struct oci_client *c, const char *path)
{
	char *url;

	if (strncasecmp(path, "https://", 8) == 0 || strncasecmp(path, "http://", 7) == 0)
		return strdup(path);
	if (asprintf(&url, "%s%s", c->api, path) < 0)
		return NULL;
	return url;
}

void oci_response_done(struct oci_response *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

/* RFC 3986's percent-encoding of S (all but the unreserved characters) onto B. */
static int append_encoded(struct strbuf *b, const char *s)
{
	for (; *s; s++) {
		char hex[4];

		if (isalnum((unsigned char)*s) || strchr("-._~", *s)) {
			if (strbuf_append(b, s, 1, SIZE_MAX) < 0)
				return -1;
			continue;
		}
		snprintf(hex, sizeof(hex), "%%%02X", (unsigned char)*s);
		if (strbuf_append(b, hex, 3, SIZE_MAX) < 0)
			return -1;
	}
	return 0;
}

static int append_str(struct strbuf *b, const char *s)
{
	return strbuf_append(b, s, strlen(s), SIZE_MAX) < 0 ? -1 : 0;
}

/* "service=S&scope=repository:NAME:ACTIONS" (the service left out when the challenge has none). */
static int token_query(const struct oci_client *c, struct strbuf *b)
{
	char scope[OCI_NAME_MAX + 64];

	/* Our own scope, not the challenge's: a pull asks for no more than pull. */
	snprintf(scope, sizeof(scope), "repository:%s:%s", c->name, c->actions);
	if (c->challenge.service[0] &&
	    (append_str(b, "service=") < 0 || append_encoded(b, c->challenge.service) < 0 ||
	     append_str(b, "&") < 0))
		return -1;
	return append_str(b, "scope=") < 0 || append_encoded(b, scope) < 0 ? -1 : 0;
}

/*
 * The realm must be https:// (an http:// realm only for an http:// registry, which only
 * a hosts.toml names): credentials go there.
 */
static bool realm_allowed(const struct oci_client *c, const char *realm)
{
	if (strncasecmp(realm, "https://", 8) == 0)
		return true;
	/*
	 * Over plain http (an endpoint hosts.toml names so) the challenge itself may be
	 * anyone's: its realm is taken only on the endpoint's own origin.
	 */
	return strncasecmp(realm, "http://", 7) == 0 &&
	       strncasecmp(c->endpoint, "http://", 7) == 0 && fetch_same_origin(realm, c->endpoint);
}

/* The token request: a GET with the query (Basic when C has credentials), or the OAuth2 POST. */
static enum fetch_result token_request(struct oci_client *c, struct fetcher *f, char **ret_buf,
				       size_t *ret_len, struct err *e)
{
	_cleanup_free_ char *form = NULL, *url = NULL;
	struct strbuf b = {0}, q = {0};
	static const char *const form_headers[] = {
		"Content-Type: application/x-www-form-urlencoded", NULL};
	struct fetch_http_answer a;
	/*
	 * Not redirected: the refresh token is in the POST's body, which libcurl would send on
	 * to wherever a 307 points (its own credentials it keeps to the host, a body it does not).
	 */
	struct fetch_http h = {.answer = &a, .ca_file = c->ca_file, .no_redirect = true};
	enum fetch_result r;

	if (token_query(c, &q) < 0)
		goto nomem;
	if (c->identity_token) {
		/* distribution's spec/auth/oauth.md: grant_type=refresh_token. */
		if (append_str(&b, "grant_type=refresh_token&client_id=" OCI_CLIENT_ID "&") < 0 ||
		    append_str(&b, q.buf) < 0 || append_str(&b, "&refresh_token=") < 0 ||
		    append_encoded(&b, c->identity_token) < 0)
			goto nomem;
		form = b.buf;
		h.method = "POST";
		h.headers = form_headers;
		h.body = form;
		h.body_len = b.len;
		url = strdup(c->challenge.realm);
	} else {
		h.username = c->username;
		h.password = c->password;
		if (asprintf(&url, "%s%c%s", c->challenge.realm,
			     strchr(c->challenge.realm, '?') ? '&' : '?', q.buf) < 0)
			url = NULL;
	}
	free(q.buf);
	if (!url)
		goto nomem_form;
	fetch_http_set(f, &h);
	r = fetch_to_memory(f, url, OCI_TOKEN_ANSWER_MAX, ret_buf, ret_len, e);
	fetch_http_set(f, NULL);
	if (form)
		explicit_bzero(form, b.len);
	if (r != FETCH_OK && a.status == 401)
		r = FETCH_PERMANENT;
	if (r == FETCH_OK && a.status >= 300 && a.status < 400) {
		free(*ret_buf);
		*ret_buf = NULL;
		err_set(e, EXIT_UNREACHABLE,
			"HTTP %ld: redirected to '%.300s', not followed (what is sent for a token stays with the host the registry named)",
			a.status, a.location);
		r = FETCH_PERMANENT;
	}
	return r;
nomem:
	free(q.buf);
nomem_form:
	str_free_wiped(b.buf);
	form = NULL;
	err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry '%s': token", c->host);
	return FETCH_PERMANENT;
}

/* A token for C's scope from the realm C's challenge names. */
static enum fetch_result token_fetch(struct oci_client *c, struct fetcher *f, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	unsigned expires_s;
	enum fetch_result r;
	char *token;

	if (!realm_allowed(c, c->challenge.realm)) {
		err_set(e, EXIT_UNREACHABLE,
			"registry '%s': the token realm '%.300s' is not https://: credentials are not sent there",
			c->host, c->challenge.realm);
		return FETCH_PERMANENT;
	}
	r = token_request(c, f, &buf, &len, e);
	if (r != FETCH_OK) {
		err_wrap(e, "registry '%s': the token endpoint '%.300s'", c->host,
			 c->challenge.realm);
		if (e->code == EXIT_UNREACHABLE && strstr(e->msg, "HTTP 401"))
			err_hint(
				e,
				"the token endpoint refused the credentials for %s: check the Secret in --registry-auth (NVIDIA_REGISTRY_AUTH)",
				c->host);
		else if (e->code != EXIT_VERIFY)
			err_hint(
				e,
				"registry '%s' sends its clients to that token endpoint: the node must reach it too (a firewall, proxy or DNS rule for its host), within --fetch-timeout",
				c->host);
		return r;
	}
	if (oci_token_parse(buf, len, &token, &expires_s, e) < 0) {
		err_wrap(e, "registry '%s': the token endpoint '%.300s' answered garbage", c->host,
			 c->challenge.realm);
		err_hint(
			e,
			"the token endpoint did not answer as the distribution token spec says (JSON with \"token\" or \"access_token\"): a proxy or login page in between, or the registry's auth service misconfigured; check the registry's token service");
		return FETCH_PERMANENT;
	}
	str_free_wiped(c->token);
	c->token = token;
	c->token_expiry_ns = now_ns() + (uint64_t)expires_s * 1000000000u;
	c->token_expiry_ns -= expires_s > 10 ? TOKEN_SLACK_NS : 0;
	log_kv(LOG_DEBUG, "registry", "token received", "host", c->host, "realm",
	       c->challenge.realm, U64("expires_in", expires_s), LOG_END);
	return FETCH_OK;
}

/* The 401 to credentials C sent, or to a fresh token: permanent, with the fix. */
static enum fetch_result refused(const struct oci_client *c, const char *url, struct err *e)
{
	bool anonymous = !c->username && !c->identity_token;

	err_set(e, EXIT_UNREACHABLE, "registry '%s' refused %s for '%s' (HTTP 401 to '%s')",
		c->host, anonymous ? "anonymous access" : "the credentials", c->name, url);
	if (anonymous)
		err_hint(
			e,
			"the registry wants credentials for %s: give them in --registry-auth (NVIDIA_REGISTRY_AUTH), a Docker config.json or the image pull Secret",
			c->host);
	else
		err_hint(
			e,
			"check the Secret in --registry-auth (NVIDIA_REGISTRY_AUTH): its entry for %s must name a user that may %s %s",
			c->host, c->actions, c->name);
	return FETCH_PERMANENT;
}

/*
 * A 401 with challenge A->www_authenticate to URL: answered (then FETCH_OK: send again),
 * or why not. FRESH: C's credentials or a token got within this request were refused.
 */
static enum fetch_result answer_401(struct oci_client *c, struct fetcher *f,
				    const struct fetch_http_answer *a, const char *url, bool fresh,
				    struct err *e)
{
	struct oci_challenge ch;

	/*
	 * A 401 from where a redirect led (blob storage) is that host's: its challenge is not
	 * the registry's, and answering it would hand the registry's credentials to its realm.
	 */
	if (a->effective_url[0] && !fetch_same_origin(a->effective_url, c->api)) {
		err_set(e, EXIT_UNREACHABLE,
			"registry '%s': '%.300s', where the registry redirected, answered HTTP 401: not answered with the registry's credentials",
			c->host, a->effective_url);
		return FETCH_PERMANENT;
	}
	if (fresh)
		return refused(c, url, e);
	err_clear(e);
	if (oci_challenge_parse(a->www_authenticate, &ch, e) < 0) {
		err_wrap(e, "registry '%s': '%s'", c->host, url);
		return FETCH_PERMANENT;
	}
	if (ch.scheme == OCI_AUTH_BASIC) {
		if (!c->username || c->send_basic)
			return refused(c, url, e);
		c->send_basic = true;
		return FETCH_OK;
	}
	c->challenge = ch;
	return token_fetch(c, f, e);
}

/* Q's transfer, once, with what C holds: the token, else Basic when asked for. */
static enum fetch_result send_once(struct oci_client *c, struct fetcher *f, const char *url,
				   const struct oci_request *q, struct oci_response *ret,
				   struct err *e)
{
	_cleanup_free_ const char **headers = calloc(c->n_headers + 3, sizeof(char *));
	char accept[256], ctype[256];
	size_t n = 0;
	struct fetch_http h = {.method = q->method,
			       .body = q->body,
			       .body_len = q->body_len,
			       .ca_file = c->ca_file,
			       .answer = &ret->hdr};
	enum fetch_result r;

	if (!headers) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		return FETCH_PERMANENT;
	}
	if (q->accept) {
		snprintf(accept, sizeof(accept), "Accept: %s", q->accept);
		headers[n++] = accept;
	}
	if (q->content_type) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s", q->content_type);
		headers[n++] = ctype;
	}
	h.headers = headers;
	/*
	 * Credentials and hosts.toml's headers go only to the endpoint's own origin: never to
	 * another host an answer names (an upload's Location), nor to plain http from https.
	 */
	if (fetch_same_origin(url, c->api)) {
		for (size_t i = 0; i < c->n_headers; i++)
			headers[n++] = c->headers[i];
		if (c->token) {
			h.bearer = c->token;
		} else if (c->send_basic) {
			h.username = c->username;
			h.password = c->password;
		}
	}
	oci_response_done(ret);
	fetch_http_set(f, &h);
	r = fetch_to_memory(f, url, q->max, &ret->body, &ret->len, e);
	fetch_http_set(f, NULL);
	ret->status = ret->hdr.status;
	if (q->method && strcmp(q->method, "HEAD") == 0 && r == FETCH_OK)
		oci_response_done(ret);
	return r;
}

void oci_client_auth_get(const struct oci_client *c, char *buf, size_t size)
{
	const struct oci_challenge *ch = &c->challenge;

	if (c->token && !strpbrk(ch->realm, "\t\n") && !strpbrk(ch->service, "\t\n"))
		str_fmt_cut(buf, size, "bearer\t%s\t%s", ch->realm, ch->service);
	else
		snprintf(buf, size, "%s", c->send_basic ? "basic" : "");
}

void oci_client_auth_prime(struct oci_client *c, const char *auth)
{
	const char *realm, *service;

	if (strcmp(auth, "basic") == 0 && c->username) {
		c->send_basic = true;
		return;
	}
	if (strncmp(auth, "bearer\t", 7) != 0 || !(service = strchr(auth + 7, '\t')))
		return;
	realm = auth + 7;
	if ((size_t)(service - realm) >= sizeof(c->challenge.realm) ||
	    strlen(service + 1) >= sizeof(c->challenge.service))
		return;
	memset(&c->challenge, 0, sizeof(c->challenge));
	c->challenge.scheme = OCI_AUTH_BEARER;
	memcpy(c->challenge.realm, realm, (size_t)(service - realm));
	snprintf(c->challenge.service, sizeof(c->challenge.service), "%s", service + 1);
	c->primed = true;
}

/*
 * An expired token is renewed before it is sent, and a primed client asks for its first
 * token before its first request. FRESH: a token was got that a 401 means is refused.
 */
static enum fetch_result token_current(struct oci_client *c, struct fetcher *f, bool *fresh,
				       struct err *e)
{
	enum fetch_result r;

	if (c->primed) {
		struct err ignored;

		/* A kept challenge that no longer works: the registry is asked anonymously. */
		c->primed = false;
		err_clear(&ignored);
		if (token_fetch(c, f, &ignored) != FETCH_OK)
			log_kv(LOG_DEBUG, "registry", "the kept challenge got no token", "host",
			       c->host, "reason", ignored.msg, LOG_END);
		return FETCH_OK;
	}

	if (!c->token || now_ns() < c->token_expiry_ns)
		return FETCH_OK;
	str_free_wiped(c->token);
	c->token = NULL;
	r = token_fetch(c, f, e);
	*fresh = r == FETCH_OK;
	return r;
}

enum fetch_result oci_send(struct oci_client *c, struct fetcher *f, const struct oci_request *q,
			   struct oci_response *ret, struct err *e)
{
	_cleanup_free_ char *url = oci_client_url(c, q->path);
	bool fresh = false;
	enum fetch_result r;

	memset(ret, 0, sizeof(*ret));
	if (!url) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		return FETCH_PERMANENT;
	}
	if ((r = token_current(c, f, &fresh, e)) != FETCH_OK)
		return r;
	for (;;) {
		bool had_basic = c->send_basic;

		r = send_once(c, f, url, q, ret, e);
		if (r == FETCH_OK || ret->status != 401)
			return r;
		oci_response_done(ret);
		r = answer_401(c, f, &ret->hdr, url, fresh || had_basic, e);
		if (r != FETCH_OK)
			return r;
		fresh = true;
	}
}

enum fetch_result oci_blob_to_file(struct oci_client *c, struct fetcher *f, const char *mirror,
				   struct fetch_file *ff, struct err *e)
{
	_cleanup_free_ char *path = NULL, *url = NULL;
	bool fresh = false;
	enum fetch_result r;

	if (asprintf(&path, "blobs/sha256:%s", ff->sha256) < 0 ||
	    !(url = oci_client_url(c, path))) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		return FETCH_PERMANENT;
	}
	if ((r = token_current(c, f, &fresh, e)) != FETCH_OK)
		return r;
	for (;;) {
		struct fetch_http_answer a = {0};
		struct fetch_http h = {.ca_file = c->ca_file,
				       .headers = (const char *const *)c->headers,
				       .answer = &a};
		bool had_basic = c->send_basic;

		if (c->token) {
			h.bearer = c->token;
		} else if (c->send_basic) {
			h.username = c->username;
			h.password = c->password;
		}
		fetch_http_set(f, &h);
		r = fetch_to_file(f, mirror, url, ff, e);
		fetch_http_set(f, NULL);
		if (r == FETCH_OK || a.status != 401)
			return r;
		r = answer_401(c, f, &a, url, fresh || had_basic, e);
		if (r != FETCH_OK)
			return r;
		fresh = true;
	}
}
