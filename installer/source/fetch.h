/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Downloads with libcurl: http://, https:// and file:// base URLs, mirrors
 * tried in order, transient faults retried with exponential backoff and
 * jitter (honouring Retry-After) inside one total time budget, resume of
 * partial files, and progress for long transfers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/source.h"

struct fetcher;
struct tail;

/* What one attempt against one mirror came to. */
enum fetch_result {
	FETCH_OK = 0,
	FETCH_TRANSIENT = -1, /* worth trying again later (reset, 5xx, timeout) */
	FETCH_PERMANENT = -2, /* this mirror will not do (bad signature, bad digest, TLS) */
	/*
	 * Permanent too: the mirror answered that the file is not there (HTTP 403, 404 or
	 * 410; no such file:// path). At every mirror, that is a wrong URL, not an outage.
	 */
	FETCH_MISSING = -3,
};

/* fetch_mirrors: every mirror answered FETCH_MISSING. */
#define FETCH_ALL_MISSING (-2)

/*
 * One attempt at BASE (a mirror's base URL). Fills e and returns a
 * fetch_result. USERDATA is the caller's.
 */
typedef enum fetch_result (*fetch_attempt_fn)(struct fetcher *f, const char *base, void *userdata,
					      struct err *e);

_must_check_ int fetcher_new(const struct fetch_opts *opts, struct fetcher **ret, struct err *e);
void fetcher_free(struct fetcher *f);
DEFINE_POINTER_CLEANUP(struct fetcher, fetcher_free)

/* One fetch over the mirrors: where, starting where, and the attempt to make at each. */
struct fetch_request {
	char *const *bases; /* the mirrors' base URLs */
	size_t n_bases;
	size_t first; /* the index of the mirror to try first */
	fetch_attempt_fn attempt;
	void *userdata; /* the attempt's */
};

/*
 * Runs Q's attempt against Q's mirrors, starting with Q->first, in rounds
 * separated by backoff, until one succeeds, every mirror failed permanently,
 * the retries are spent or the time budget is. Each attempt may take 1/K of
 * what is left of the budget, K the mirrors not yet retired. Returns 0 and the
 * index of the mirror that succeeded in *ret_mirror, or -1: EXIT_VERIFY when a
 * mirror served content that failed verification, else EXIT_UNREACHABLE, with
 * a message naming each mirror's last cause; FETCH_ALL_MISSING (EXIT_UNREACHABLE)
 * when every mirror answered that the file is not there.
 */
_must_check_ int fetch_mirrors(struct fetcher *f, const struct fetch_request *q, size_t *ret_mirror,
			       struct err *e);

/* Joins a base URL and a relative path with exactly one '/'. NULL on ENOMEM. */
char *fetch_url_join(const char *base, const char *rel);

/*
 * Fetches URL into memory, at most MAX bytes. Returns FETCH_OK with a
 * NUL-terminated malloc'd buffer, or another fetch_result with e set.
 */
_must_check_ enum fetch_result fetch_to_memory(struct fetcher *f, const char *url, size_t max,
					       char **ret_buf, size_t *ret_len, struct err *e);

/*
 * Asks whether URL is there without fetching it: a HEAD request, a stat for file://.
 * FETCH_OK when it is (and, when the answer gives its length, it has SIZE bytes);
 * FETCH_MISSING when the mirror answered that it is not; else another fetch_result
 * with e set (a length other than SIZE: FETCH_PERMANENT, EXIT_VERIFY).
 */
_must_check_ enum fetch_result fetch_probe(struct fetcher *f, const char *url, uint64_t size,
					   struct err *e);

/* What a response said besides its body: the header callback's record of the last one. */
struct fetch_http_answer {
	long status;
	char www_authenticate[2048]; /* every WWW-Authenticate, joined by ", " */
	char digest[80];	     /* Docker-Content-Digest */
	char content_type[128];
	char location[2048];
	char effective_url[2048]; /* where the last response came from, after redirects */
	bool has_length;	  /* Content-Length, when given */
	uint64_t length;
};

/*
 * What a fetcher's next transfers carry besides a plain GET, for a registry's API
 * (source/oci.c). Credentials go through libcurl's own authentication only
 * (CURLOPT_HTTPAUTH with CURLOPT_USERNAME/PASSWORD or CURLOPT_XOAUTH2_BEARER), never a
 * hand-made Authorization header, so that libcurl does not send them on to another
 * host after a redirect (CURLOPT_UNRESTRICTED_AUTH 0).
 */
struct fetch_http {
	const char *method;		 /* "HEAD", "PUT", "POST"; NULL: GET */
	const char *const *headers;	 /* "Name: value" each, NULL-ended; or NULL */
	const char *username, *password; /* Basic */
	const char *bearer;		 /* or a Bearer token */
	const void *body;		 /* a request body from memory, or NULL */
	size_t body_len;
	const char *ca_file;		  /* trusted instead of fetch_opts' ca_file, or NULL */
	struct fetch_http_answer *answer; /* filled from each response; may be NULL */
	bool no_proxy;	  /* straight to the host, whatever *_proxy says (a link-local service) */
	bool no_redirect; /* a 3xx is the answer, not followed (a body must not follow it) */
};

/*
 * Whether URLs A and B are of one origin (RFC 6454: scheme, host and port, a scheme's
 * default port filled in, case-insensitive). False for a URL that does not parse or that
 * carries userinfo.
 */
bool fetch_same_origin(const char *a, const char *b);

/* F's next transfers carry H (borrowed until the next call; NULL: plain again). */
void fetch_http_set(struct fetcher *f, const struct fetch_http *h);

/* A package download into a partial file, carried by the caller across attempts and mirrors. */
struct fetch_file {
	int fd;		    /* the partial file, opened O_RDWR: resumed after its bytes */
	uint64_t size;	    /* what the signed index promises */
	const char *sha256; /* ditto */
	struct tail *tail;  /* told of every change of the file's length; may be NULL */
	uint64_t net;	    /* bytes received from the network: each call adds its own */
	/*
	 * Who wrote the bytes now in the file ("" when it is empty): a mirror's base URL, or
	 * "a partial download left by an earlier run". Names the source of bad bytes.
	 */
	char origin[512];
};

/*
 * Downloads URL (on MIRROR, a base URL) into FF->fd, resuming after the bytes already
 * there, and checks that the result has FF's size and SHA-256. A file that fails the
 * check after a resume is not blamed on MIRROR: it is emptied and fetched once more from
 * byte 0 from MIRROR, and the log names who served the bad bytes. A whole file from MIRROR
 * that fails is FETCH_PERMANENT with EXIT_VERIFY, and FD is left empty. FF->tail (may be
 * NULL) is told of every change of the file's length, for a reader following it.
 */
_must_check_ enum fetch_result fetch_to_file(struct fetcher *f, const char *mirror, const char *url,
					     struct fetch_file *ff, struct err *e);
