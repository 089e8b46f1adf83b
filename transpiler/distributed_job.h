// What a job is to the ranks that run it, and the one place that prepares
// it for them. The trainer command, MPIExecutor and the Python package all
// go through PrepareJob; none of them looks at a program's ops to decide.
#pragma once

#include <vector>

#include "proto/framework.pb.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/pserver_transpiler.h"

namespace fluid {

enum class JobForm {
  kLocal,           // one process trains alone: transpile it for N ranks
  kCollective,      // transpiled already: gradients allreduced across ranks
  kPserverTrainer,  // the trainer half of a parameter-server pair
  kPserverServer,   // a parameter server's program
};

const char* JobFormName(JobForm form);

// The form `program` declares (ProgramDesc.distribution, written by the
// transpilers). A program that declares none (LOCAL) but holds the ops of
// another form is taken for that form: programs saved before the field
// existed, and parameter-server programs written by hand as Fluid users
// wrote them (send/recv ops, listen_and_serv).
JobForm FormOf(const proto::ProgramDesc& program);

// Stamps `program` with `form`.
void SetForm(proto::ProgramDesc* program, JobForm form);

// `job` ready to run on `nranks` ranks:
//  - local: CollectiveTranspile(job, strategy, nranks);
//  - collective: checked to be for nranks ranks and linted, its
//    startup given the broadcasts from rank 0 when it has none (a startup
//    program that was not transpiled with its main program);
//  - a parameter-server trainer: converted with `pservers`, the programs of
//    its servers (PserverToCollective); an error when none are given;
//  - a server's program: an error (servers are not run here).
// With pipeline stages (a local job only), the job of rank `rank`'s stage.
proto::TrainingJob PrepareJob(const proto::TrainingJob& job,
                              const proto::DistributedStrategy& strategy,
                              int nranks,
                              const std::vector<PserverProgram>& pservers = {},
                              int rank = 0);

}  // namespace fluid
