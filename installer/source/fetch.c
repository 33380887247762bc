// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build_info.h" /* INSTALLER_VERSION, INSTALLER_COMMIT: the Makefile makes it */
#include "source/fetch.h"
#include "source/fetcher.h"
#include "util/fs.h"
#include "util/dlib.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/out.h"
#include "util/str.h"
#include "util/tail.h"
#include "source/verify.h"

/* The release and the commit, as --version shows them: "nvidia-driver-installer/0.25.0 (e148ca9)". */
#define USER_AGENT "nvidia-driver-installer/" INSTALLER_VERSION " (" INSTALLER_COMMIT ")"
#define CONNECT_TIMEOUT_MS 15000
#define PROGRESS_EVERY_NS (5ull * 1000000000u)
/* Packages are hundreds of MB: fewer, larger writes than libcurl's default 16 KiB. */
#define FETCH_FILE_BUFFER (512L * 1024)

/* Where a transfer's bytes go. */
struct sink {
	struct fetcher *f;
	/* memory */
	struct strbuf mem;
	size_t max;
	/* file */
	int fd;
	struct sha256 *sha;
	uint64_t have;	   /* bytes in the file */
	struct tail *tail; /* told of every change of HAVE; may be NULL */
	uint64_t expected; /* total size the index promises */
	uint64_t resume_from;
	uint64_t net; /* bytes received in this transfer */
	bool status_checked;
	bool restarted; /* the server ignored our Range: this transfer began at byte 0 */
	bool too_large;
	bool http_error; /* the answer is an HTTP error: its body is not the file's */
	int io_errno;
	/* progress */
	uint64_t started_ns, last_report_ns;
	bool bar_shown; /* a bar is on the terminal's current line */
	const char *name;
};

/* The file now holds N bytes; a reader following it is told. */
static void sink_have(struct sink *s, uint64_t n)
{
	s->have = n;
	if (s->tail)
		tail_written(s->tail, n);
}

/* Empties the file and the digest: the download starts over. 0 or -errno. */
static int sink_rewind(struct sink *s)
{
	if (ftruncate(s->fd, 0) < 0 || lseek(s->fd, 0, SEEK_SET) < 0 || sha256_reset(s->sha) < 0)
		return -errno ?: -EIO;
	sink_have(s, 0);
	s->resume_from = 0;
	return 0;
}

char *fetch_url_join(const char *base, const char *rel)
{
	size_t bl = strlen(base);
	char *out;

	while (bl > 0 && base[bl - 1] == '/')
		bl--;
	while (*rel == '/')
		rel++;
	if (asprintf(&out, "%.*s/%s", (int)bl, base, rel) < 0)
		return NULL;
	return out;
}

static int curl_debug(CURL *c, curl_infotype type, char *data, size_t size, void *ud)
{
	(void)c;
	(void)ud;
	if (type == CURLINFO_TEXT) {
		int n = (int)size;

		while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == '\r'))
			n--;
		log_msg(LOG_DEBUG, "curl", "%.*s", n, data);
	}
	return 0;
}

int fetcher_new(const struct fetch_opts *opts, struct fetcher **ret, struct err *e)
{
	_cleanup_(fetcher_freep) struct fetcher *f = calloc(1, sizeof(*f));

	if (!f)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "fetch");
	if (dlib_curl(e) < 0)
		return -1;
	f->curl = sym_curl_easy_init();
	if (!f->curl)
		return err_set(e, EXIT_UNEXPECTED, "fetch: curl_easy_init failed");
	f->timeout_s = opts->timeout_s;
	f->retries = opts->retries;
	f->low_speed_bytes = opts->low_speed_bytes ? opts->low_speed_bytes : 1024;
	f->low_speed_s = opts->low_speed_s ? opts->low_speed_s : 30;
	if (opts->ca_file && !(f->ca_file = strdup(opts->ca_file)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "fetch");
	f->deadline_ns = now_ns() + (uint64_t)opts->timeout_s * 1000000000u;
	f->tty = isatty(STDERR_FILENO) && log_get_format() == LOG_FORMAT_TEXT;
	*ret = TAKE_PTR(f);
	return 0;
}

void fetcher_free(struct fetcher *f)
{
	if (!f)
		return;
	if (f->curl)
		sym_curl_easy_cleanup(f->curl);
	if (f->headers)
		sym_curl_slist_free_all(f->headers);
	free(f->ca_file);
	free(f);
}

/* ---- one transfer ------------------------------------------------------ */

