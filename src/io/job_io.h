// Training-job files (model.pb): a serialized TrainingJob, read and written
// through FileSystem like checkpoints, so that a job file is written
// atomically and durably and read only after it is known to be a regular
// file of a plausible size.
#pragma once

#include <string>

#include "proto/framework.pb.h"
#include "src/io/file_system.h"

namespace fluid {

// Reads and parses a TrainingJob file; a missing, empty, truncated or
// corrupt file, one that is not a regular file or is over 1 GiB, or one of a
// newer version, is an error naming the path.
proto::TrainingJob LoadJob(const std::string& path,
                           FileSystem* fs = DefaultFileSystem());
// Writes `job` atomically (see FileSystem::WriteFile).
void SaveJob(const proto::TrainingJob& job, const std::string& path,
             FileSystem* fs = DefaultFileSystem());

}  // namespace fluid
