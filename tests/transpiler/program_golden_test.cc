// The programs the collective passes produce, pinned: for every built-in
// model (and two with clipping, weight decay and Adam) over a grid of
// distribution settings, a hash of the transpiled main and startup
// programs (and, when sharded, of the checkpoint gather and scatter
// programs) must equal the one recorded in
// testdata/program_hashes.txt. A refactoring of the passes must leave
// every line unchanged; a change that means to alter programs rewrites the
// file with FLUID_UPDATE_TESTDATA=1 and shows the difference in review.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "src/builder/models.h"
#include "src/framework/enforce.h"
#include "src/framework/hash.h"
#include "transpiler/distributed_job.h"
#include "transpiler/sharding.h"

namespace fluid {
namespace {

// One point of the grid.
struct Settings {
  int nranks = 2;
  int64_t bucket_bytes = 4 << 20;
  bool overlap = true;
  std::string compression = "none";
  bool sync_batch_norm = false;
  int shard_stage = 0;
  bool overlap_gather = false;
  double sparse_dense_ratio = 0.25;

  std::string Key() const {
    std::ostringstream s;
    s << "n" << nranks << " b" << bucket_bytes << " o" << overlap << " c"
      << compression << " sbn" << sync_batch_norm << " z" << shard_stage
      << " og" << overlap_gather << " r" << sparse_dense_ratio;
    return s.str();
  }
};

proto::TrainingJob Transpile(const proto::TrainingJob& job, const Settings& s) {
  proto::DistributedStrategy strategy;
  strategy.set_bucket_bytes(s.bucket_bytes);
  strategy.set_overlap_allreduce(s.overlap);
  strategy.set_grad_compression(s.compression);
  strategy.set_sync_batch_norm(s.sync_batch_norm);
  strategy.set_sharding(s.shard_stage != 0);
  if (s.shard_stage != 0)
    strategy.mutable_sharding_configs()->set_stage(s.shard_stage);
  strategy.mutable_sharding_configs()->set_overlap_gather(s.overlap_gather);
  strategy.set_sparse_dense_ratio(static_cast<float>(s.sparse_dense_ratio));
  return PrepareJob(job, strategy, s.nranks);
}

uint64_t Fnv1a(const std::string& bytes, uint64_t h = kFnvOffsetBasis) {
  return Fnv1a64(bytes.data(), bytes.size(), h);
}

std::string Bytes(const proto::ProgramDesc& p) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  p.SerializeToCodedStream(&coded);
  return out;
}

std::string Hex(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof(s), "%016llx", static_cast<unsigned long long>(v));
  return s;
}

// The hash of everything the passes produce for `job` under `s`, or the
// error they raise (its message hashed: its words may be reworded, its
// being an error may not).
std::string Outcome(const proto::TrainingJob& job, const Settings& s) {
  try {
    const proto::TrainingJob out = Transpile(job, s);
    uint64_t h = Fnv1a(Bytes(out.main()));
    h = Fnv1a(Bytes(out.startup()), h);
    if (IsSharded(out.main())) {
      const ShardCheckpointPlan plan = PlanShardCheckpoint(job, out);
      h = Fnv1a(Bytes(plan.gather), h);
      h = Fnv1a(Bytes(plan.scatter), h);
    }
    return Hex(h);
  } catch (const Error&) {
    return "refused";
  }
}

std::vector<Settings> Grid() {
  std::vector<Settings> grid;
  for (int nranks : {2, 3})
    for (int64_t bucket : {int64_t{4} << 20, int64_t{64} << 10})
      for (bool overlap : {true, false})
        for (bool sbn : {false, true}) {
          Settings s;
          s.nranks = nranks;
          s.bucket_bytes = bucket;
          s.overlap = overlap;
          s.sync_batch_norm = sbn;
          for (const char* c : {"none", "bf16", "fp16"}) {
            s.compression = c;
            grid.push_back(s);
          }
          s.compression = "none";
          for (int stage : {1, 2})
            for (bool og : {false, true}) {
              s.shard_stage = stage;
              s.overlap_gather = og;
              grid.push_back(s);
            }
        }
  Settings ratio;
  ratio.sparse_dense_ratio = 0.5;
  grid.push_back(ratio);
  Settings compressed_shards;  // refused: shards travel uncompressed
  compressed_shards.shard_stage = 2;
  compressed_shards.compression = "bf16";
  grid.push_back(compressed_shards);
  return grid;
}

std::map<std::string, proto::TrainingJob> Jobs() {
  std::map<std::string, proto::TrainingJob> jobs;
  for (const std::string& name : BuiltInModels()) jobs[name] = BuildModel(name);
  ModelOptions knobs;
  knobs.default_optimizer = false;
  knobs.optimizer.type = "momentum";
  knobs.optimizer.regularization = {Regularization::Kind::kL2, 1e-4f};
  knobs.optimizer.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
  knobs.optimizer.gradient_clip.clip_norm = 1.0f;
  jobs["mlp+clip+decay"] = BuildModel("mlp", knobs);
  ModelOptions adam;
  adam.default_optimizer = false;
  adam.optimizer.type = "adam";
  jobs["lenet+adam"] = BuildModel("lenet", adam);
  return jobs;
}

std::string GoldenPath() {
  return std::string(FLUID_TESTDATA_DIR) + "/program_hashes.txt";
}

TEST(ProgramGolden, PassesProduceTheRecordedPrograms) {
  std::ostringstream now;
  for (const auto& [name, job] : Jobs())
    for (const Settings& s : Grid())
      now << name << " | " << s.Key() << " | " << Outcome(job, s) << "\n";
  if (std::getenv("FLUID_UPDATE_TESTDATA") != nullptr) {
    std::ofstream(GoldenPath()) << now.str();
    GTEST_SKIP() << "rewrote " << GoldenPath();
  }
  std::ifstream in(GoldenPath());
  ASSERT_TRUE(in) << "missing " << GoldenPath();
  std::istringstream got(now.str());
  std::string want_line, got_line;
  int line = 0, differ = 0;
  while (std::getline(in, want_line)) {
    ++line;
    ASSERT_TRUE(std::getline(got, got_line)) << "fewer lines than recorded";
    if (got_line != want_line && ++differ <= 10)
      ADD_FAILURE() << "line " << line << ": recorded\n  " << want_line
                    << "\nnow\n  " << got_line;
  }
  EXPECT_FALSE(std::getline(got, got_line)) << "more lines than recorded";
  EXPECT_EQ(differ, 0) << differ << " programs differ from the recorded ones";
}

}  // namespace
}  // namespace fluid