static size_t write_memory(char *data, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	size_t n = size * nmemb;

	int r = strbuf_append(&s->mem, data, n, s->max);

	if (r == -EFBIG)
		s->too_large = true;
	else if (r < 0)
		s->io_errno = -r;
	if (r < 0)
		return 0;
	s->net += n;
	return n;
}

/* A server that ignores Range answers 200 with the whole file: start over. */
static int restart_if_not_partial(struct sink *s)
{
	long code = 0;
	int r;

	s->status_checked = true;
	sym_curl_easy_getinfo(s->f->curl, CURLINFO_RESPONSE_CODE, &code);
	/*
	 * FAILONERROR lets a 401 through when credentials were sent (CURLOPT_FAILONERROR(3):
	 * "not fail-safe ... especially when authentication is involved"): not the file.
	 */
	s->http_error = code >= 400;
	if (s->resume_from == 0 || s->http_error)
		return 0;
	if (code != 200)
		return 0;
	log_kv(LOG_INFO, "fetch", "server ignored the range request; downloading from the start",
	       LOG_END);
	if ((r = sink_rewind(s)) < 0)
		return r;
	s->restarted = true;
	return 0;
}

static size_t write_file(char *data, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	size_t n = size * nmemb;
	int r;

	if (!s->status_checked && (r = restart_if_not_partial(s)) < 0) {
		s->io_errno = -r;
		return 0;
	}
	if (s->http_error)
		return n;
	if (s->have + n > s->expected) {
		s->too_large = true;
		return 0;
	}
	if ((r = fs_write_all(s->fd, data, n)) < 0) {
		s->io_errno = -r;
		return 0;
	}
	sha256_update(s->sha, data, n);
	sink_have(s, s->have + n);
	s->net += n;
	return n;
}

static void human(uint64_t bytes, char *buf, size_t size)
{
	if (bytes >= 10u << 20)
		snprintf(buf, size, "%.1f MiB", (double)bytes / (1 << 20));
	else
		snprintf(buf, size, "%.1f KiB", (double)bytes / 1024);
}

static int progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		    curl_off_t ulnow)
{
	struct sink *s = ud;
	uint64_t now = now_ns(), total = s->expected, done = s->have;
	double secs = (double)(now - s->started_ns) / 1e9;
	char a[32], b[32], rate[32];

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	/* libcurl calls this about once a second even while nothing arrives. */
	if (interrupt_signal())
		return 1; /* CURLE_ABORTED_BY_CALLBACK: fetch_mirrors says why */
	if (total == 0 || now - s->last_report_ns < (s->f->tty ? 200000000u : PROGRESS_EVERY_NS))
		return 0;
	s->last_report_ns = now;
	human(done, a, sizeof(a));
	human(total, b, sizeof(b));
	human(secs > 0 ? (uint64_t)((double)s->net / secs) : 0, rate, sizeof(rate));
	if (s->f->tty) {
		int pct = (int)(done * 100 / total), bars = pct * 30 / 100;

		/* The name is the repository's: shown neutralised, after the bar's own "\r". */
		fputc('\r', stderr);
		out_part(stderr, "%s [%.*s%*s] %3d%% %s / %s %s/s ", s->name, bars,
			 "==============================", 30 - bars, "", pct, a, b, rate);
		s->bar_shown = true;
	} else {
		char pct[8];

		snprintf(pct, sizeof(pct), "%d", (int)(done * 100 / total));
		strcat(rate, "/s");
		log_kv(LOG_INFO, "fetch", "downloading", "file", s->name, "percent", pct, "done", a,
		       "total", b, "rate", rate, LOG_END);
	}
	return 0;
}

/* The transfer into S ends soon after SIGTERM or SIGINT (interrupt.h), and shows progress. */
static void watch(struct fetcher *f, struct sink *s)
{
	sym_curl_easy_setopt(f->curl, CURLOPT_NOPROGRESS, 0L);
	sym_curl_easy_setopt(f->curl, CURLOPT_XFERINFOFUNCTION, progress);
	sym_curl_easy_setopt(f->curl, CURLOPT_XFERINFODATA, s);
}

