/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's HTTP endpoint, for Prometheus and the kubelet's probes: one request per
 * connection (HTTP/1.0 and 1.1 GET or HEAD, "Connection: close"), answered by a thread of
 * its own from the pages the agent's loop last published, so that neither a step of the
 * loop that waits (an API server, CUDA) nor a client delays a probe. Clients are served
 * together: each gets HTTPD_IO_TIMEOUT_MS for its request and as long for our answer, a
 * request longer than HTTPD_MAX_REQUEST is refused (431), and past HTTPD_MAX_CONNS open at
 * once the one with the least time left is closed for the new one. A request that comes
 * while the loop works waits up to its page's wait_ms for the loop's next publish, so that
 * what it reads is what the step in progress did (the metrics) or judged (readiness).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/cleanup.h"
#include "util/err.h"

#define HTTPD_IO_TIMEOUT_MS 2000
#define HTTPD_MAX_REQUEST 4096
#define HTTPD_MAX_CONNS 32

/* What a GET of PATH (NULL: of any path no other page has) answers: copied when published. */
struct httpd_page {
	const char *path;
	int status;
	const char *content_type;
	const char *body;
	unsigned wait_ms; /* for the loop's next publish, while it works; 0: never waits */
};

struct httpd_options {
	/* The liveness path: 503 once the loop has been busy (httpd_busy) for over STALL_S. */
	const char *live_path;
	unsigned stall_s;
};

struct httpd;

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

/*
 * Serves LISTEN_FD (from httpd_listen; the caller keeps it) from a thread of its own, which
 * takes no signal, until httpd_free. Until the first httpd_publish every path is 503.
 * Returns the server, or NULL with E set.
 */
_must_check_ struct httpd *httpd_start(int listen_fd, const struct httpd_options *o, struct err *e);

/* The pages served are now copies of PAGES[N]. Returns 0, or -ENOMEM (the old ones stay). */
int httpd_publish(struct httpd *h, const struct httpd_page *pages, size_t n);

/*
 * The loop begins a step (a look, an event), and ends it, its pages published: requests
 * wait for a publish only in between, and the liveness path fails past STALL_S there.
 */
void httpd_busy(struct httpd *h);
void httpd_idle(struct httpd *h);

/* Stops the thread, closes its clients and frees H. httpd_free(NULL) does nothing. */
void httpd_free(struct httpd *h);
DEFINE_POINTER_CLEANUP(struct httpd, httpd_free)
