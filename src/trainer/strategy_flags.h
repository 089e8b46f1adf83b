// The trainer's distribution flags: a table from each flag to the fields
// of the DistributedStrategy it sets (proto/distributed_strategy.proto).
// The flags write only the fields they name, into a message whose unset
// fields mean "not asked": the job file's own strategy, then --strategy
// FILE, then --strategy-set, then these flags decide, field by field
// (EffectiveStrategy). A field without a flag is still set by
// `--strategy-set PATH=VALUE`.
#pragma once

#include <string>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"

namespace fluid {

struct StrategyFlag {
  const char* flag;  // "--shard-optimizer"
  // The fields it sets, for the help text and for messages.
  std::vector<std::string> fields;
  const char* help;
  // What follows the flag: nothing (a switch), a value, or an optional
  // value (the flag alone applies "").
  enum class Arg { kNone, kValue, kOptional } arg;
  // Sets the flag's fields from its value ("" for a switch).
  void (*apply)(const std::string& value, proto::DistributedStrategy* s);
};

// Every distribution flag of the trainer.
const std::vector<StrategyFlag>& StrategyFlags();

// The flag that sets strategy field `path`, or "" when none does.
std::string FlagOfField(const std::string& path);

// `--strategy-set PATH=VALUE`: sets that field of `s` (an error names the
// field, or the missing '=').
void ApplyStrategySet(const std::string& assignment,
                      proto::DistributedStrategy* s);

// The strategy a run uses: the job's own, then the text proto in
// `strategy_file` (when not ""), then `asked` (what the flags set), each
// overriding the one before field by field. Validated (ranges and
// combinations; what the job allows is checked when it is transpiled).
proto::DistributedStrategy EffectiveStrategy(
    const proto::TrainingJob& job, const std::string& strategy_file,
    const proto::DistributedStrategy& asked);

}  // namespace fluid
