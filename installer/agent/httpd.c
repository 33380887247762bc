// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/httpd.h"
#include "util/cleanup.h"
#include "util/log.h"

int httpd_parse_addr(const char *addr, char *host, size_t size, unsigned *port)
{
	const char *colon, *h = addr;
	size_t hlen;
	char *end;
	unsigned long p;

	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close[1] != ':')
			return -1;
		h = addr + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
			return -1;
		hlen = (size_t)(colon - addr);
	}
	if (hlen == 0 || hlen >= size || !colon[1])
		return -1;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || p > 65535 || colon[1] == '-' || colon[1] == '+')
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (unsigned)p;
	return 0;
}

int httpd_listen(const char *addr, unsigned *port, struct err *e)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				 .ai_socktype = SOCK_STREAM},
			*ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[64], service[8];
	int fd, one = 1, rc;

	if (httpd_parse_addr(addr, host, sizeof(host), port) < 0)
		return err_set(e, EXIT_USAGE,
			       "listen address '%s': want HOST:PORT, e.g. 0.0.0.0:9470", addr);
	snprintf(service, sizeof(service), "%u", *port);
	rc = getaddrinfo(host, service, &hints, &ai);
	if (rc != 0)
		return err_set(e, EXIT_USAGE,
			       "listen address '%s': %s (a numeric address is needed)", addr,
			       gai_strerror(rc));
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		err_errno(e, EXIT_USAGE, errno, "listen on '%s'", addr);
		err_hint(e, "choose a free port with --listen (NVIDIA_AGENT_LISTEN)");
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	freeaddrinfo(ai);
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					       : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

int httpd_parse_request(const char *req, size_t len, char *path, size_t size, int *head)
{
	const char *sp1, *sp2, *eol = memchr(req, '\r', len);
	size_t mlen, plen;

	if (!eol)
		eol = req + len;
	sp1 = memchr(req, ' ', (size_t)(eol - req));
	if (!sp1)
		return 400;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1 || sp1[1] != '/')
		return 400;
	if ((size_t)(eol - sp2 - 1) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return 505;
	mlen = (size_t)(sp1 - req);
	*head = mlen == 4 && memcmp(req, "HEAD", 4) == 0;
	if (!*head && !(mlen == 3 && memcmp(req, "GET", 3) == 0))
		return 405;
	plen = strcspn(sp1 + 1, "? ");
	if (plen >= size)
		return 414;
	memcpy(path, sp1 + 1, plen);
	path[plen] = '\0';
	return 200;
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 414:
		return "URI Too Long";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

/* ---- the server's thread --------------------------------------------------------------- */

/* A client: its request read into req, then our answer sent from out. */
struct conn {
	int fd;
	uint64_t deadline; /* now_ns() by which it is answered, or closed */
	size_t len;	   /* of req */
	/* A whole request for a page that waits for the loop's next publish (page.wait_ms). */
	bool waits, is_head;
	uint64_t gen, wait_until; /* the publish it was read under, and the wait's end */
	char path[256];
	char *out; /* the answer, once the request is whole */
	size_t out_len, sent;
	char req[HTTPD_MAX_REQUEST];
};

struct httpd {
	int listen_fd, wake_fd;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock; /* guards what follows */
	bool stopping;
	struct httpd_page *pages;
	size_t n_pages;
	uint64_t gen;	  /* publishes so far */
	bool busy;	  /* the loop works: between httpd_busy and httpd_idle */
	uint64_t busy_ns; /* since when */
	unsigned stall_s;
	const char *live_path;
	/* The server thread's own. */
	struct conn conns[HTTPD_MAX_CONNS];
	size_t n_conns;
};

static void pages_free(struct httpd_page *pages, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)pages[i].path);
		free((char *)pages[i].content_type);
		free((char *)pages[i].body);
	}
	free(pages);
}

static void wake(struct httpd *h)
{
	uint64_t one = 1;

	(void)!write(h->wake_fd, &one, sizeof(one));
}

int httpd_publish(struct httpd *h, const struct httpd_page *pages, size_t n)
{
	struct httpd_page *copy = calloc(n ? n : 1, sizeof(*copy));
	bool ok = copy != NULL;

	for (size_t i = 0; ok && i < n; i++) {
		copy[i] = (struct httpd_page){.path = pages[i].path ? strdup(pages[i].path) : NULL,
					      .status = pages[i].status,
					      .content_type = strdup(pages[i].content_type),
					      .body = strdup(pages[i].body ? pages[i].body : ""),
					      .wait_ms = pages[i].wait_ms};
		ok = (!pages[i].path || copy[i].path) && copy[i].content_type && copy[i].body;
	}
	if (!ok) {
		pages_free(copy, copy ? n : 0);
		return -ENOMEM;
	}
	pthread_mutex_lock(&h->lock);
	pages_free(h->pages, h->n_pages);
	h->pages = copy;
	h->n_pages = n;
	h->gen++;
	pthread_mutex_unlock(&h->lock);
	/* The clients waiting for this are answered now. */
	wake(h);
	return 0;
}