/* URL's scheme, host and port, lower-cased, the default port filled in; false if none. */
static bool url_origin(const char *url, char *scheme, size_t ss, char *host, size_t hs,
		       unsigned long *port)
{
	const char *sep = strstr(url, "://"), *h, *end, *hend, *colon = NULL;
	char *num_end;

	if (!sep || sep == url || (size_t)(sep - url) >= ss)
		return false;
	for (size_t i = 0; url + i < sep; i++)
		scheme[i] = (char)tolower((unsigned char)url[i]);
	scheme[sep - url] = '\0';
	h = sep + 3;
	end = h + strcspn(h, "/?#");
	if (memchr(h, '@', (size_t)(end - h)))
		return false;
	if (*h == '[') { /* an IPv6 literal */
		const char *rb = memchr(h, ']', (size_t)(end - h));

		if (!rb)
			return false;
		hend = rb + 1;
		if (hend < end && *hend != ':')
			return false;
		colon = hend < end ? hend : NULL;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		hend = colon ? colon : end;
	}
	if (hend == h || (size_t)(hend - h) >= hs)
		return false;
	for (size_t i = 0; h + i < hend; i++)
		host[i] = (char)tolower((unsigned char)h[i]);
	host[hend - h] = '\0';
	if (colon && colon + 1 < end) {
		errno = 0;
		*port = strtoul(colon + 1, &num_end, 10);
		return !errno && num_end == end && *port > 0 && *port <= 65535;
	}
	*port = strcmp(scheme, "https") == 0 ? 443 : strcmp(scheme, "http") == 0 ? 80 : 0;
	return true;
}

bool fetch_same_origin(const char *a, const char *b)
{
	char sa[16], sb[16], ha[256], hb[256];
	unsigned long pa, pb;

	return url_origin(a, sa, sizeof(sa), ha, sizeof(ha), &pa) &&
	       url_origin(b, sb, sizeof(sb), hb, sizeof(hb), &pb) && strcmp(sa, sb) == 0 &&
	       strcmp(ha, hb) == 0 && pa == pb;
}

void fetch_http_set(struct fetcher *f, const struct fetch_http *h)
{
	f->http = h;
}

/* "Name: value" into FIELD (SIZE bytes), or appended after ", " when JOIN. */
static void header_keep(char *field, size_t size, const char *v, size_t n, bool join)
{
	size_t len = join ? strlen(field) : 0;

	if (len > 0 && len + 2 < size) {
		memcpy(field + len, ", ", 2);
		len += 2;
	}
	if (len + n >= size)
		n = size - len - 1; /* cut: what reads it refuses what does not parse */
	memcpy(field + len, v, n);
	field[len + n] = '\0';
}

/* libcurl's header callback: each header line of each response, the status line first. */
static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct fetch_http_answer *a = ud;
	size_t n = size * nmemb, name_len;
	const char *colon = memchr(data, ':', n), *v;

	if (n >= 5 && strncasecmp(data, "HTTP/", 5) == 0) {
		/* A new response (after a redirect or a 100): only the last one counts. */
		memset(a, 0, sizeof(*a));
		return size * nmemb;
	}
	if (!colon)
		return size * nmemb;
	name_len = (size_t)(colon - data);
	for (v = colon + 1; v < data + n && (*v == ' ' || *v == '\t'); v++)
		;
	n -= (size_t)(v - data);
	while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
#define IS(h) (name_len == sizeof(h) - 1 && strncasecmp(data, h, name_len) == 0)
	if (IS("WWW-Authenticate"))
		header_keep(a->www_authenticate, sizeof(a->www_authenticate), v, n, true);
	else if (IS("Docker-Content-Digest"))
		header_keep(a->digest, sizeof(a->digest), v, n, false);
	else if (IS("Content-Type"))
		header_keep(a->content_type, sizeof(a->content_type), v, n, false);
	else if (IS("Location"))
		header_keep(a->location, sizeof(a->location), v, n, false);
	else if (IS("Content-Length") && n > 0 && n < 20 && isdigit((unsigned char)v[0])) {
		char num[24];

		memcpy(num, v, n);
		num[n] = '\0';
		a->length = strtoull(num, NULL, 10);
		a->has_length = true;
	}
#undef IS
	return size * nmemb;
}

