"""What the MPI scripts of model parallelism (mpi_tensor_parallel.py,
mpi_pipeline.py) share: a checkpoint written by fluid.MPIExecutor and read
back by a plain Executor, and the report of their checks."""
import os
import shutil
import tempfile

import numpy as np

import fluid


def saved_and_loaded(exe, programs, scope, feed, loss, names, tag):
    """Saves the persistables of `programs` = (main, startup, test) from
    `exe`'s `scope` (collective: every rank calls it), loads them in a
    plain Executor and evaluates `test` on `feed` there. Returns ({name:
    the loaded value} for `names`, the loaded evaluation's loss)."""
    main, startup, test = programs
    # One directory for every rank (rank 0 writes it): named after the
    # launcher's job, which the ranks share.
    path = os.path.join(tempfile.gettempdir(),
                        f"fluid_{tag}_{os.environ.get('PMIX_NAMESPACE', 'x')}")
    fluid.io.save_persistables(exe, path, main_program=main, scope=scope)
    plain = fluid.Executor(fluid.CPUPlace())
    pscope = fluid.Scope()
    plain.run(startup, scope=pscope)
    fluid.io.load_persistables(plain, path, main_program=main, scope=pscope)
    loaded = {n: np.array(pscope.find_var(n).get_tensor()) for n in names}
    out = plain.run(test, feed=feed, fetch_list=[loss], scope=pscope)
    loaded_loss = float(np.array(out[0]).reshape(-1)[0])
    with exe.gathered_parameters():  # collective: every rank has loaded
        pass
    if exe.rank == 0:
        shutil.rmtree(path)
    return loaded, loaded_loss


def report(exe, results):
    """Prints each (name, ok, detail) check (rank 0, or a failing rank) and
    the summary line the pytest wrapper looks for; the exit code."""
    for name, ok, detail in results:
        if exe.rank == 0 or not ok:
            print(f"{'PASS' if ok else 'FAIL'} {name}"
                  + ("" if ok else f": {detail}"), flush=True)
    if all(ok for _, ok, _ in results) and exe.rank == 0:
        print(f"all {len(results)} checks passed on {exe.world_size} "
              "rank(s)", flush=True)
    return 0 if all(ok for _, ok, _ in results) else 1
