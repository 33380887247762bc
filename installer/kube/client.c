// SPDX-License-Identifier: Apache-2.0
/*
 * kube/client: the in-cluster configuration, the token, and one call with its retries.
 * See kube/kube.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "build_info.h" /* INSTALLER_VERSION, INSTALLER_COMMIT: the Makefile makes it */
#include "kube/internal.h"
#include "util/dlib.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

#define USER_AGENT "nvidia-driver-installer/" INSTALLER_VERSION " (" INSTALLER_COMMIT ")"
/* A token is a JWT of a few KiB. */
#define TOKEN_MAX (64 * 1024)
/* One attempt's bounds, within what is left of its call's deadline. */
#define CONNECT_TIMEOUT_MS 5000L
#define ATTEMPT_TIMEOUT_MS 15000L

struct kube {
	struct kube_config c;
	CURL *curl;
	char *token;
	struct timespec token_mtime; /* of the file the token was read from */
	char errbuf[CURL_ERROR_SIZE];
	unsigned claim_version; /* resource.k8s.io's version that last answered (kube/api.c) */
};

/* ---- configuration --------------------------------------------------------------------- */

static int read_small(const char *dir, const char *name, char *buf, size_t size, struct err *e)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	size_t len;

	if (str_fmt(path, sizeof(path), "%s/%s", dir, name) < 0)
		return err_set(e, EXIT_USAGE, "%s/%s: the path is too long", dir, name);
	if (fs_read_path(path, size - 1, &text, &len, e) < 0)
		return -1;
	len = strcspn(text, "\n");
	text[len] = '\0';
	snprintf(buf, size, "%s", text);
	return 0;
}

int kube_config_in_cluster(const char *sa_dir, struct kube_config *c, struct err *e)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"),
		   *port = getenv("KUBERNETES_SERVICE_PORT");
	struct stat st;

	memset(c, 0, sizeof(*c));
	if (!host || !*host || !port || !*port) {
		err_set(e, EXIT_USAGE,
			"not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
		err_hint(e, "run the agent in the DaemonSet's pod, whose service account it uses");
		return -1;
	}
	if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    strpbrk(host, "/?#@ \t") ||
	    str_fmt(c->server, sizeof(c->server),
		    strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0)
		return err_set(
			e, EXIT_USAGE,
			"KUBERNETES_SERVICE_HOST '%.64s' and KUBERNETES_SERVICE_PORT '%.16s' are not a host and a port",
			host, port);
	if (str_fmt(c->ca_file, sizeof(c->ca_file), "%s/ca.crt", sa_dir) < 0 ||
	    str_fmt(c->token_file, sizeof(c->token_file), "%s/token", sa_dir) < 0)
		return err_set(e, EXIT_USAGE, "%s: the path is too long", sa_dir);
	if (stat(c->ca_file, &st) < 0 || !S_ISREG(st.st_mode)) {
		err_errno(e, EXIT_USAGE, errno ? errno : EINVAL,
			  "the service account's CA %s cannot be read", c->ca_file);
		err_hint(
			e,
			"the pod needs its service account token mounted (automountServiceAccountToken)");
		return -1;
	}
	if (read_small(sa_dir, "namespace", c->namespace, sizeof(c->namespace), e) < 0) {
		err_hint(
			e,
			"the pod needs its service account token mounted (automountServiceAccountToken)");
		return err_wrap(e, "the service account's namespace");
	}
	return 0;
}

/* ---- what a call's answer means --------------------------------------------------------- */