/* H's method, headers, credentials and body on F's handle (set_common's last step). */
static void set_http(struct fetcher *f, const struct fetch_http *h)
{
	CURL *c = f->curl;

	if (f->headers)
		sym_curl_slist_free_all(f->headers);
	f->headers = NULL;
	for (size_t i = 0; h->headers && h->headers[i]; i++) {
		struct curl_slist *l = sym_curl_slist_append(f->headers, h->headers[i]);

		if (l)
			f->headers = l;
	}
	if (f->headers)
		sym_curl_easy_setopt(c, CURLOPT_HTTPHEADER, f->headers);
	if (h->answer) {
		memset(h->answer, 0, sizeof(*h->answer));
		sym_curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
		sym_curl_easy_setopt(c, CURLOPT_HEADERDATA, h->answer);
	}
	if (h->no_proxy)
		sym_curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (h->no_redirect)
		sym_curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	/* Never to another host than the one they are for (libcurl's default, said). */
	sym_curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
	if (h->bearer) {
		sym_curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
		sym_curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, h->bearer);
	} else if (h->username) {
		sym_curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		sym_curl_easy_setopt(c, CURLOPT_USERNAME, h->username);
		sym_curl_easy_setopt(c, CURLOPT_PASSWORD, h->password ? h->password : "");
	}
	if (h->method && strcmp(h->method, "HEAD") == 0) {
		sym_curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else if (h->body || (h->method && strcmp(h->method, "POST") == 0)) {
		sym_curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)h->body_len);
		sym_curl_easy_setopt(c, CURLOPT_POSTFIELDS, h->body ? h->body : "");
	}
	if (h->method && strcmp(h->method, "HEAD") != 0)
		sym_curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, h->method);
}

static void set_common(struct fetcher *f, const char *url)
{
	CURL *c = f->curl;
	uint64_t left = remaining_ms(f), now = now_ns();

	f->transfer_started_ns = now;
	f->share_binding = false;
	if (f->share_deadline_ns) {
		uint64_t share =
			now >= f->share_deadline_ns ? 0 : (f->share_deadline_ns - now) / 1000000u;

		if (share < left) {
			left = share;
			f->share_binding = true;
		}
	}
	f->transfer_timeout_ms = left;

	sym_curl_easy_reset(c);
	f->errbuf[0] = '\0';
	sym_curl_easy_setopt(c, CURLOPT_URL, url);
	sym_curl_easy_setopt(c, CURLOPT_ERRORBUFFER, f->errbuf);
	sym_curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
	/* Redirects stay on http(s), and one that started on https never downgrades. */
	sym_curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR,
			     strncasecmp(url, "https://", 8) == 0 ? "https" : "http,https");
	sym_curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	sym_curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	sym_curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	sym_curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(c, CURLOPT_USERAGENT, USER_AGENT);
	sym_curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(left ? left : 1));
	sym_curl_easy_setopt(
		c, CURLOPT_CONNECTTIMEOUT_MS,
		(long)(left < CONNECT_TIMEOUT_MS ? (left ? left : 1) : CONNECT_TIMEOUT_MS));
	sym_curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, (long)f->low_speed_bytes);
	sym_curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)f->low_speed_s);
	sym_curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	sym_curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	/* The file replaces libcurl's CA bundle; the system's CA directory stays trusted. */
	if (f->http && f->http->ca_file)
		sym_curl_easy_setopt(c, CURLOPT_CAINFO, f->http->ca_file);
	else if (f->ca_file)
		sym_curl_easy_setopt(c, CURLOPT_CAINFO, f->ca_file);
	if (log_enabled(LOG_DEBUG)) {
		sym_curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
		sym_curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, curl_debug);
	}
	if (f->http)
		set_http(f, f->http);
}