static void set_busy(struct httpd *h, bool busy)
{
	pthread_mutex_lock(&h->lock);
	if (busy && !h->busy)
		h->busy_ns = now_ns();
	h->busy = busy;
	pthread_mutex_unlock(&h->lock);
}

void httpd_busy(struct httpd *h)
{
	set_busy(h, true);
}

void httpd_idle(struct httpd *h)
{
	set_busy(h, false);
	/* The clients waiting for this are answered now. */
	wake(h);
}

/* The page for PATH, or NULL (under the lock). */
static const struct httpd_page *page(const struct httpd *h, const char *path)
{
	const struct httpd_page *any = NULL;

	for (size_t i = 0; i < h->n_pages; i++) {
		if (!h->pages[i].path)
			any = &h->pages[i];
		else if (strcmp(h->pages[i].path, path) == 0)
			return &h->pages[i];
	}
	return any;
}

/*
 * C's answer to a request that read STATUS (200: for c->path), head and body, into c->out;
 * nothing yet while its page waits for the loop's next publish. Returns 0, or -1 without
 * memory.
 */
static int conn_answer(struct httpd *h, struct conn *c, int status)
{
	const struct httpd_page *pg = NULL;
	const char *ctype = "text/plain; charset=utf-8", *body = reason(status);
	uint64_t now = now_ns();
	char stalled[128];
	int n;

	pthread_mutex_lock(&h->lock);
	if (status == 200) {
		pg = page(h, c->path);
		if (pg && !c->waits) {
			/* That long for the loop's next publish, and then the time to answer. */
			c->gen = h->gen;
			c->wait_until = now + (uint64_t)pg->wait_ms * 1000000;
			c->deadline = c->wait_until + (uint64_t)HTTPD_IO_TIMEOUT_MS * 1000000;
		}
		if (pg && h->busy && c->gen == h->gen && now < c->wait_until) {
			pthread_mutex_unlock(&h->lock);
			c->waits = true;
			return 0;
		}
		status = pg ? pg->status : 503; /* 503: nothing published yet */
		if (pg) {
			ctype = pg->content_type;
			body = pg->body;
		}
	}
	if (status == 200 && h->live_path && strcmp(c->path, h->live_path) == 0 && h->busy &&
	    now - h->busy_ns > (uint64_t)h->stall_s * 1000000000ull) {
		snprintf(stalled, sizeof(stalled),
			 "stalled: the agent's loop has been in one step for %llu s\n",
			 (unsigned long long)((now - h->busy_ns) / 1000000000ull));
		status = 503;
		body = stalled;
	}
	n = asprintf(&c->out,
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n%s",
		     status, reason(status), ctype, strlen(body), c->is_head ? "" : body);
	pthread_mutex_unlock(&h->lock);
	c->waits = false;
	if (n < 0) {
		c->out = NULL;
		return -1;
	}
	c->out_len = (size_t)n;
	return 0;
}

static void conn_close(struct httpd *h, size_t i)
{
	close(h->conns[i].fd);
	free(h->conns[i].out);
	h->conns[i] = h->conns[--h->n_conns];
}

