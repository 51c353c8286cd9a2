"""A hostile user loader (the review's D20): importing it starts a daemon, a
process that leaves the loader's process group and session (setsid) and
sleeps for an hour. sluice runs the file twice: `--describe`, to learn what
it implements, and the bench's session; the daemon starts in both, and
sluice must kill it after each. The daemon writes its pid to the file named
by SLUICE_TEST_PIDFILE (a second one, for the session, to that name with
".2" added if the first exists). The loader's own work is honest."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def start_daemon():
    path = os.environ.get("SLUICE_TEST_PIDFILE")
    if path and os.path.exists(path):
        path += ".2"
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            if path:
                with open(path + ".tmp", "w") as f:
                    f.write(str(os.getpid()))
                os.rename(path + ".tmp", path)
            time.sleep(3600)
        os._exit(0)
    # Give the daemon time to write its pid before the loader may be ended.
    for _ in range(500):
        if not path or os.path.exists(path):
            break
        time.sleep(0.01)


start_daemon()

if __name__ == "__main__":
    sluice_peer.main("import_daemon", plain.FRAMEWORK, plain.make_batches, plain.SUPPORTED)