static long http_code(struct fetcher *f)
{
	long code = 0;

	sym_curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

static bool http_code_transient(long code)
{
	return code == 408 || code == 425 || code == 429 || code >= 500;
}

/*
 * The transfer used up its time: this attempt's share of the budget (the next mirror
 * resumes), or what was left of the whole budget.
 */
static enum fetch_result too_slow(struct fetcher *f, const struct sink *s, const char *url,
				  struct err *e)
{
	double secs = (double)(now_ns() - f->transfer_started_ns) / 1e9;
	char got[32], rate[32];

	human(s->net, got, sizeof(got));
	human(secs > 0 ? (uint64_t)((double)s->net / secs) : 0, rate, sizeof(rate));
	if (f->share_binding)
		err_set(e, EXIT_UNREACHABLE,
			"'%s': too slow: %s in %.1f s (%s/s); this mirror's share of the time budget (1/%u of the %.1f s left) is spent",
			url, got, secs, rate, f->share_of, (double)f->share_left_ms / 1000.0);
	else
		err_set(e, EXIT_UNREACHABLE,
			"'%s': too slow: %s in %.1f s (%s/s); the time budget of the run (--fetch-timeout %u s) is spent",
			url, got, secs, rate, f->timeout_s);
	err_hint(
		e,
		"a mirror is too slow for --fetch-timeout (NVIDIA_FETCH_TIMEOUT): fix or drop the slow mirror named, or raise the timeout");
	f->share_spent = f->share_binding;
	return FETCH_TRANSIENT;
}

/* The node could not keep what URL sent: named with the file it was writing, when known. */
static void sink_write_error(const struct sink *s, const char *url, struct err *e)
{
	char link[64], path[PATH_MAX];
	ssize_t n = -1;

	if (s->fd >= 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", s->fd);
		n = readlink(link, path, sizeof(path) - 1);
	}
	if (n <= 0) {
		err_errno(e, EXIT_UNEXPECTED, s->io_errno, "'%s': writing download", url);
		return;
	}
	path[n] = '\0';
	err_errno(e, EXIT_UNEXPECTED, s->io_errno, "'%s': writing the download to '%s'", url, path);
}

/* Maps a finished transfer to a fetch_result and a message naming URL and cause. */
/* The path a file:// URL names (file:///P or file://localhost/P, %XX decoded), or NULL. */
static char *file_url_path(const char *url)
{
	const char *p = url + 7;
	char *path, *o;

	if (strncasecmp(url, "file://", 7) != 0)
		return NULL;
	if (strncasecmp(p, "localhost/", 10) == 0)
		p += 9;
	if (*p != '/' || !(path = malloc(strlen(p) + 1)))
		return NULL;
	for (o = path; *p && *p != '?' && *p != '#'; o++) {
		unsigned v;

		if (p[0] == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2]) &&
		    sscanf(p + 1, "%2x", &v) == 1) {
			*o = (char)v;
			p += 3;
		} else {
			*o = *p++;
		}
	}
	*o = '\0';
	return path;
}

/*
 * curl_easy_perform, but never on a file:// URL that names a FIFO, a device or a
 * directory: libcurl opens the path with a blocking open(2), so a FIFO there would hold
 * the run for a writer past every timeout. stat(2) does not wait.
 */
static CURLcode perform(struct fetcher *f, const char *url)
{
	_cleanup_free_ char *path = file_url_path(url);
	struct stat st;

	CURLcode rc;

	f->not_regular = path && stat(path, &st) == 0 && !S_ISREG(st.st_mode);
	if (f->not_regular)
		return CURLE_READ_ERROR;
	rc = sym_curl_easy_perform(f->curl);
	if (f->http && f->http->answer) {
		char *eff = NULL;

		f->http->answer->status = http_code(f);
		sym_curl_easy_getinfo(f->curl, CURLINFO_EFFECTIVE_URL, &eff);
		snprintf(f->http->answer->effective_url, sizeof(f->http->answer->effective_url),
			 "%s", eff ? eff : url);
	}
	/* An error answer FAILONERROR let through (write_file's comment) is one all the same. */
	if (rc == CURLE_OK && http_code(f) >= 400)
		rc = CURLE_HTTP_RETURNED_ERROR;
	return rc;
}

/* What perform() refused: permanent for this mirror, whose copy is not a file. */
static enum fetch_result not_regular(const char *url, struct err *e)
{
	err_errno(e, EXIT_UNREACHABLE, EINVAL, "'%s' is not a regular file", url);
	err_hint(
		e,
		"a file:// mirror holds the repository's files themselves: put the file there in place of the FIFO, device or directory (mirror --to writes them)");
	return FETCH_PERMANENT;
}

