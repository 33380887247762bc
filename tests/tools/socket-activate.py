#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a server that takes its listening socket from systemd (socket activation).

  socket-activate.py PORT_FILE COMMAND [ARG...]

Binds 127.0.0.1 on a port the kernel picks, listens, writes the port to PORT_FILE
(atomically), then execs COMMAND with the socket as fd 3, LISTEN_FDS=1 and LISTEN_PID
its own pid (sd_listen_fds(3)), as systemd hands a socket unit's socket to its service.
For a server that cannot report the port it got for port 0 (prometheus-node-exporter
with --web.systemd-socket): the port is held from the bind on, so no other test can take
it between the choice and the server's start, as one chosen free and bound later can be.
COMMAND keeps this process's pid: run it under `timeout` from outside, not inside.
"""
import os
import socket
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: socket-activate.py PORT_FILE COMMAND [ARG...]")
    port_file, argv = sys.argv[1], sys.argv[2:]
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    # fd 3 and inheritable: the socket may already be fd 3, which dup2 leaves close-on-exec.
    if s.fileno() != 3:
        os.dup2(s.fileno(), 3)
    os.set_inheritable(3, True)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(s.getsockname()[1]))
    os.replace(tmp, port_file)
    os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
    os.environ.pop("LISTEN_FDNAMES", None)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