unsigned kube_backoff_ms(unsigned attempt)
{
	unsigned ms = KUBE_BACKOFF_FIRST_MS;

	for (unsigned i = 1; i < attempt && ms < KUBE_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms < KUBE_BACKOFF_MAX_MS ? ms : KUBE_BACKOFF_MAX_MS;
}

unsigned kube_retry_after_ms(const char *value)
{
	unsigned long s;
	char *end;

	if (!value)
		return 0;
	while (*value == ' ')
		value++;
	if (*value < '0' || *value > '9')
		return 0;
	errno = 0;
	s = strtoul(value, &end, 10);
	while (*end == ' ' || *end == '\r' || *end == '\n')
		end++;
	if (errno || *end)
		return 0;
	return s * 1000 > KUBE_BACKOFF_MAX_MS ? KUBE_BACKOFF_MAX_MS : (unsigned)(s * 1000);
}

bool kube_retryable(long status)
{
	return status == 0 || status == 429 || (status >= 500 && status <= 599);
}

int kube_query_escape(const char *s, char *buf, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9') || strchr("-._~", *p);

		if (n + (plain ? 1 : 3) >= size)
			return -1;
		if (plain) {
			buf[n++] = (char)*p;
		} else {
			buf[n++] = '%';
			buf[n++] = hex[*p >> 4];
			buf[n++] = hex[*p & 15];
		}
	}
	if (n >= size)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* ---- the client --------------------------------------------------------------------------- */

/* Reads the token again when its file changed since (or on FORCE). 0 or -1. */
static int token(struct kube *k, bool force, struct err *e)
{
	_cleanup_free_ char *text = NULL;
	struct stat st;
	size_t len;

	if (stat(k->c.token_file, &st) < 0)
		return err_errno(e, EXIT_USAGE, errno, "the service account's token %s",
				 k->c.token_file);
	if (!force && k->token && st.st_mtim.tv_sec == k->token_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == k->token_mtime.tv_nsec)
		return 0;
	if (fs_read_path(k->c.token_file, TOKEN_MAX, &text, &len, e) < 0)
		return err_wrap(e, "the service account's token");
	text[strcspn(text, "\r\n")] = '\0';
	if (!*text || strpbrk(text, " \t"))
		return err_set(e, EXIT_USAGE,
			       "the service account's token %s is empty or not a token",
			       k->c.token_file);
	free(k->token);
	k->token = TAKE_PTR(text);
	k->token_mtime = st.st_mtim;
	return 0;
}

struct kube *kube_new(const struct kube_config *c, struct err *e)
{
	struct kube *k;

	if (dlib_curl(e) < 0)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kube");
		return NULL;
	}
	k->c = *c;
	k->curl = sym_curl_easy_init();
	if (!k->curl) {
		free(k);
		err_set(e, EXIT_UNEXPECTED, "kube: curl_easy_init failed");
		return NULL;
	}
	return k;
}

unsigned *kube_claim_version(struct kube *k)
{
	return &k->claim_version;
}

void kube_free(struct kube *k)
{
	if (!k)
		return;
	sym_curl_easy_cleanup(k->curl);
	free(k->token);
	free(k);
}

void kube_reply_done(struct kube_reply *r)
{
	if (r->body)
		json_object_put(r->body);
	r->body = NULL;
}

struct answer {
	struct strbuf body;
	bool too_large;
	char retry_after[32];
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct answer *a = ud;
	size_t n = size * nmemb;
	/* Bounded here, while it arrives: a tenant's pods can make a list of any size. */
	int r = strbuf_append(&a->body, data, n, KUBE_BODY_MAX);

	a->too_large |= r == -EFBIG;
	return r < 0 ? 0 : n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct answer *a = ud;
	size_t n = size * nmemb;

	if (n > 12 && strncasecmp(data, "Retry-After:", 12) == 0)
		snprintf(a->retry_after, sizeof(a->retry_after), "%.*s", (int)(n - 12), data + 12);
	return n;
}

/*
 * libcurl calls it at least once a second, waiting or not: SIGTERM ends the attempt, unless
 * held (interrupt_hold: the agent's last write on its Node, after the signal).
 */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	(void)ud, (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return interrupt_ends_waits() ? 1 : 0; /* CURLE_ABORTED_BY_CALLBACK */
}

/*
 * One request, ended by DEADLINE (now_ns) at the latest; the answer's status into *STATUS
 * (0: none), its body into A.
 */
