#include "src/io/job_io.h"

#include <cstdint>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace {

// Protocol buffers parse at most 2 GiB; a program is far smaller.
constexpr uint64_t kMaxJobFileBytes = uint64_t{1} << 30;

}  // namespace

proto::TrainingJob LoadJob(const std::string& path, FileSystem* fs) {
  const std::string bytes = ReadFileAtMost(fs, path, kMaxJobFileBytes);
  FLUID_ENFORCE(!bytes.empty(), Quote(path), " is empty, not a training job");
  proto::TrainingJob job;
  FLUID_ENFORCE(job.ParseFromString(bytes), Quote(path),
                " is truncated or corrupt: it does not parse as a "
                "TrainingJob");
  CheckJob(job, Quote(path));
  return job;
}

void SaveJob(const proto::TrainingJob& job, const std::string& path,
             FileSystem* fs) {
  std::string bytes;
  FLUID_ENFORCE(job.SerializeToString(&bytes), "cannot serialize job");
  fs->WriteFile(path, bytes);
}

}  // namespace fluid
