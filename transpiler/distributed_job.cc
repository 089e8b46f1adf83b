#include "transpiler/distributed_job.h"

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "transpiler/pipeline.h"
#include "transpiler/sharding.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

// The form a program's ops imply, for programs that declare none.
JobForm FormFromOps(const proto::ProgramDesc& program) {
  JobForm form = JobForm::kLocal;
  for (const auto& block : program.blocks()) {
    for (const auto& op : block.ops()) {
      const std::string& type = op.type();
      if (type == "c_allreduce" || type == "c_sparse_allreduce")
        return JobForm::kCollective;
      if (type == "send" || type == "recv") form = JobForm::kPserverTrainer;
      if (type == "listen_and_serv") return JobForm::kPserverServer;
    }
  }
  return form;
}

}  // namespace

const char* JobFormName(JobForm form) {
  switch (form) {
    case JobForm::kLocal:
      return "local";
    case JobForm::kCollective:
      return "collective";
    case JobForm::kPserverTrainer:
      return "parameter-server trainer";
    case JobForm::kPserverServer:
      return "parameter-server server";
  }
  return "unknown";
}

JobForm FormOf(const proto::ProgramDesc& program) {
  switch (program.distribution()) {
    case proto::ProgramDesc::COLLECTIVE:
      return JobForm::kCollective;
    case proto::ProgramDesc::PSERVER_TRAINER:
      return JobForm::kPserverTrainer;
    case proto::ProgramDesc::PSERVER_SERVER:
      return JobForm::kPserverServer;
    case proto::ProgramDesc::LOCAL:
      break;
  }
  return FormFromOps(program);
}

void SetForm(proto::ProgramDesc* program, JobForm form) {
  switch (form) {
    case JobForm::kLocal:
      program->set_distribution(proto::ProgramDesc::LOCAL);
      return;
    case JobForm::kCollective:
      program->set_distribution(proto::ProgramDesc::COLLECTIVE);
      return;
    case JobForm::kPserverTrainer:
      program->set_distribution(proto::ProgramDesc::PSERVER_TRAINER);
      return;
    case JobForm::kPserverServer:
      program->set_distribution(proto::ProgramDesc::PSERVER_SERVER);
      return;
  }
}

proto::TrainingJob PrepareJob(const proto::TrainingJob& job,
                              const proto::DistributedStrategy& strategy,
                              int nranks,
                              const std::vector<PserverProgram>& pservers,
                              int rank) {
  CheckJob(job, "job");
  switch (FormOf(job.main())) {
    case JobForm::kLocal:
      return CollectiveTranspile(job, strategy, nranks, rank);
    case JobForm::kCollective: {
      FLUID_ENFORCE(PipelineStages(job.strategy()) == 1,
                    "the job was transpiled for pipeline stages already; "
                    "give the plain program (each rank cuts its own stage)");
      FLUID_ENFORCE(job.main().nranks() == nranks,
                    "the job was "
                    "transpiled for ",
                    job.main().nranks(), " ranks but runs on ", nranks);
      // The data-parallel reductions span nranks / tp ranks.
      const int tp = TensorParallelDegree(job.strategy());
      if (IsSharded(job.main())) {
        LintSharded(job.main(), nranks / tp);
      } else {
        LintCollective(job.main(), nranks / tp,
                       job.strategy().average_gradients());
      }
      if (tp > 1) LintTensorParallel(job, tp);
      proto::TrainingJob out = job;
      *out.mutable_startup() = StartupWithBroadcasts(job.startup());
      return out;
    }
    case JobForm::kPserverTrainer:
      FLUID_ENFORCE(!pservers.empty(),
                    "the job is a parameter-server trainer program; give it "
                    "with its pserver programs (PserverToCollective, or "
                    "fluid.transpiler.to_collective) to run it collectively");
      return PserverToCollective(job, pservers, strategy, nranks);
    case JobForm::kPserverServer:
      break;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument,
              "the job is a parameter server's program: no parameter server "
              "runs here; run the trainer program on every rank (mpirun -np "
              "N), converted with its pserver programs");
}

}  // namespace fluid