/* Reads what C's client sent; once the head is whole (or can never be), the answer. */
static int conn_read(struct httpd *h, struct conn *c)
{
	int status, is_head = 0;
	ssize_t n;

	if (c->len == sizeof(c->req)) {
		status = 431;
	} else {
		n = recv(c->fd, c->req + c->len, sizeof(c->req) - c->len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return 0;
		if (n <= 0)
			return -1;
		c->len += (size_t)n;
		if (!memmem(c->req, c->len, "\r\n\r\n", 4) && !memmem(c->req, c->len, "\n\n", 2))
			return c->len == sizeof(c->req) ? conn_read(h, c) : 0;
		status = httpd_parse_request(c->req, c->len, c->path, sizeof(c->path), &is_head);
	}
	c->is_head = is_head;
	if (status != 200)
		c->path[0] = '\0';
	return conn_answer(h, c, status);
}

/* Sends what is left of C's answer. 1 when all of it went, 0 for more, -1 to drop it. */
static int conn_write(struct conn *c)
{
	ssize_t n = send(c->fd, c->out + c->sent, c->out_len - c->sent, MSG_NOSIGNAL);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	c->sent += (size_t)n;
	return c->sent == c->out_len;
}

/*
 * Takes the clients waiting on the listening socket. At HTTPD_MAX_CONNS the one with the
 * least time left makes way: the newest client is the one a probe may be.
 */
static void accept_all(struct httpd *h)
{
	for (;;) {
		int fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		size_t oldest = 0;

		if (fd < 0)
			return;
		if (h->n_conns == HTTPD_MAX_CONNS) {
			for (size_t i = 1; i < h->n_conns; i++)
				if (h->conns[i].deadline < h->conns[oldest].deadline)
					oldest = i;
			conn_close(h, oldest);
		}
		h->conns[h->n_conns++] = (struct conn){
			.fd = fd, .deadline = now_ns() + (uint64_t)HTTPD_IO_TIMEOUT_MS * 1000000};
	}
}

/* C's next step on what poll said (REVENTS): 0 to keep it, else it is done or dropped. */
static int conn_step(struct httpd *h, struct conn *c, short revents)
{
	int r = 0;

	if (c->waits)
		r = conn_answer(h, c, 200);
	else if (!c->out && (revents & (POLLIN | POLLHUP | POLLERR)))
		r = conn_read(h, c);
	/* Sent as soon as it is known; what the socket does not take, when it can. */
	if (r == 0 && c->out && (revents || c->sent == 0))
		r = conn_write(c);
	if (r == 0 && now_ns() >= c->deadline)
		r = -1;
	return r;
}

/* One round: waits for any client (or the nearest time), and serves each that is ready. */
static void serve_round(struct httpd *h)
{
	struct pollfd p[2 + HTTPD_MAX_CONNS] = {{.fd = h->wake_fd, .events = POLLIN},
						{.fd = h->listen_fd, .events = POLLIN}};
	uint64_t now = now_ns(), first = UINT64_MAX;
	size_t n = h->n_conns;
	uint64_t drained;

	for (size_t i = 0; i < n; i++) {
		const struct conn *c = &h->conns[i];
		uint64_t t = c->waits && c->wait_until < c->deadline ? c->wait_until : c->deadline;

		p[2 + i] = (struct pollfd){.fd = c->fd,
					   .events = c->waits ? 0
						     : c->out ? POLLOUT
							      : POLLIN};
		if (t < first)
			first = t;
	}
	if (poll(p, 2 + n,
		 first == UINT64_MAX ? -1
		 : first <= now	     ? 0
				     : (int)((first - now) / 1000000) + 1) < 0)
		return;
	if (p[0].revents & POLLIN)
		(void)!read(h->wake_fd, &drained, sizeof(drained));
	/* From the last: a connection closed moves the last one into its place. */
	for (size_t i = n; i-- > 0;)
		if (conn_step(h, &h->conns[i], p[2 + i].revents) != 0)
			conn_close(h, i);
	if (p[1].revents & POLLIN)
		accept_all(h);
}

/*
 * The thread. The loop forks (the daemons, the CUDA check's child) while it runs: it takes
 * no lock such a child needs before its exec or its libcuda, since it neither logs nor
 * loads a library (the binary is bound at load, -z now), and glibc's fork makes malloc's
 * locks safe in the child.
 */
static void *serve_main(void *arg)
{
	struct httpd *h = arg;

	for (;;) {
		bool stopping;

		pthread_mutex_lock(&h->lock);
		stopping = h->stopping;
		pthread_mutex_unlock(&h->lock);
		if (stopping)
			return NULL;
		serve_round(h);
	}
}

struct httpd *httpd_start(int listen_fd, const struct httpd_options *o, struct err *e)
{
	struct httpd *h = calloc(1, sizeof(*h));
	sigset_t all, saved;
	int r;

	if (!h) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "http");
		return NULL;
	}
	h->listen_fd = listen_fd;
	h->live_path = o->live_path;
	h->stall_s = o->stall_s;
	pthread_mutex_init(&h->lock, NULL);
	h->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->wake_fd < 0) {
		err_errno(e, EXIT_UNEXPECTED, errno, "http: eventfd");
		httpd_free(h);
		return NULL;
	}
	/* Signals are the loop's: none reaches this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	r = pthread_create(&h->thread, NULL, serve_main, h);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (r != 0) {
		err_errno(e, EXIT_UNEXPECTED, r, "http: a thread to serve from");
		httpd_free(h);
		return NULL;
	}
	h->started = true;
	return h;
}

void httpd_free(struct httpd *h)
{
	if (!h)
		return;
	if (h->started) {
		pthread_mutex_lock(&h->lock);
		h->stopping = true;
		pthread_mutex_unlock(&h->lock);
		wake(h);
		pthread_join(h->thread, NULL);
	}
	while (h->n_conns > 0)
		conn_close(h, h->n_conns - 1);
	if (h->wake_fd >= 0)
		close(h->wake_fd);
	pages_free(h->pages, h->n_pages);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
