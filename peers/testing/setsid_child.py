"""A peer that starts a process which leaves its process group and session
(setsid) and starts one more, which would outlive the run: sluice must kill
both. The last one writes its pid to the file SLUICE_TEST_PIDFILE names.
The peer's own work is honest."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def escape():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            path = os.environ.get("SLUICE_TEST_PIDFILE")
            if path:
                with open(path + ".tmp", "w") as f:
                    f.write(str(os.getpid()))
                os.rename(path + ".tmp", path)
            time.sleep(3600)
        os._exit(0)  # the grandchild is an orphan now


if __name__ == "__main__":
    escape()
    sluice_peer.main("setsid", plain.FRAMEWORK, plain.make_batches, plain.SUPPORTED)
