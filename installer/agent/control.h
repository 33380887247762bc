/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The installer asks the node agent, across containers, to stop its daemons: the init
 * container cannot signal a process of another container (no shared PID namespace), so it
 * connects to the agent's socket, CONTROL_SOCKET on the host (both see the host's /run
 * under --root), and says one line:
 *
 *   hold WHY\n        the agent stops its daemons (SIGTERM; SIGKILL after
 *                     CONTROL_STOP_TIMEOUT_S), answers "held N\n" (N daemons stopped),
 *                     and starts none again while the connection stays open
 *
 * The hold ends when the installer closes the connection, or dies: the kernel closes it.
 * No agent listening (none runs, or its socket is stale) means no daemon of ours runs:
 * the agent's daemons are its children and end with its container. A restarted agent
 * makes a new socket; an installer run holds the installer's lock, during which the agent
 * starts nothing. See docs/design.md, "Daemons and the installer".
 */
#pragma once

#include <stdbool.h>

#include "agent/agent.h"
#include "util/err.h"

#define CONTROL_DIR "/run/nvidia-driver-installer"
#define CONTROL_NAME "agent.sock"
#define CONTROL_SOCKET CONTROL_DIR "/" CONTROL_NAME
/* How long the installer waits for "held": the agent's stop of every daemon and more. */
#define CONTROL_HOLD_TIMEOUT_S 30
#define CONTROL_STOP_TIMEOUT_S 10
#define CONTROL_MAX_LINE 256

/*
 * The agent's side: makes the socket under ROOT_FD (a stale one of a previous agent is
 * replaced; anything else at the name is refused) and listens. Returns the listening fd
 * (non-blocking, close-on-exec), or -1.
 */
_must_check_ int control_listen(int root_fd, struct err *e);

/*
 * Reads one request line from FD (a connection just accepted), waiting at most 2 s.
 * Returns 1 for "hold" (WHY, "" when none, into WHY), 0 for anything else or nothing.
 */
int control_read_request(int fd, char *why, size_t size);
