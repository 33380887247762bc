/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What names an OCI repository and what a registry says about access to it: the
 * references (oci://, oci-layout:), the WWW-Authenticate challenge and the token
 * endpoint's answer (oci_names.c). Internal to source/; oci.h includes it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "source/source.h"

/* ---- names (SPEC: oci://HOST[:PORT]/NAME[:TAG|@sha256:HEX], oci-layout:PATH[:TAG]) ---- */

#define OCI_SCHEME "oci://"
#define OCI_LAYOUT_SCHEME "oci-layout:"
/*
 * The distribution spec's limit on a repository name with its registry host: the
 * reference grammar of distribution/reference (reference.go, NameTotalLengthMax = 255).
 */
#define OCI_NAME_MAX 255
#define OCI_TAG_MAX 128
#define OCI_DIGEST_SIZE (sizeof("sha256:") + 64)

struct oci_ref {
	char host[OCI_NAME_MAX + 1];  /* HOST[:PORT] as written */
	char name[OCI_NAME_MAX + 1];  /* the repository NAME */
	char tag[OCI_TAG_MAX + 1];    /* the tag, "" when DIGEST names the manifest */
	char digest[OCI_DIGEST_SIZE]; /* "sha256:HEX" or "" */
};

/* Whether S names an oci:// or an oci-layout: repository. */
bool oci_is_registry(const char *s);
bool oci_is_layout(const char *s);

/*
 * Parses "oci://HOST[:PORT]/NAME[:TAG]" or "oci://HOST[:PORT]/NAME@sha256:HEX" (tag
 * "latest" when none). Returns 0 and *RET, or -1 with EXIT_USAGE naming the part that is
 * wrong (an upper-case or empty name component, "..", userinfo, a query, a bad tag, port
 * or digest).
 */
_must_check_ int oci_ref_parse(const char *s, struct oci_ref *ret, struct err *e);

/* The manifest a reference names: its tag or its digest. */
const char *oci_ref_manifest(const struct oci_ref *r);

/*
 * Parses "oci-layout:PATH[:TAG]" (the tag after the last ':' that follows the last '/';
 * "latest" when none). Returns 0, the path in the malloc'd *RET_PATH and the tag, or -1
 * with EXIT_USAGE.
 */
_must_check_ int oci_layout_parse(const char *s, char **ret_path, char ret_tag[OCI_TAG_MAX + 1],
				  struct err *e);

/* Whether S is "sha256:" and 64 lower-case hex digits. */
bool oci_digest_is_valid(const char *s);

/* Whether S is a token of RFC 9110 section 5.6.2 (one tchar or more), as a field name is. */
bool oci_is_http_token(const char *s);

/* ---- the WWW-Authenticate challenge (RFC 7235 section 4.1, RFC 6750 section 3) ---- */

enum oci_scheme {
	OCI_AUTH_NONE = 0,
	OCI_AUTH_BASIC,
	OCI_AUTH_BEARER,
};

struct oci_challenge {
	enum oci_scheme scheme;
	char realm[1024];
	char service[256];
	char scope[512];
};

/*
 * Reads the challenges of a WWW-Authenticate value (several headers joined by ", ", as
 * RFC 9110 section 5.3 allows) and keeps the one the client answers: Bearer when offered,
 * else Basic. Returns 0 and *RET; -1 with EXIT_UNREACHABLE when the value does not parse,
 * offers neither scheme, or a Bearer challenge has no realm.
 */
_must_check_ int oci_challenge_parse(const char *value, struct oci_challenge *ret, struct err *e);

/* ---- the token endpoint's answer (distribution's token spec, "Token Response Fields") ---- */

#define OCI_TOKEN_ANSWER_MAX (1u << 20)
#define OCI_TOKEN_DEFAULT_EXPIRY_S 60

/*
 * Reads a token answer: "token" or else "access_token" (printable ASCII: it goes into a
 * header), "expires_in" (seconds, default OCI_TOKEN_DEFAULT_EXPIRY_S). Returns 0 with a
 * malloc'd *RET_TOKEN, or -1 with EXIT_UNREACHABLE saying what is wrong with it.
 */
_must_check_ int oci_token_parse(const char *buf, size_t len, char **ret_token,
				 unsigned *ret_expires_s, struct err *e);
