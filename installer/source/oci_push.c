// SPDX-License-Identifier: Apache-2.0
/*
 * mirror --to oci://: a repository pushed to a registry through the distribution API
 * (https://github.com/opencontainers/distribution-spec/blob/v1.1.0/spec.md, "Push"), with
 * the client of oci.h (its challenge and token dance, for repository:NAME:pull,push). A blob
 * the registry has (HEAD) is not sent again; one it lacks goes up monolithically: a POST to
 * blobs/uploads/ answered 202 with a Location (relative or absolute), then a PUT of the
 * whole blob to that Location with ?digest= ("Pushing a blob monolithically", the POST then
 * PUT form), answered 201 with the Docker-Content-Digest asked for. The manifest is PUT by
 * tag last. Each call is one fetch_mirrors round over the one registry: retries and the
 * time budget as for any transfer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "source/oci.h"
#include "source/oci_config.h"
#include "util/log.h"

struct oci_push {
	struct oci_ref ref;
	char *endpoint; /* https://HOST[:PORT] */
	struct fetcher *f;
	struct oci_client *client;
	char held_sha256[65]; /* the manifest the tag named when oci_push_held asked, or "" */
};

int oci_push_new(const struct source_opts *o, const char *ref, struct oci_push **ret, struct err *e)
{
	_cleanup_(oci_push_freep) struct oci_push *p = calloc(1, sizeof(*p));
	_cleanup_(oci_auth_files_freep) struct oci_auth_files *auth = NULL;
	char *const default_auth[] = {(char *)SOURCE_REGISTRY_AUTH_DEFAULT};
	bool deflt = o->registry.n_auth_files == 0;
	struct oci_cred cred = {0};
	int found, r;

	if (!p)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	if (oci_ref_parse(ref, &p->ref, e) < 0)
		return err_wrap(e, "mirror: --to");
	if (!p->ref.tag[0])
		return err_set(
			e, EXIT_USAGE,
			"mirror: --to '%s': a push names a tag, not a digest (the registry computes the digest)",
			ref);
	if (oci_auth_files_load(deflt ? default_auth : o->registry.auth_files,
				deflt ? 1 : o->registry.n_auth_files, deflt, &auth, e) < 0)
		return -1;
	found = oci_auth_lookup(auth, p->ref.host, p->ref.name, &cred);
	if (found < 0 || asprintf(&p->endpoint, "https://%s", p->ref.host) < 0) {
		p->endpoint = NULL;
		oci_cred_done(&cred);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	}
	r = oci_client_new(&(struct oci_client_opts){.endpoint = p->endpoint,
						     .host = p->ref.host,
						     .name = p->ref.name,
						     .actions = "pull,push",
						     .username = cred.username,
						     .password = cred.password,
						     .identity_token = cred.identity_token},
			   &p->client, e);
	oci_cred_done(&cred);
	if (r < 0 || fetcher_new(&o->fetch, &p->f, e) < 0)
		return -1;
	log_kv(LOG_DEBUG, "mirror", "pushing to a registry", "host", p->ref.host, "name",
	       p->ref.name, "tag", p->ref.tag, "credentials", found ? "yes" : "none", LOG_END);
	*ret = TAKE_PTR(p);
	return 0;
}

void oci_push_free(struct oci_push *p)
{
	if (!p)
		return;
	oci_client_free(p->client);
	fetcher_free(p->f);
	free(p->endpoint);
	free(p);
}

const char *oci_push_tag(const struct oci_push *p)
{
	return p->ref.tag;
}

/* One call: ATTEMPT over the registry, with retries inside the time budget. */
static int push_call(struct oci_push *p, fetch_attempt_fn attempt, void *ud, struct err *e)
{
	char *const bases[] = {p->endpoint};
	size_t mirror;

	if (fetch_mirrors(p->f,
			  &(struct fetch_request){
				  .bases = bases, .n_bases = 1, .attempt = attempt, .userdata = ud},
			  &mirror, e) == 0)
		return 0;
	/* The rounds' fix speaks of --repo, a source's; here the registry is --to. */
	if (strstr(e->hint, "--repo"))
		snprintf(
			e->hint, sizeof(e->hint),
			"check --to and this machine's network to %s (its CA in --ca-file, credentials in --registry-auth)",
			p->ref.host);
	return -1;
}

/* A 2xx answer with a status other than WANT: the registry does not speak the protocol. */
static enum fetch_result unexpected(const struct oci_push *p, const char *what,
				    const struct oci_response *a, long want, struct err *e)
{
	err_set(e, EXIT_UNREACHABLE,
		"registry '%s': %s for '%s' answered HTTP %ld, not %ld as the distribution spec has it",
		p->ref.host, what, p->ref.name, a->status, want);
	return FETCH_PERMANENT;
}

/* ---- what the tag holds ---- */

/* Bytes read: malloc'd, NUL-terminated. */
struct bytes {
	char *buf;
	size_t len;
};

struct held_call {
	struct oci_push *p;
	struct bytes json, sig;
	bool foreign; /* the tag names what is not a repository of ours */
};

