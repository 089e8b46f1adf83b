// The parameter-server style, kept so that programs written for it still
// run: PserverTranspile splits a plain job into a trainer job (forward,
// backward, `send` of each gradient, `recv` of each parameter) and one
// program per server (merge the trainers' gradients with `sum`, `scale` by
// 1/trainers, run the optimizer). PserverToCollective turns such a pair back
// into one collective job: the sends become allreduces, the recvs and the
// merging ops go, and the servers' optimize ops run on every rank.
#pragma once

#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "transpiler/collective_transpiler.h"

namespace fluid {

struct PserverProgram {
  std::string endpoint;
  proto::ProgramDesc main;
  proto::ProgramDesc startup;
};

struct PserverSplit {
  proto::TrainingJob trainer;
  std::vector<PserverProgram> pservers;
};

// Splits `job` for `trainers` trainers and the servers at `endpoints`
// (parameters are assigned to servers round robin).
PserverSplit PserverTranspile(const proto::TrainingJob& job, int trainers,
                              const std::vector<std::string>& endpoints);

// The plain job a trainer/pserver pair came from: the trainer's ops minus
// send/recv/barriers, then the servers' optimize ops (in the order the
// trainer sends the gradients), with the servers' optimizer state added to
// both programs.
proto::TrainingJob PserverToPlain(const proto::TrainingJob& trainer,
                                  const std::vector<PserverProgram>& pservers);

// PserverToPlain followed by CollectiveTranspile.
proto::TrainingJob PserverToCollective(
    const proto::TrainingJob& trainer,
    const std::vector<PserverProgram>& pservers,
    const proto::DistributedStrategy& strategy, int nranks);

// True when `program` holds send/recv ops (a pserver-style trainer).
bool IsPserverTrainer(const proto::ProgramDesc& program);

}  // namespace fluid
