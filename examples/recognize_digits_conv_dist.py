#!/usr/bin/env python3
"""LeNet on Fashion-MNIST, written the way the seed's distributed scripts
were (recognize_digits_conv_dist.py): build the network, minimize, then
DistributeTranspiler.transpile(optimize_ops, params_grads, pservers=...,
trainers=...) and run the trainer program.

The transpiler is collective by default, so the trainer program averages
the gradients by allreduce and no parameter server is started. The
parameter-server script's own `exe = fluid.Executor(place)` would train
it too (a plain Executor runs a transpiled program across the ranks);
this one takes fluid.MPIExecutor (marked below) for its rank, world size
and check_consistency. Run it on N ranks with

    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 \\
        examples/recognize_digits_conv_dist.py --steps 100

(as root add --allow-run-as-root; PYTHONPATH=build/python). Without mpirun
it trains in one process.
"""
import argparse
import os

import fluid

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=100)
ap.add_argument("--batch-size", type=int, default=64,
                help="samples per step per rank")
ap.add_argument("--use-cuda", action="store_true",
                help="each rank on the GPU of its node-local rank (NCCL)")
args = ap.parse_args()

fluid.default_main_program().random_seed = 1  # the same init on every rank

images = fluid.layers.data(name="pixel", shape=[1, 28, 28], dtype="float32")
label = fluid.layers.data(name="label", shape=[1], dtype="int64")
conv_1 = fluid.layers.conv2d(images, num_filters=20, filter_size=5,
                             act="relu")
pool_1 = fluid.layers.pool2d(conv_1, pool_size=2, pool_type="max",
                             pool_stride=2)
conv_2 = fluid.layers.conv2d(pool_1, num_filters=50, filter_size=5,
                             act="relu")
pool_2 = fluid.layers.pool2d(conv_2, pool_size=2, pool_type="max",
                             pool_stride=2)
hidden = fluid.layers.fc(pool_2, size=500, act="relu")
predict = fluid.layers.fc(hidden, size=10, act="softmax")
cost = fluid.layers.cross_entropy(input=predict, label=label)
avg_cost = fluid.layers.mean(cost)
accuracy = fluid.layers.accuracy(input=predict, label=label)

optimizer = fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9)
optimize_ops, params_grads = optimizer.minimize(avg_cost)

place = fluid.CUDAPlace() if args.use_cuda else fluid.CPUPlace()
# exe = fluid.Executor(place)       # the parameter-server script's line
exe = fluid.MPIExecutor(place)      # the one-line change: data-parallel
rank, world = exe.rank, exe.world_size

t = fluid.DistributeTranspiler()
t.transpile(optimize_ops, params_grads,
            pservers=os.getenv("PSERVERS", "127.0.0.1:6174"),  # unused now
            trainers=world)
trainer_prog = t.get_trainer_program()

# The collective startup program: initialises the parameters and broadcasts
# rank 0's values, so every rank starts from the same point.
exe.run(t.get_startup_program())

x, y = fluid.datasets.fashion_mnist.train()
step = 0
epoch = 0
while step < args.steps:
    for bx, by in fluid.datasets.reader((x, y), args.batch_size, rank, world,
                                        seed=1, epoch=epoch):
        loss, acc = exe.run(trainer_prog,
                            feed={"pixel": bx, "label": by},
                            fetch_list=[avg_cost, accuracy])
        step += 1
        if rank == 0 and (step % 10 == 0 or step == args.steps):
            print(f"step {step}: loss {float(loss[0]):.4f} "
                  f"accuracy {float(acc[0]):.4f}", flush=True)
        if step == args.steps:
            break
    epoch += 1

exe.check_consistency()  # every rank ends with the same parameters
if rank == 0:
    print(f"trained {step} steps on {world} rank(s)", flush=True)
