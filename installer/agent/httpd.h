/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's HTTP endpoint, for Prometheus and the kubelet's probes: one request per
 * connection (HTTP/1.0 and 1.1 GET or HEAD, "Connection: close"), answered from the event
 * loop. A client gets HTTPD_IO_TIMEOUT_MS for its request and for our answer, so a slow
 * or silent one delays the loop by at most that, and a request longer than
 * HTTPD_MAX_REQUEST is refused (431).
 */
#pragma once

#include <stddef.h>

#include "util/err.h"

#define HTTPD_IO_TIMEOUT_MS 2000
#define HTTPD_MAX_REQUEST 4096

/* An answer: status (200, 503, ...), content type, body. */
struct httpd_reply {
	int status;
	const char *content_type;
	char *body; /* malloc'd; freed by httpd_serve */
};

/* Answers a GET or HEAD of PATH (no query string) into REPLY. */
typedef void (*httpd_route)(const char *path, struct httpd_reply *reply, void *arg);

/*
 * Listens on ADDR ("127.0.0.1:9470", "0.0.0.0:9470", "[::]:9470"; port 0: the kernel
 * picks). Returns the listening fd (non-blocking, close-on-exec) and the port in *PORT,
 * or -1 with EXIT_USAGE for an address that cannot be bound.
 */
_must_check_ int httpd_listen(const char *addr, unsigned *port, struct err *e);

/* Parses "HOST:PORT" ("[V6]:PORT") into HOST and *PORT. Returns 0, or -1 when malformed. */
int httpd_parse_addr(const char *addr, char *host, size_t size, unsigned *port);

/*
 * The request line of REQ (LEN bytes, the head up to its blank line): the method and the
 * path, without the query string. Returns 200 when it is a GET or HEAD (*HEAD set for
 * HEAD), or the status to answer: 400 malformed, 405 another method, 505 not HTTP/1.x.
 */
int httpd_parse_request(const char *req, size_t len, char *path, size_t size, int *head);

/* Accepts one connection on LISTEN_FD, if any, and answers it through ROUTE. */
void httpd_serve(int listen_fd, httpd_route route, void *arg);
