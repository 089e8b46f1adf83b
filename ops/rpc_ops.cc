// The parameter-server style's ops: send, recv, send_barrier,
// fetch_barrier, listen_and_serv. They are registered so that programs in
// that style load (and can be converted), but there is no parameter server
// here: running one is an error that says how to convert the program.
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void NoServerKernel(const ExecutionContext& /*ctx*/) {
  FLUID_THROW(ErrorCode::kUnimplemented,
              "this op belongs to a parameter-server program, and this "
              "framework has no parameter server: convert the job with "
              "PserverToCollective (the trainer and MPIExecutor do it on "
              "load)");
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
    .AnyPlaceKernel(NoServerKernel);

}  // namespace ops
}  // namespace fluid
