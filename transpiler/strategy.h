// The distributed strategy (proto/distributed_strategy.proto): validation,
// the canonical form ranks compare, and access to its fields by path, all
// by reflection over the message, so that a new field is checked, compared,
// printed and settable from every front end without code of its own.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"

namespace fluid {

// The sharding stage `s` asks for: 0 without sharding, else
// sharding_configs.stage.
int ShardStage(const proto::DistributedStrategy& s);

// Checks `s`: every field against the range or the allowed values it
// declares (min_value, max_value, allowed; NaN is never in range), then
// the combinations, and with `job`, what the job must allow of it (no
// field needs it at present). An error names the field, e.g.
// "DistributedStrategy.sharding_configs.stage must be in [1, 2], got 3".
void ValidateStrategy(const proto::DistributedStrategy& s,
                      const proto::TrainingJob* job = nullptr);

// Only the per-field part of ValidateStrategy: the declared ranges and
// allowed values (a front end checks a field as soon as it is set).
void CheckStrategyRanges(const proto::DistributedStrategy& s);

// `s` with every field set, to its value or its default, sub-messages
// included, so that two strategies that mean the same have the same
// serialization.
proto::DistributedStrategy CanonicalStrategy(
    const proto::DistributedStrategy& s);
// The deterministic serialization of CanonicalStrategy(s).
std::string CanonicalBytes(const proto::DistributedStrategy& s);

// Every leaf field as (dotted path, value as text format writes it), in
// field-number order, defaults included: "sharding_configs.stage" -> "2".
std::vector<std::pair<std::string, std::string>> StrategyFields(
    const proto::DistributedStrategy& s);

// The value of leaf field `path` as text (its default when unset); sets it
// from text as text format reads it ("true", "2", "0.5", "bf16"; booleans
// also take 1/0 and yes/no). An unknown path or a value of the wrong type
// is an error naming the field; ranges are ValidateStrategy's.
std::string GetStrategyField(const proto::DistributedStrategy& s,
                             const std::string& path);
void SetStrategyField(proto::DistributedStrategy* s, const std::string& path,
                      const std::string& value);

// The type of leaf field `path`: "bool", "int32", "int64", "float",
// "double" or "string"; an unknown path is an error naming it.
std::string StrategyFieldType(const std::string& path);
// Whether leaf field `path` is a list of names (its text is the names
// joined by commas).
bool StrategyFieldIsList(const std::string& path);

// Text format, the form `trainer --print-strategy` prints and --strategy
// reads. Parsing names an unknown field or a bad value with its line;
// `where` (a file name) starts the message.
std::string StrategyToText(const proto::DistributedStrategy& s);
proto::DistributedStrategy StrategyFromText(const std::string& text,
                                            const std::string& where);

}  // namespace fluid
