// What a job is (FormOf) and how it is prepared for N ranks (PrepareJob):
// the one decision the trainer, MPIExecutor and Python share.
#include "transpiler/distributed_job.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "src/framework/backward.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/testdata.h"

namespace fluid {
namespace {

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int Count(const proto::ProgramDesc& p, const std::string& type) {
  int n = 0;
  for (const auto& op : p.blocks(0).ops()) n += op.type() == type;
  return n;
}

TEST(DistributedJob, TranspilersDeclareTheFormOfWhatTheyWrite) {
  const proto::TrainingJob plain = testing::LoadTestJob("mlp");
  EXPECT_EQ(FormOf(plain.main()), JobForm::kLocal);
  const proto::TrainingJob collective = CollectiveTranspile(plain, {}, 2);
  EXPECT_EQ(collective.main().distribution(), proto::ProgramDesc::COLLECTIVE);
  EXPECT_EQ(FormOf(collective.main()), JobForm::kCollective);
  const PserverSplit split = PserverTranspile(plain, 2, {"a:1", "b:2"});
  EXPECT_EQ(split.trainer.main().distribution(),
            proto::ProgramDesc::PSERVER_TRAINER);
  for (const auto& ps : split.pservers)
    EXPECT_EQ(FormOf(ps.main), JobForm::kPserverServer);
  EXPECT_EQ(FormOf(PserverToPlain(split.trainer, split.pservers).main()),
            JobForm::kLocal);
}

// Programs without the field (saved before it existed, or written by hand
// in the parameter-server style) are taken for the form their ops imply.
TEST(DistributedJob, UndeclaredProgramsAreJudgedByTheirOps) {
  proto::TrainingJob collective =
      CollectiveTranspile(testing::LoadTestJob("mlp"), {}, 2);
  collective.mutable_main()->clear_distribution();
  EXPECT_EQ(FormOf(collective.main()), JobForm::kCollective);
  PserverSplit split =
      PserverTranspile(testing::LoadTestJob("mlp"), 1, {"a:1"});
  split.trainer.mutable_main()->clear_distribution();
  split.pservers[0].main.clear_distribution();
  EXPECT_EQ(FormOf(split.trainer.main()), JobForm::kPserverTrainer);
  EXPECT_EQ(FormOf(split.pservers[0].main), JobForm::kPserverServer);
}

// The forward part of a transpiled program (an evaluation program) runs on
// one rank alone.
TEST(DistributedJob, ForwardCloneOfACollectiveProgramIsLocal) {
  const proto::TrainingJob collective =
      CollectiveTranspile(testing::LoadTestJob("mlp"), {}, 2);
  const proto::ProgramDesc test = CloneForTest(collective.main());
  EXPECT_EQ(FormOf(test), JobForm::kLocal);
  EXPECT_EQ(Count(test, "c_allreduce"), 0);
}

TEST(DistributedJob, PrepareTranspilesALocalJob) {
  const proto::TrainingJob job = PrepareJob(testing::LoadTestJob("mlp"), {}, 4);
  EXPECT_EQ(FormOf(job.main()), JobForm::kCollective);
  EXPECT_EQ(job.main().nranks(), 4);
  EXPECT_GT(Count(job.main(), "c_allreduce"), 0);
  EXPECT_GT(Count(job.startup(), "c_broadcast"), 0);
}

TEST(DistributedJob, PrepareKeepsACollectiveJobForItsSize) {
  const proto::TrainingJob once =
      CollectiveTranspile(testing::LoadTestJob("mlp"), {}, 2);
  const proto::TrainingJob again = PrepareJob(once, {}, 2);
  EXPECT_EQ(again.main().SerializeAsString(), once.main().SerializeAsString());
  EXPECT_EQ(Count(again.startup(), "c_broadcast"),
            Count(once.startup(), "c_broadcast"));
  EXPECT_NE(ErrorOf([&] {
              PrepareJob(once, {}, 3);
            }).find("transpiled for 2 ranks but runs on 3"),
            std::string::npos);
}

// A transpiled main program given with a startup program that was not
// transpiled: the broadcasts are added, or ranks would start apart.
TEST(DistributedJob, PrepareGivesAnUntranspiledStartupItsBroadcasts) {
  const proto::TrainingJob plain = testing::LoadTestJob("mlp");
  proto::TrainingJob mixed = CollectiveTranspile(plain, {}, 2);
  *mixed.mutable_startup() = plain.startup();
  const proto::TrainingJob job = PrepareJob(mixed, {}, 2);
  EXPECT_EQ(Count(job.startup(), "c_broadcast"),
            Count(CollectiveTranspile(plain, {}, 2).startup(), "c_broadcast"));
}

TEST(DistributedJob, PrepareConvertsAPserverPairAndNeedsItsServers) {
  const proto::TrainingJob plain = testing::LoadTestJob("mlp");
  const PserverSplit split = PserverTranspile(plain, 2, {"a:1", "b:2"});
  EXPECT_NE(ErrorOf([&] {
              PrepareJob(split.trainer, {}, 2);
            }).find("parameter-server trainer program"),
            std::string::npos);
  const proto::TrainingJob job =
      PrepareJob(split.trainer, {}, 2, split.pservers);
  EXPECT_EQ(FormOf(job.main()), JobForm::kCollective);
  EXPECT_EQ(Count(job.main(), "send"), 0);
  EXPECT_EQ(Count(job.main(), "c_allreduce"),
            Count(CollectiveTranspile(plain, {}, 2).main(), "c_allreduce"));
}

TEST(DistributedJob, PrepareRefusesAServerProgram) {
  const PserverSplit split =
      PserverTranspile(testing::LoadTestJob("mlp"), 1, {"a:1"});
  proto::TrainingJob server;
  *server.mutable_main() = split.pservers[0].main;
  *server.mutable_startup() = split.pservers[0].startup;
  const std::string msg = ErrorOf([&] { PrepareJob(server, {}, 2); });
  EXPECT_NE(msg.find("parameter server's program"), std::string::npos) << msg;
}

TEST(DistributedJob, TranspilersRefuseWhatIsAlreadyDistributed) {
  const proto::TrainingJob once =
      CollectiveTranspile(testing::LoadTestJob("mlp"), {}, 2);
  EXPECT_NE(ErrorOf([&] {
              CollectiveTranspile(once, {}, 2);
            }).find("already distributed (collective)"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              PserverTranspile(once, 2, {"a:1"});
            }).find("already distributed (collective)"),
            std::string::npos);
}

}  // namespace
}  // namespace fluid
