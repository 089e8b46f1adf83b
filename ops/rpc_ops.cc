// The parameter-server style's ops: send, recv, send_barrier,
// fetch_barrier, listen_and_serv. They are registered so that programs in
// that style load (and can be converted), but there is no parameter server
// here: running one is an error that says what to do instead, in the
// terms of whoever ran it (a Python script or the trainer command).
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

// The trainer half's ops: the program is to be converted to allreduce.
void NoServerKernel(const ExecutionContext& /*ctx*/) {
  FLUID_THROW(
      ErrorCode::kUnimplemented,
      "this op belongs to a parameter-server trainer program, and there is "
      "no parameter server here: the ranks average gradients by allreduce. "
      "In Python, run the program with fluid.MPIExecutor (one process or "
      "mpirun -np N; it converts a program from "
      "DistributeTranspiler.get_trainer_program() on its first run), or "
      "convert it with fluid.transpiler.to_collective(program) and run the "
      "result; for the trainer command, save the converted program "
      "(fluid.io.save_job) or transpile with mode \"collective\", then "
      "trainer --program FILE");
}

// The server's loop: no process is a server here.
void NoServerLoopKernel(const ExecutionContext& /*ctx*/) {
  FLUID_THROW(
      ErrorCode::kUnimplemented,
      "this is a parameter server's program, and no parameter server runs "
      "here: launch every process as a trainer (mpirun -np N python "
      "train.py); in Python each runs t.get_trainer_program() with "
      "fluid.MPIExecutor, with the trainer command each runs trainer "
      "--program FILE of the collective job");
}

}  // namespace

REGISTER_OP(send)
    .Doc("Parameter-server style: send X to the servers in epmap.")
    .DuplicableInput("X")
    .Attr<std::vector<std::string>>("epmap", {}, "server of each var")
    .AnyPlaceKernel(NoServerKernel);

REGISTER_OP(recv)
    .Doc("Parameter-server style: receive Out from the servers in epmap.")
    .DuplicableOutput("Out")
    .Attr<std::vector<std::string>>("epmap", {}, "server of each var")
    .AnyPlaceKernel(NoServerKernel);

REGISTER_OP(send_barrier)
    .Doc("Parameter-server style: all sends of this step are done.")
    .Attr<std::vector<std::string>>("endpoints", {}, "the servers")
    .AnyPlaceKernel(NoServerKernel);

REGISTER_OP(fetch_barrier)
    .Doc("Parameter-server style: all recvs of this step are done.")
    .Attr<std::vector<std::string>>("endpoints", {}, "the servers")
    .AnyPlaceKernel(NoServerKernel);

REGISTER_OP(listen_and_serv)
    .Doc("Parameter-server style: the server loop running optimize_blocks.")
    .DuplicableInput("X")
    .Attr<std::string>("endpoint", "", "where the server listens")
    .Attr<int32_t>("Fanin", 1, "number of trainers")
    .Attr<std::vector<int32_t>>("optimize_blocks", {},
                                "blocks holding one parameter's update each")
    .AnyPlaceKernel(NoServerLoopKernel);

}  // namespace ops
}  // namespace fluid
