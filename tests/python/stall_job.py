"""A data-parallel job for tests/python/test_stall.py, run under mpirun:
trains a small classifier for up to STEPS steps with the stall watchdog's
limits given; each rank writes its pid to DIR/pid-<rank> after its first
step (so that the test can stop one).

    stall_job.py DIR STEPS STALL_WARN STALL_TIMEOUT
"""
import os
import sys

import fluid
from traps_job import batch, build

DIR, STEPS = sys.argv[1], int(sys.argv[2])
WARN, TIMEOUT = float(sys.argv[3]), float(sys.argv[4])

main, startup, test, loss, acc = build()
exe = fluid.MPIExecutor(fluid.CPUPlace(), stall_warn=WARN,
                        stall_timeout=TIMEOUT, flight_dir=DIR)
exe.run(startup)
for step in range(STEPS):
    exe.run(main, feed=batch(step, exe.rank), fetch_list=[loss])
    if step == 0:
        with open(os.path.join(DIR, f"pid-{exe.rank}"), "w") as f:
            f.write(str(os.getpid()))
print(f"rank {exe.rank}: done", flush=True)
