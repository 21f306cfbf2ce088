"""A process that never sends a heartbeat: it never becomes READY."""

import time

while True:
    time.sleep(60)
