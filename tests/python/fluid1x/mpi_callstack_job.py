"""Run by test_op_callstack.py under `mpirun -np 2`: each rank builds the
same network from lines of its own (rank 0 through build_here, rank 1
through build_there), so that the ops of the two ranks record different
op_callstacks. MPIExecutor compares the ranks' programs before training
(a difference is a CollectiveError naming the ranks); the recorded lines
must not count. Each rank trains two steps and prints CALLSTACK-OK."""
import numpy as np

import fluid

L = fluid.layers


def net():
    x = L.data("x", [4])
    y = L.data("y", [1])
    pred = L.fc(x, 1)
    loss = L.mean(L.square_error_cost(pred, y))
    fluid.optimizer.SGD(0.1).minimize(loss)
    return loss


def build_here():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        loss = net()
    return main, startup, loss


def build_there():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        # The layers of net(), called from here rather than from net().
        x = L.data("x", [4])
        y = L.data("y", [1])
        pred = L.fc(x, 1)
        loss = L.mean(L.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def main():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    main_program, startup, loss = (build_here() if exe.rank == 0
                                   else build_there())
    stack = main_program.global_block().ops[0].attr("op_callstack")
    expected = "in net()" if exe.rank == 0 else "in build_there()"
    assert expected in stack[0], stack
    exe.run(startup)
    rng = np.random.default_rng(exe.rank)
    for _ in range(2):
        feed = {"x": rng.standard_normal((8, 4)).astype(np.float32),
                "y": rng.standard_normal((8, 1)).astype(np.float32)}
        exe.run(main_program, feed=feed, fetch_list=[loss])
    exe.check_consistency()
    print(f"CALLSTACK-OK rank {exe.rank}", flush=True)


if __name__ == "__main__":
    main()