static CURLcode request_once(struct kube *k, const struct kube_request *q, const char *body,
			     uint64_t deadline, struct answer *a, long *status)
{
	uint64_t now = now_ns();
	long left_ms = deadline > now ? (long)((deadline - now) / 1000000) + 1 : 1;
	sigset_t saved;
	_cleanup_free_ char *auth = NULL, *ctype = NULL;
	struct curl_slist *h = NULL, *t;
	char url[sizeof(k->c.server) + 2048];
	CURLcode rc;

	*status = 0;
	if (str_fmt(url, sizeof(url), "%s%s", k->c.server, q->path) < 0 ||
	    asprintf(&auth, "Authorization: Bearer %s", k->token) < 0 ||
	    asprintf(&ctype, "Content-Type: %s",
		     q->content_type ? q->content_type : "application/json") < 0)
		return CURLE_OUT_OF_MEMORY;
	if (!(t = sym_curl_slist_append(h, auth)) || !(h = t) ||
	    !(t = sym_curl_slist_append(h, "Accept: application/json")) || !(h = t) ||
	    (body && (!(t = sym_curl_slist_append(h, ctype)) || !(h = t)))) {
		sym_curl_slist_free_all(h);
		return CURLE_OUT_OF_MEMORY;
	}
	sym_curl_easy_reset(k->curl);
	k->errbuf[0] = '\0';
	sym_curl_easy_setopt(k->curl, CURLOPT_URL, url);
	sym_curl_easy_setopt(k->curl, CURLOPT_ERRORBUFFER, k->errbuf);
	sym_curl_easy_setopt(k->curl, CURLOPT_PROTOCOLS_STR, "https");
	sym_curl_easy_setopt(k->curl, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(k->curl, CURLOPT_USERAGENT, USER_AGENT);
	sym_curl_easy_setopt(k->curl, CURLOPT_CAINFO, k->c.ca_file);
	/* The cluster's CA and nothing else: libcurl also loads CURLOPT_CAPATH, which its
	 * build sets by default (Debian's: --with-ca-path=/etc/ssl/certs) and
	 * curl_easy_reset puts back, so a certificate that any CA of the image's trust store
	 * issued for the address would pass as the API server's (test_kube's trust store). */
	sym_curl_easy_setopt(k->curl, CURLOPT_CAPATH, NULL);
	sym_curl_easy_setopt(k->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	sym_curl_easy_setopt(k->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	sym_curl_easy_setopt(k->curl, CURLOPT_CONNECTTIMEOUT_MS,
			     left_ms < CONNECT_TIMEOUT_MS ? left_ms : CONNECT_TIMEOUT_MS);
	sym_curl_easy_setopt(k->curl, CURLOPT_TIMEOUT_MS,
			     left_ms < ATTEMPT_TIMEOUT_MS ? left_ms : ATTEMPT_TIMEOUT_MS);
	sym_curl_easy_setopt(k->curl, CURLOPT_NOPROGRESS, 0L);
	sym_curl_easy_setopt(k->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	sym_curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, h);
	sym_curl_easy_setopt(k->curl, CURLOPT_CUSTOMREQUEST, q->method);
	if (body)
		sym_curl_easy_setopt(k->curl, CURLOPT_POSTFIELDS, body);
	sym_curl_easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, on_body);
	sym_curl_easy_setopt(k->curl, CURLOPT_WRITEDATA, a);
	sym_curl_easy_setopt(k->curl, CURLOPT_HEADERFUNCTION, on_header);
	sym_curl_easy_setopt(k->curl, CURLOPT_HEADERDATA, a);
	/* A signal then ends curl's wait at once, not at its next progress call. */
	interrupt_wake_begin(&saved);
	rc = sym_curl_easy_perform(k->curl);
	interrupt_wake_end(&saved);
	if (rc == CURLE_OK)
		sym_curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, status);
	sym_curl_slist_free_all(h);
	return rc;
}

/* The API server's message from a Status body, or "". */
static const char *status_message(json_object *body)
{
	json_object *m;

	return body && json_object_object_get_ex(body, "message", &m) &&
			       json_object_is_type(m, json_type_string)
		       ? json_object_get_string(m)
		       : "";
}

/* Sleeps MS, or less when SIGTERM or SIGINT comes (a loop may keep them blocked: slices). */
static void sleep_ms(unsigned ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000, now;

	while (!interrupt_ends_waits() && (now = now_ns()) < end) {
		uint64_t slice = end - now < 50000000u ? end - now : 50000000u;
		struct timespec ts = {.tv_nsec = (long)slice};

		nanosleep(&ts, NULL);
	}
}

/* The error of a call that failed: its last attempt's CURLcode RC and reply R. Returns -1. */
static int call_failed(struct kube *k, const struct kube_request *q, const struct kube_reply *r,
		       CURLcode rc, struct err *e)
{
	/* Whatever the attempt's end (aborted, cut by EINTR), the run stops: said so. */
	if (interrupt_ends_waits() && interrupt_check(e, "the API server answered") < 0)
		return err_wrap(e, "kube: %s %s", q->method, q->path);
	if (r->too_large)
		return err_set(
			e, EXIT_UNEXPECTED,
			"kube: %s %s: the answer is larger than the client's bound of %u MiB",
			q->method, q->path, KUBE_BODY_MAX >> 20);
	if (rc != CURLE_OK) {
		dlib_err_curl(e, EXIT_UNREACHABLE, (int)rc, k->errbuf, "kube: %s %s (%u attempt%s)",
			      q->method, q->path, r->attempts, r->attempts == 1 ? "" : "s");
		if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
			err_hint(
				e,
				"the service account's ca.crt must verify the API server's certificate (KUBERNETES_SERVICE_HOST as its name)");
		return -1;
	}
	err_set(e,
		r->status == 401 || r->status == 403 ? EXIT_USAGE
		: kube_retryable(r->status)	     ? EXIT_UNREACHABLE
						     : EXIT_UNEXPECTED,
		"kube: %s %s: %ld%s%s", q->method, q->path, r->status,
		*status_message(r->body) ? ": " : "", status_message(r->body));
	if (r->status == 401 || r->status == 403)
		err_hint(
			e,
			"the DaemonSet's service account and its ClusterRole must allow this call");
	return -1;
}

int kube_call(struct kube *k, const struct kube_request *q, struct kube_reply *r, struct err *e)
{
	const char *body =
		q->body ? json_object_to_json_string_ext(q->body, JSON_C_TO_STRING_PLAIN) : NULL;
	unsigned deadline_s = k->c.deadline_s ? k->c.deadline_s : KUBE_CALL_DEADLINE_S;
	uint64_t deadline = now_ns() + (uint64_t)deadline_s * 1000000000ull;
	bool reauth = false;
	CURLcode rc = CURLE_OK;

	memset(r, 0, sizeof(*r));
	if (token(k, false, e) < 0)
		return -1;
	for (;;) {
		struct answer a = {0};
		unsigned wait_ms;

		if (interrupt_ends_waits() && interrupt_check(e, "the API server answered") < 0)
			return err_wrap(e, "kube: %s %s", q->method, q->path);
		r->attempts++;
		rc = request_once(k, q, body, deadline, &a, &r->status);
		kube_reply_done(r);
		r->too_large = a.too_large;
		if (rc == CURLE_OK && a.body.buf)
			r->body =
				q->keep && r->status >= 200 && r->status <= 299
					? kube_keep_parse(a.body.buf, a.body.len, q->keep, &r->kept)
					: json_tokener_parse(a.body.buf);
		free(a.body.buf);
		if (rc == CURLE_OK && r->status >= 200 && r->status <= 299)
			return 0;
		/* A rotated token: the kubelet replaced the file; once. */
		if (r->status == 401 && !reauth) {
			reauth = true;
			if (token(k, true, e) < 0)
				return -1;
			continue;
		}
		/* Trust is never relaxed nor asked again: a certificate that does not verify
		 * will not verify on the next attempt either. */
		if (rc == CURLE_OUT_OF_MEMORY || rc == CURLE_PEER_FAILED_VERIFICATION ||
		    rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM || a.too_large ||
		    !kube_retryable(r->status) || (r->status == 429 && q->no_retry_429))
			break;
		wait_ms = kube_retry_after_ms(a.retry_after);
		if (!wait_ms)
			wait_ms = kube_backoff_ms(r->attempts);
		if (now_ns() + (uint64_t)wait_ms * 1000000ull >= deadline || interrupt_ends_waits())
			break;
		log_kv(LOG_DEBUG, "kube", "retrying", "method", q->method, "path", q->path,
		       U64("status", (uint64_t)r->status), U64("wait_ms", wait_ms), LOG_END);
		sleep_ms(wait_ms);
	}
	return call_failed(k, q, r, rc, e);
}
