// CheckRunSettingsAgree over in-process ranks: agreement costs one
// exchange, a mismatch is an error on every rank naming the setting and
// the ranks with their values, and never leaves a rank waiting.
#include "src/distributed/run_settings.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "src/distributed/in_process_backend.h"

namespace fluid {
namespace {

// Runs CheckRunSettingsAgree on `n` in-process ranks with settings(rank);
// returns each rank's error message ("" when it passed).
std::vector<std::string> Check(
    int n, const std::function<std::vector<RunSetting>(int)>& settings) {
  auto group = InProcessGroup::Create(n);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < n; ++r)
    comms.push_back(std::make_unique<Communicator>(group->Backend(r)));
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        CheckRunSettingsAgree(comms[r].get(), settings(r));
        // Every rank is still in step: one more collective completes.
        comms[r]->Barrier();
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

std::vector<RunSetting> Usual(int64_t epochs, double bucket_mb = 4.0) {
  return {RunSetting::Int("--epochs", epochs),
          RunSetting::Real("--bucket-mb", bucket_mb),
          RunSetting::Flag("--resume", false), RunSetting::Text("--seed", "1")};
}

TEST(RunSettings, CanonicalText) {
  EXPECT_EQ(RunSetting::Int("a", -3).value, "-3");
  EXPECT_EQ(RunSetting::Real("a", 0.1).value, "0.1");
  EXPECT_EQ(RunSetting::Real("a", 4.0).value, "4");
  EXPECT_EQ(RunSetting::Real("a", 1.0 / 3).value, "0.3333333333333333");
  EXPECT_EQ(RunSetting::Flag("a", true).value, "yes");
}

TEST(RunSettings, AgreeingRanksPass) {
  for (int n : {1, 2, 3}) {
    auto errors = Check(n, [](int) { return Usual(3); });
    for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  }
}

TEST(RunSettings, MismatchNamesTheSettingAndTheRanksOnEveryRank) {
  auto errors = Check(2, [](int r) { return Usual(r == 0 ? 3 : 2); });
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(errors[r],
              "ranks disagree on --epochs: rank 0 has 3, rank 1 "
              "has 2");
}

TEST(RunSettings, FirstDifferingSettingIsReportedAndRanksAreGrouped) {
  auto errors =
      Check(4, [](int r) { return Usual(r == 2 ? 5 : 3, r == 1 ? 0.5 : 4.0); });
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(errors[r],
              "ranks disagree on --epochs: ranks 0,1,3 have 3, "
              "rank 2 has 5")
        << "rank " << r;
  errors = Check(3, [](int r) { return Usual(3, r == 1 ? 0.5 : 4.0); });
  EXPECT_EQ(errors[0],
            "ranks disagree on --bucket-mb: ranks 0,2 have 4, "
            "rank 1 has 0.5");
}

TEST(RunSettings, DifferentListsAreNamedToo) {
  auto errors = Check(2, [](int r) {
    std::vector<RunSetting> s = Usual(3);
    if (r == 1) s.push_back(RunSetting::Int("--extra", 1));
    return s;
  });
  EXPECT_EQ(errors[0],
            "ranks disagree on the run settings: rank 0 has "
            "(no setting)='', rank 1 has --extra=1");
  EXPECT_EQ(errors[1], errors[0]);
}

TEST(RunSettings, ValuesAreQuotedAndCut) {
  auto errors = Check(2, [](int r) {
    return std::vector<RunSetting>{RunSetting::Text(
        "--data", r == 0 ? std::string("a\x1b[2Jb") : std::string(5000, 'z'))};
  });
  EXPECT_EQ(errors[0],
            "ranks disagree on --data: rank 0 has 'a\\x1b[2Jb', "
            "rank 1 has '" +
                std::string(kMaxQuotedBytes, 'z') + "...' (5000 bytes)");
}

TEST(RunSettings, DescribeCapsTheRanksListed) {
  std::vector<std::string> values(20, "1");
  values[7] = "2";
  EXPECT_EQ(DescribeSettingMismatch("--x", values),
            "ranks disagree on --x: ranks 0,1,2,3,4,5,6,8 and 11 more have 1, "
            "rank 7 has 2");
}

}  // namespace
}  // namespace fluid
