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

#include "agent/agent.h"
#include "util/err.h"

#define HTTPD_IO_TIMEOUT_MS 2000
#define HTTPD_MAX_REQUEST 4096
#define HTTPD_MAX_CONNS 32

/* Parses "HOST:PORT" ("[V6]:PORT") into HOST and *PORT. Returns 0, or -1 when malformed. */
int httpd_parse_addr(const char *addr, char *host, size_t size, unsigned *port);

/*
 * The request line of REQ (LEN bytes, the head up to its blank line): the method and the
 * path, without the query string. Returns 200 when it is a GET or HEAD (*HEAD set for
 * HEAD), or the status to answer: 400 malformed, 405 another method, 505 not HTTP/1.x.
 */
int httpd_parse_request(const char *req, size_t len, char *path, size_t size, int *head);