static enum fetch_result classify(struct fetcher *f, CURLcode rc, const struct sink *s,
				  const char *url, struct err *e)
{
	long code = 0;
	curl_off_t retry_after = 0;

	if (f->not_regular)
		return not_regular(url, e);

	sym_curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &code);
	if (sym_curl_easy_getinfo(f->curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK)
		f->retry_after_s = (long)retry_after;
	if (s->io_errno) {
		sink_write_error(s, url, e);
		return FETCH_PERMANENT;
	}
	if (s->too_large) {
		err_set(e, EXIT_VERIFY, "'%s': larger than %llu bytes", url,
			(unsigned long long)(s->max ? s->max : s->expected));
		return FETCH_PERMANENT;
	}
	/* The speed floor and the connect timeout end a transfer with the same code: */
	if (rc == CURLE_OPERATION_TIMEDOUT && s->net > 0 &&
	    ms_since(f->transfer_started_ns) + 100 >= f->transfer_timeout_ms)
		return too_slow(f, s, url, e);
	switch (rc) {
	case CURLE_HTTP_RETURNED_ERROR:
		err_set(e, EXIT_UNREACHABLE, "'%s': HTTP %ld", url, code);
		/* S3 and GCS answer 403 for an object that is not there. */
		if (code == 403 || code == 404 || code == 410)
			return FETCH_MISSING;
		return http_code_transient(code) ? FETCH_TRANSIENT : FETCH_PERMANENT;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
		/* TLS is never relaxed: the fix is trust, given explicitly. */
		dlib_err_curl(e, EXIT_UNREACHABLE, (int)rc, f->errbuf, "'%s'", url);
		err_hint(
			e,
			"the mirror's certificate does not verify for this host name: if a private CA issued it, pass that CA with --ca-file (NVIDIA_CA_FILE)");
		return FETCH_PERMANENT;
	case CURLE_UNSUPPORTED_PROTOCOL:
		dlib_err_curl(e, EXIT_UNREACHABLE, (int)rc, f->errbuf, "'%s'", url);
		err_hint(
			e,
			"repositories are https://, http:// or file://, and a redirect may only lead to https:// (or http:// from http://)");
		return FETCH_PERMANENT;
	case CURLE_FILE_COULDNT_READ_FILE:
	case CURLE_REMOTE_FILE_NOT_FOUND:
		dlib_err_curl(e, EXIT_UNREACHABLE, (int)rc, f->errbuf, "'%s'", url);
		return FETCH_MISSING;
	case CURLE_URL_MALFORMAT:
	case CURLE_LOGIN_DENIED:
	case CURLE_TOO_MANY_REDIRECTS:
	case CURLE_SSL_CERTPROBLEM:
		dlib_err_curl(e, EXIT_UNREACHABLE, (int)rc, f->errbuf, "'%s'", url);
		return FETCH_PERMANENT;
	default:
		dlib_err_curl(e, EXIT_UNREACHABLE, (int)rc, f->errbuf, "'%s'", url);
		return FETCH_TRANSIENT;
	}
}

enum fetch_result fetch_to_memory(struct fetcher *f, const char *url, size_t max, char **ret_buf,
				  size_t *ret_len, struct err *e)
{
	struct sink s = {.f = f, .max = max, .fd = -1};
	enum fetch_result r;
	CURLcode rc;

	set_common(f, url);
	sym_curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, write_memory);
	sym_curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, &s);
	watch(f, &s);
	rc = perform(f, url);
	if (rc != CURLE_OK || s.io_errno || s.too_large) {
		r = classify(f, rc, &s, url, e);
		free(s.mem.buf);
		return r;
	}
	if (!s.mem.buf && !(s.mem.buf = malloc(1))) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "'%s'", url);
		return FETCH_PERMANENT;
	}
	s.mem.buf[s.mem.len] = '\0';
	*ret_buf = s.mem.buf;
	*ret_len = s.mem.len;
	return FETCH_OK;
}

enum fetch_result fetch_probe(struct fetcher *f, const char *url, uint64_t size, struct err *e)
{
	struct sink s = {.f = f, .fd = -1};
	curl_off_t len = -1;
	CURLcode rc;

	set_common(f, url);
	sym_curl_easy_setopt(f->curl, CURLOPT_NOBODY, 1L);
	watch(f, &s);
	rc = perform(f, url);
	if (rc != CURLE_OK)
		return classify(f, rc, &s, url, e);
	if (sym_curl_easy_getinfo(f->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len) == CURLE_OK &&
	    len >= 0 && size > 0 && (uint64_t)len != size) {
		err_set(e, EXIT_VERIFY,
			"'%s': the mirror's copy has %lld bytes; the index says %llu", url,
			(long long)len, (unsigned long long)size);
		return FETCH_PERMANENT;
	}
	return FETCH_OK;
}