/* Blob HEX of the repository into memory (at most MAX), checked against its digest. */
static enum fetch_result get_blob(struct oci_push *p, struct fetcher *f, const char *hex,
				  size_t max, struct bytes *ret, struct err *e)
{
	char path[96];
	struct oci_response a = {0};
	enum fetch_result r;

	snprintf(path, sizeof(path), "blobs/sha256:%s", hex);
	r = oci_send(p->client, f, &(struct oci_request){.path = path, .max = max}, &a, e);
	if (r != FETCH_OK)
		return r;
	if (oci_sha256_is(a.body, a.len, hex) != 1) {
		oci_response_done(&a);
		err_set(e, EXIT_VERIFY, "registry '%s': blob sha256:%s of '%s' is other bytes",
			p->ref.host, hex, p->ref.name);
		return FETCH_PERMANENT;
	}
	free(ret->buf);
	ret->buf = a.body;
	ret->len = a.len;
	return FETCH_OK;
}

static enum fetch_result held_attempt(struct fetcher *f, const char *base, void *ud, struct err *e)
{
	struct held_call *h = ud;
	struct oci_push *p = h->p;
	_cleanup_(oci_manifest_freep) struct oci_manifest *m = NULL;
	struct oci_response a = {0};
	char path[OCI_TAG_MAX + 16];
	enum fetch_result r;
	struct err ie;

	(void)base;
	snprintf(path, sizeof(path), "manifests/%s", p->ref.tag);
	r = oci_send(p->client, f,
		     &(struct oci_request){
			     .path = path, .accept = OCI_MT_MANIFEST, .max = OCI_MANIFEST_MAX},
		     &a, e);
	if (r == FETCH_MISSING || (r != FETCH_OK && a.status == 404)) {
		err_clear(e);
		return FETCH_OK; /* nothing under the tag yet */
	}
	if (r != FETCH_OK)
		return r;
	if (sha256_hex_of(a.body, a.len, p->held_sha256) < 0) {
		oci_response_done(&a);
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		return FETCH_PERMANENT;
	}
	h->foreign = oci_manifest_parse(a.body, a.len, &m, &ie) < 0;
	oci_response_done(&a);
	if (h->foreign)
		return FETCH_OK;
	r = get_blob(p, f, m->index.sha256, REPO_INDEX_MAX, &h->json, e);
	if (r == FETCH_OK)
		r = get_blob(p, f, m->sig.sha256, VERIFY_SIG_MAX, &h->sig, e);
	return r;
}

int oci_push_held(struct oci_push *p, char **ret_json, size_t *ret_len, char **ret_sig,
		  size_t *ret_sig_len, struct err *e)
{
	struct held_call h = {.p = p};

	if (push_call(p, held_attempt, &h, e) < 0) {
		free(h.json.buf);
		free(h.sig.buf);
		return -1;
	}
	if (h.foreign) {
		free(h.json.buf);
		free(h.sig.buf);
		h = (struct held_call){.json.buf = strdup("")};
		if (!h.json.buf)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	}
	*ret_json = h.json.buf;
	*ret_len = h.json.len;
	*ret_sig = h.sig.buf;
	*ret_sig_len = h.sig.len;
	return 0;
}

/* ---- blobs ---- */

struct blob_call {
	struct oci_push *p;
	const char *sha256;
	const void *buf;
	uint64_t size;
	bool there;
};

static enum fetch_result head_attempt(struct fetcher *f, const char *base, void *ud, struct err *e)
{
	struct blob_call *b = ud;
	struct oci_response a = {0};
	char path[96];
	enum fetch_result r;

	(void)base;
	snprintf(path, sizeof(path), "blobs/sha256:%s", b->sha256);
	r = oci_send(b->p->client, f, &(struct oci_request){.method = "HEAD", .path = path}, &a, e);
	oci_response_done(&a);
	if (r == FETCH_MISSING || (r != FETCH_OK && a.status == 404)) {
		err_clear(e);
		b->there = false;
		return FETCH_OK;
	}
	/* One of another length is not this blob: sent again, the registry judges. */
	b->there = r == FETCH_OK && (!a.hdr.has_length || a.hdr.length == b->size);
	return r;
}

int oci_push_has_blob(struct oci_push *p, const char *sha256, uint64_t size, struct err *e)
{
	struct blob_call b = {.p = p, .sha256 = sha256, .size = size};

	if (push_call(p, head_attempt, &b, e) < 0)
		return -1;
	return b.there;
}

/* The POST's Location as a whole URL: an absolute one as it is, a path on the endpoint. */
static char *upload_url(const struct oci_push *p, const char *location, const char *sha256)
{
	char *url;
	const char *sep = strchr(location, '?') ? "&" : "?";
	bool absolute = strncasecmp(location, "https://", 8) == 0 ||
			strncasecmp(location, "http://", 7) == 0;

	if (asprintf(&url, "%s%s%s%sdigest=sha256:%s", absolute ? "" : p->endpoint,
		     absolute || location[0] == '/' ? "" : "/", location, sep, sha256) < 0)
		return NULL;
	return url;
}

