"""A data-parallel job for tests/python/test_stall.py, run under mpirun:
trains a small classifier for up to STEPS steps with the stall watchdog's
limits given; each rank writes its pid to DIR/pid-<rank> after its first
step (so that the test can stop one).

    stall_job.py DIR STEPS STALL_WARN STALL_TIMEOUT [MODE]

MODE (default: none) makes rank 0 issue collectives rank 1 does not, at
step 3: `extra-check` calls check_consistency() on rank 0 only; `thread-check`
calls it on a second thread of rank 0 while its main thread trains on.
"""
import os
import sys
import threading

import fluid
from traps_job import batch, build

DIR, STEPS = sys.argv[1], int(sys.argv[2])
WARN, TIMEOUT = float(sys.argv[3]), float(sys.argv[4])
MODE = sys.argv[5] if len(sys.argv) > 5 else "none"

main, startup, test, loss, acc = build()
exe = fluid.MPIExecutor(fluid.CPUPlace(), stall_warn=WARN,
                        stall_timeout=TIMEOUT, flight_dir=DIR)
exe.run(startup)
side = None
for step in range(STEPS):
    if step == 3 and exe.rank == 0 and MODE == "extra-check":
        exe.check_consistency()
    if step == 3 and exe.rank == 0 and MODE == "thread-check":
        side = threading.Thread(target=exe.check_consistency)
        side.start()
    exe.run(main, feed=batch(step, exe.rank), fetch_list=[loss])
    if step == 0:
        with open(os.path.join(DIR, f"pid-{exe.rank}"), "w") as f:
            f.write(str(os.getpid()))
if side is not None:
    side.join()
print(f"rank {exe.rank}: done", flush=True)
