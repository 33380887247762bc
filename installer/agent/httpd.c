// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Waits at most the rest of the deadline for FD to be ready for EVENTS. */
static bool ready_by(int fd, short events, uint64_t deadline)
{
	uint64_t now = now_ns();
	struct pollfd p = {.fd = fd, .events = events};

	if (now >= deadline)
		return false;
	return poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) == 1;
}

/* Reads the request head (to its blank line). Returns its length, or the status to answer. */
static int read_head(int fd, char *buf, size_t size, size_t *len, uint64_t deadline)
{
	*len = 0;
	while (!memmem(buf, *len, "\r\n\r\n", 4) && !memmem(buf, *len, "\n\n", 2)) {
		ssize_t n;

		if (*len == size)
			return 431;
		if (!ready_by(fd, POLLIN, deadline))
			return 408;
		n = read(fd, buf + *len, size - *len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		*len += (size_t)n;
	}
	return 0;
}

static void write_all_by(int fd, const char *p, size_t len, uint64_t deadline)
{
	while (len > 0 && ready_by(fd, POLLOUT, deadline)) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

void httpd_serve(int listen_fd, httpd_route route, void *arg)
{
	_cleanup_close_ int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	uint64_t deadline = now_ns() + (uint64_t)HTTPD_IO_TIMEOUT_MS * 1000000;
	struct httpd_reply reply = {.status = 0, .content_type = "text/plain; charset=utf-8"};
	char req[HTTPD_MAX_REQUEST], path[256], head[256];
	size_t len, blen;
	int status, is_head = 0, hl;

	if (fd < 0)
		return;
	status = read_head(fd, req, sizeof(req), &len, deadline);
	if (status < 0)
		return;
	if (status == 0)
		status = httpd_parse_request(req, len, path, sizeof(path), &is_head);
	if (status == 200) {
		route(path, &reply, arg);
		status = reply.status;
	} else {
		reply.body = strdup(reason(status));
	}
	blen = reply.body ? strlen(reply.body) : 0;
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		      "Connection: close\r\n\r\n",
		      status, reason(status), reply.content_type, blen);
	write_all_by(fd, head, (size_t)hl, deadline);
	if (!is_head && blen)
		write_all_by(fd, reply.body, blen, deadline);
	free(reply.body);
}
