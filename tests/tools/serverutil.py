# SPDX-License-Identifier: Apache-2.0
"""What the test servers (httpd.py, proxy.py) share: how they start and stop.

They listen on 127.0.0.1 on a port the kernel picks, write it to a file (atomically, so a
test polling the file never reads half a number), and exit after their lifetime or as
soon as the process that started them is gone, so a failed test cannot leave one behind.
"""
import os
import threading
import time


def serve(server, port_file, lifetime):
    parent = os.getppid()
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, port_file)

    def watchdog():
        deadline = time.monotonic() + lifetime
        while time.monotonic() < deadline and os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    server.serve_forever()
