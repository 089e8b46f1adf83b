// Run settings that must agree across ranks.
//
// Which collectives a rank issues, and how many, follows from its run
// settings as much as from its program: the number of epochs and of steps
// per epoch, the batch size, the size of the data set, the shuffle seed,
// how often parameters are compared, whether and where a run resumes, the
// gradient bucket size. Ranks that differ in one of them wait for each other
// in different collectives and the job hangs. CheckRunSettingsAgree compares
// them once, before any other collective, and turns a difference into an
// error naming the setting and the ranks with their values.
//
// The comparison costs one exchange of a 64-bit fingerprint per rank when
// the settings agree; only on a mismatch are the values themselves
// exchanged (a bounded number of further collectives, the same on every
// rank, so a mismatch never hangs either).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/distributed/communicator.h"

namespace fluid {

// One named setting and its value, written canonically (so that equal
// values have equal text on every rank).
struct RunSetting {
  std::string name;   // as the user knows it, e.g. "--epochs"
  std::string value;  // canonical text

  static RunSetting Int(std::string name, int64_t value);
  // Shortest text that reads back as the same double.
  static RunSetting Real(std::string name, double value);
  static RunSetting Text(std::string name, std::string value);
  // "yes" / "no".
  static RunSetting Flag(std::string name, bool value);
};

// Compares `settings` across the ranks of `comm`; every rank must call it
// at the same point, with its settings in the same order. On a mismatch
// throws an aborted error on every rank naming the first setting (in list
// order) that differs and each distinct value with the ranks holding it,
// e.g. "ranks disagree on --epochs: rank 0 has 3, rank 1 has 2". Values
// are quoted and cut as Quote does.
void CheckRunSettingsAgree(Communicator* comm,
                           const std::vector<RunSetting>& settings);

// The error message CheckRunSettingsAgree throws, from every rank's text
// for the differing setting (`name` and value per rank); exposed for tests.
std::string DescribeSettingMismatch(const std::string& name,
                                    const std::vector<std::string>& values);

}  // namespace fluid