/* Hashes the first HAVE bytes of fd (a previous attempt's) into SHA; leaves fd at HAVE. */
static int hash_existing(int fd, uint64_t have, struct sha256 *sha)
{
	char buf[1 << 16];
	uint64_t done = 0;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	while (done < have) {
		size_t want = have - done < sizeof(buf) ? (size_t)(have - done) : sizeof(buf);
		ssize_t n = read(fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		sha256_update(sha, buf, (size_t)n);
		done += (uint64_t)n;
	}
	return 0;
}

static enum fetch_result empty_file(struct sink *s, const char *url, struct err *e)
{
	int r = sink_rewind(s);

	if (r < 0) {
		err_errno(e, EXIT_UNEXPECTED, -r, "'%s': truncating partial download", url);
		return FETCH_PERMANENT;
	}
	return FETCH_OK;
}

/*
 * Checks the completed file against the index; on mismatch empties it. SHORT_IS_FINAL:
 * the whole file was just read from its start, so fewer bytes than the index promises
 * mean the mirror's copy is short, not that a transfer was cut.
 */
static enum fetch_result check_complete(struct sink *s, const char *url, const char *sha256,
					bool short_is_final, struct err *e)
{
	char got[65];

	/*
	 * Fewer bytes than promised from a transfer that ended "cleanly": the server's
	 * Content-Length was short, or it closed early. What arrived is kept; the next
	 * attempt resumes after it (and a copy that is really short answers that with 416).
	 */
	if (s->have < s->expected && !short_is_final) {
		err_set(e, EXIT_UNREACHABLE, "'%s': the transfer ended after %llu of %llu bytes",
			url, (unsigned long long)s->have, (unsigned long long)s->expected);
		return FETCH_TRANSIENT;
	}
	if (s->have != s->expected) {
		err_set(e, EXIT_VERIFY, "'%s': size mismatch (index says %llu bytes, got %llu)",
			url, (unsigned long long)s->expected, (unsigned long long)s->have);
		err_hint(
			e,
			"the mirror serves other bytes than the signed index describes: upload the package again, or re-add it with make-repo and re-sign");
		empty_file(s, url, e);
		return FETCH_PERMANENT;
	}
	if (sha256_final_hex(s->sha, got) < 0) {
		err_openssl(e, EXIT_UNEXPECTED, "'%s': sha256", url);
		return FETCH_PERMANENT;
	}
	if (strcmp(got, sha256) != 0) {
		err_set(e, EXIT_VERIFY, "'%s': sha256 mismatch (expected %.12s..., got %.12s...)",
			url, sha256, got);
		err_hint(
			e,
			"the mirror serves other bytes than the signed index describes: upload the package again, or re-add it with make-repo and re-sign");
		empty_file(s, url, e);
		return FETCH_PERMANENT;
	}
	return FETCH_OK;
}

static enum fetch_result prepare_resume(struct sink *s, const char *url, struct err *e)
{
	struct stat st;
	int r;

	if (fstat(s->fd, &st) < 0) {
		err_errno(e, EXIT_UNEXPECTED, errno, "'%s': partial download", url);
		return FETCH_PERMANENT;
	}
	sink_have(s, (uint64_t)st.st_size);
	if (s->have > s->expected && empty_file(s, url, e) != FETCH_OK)
		return FETCH_PERMANENT;
	if ((r = hash_existing(s->fd, s->have, s->sha)) < 0) {
		err_errno(e, EXIT_UNEXPECTED, -r, "'%s': reading partial download", url);
		return FETCH_PERMANENT;
	}
	s->resume_from = s->have;
	return FETCH_OK;
}

static CURLcode transfer_file(struct fetcher *f, const char *url, struct sink *s)
{
	CURLcode rc;

	set_common(f, url);
	sym_curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, write_file);
	sym_curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, s);
	sym_curl_easy_setopt(f->curl, CURLOPT_BUFFERSIZE, FETCH_FILE_BUFFER);
	sym_curl_easy_setopt(f->curl, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)s->resume_from);
	watch(f, s);
	s->status_checked = false;
	s->started_ns = s->last_report_ns = now_ns();
	rc = perform(f, url);
	if (s->bar_shown)
		fputc('\n', stderr);
	s->bar_shown = false;
	return rc;
}

/*
 * One transfer of URL into S's file, resumed after its bytes, and the check of the
 * result. *RET_MIXED: the bytes checked were not all from this transfer (it resumed
 * after bytes already in the file), so a mismatch does not tell whose bytes were bad.
 */