/* A PUT whose answer must say it stored SHA256: PATH, BODY of LEN bytes of TYPE, WHAT it is. */
struct stored_put {
	const char *path, *type;
	const void *body;
	size_t len;
	const char *sha256, *what;
};

/*
 * Q's PUT: the answer must be 201, and a Docker-Content-Digest, when the registry gives
 * one, Q's digest.
 */
static enum fetch_result put_stored(struct oci_push *p, struct fetcher *f,
				    const struct stored_put *q, struct err *e)
{
	struct oci_response a = {0};
	enum fetch_result r;

	r = oci_send(p->client, f,
		     &(struct oci_request){.method = "PUT",
					   .path = q->path,
					   .content_type = q->type,
					   .body = q->body,
					   .body_len = q->len,
					   .max = 4096},
		     &a, e);
	oci_response_done(&a);
	if (r != FETCH_OK)
		return r;
	if (a.status != 201) {
		char step[96];

		snprintf(step, sizeof(step), "the %s's PUT", q->what);
		return unexpected(p, step, &a, 201, e);
	}
	if (a.hdr.digest[0] && (strncmp(a.hdr.digest, "sha256:", 7) != 0 ||
				strcmp(a.hdr.digest + 7, q->sha256) != 0)) {
		err_set(e, EXIT_VERIFY,
			"registry '%s': the %s of '%s:%s' was stored as %s, not sha256:%s (Docker-Content-Digest)",
			p->ref.host, q->what, p->ref.name, p->ref.tag, a.hdr.digest, q->sha256);
		return FETCH_PERMANENT;
	}
	return FETCH_OK;
}

static enum fetch_result upload_attempt(struct fetcher *f, const char *base, void *ud,
					struct err *e)
{
	struct blob_call *b = ud;
	struct oci_push *p = b->p;
	_cleanup_free_ char *url = NULL;
	struct oci_response a = {0};
	enum fetch_result r;

	(void)base;
	r = oci_send(p->client, f,
		     &(struct oci_request){.method = "POST", .path = "blobs/uploads/", .max = 4096},
		     &a, e);
	oci_response_done(&a);
	if (r != FETCH_OK)
		return r;
	if (a.status != 202 || !a.hdr.location[0])
		return unexpected(p, "the upload's POST (with a Location)", &a, 202, e);
	if (strncasecmp(a.hdr.location, "http://", 7) == 0 &&
	    strncasecmp(p->endpoint, "https://", 8) == 0) {
		err_set(e, EXIT_UNREACHABLE,
			"registry '%s': the upload's POST answered a Location on plain http://: refused, an https:// registry's upload never goes out in clear",
			p->ref.host);
		err_hint(
			e,
			"a proxy in front of the registry that terminates TLS must tell it so (X-Forwarded-Proto: https), or the registry's http.host must name https://");
		return FETCH_PERMANENT;
	}
	if (!(url = upload_url(p, a.hdr.location, b->sha256))) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		return FETCH_PERMANENT;
	}
	return put_stored(p, f,
			  &(struct stored_put){.path = url,
					       .type = "application/octet-stream",
					       .body = b->buf ? b->buf : "",
					       .len = (size_t)b->size,
					       .sha256 = b->sha256,
					       .what = "blob"},
			  e);
}

int oci_push_blob(struct oci_push *p, const char *sha256, const void *buf, uint64_t size,
		  struct err *e)
{
	struct blob_call b = {.p = p, .sha256 = sha256, .buf = buf, .size = size};

	if (push_call(p, upload_attempt, &b, e) < 0)
		return -1;
	log_kv(LOG_DEBUG, "mirror", "blob pushed", "host", p->ref.host, "name", p->ref.name,
	       "digest", sha256, U64("bytes", size), LOG_END);
	return 0;
}

/* ---- the manifest ---- */

struct manifest_call {
	struct oci_push *p;
	const char *buf;
	size_t len;
	char sha256[65];
};

static enum fetch_result manifest_attempt(struct fetcher *f, const char *base, void *ud,
					  struct err *e)
{
	struct manifest_call *m = ud;
	struct oci_push *p = m->p;
	char path[OCI_TAG_MAX + 16];

	(void)base;
	snprintf(path, sizeof(path), "manifests/%s", p->ref.tag);
	return put_stored(p, f,
			  &(struct stored_put){.path = path,
					       .type = OCI_MT_MANIFEST,
					       .body = m->buf,
					       .len = m->len,
					       .sha256 = m->sha256,
					       .what = "manifest"},
			  e);
}

int oci_push_manifest(struct oci_push *p, const char *buf, size_t len, char ret_sha256[65],
		      struct err *e)
{
	struct manifest_call m = {.p = p, .buf = buf, .len = len};

	if (sha256_hex_of(buf, len, m.sha256) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	/* The tag names these bytes already (oci_push_held saw them): nothing to switch. */
	if (strcmp(m.sha256, p->held_sha256) != 0 && push_call(p, manifest_attempt, &m, e) < 0)
		return -1;
	memcpy(ret_sha256, m.sha256, 65);
	return 0;
}
