/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A repository in an OCI registry or an OCI image layout directory
 * (docs/repository-format.md, "In an OCI registry"): the references that name one, the
 * client that talks the distribution API with its challenge and token dance, and the
 * manifest that lists the repository's files as blobs. The client is also the one
 * `mirror --to oci://` pushes with (source/oci_push.c): reference parsing, one
 * authenticated request for a scope, the manifest's parse. Internal to source/.
 *
 * The OCI distribution spec:
 *   https://github.com/opencontainers/distribution-spec/blob/v1.1.0/spec.md
 * The image spec (manifest, descriptor, layout):
 *   https://github.com/opencontainers/image-spec/tree/v1.1.0
 * The token flow: https://distribution.github.io/distribution/spec/auth/token/
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/fetch.h"
#include "source/oci_manifest.h"
#include "source/oci_names.h"
#include "source/source.h"

/* ---- the client: one repository on one registry endpoint ---- */

struct oci_client;

struct oci_client_opts {
	const char *endpoint; /* scheme://host[:port][/prefix], no trailing '/' */
	const char *host;     /* the HOST[:PORT] the reference names: for messages */
	const char *name;     /* the repository NAME */
	const char *actions;  /* the token scope's actions: "pull" or "pull,push" */
	/* hosts.toml's override_path: ENDPOINT is the API root itself (no "/v2" added) */
	bool override_path;
	/* credentials (source/oci_config.h's struct oci_cred); all NULL: anonymous */
	const char *username, *password, *identity_token;
	const char *ca_file;	    /* hosts.toml's ca for this endpoint, or NULL */
	const char *const *headers; /* hosts.toml's [header] lines, NULL-ended, or NULL */
};

/* Returns 0 and a new client, or -1 (ENOMEM). Nothing is asked until a request. */
_must_check_ int oci_client_new(const struct oci_client_opts *o, struct oci_client **ret,
				struct err *e);
void oci_client_free(struct oci_client *c);
DEFINE_POINTER_CLEANUP(struct oci_client, oci_client_free)

/* One request through the client (oci_send). */
struct oci_request {
	const char *method; /* "GET", "HEAD", "PUT", "POST"; NULL: GET */
	/* after ENDPOINT/v2/NAME/ ("manifests/latest", "blobs/sha256:..."), or a whole URL */
	const char *path;
	const char *accept;	  /* Accept, or NULL */
	const char *content_type; /* Content-Type of BODY, or NULL */
	const void *body;	  /* a request body from memory, or NULL */
	size_t body_len;
	size_t max; /* the most answer bytes kept */
};

/* What the registry answered (oci_send). */
struct oci_response {
	long status;
	char *body; /* NUL-terminated, malloc'd; NULL after HEAD */
	size_t len;
	struct fetch_http_answer hdr; /* Docker-Content-Digest, Content-Type, Location, length */
};
void oci_response_done(struct oci_response *r);

/*
 * Sends Q to C's registry over F, anonymously first; on 401 reads the challenge and
 * answers it: Basic with C's credentials, Bearer with a token from the realm for
 * "repository:NAME:ACTIONS" (asked with C's credentials as Basic when C has any), then
 * sends Q once more. A 401 to the credentials or a fresh token is "the registry refused
 * the credentials" (FETCH_PERMANENT, EXIT_UNREACHABLE, the fix). Returns FETCH_OK with
 * *RET (any 2xx), or another fetch_result with e set, naming the URL and the cause.
 */
_must_check_ enum fetch_result oci_send(struct oci_client *c, struct fetcher *f,
					const struct oci_request *q, struct oci_response *ret,
					struct err *e);

/*
 * Downloads blob sha256:SHA256 into FF (fetch_to_file: resumed with Range, checked
 * against FF's size and digest), with C's authentication; redirects to storage are
 * followed without the credentials. MIRROR names the source in messages.
 */
_must_check_ enum fetch_result oci_blob_to_file(struct oci_client *c, struct fetcher *f,
						const char *mirror, struct fetch_file *ff,
						struct err *e);

/*
 * How C's registry asked to be answered, as one line for a later client ("" when it asked
 * for nothing): written to BUF (SIZE bytes).
 */
void oci_client_auth_get(const struct oci_client *c, char *buf, size_t size);
/*
 * Primes C with AUTH (oci_client_auth_get's words from an earlier run): Basic is sent at
 * once, a Bearer token asked for before the first request; so a warm re-run asks the
 * registry once. A token the registry then refuses is renewed once, as any.
 */
void oci_client_auth_prime(struct oci_client *c, const char *auth);

/* The URL of PATH under C's repository ("ENDPOINT/v2/NAME/PATH"). NULL on ENOMEM. */
char *oci_client_url(const struct oci_client *c, const char *path);