static enum fetch_result transfer_and_check(struct fetcher *f, const char *url, struct sink *s,
					    const char *sha256, bool *ret_mixed, struct err *e)
{
	uint64_t size = s->expected;
	bool from_start = false;
	CURLcode rc;

	*ret_mixed = s->have > 0;
	if (s->have == size)
		return check_complete(s, url, sha256, false, e);
	if (s->have > 0)
		log_kv(LOG_INFO, "fetch", "resuming partial download", "url", url,
		       U64("offset", s->have), LOG_END);
	rc = transfer_file(f, url, s);
	/*
	 * Nothing to send after the bytes we have (HTTP 416, or a file:// read that ends
	 * where it started): the mirror's copy is short, whoever wrote the bytes before.
	 */
	if (s->resume_from > 0 && s->have < size &&
	    ((rc == CURLE_HTTP_RETURNED_ERROR && http_code(f) == 416) ||
	     (rc == CURLE_OK && s->net == 0))) {
		*ret_mixed = false;
		err_set(e, EXIT_VERIFY,
			"'%s': the mirror's copy ends before byte %llu; the index says %llu bytes",
			url, (unsigned long long)s->resume_from, (unsigned long long)size);
		err_hint(
			e,
			"the mirror serves other bytes than the signed index describes: upload the package again, or re-add it with make-repo and re-sign");
		empty_file(s, url, e);
		return FETCH_PERMANENT;
	}
	if ((rc == CURLE_RANGE_ERROR || rc == CURLE_BAD_DOWNLOAD_RESUME) && s->resume_from > 0) {
		/* curl saw a 200 to our Range request (or a range past the end): start over now. */
		log_kv(LOG_INFO, "fetch",
		       "server ignored the range request; downloading from the start", "url", url,
		       LOG_END);
		if (empty_file(s, url, e) != FETCH_OK)
			return FETCH_PERMANENT;
		rc = transfer_file(f, url, s);
		from_start = true;
	}
	if (from_start || s->restarted)
		*ret_mixed = false;
	if (rc != CURLE_OK || s->io_errno || s->too_large)
		return classify(f, rc, s, url, e);
	return check_complete(s, url, sha256, from_start || s->restarted, e);
}

/* FF's file now holds bytes from MIRROR after those of FF->origin. */
static void note_origin(struct fetch_file *ff, uint64_t had, uint64_t have, const char *mirror)
{
	size_t len;

	if (have == 0) {
		ff->origin[0] = '\0';
		return;
	}
	if (have == had)
		return;
	if (had == 0 || !ff->origin[0]) {
		snprintf(ff->origin, sizeof(ff->origin), "%s", mirror);
		return;
	}
	len = strlen(ff->origin);
	if (len >= strlen(mirror) && strcmp(ff->origin + len - strlen(mirror), mirror) == 0)
		return;
	if (len < sizeof(ff->origin))
		snprintf(ff->origin + len, sizeof(ff->origin) - len, ", then %s", mirror);
}

enum fetch_result fetch_to_file(struct fetcher *f, const char *mirror, const char *url,
				struct fetch_file *ff, struct err *e)
{
	_cleanup_(sha256_freep) struct sha256 *sha = sha256_new();
	const char *slash = strrchr(url, '/');
	struct sink s = {.f = f,
			 .fd = ff->fd,
			 .sha = sha,
			 .expected = ff->size,
			 .tail = ff->tail,
			 .name = slash ? slash + 1 : url};
	char before[sizeof(ff->origin)], msg[ERR_MSG_MAX];
	enum fetch_result r;
	uint64_t had;
	bool mixed;

	if (!sha) {
		err_openssl(e, EXIT_UNEXPECTED, "sha256");
		return FETCH_PERMANENT;
	}
	if ((r = prepare_resume(&s, url, e)) != FETCH_OK)
		return r;
	had = s.have;
	if (had > 0 && !ff->origin[0])
		snprintf(ff->origin, sizeof(ff->origin),
			 "a partial download left by an earlier run");
	if (had == 0)
		ff->origin[0] = '\0';
	snprintf(before, sizeof(before), "%s", ff->origin);
	r = transfer_and_check(f, url, &s, ff->sha256, &mixed, e);
	note_origin(ff, had, s.have, mirror);
	if (r != FETCH_PERMANENT || e->code != EXIT_VERIFY || !mixed) {
		ff->net += s.net;
		return r;
	}
	/*
	 * The bytes before HAD came from someone else (another mirror, an earlier run): the
	 * mismatch may be theirs. The whole file from this mirror decides.
	 */
	snprintf(
		msg, sizeof(msg),
		"'%s': the file failed verification after resuming at byte %llu (the bytes before it came from %s); downloading it again from byte 0 from this mirror",
		url, (unsigned long long)had, before);
	log_kv(LOG_WARN, "fetch", msg, "reason", e->msg, LOG_END);
	err_clear(e);
	if (empty_file(&s, url, e) != FETCH_OK) {
		ff->net += s.net;
		return FETCH_PERMANENT;
	}
	s.restarted = false;
	r = transfer_and_check(f, url, &s, ff->sha256, &mixed, e);
	note_origin(ff, 0, s.have, mirror);
	ff->net += s.net;
	if (r == FETCH_OK)
		log_msg(LOG_WARN, "fetch",
			"the whole file from %s verified: the bad bytes came from %s, before byte %llu",
			mirror, before, (unsigned long long)had);
	else if (r == FETCH_PERMANENT && e->code == EXIT_VERIFY)
		snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg), "%s",
			 "; this mirror served every byte, from byte 0");
	return r;
}
