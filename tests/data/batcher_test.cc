#include "src/data/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace fluid {
namespace {

// n samples: "x" float [n, 2] with row i = (i, -i), "y" int64 [n, 1] = i.
Dataset Numbered(int64_t n) {
  Dataset d;
  d.names = {"x", "y"};
  Tensor x, y;
  float* px = x.mutable_data<float>(Shape{n, 2});
  int64_t* py = y.mutable_data<int64_t>(Shape{n, 1});
  for (int64_t i = 0; i < n; ++i) {
    px[2 * i] = static_cast<float>(i);
    px[2 * i + 1] = -static_cast<float>(i);
    py[i] = i;
  }
  d.tensors = {x, y};
  return d;
}

// Every sample id the batcher yields in one epoch, checking that x and y
// stay paired and recording the batch sizes.
std::vector<int64_t> Epoch(Batcher* b, int64_t epoch,
                           std::vector<int64_t>* sizes = nullptr) {
  b->StartEpoch(epoch);
  std::vector<int64_t> ids;
  std::vector<Tensor> batch;
  while (b->Next(&batch)) {
    EXPECT_EQ(batch.size(), 2u);
    const int64_t rows = batch[1].shape()[0];
    EXPECT_EQ(batch[0].shape(), Shape({rows, 2}));
    EXPECT_EQ(batch[1].shape(), Shape({rows, 1}));
    if (sizes) sizes->push_back(rows);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t id = batch[1].data<int64_t>()[r];
      EXPECT_EQ(batch[0].data<float>()[2 * r], float(id));
      EXPECT_EQ(batch[0].data<float>()[2 * r + 1], -float(id));
      ids.push_back(id);
    }
  }
  return ids;
}

TEST(Batcher, EverySampleOncePerEpoch) {
  Batcher b(Numbered(103), 10, 42);
  EXPECT_EQ(b.StepsPerEpoch(), 11);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> sizes;
    auto ids = Epoch(&b, epoch, &sizes);
    ASSERT_EQ(ids.size(), 103u);
    EXPECT_EQ(static_cast<int64_t>(sizes.size()), b.StepsPerEpoch());
    EXPECT_EQ(sizes.back(), 3);
    std::sort(ids.begin(), ids.end());
    for (int64_t i = 0; i < 103; ++i) EXPECT_EQ(ids[i], i);
  }
}

TEST(Batcher, ShuffleVariesByEpochAndIsReproducible) {
  Dataset d = Numbered(200);
  Batcher a(d, 16, 7), b(d, 16, 7), other(d, 16, 8);
  auto a0 = Epoch(&a, 0), a1 = Epoch(&a, 1);
  EXPECT_NE(a0, a1);
  EXPECT_EQ(Epoch(&b, 1), a1);  // any epoch, in any order
  EXPECT_EQ(Epoch(&b, 0), a0);
  EXPECT_EQ(Epoch(&a, 0), a0);
  EXPECT_NE(Epoch(&other, 0), a0);
  std::vector<int64_t> identity(200);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(a0, identity);
  Batcher ordered(d, 16, 7, 0, 1, /*shuffle=*/false);
  EXPECT_EQ(Epoch(&ordered, 3), identity);
}

TEST(Batcher, ShardsEvenlyAcrossRanks) {
  const int nranks = 3;
  Dataset d = Numbered(1000);
  Batcher whole(d, 64, 11);  // the permutation every rank shares
  std::multiset<int64_t> seen;
  std::vector<int64_t> padded;
  for (int epoch : {0, 5}) {
    whole.StartEpoch(epoch);
    padded = whole.indices();
    // ceil(1000 / 3) * 3 = 1002: the first two repeat at the end.
    padded.push_back(padded[0]);
    padded.push_back(padded[1]);
    seen.clear();
    for (int r = 0; r < nranks; ++r) {
      Batcher b(d, 64, 11, r, nranks);
      EXPECT_EQ(b.SamplesPerRank(), 334);
      EXPECT_EQ(b.StepsPerEpoch(), 6);  // ceil(334 / 64), on every rank
      std::vector<int64_t> sizes;
      auto ids = Epoch(&b, epoch, &sizes);
      ASSERT_EQ(ids.size(), 334u);
      EXPECT_EQ(sizes.size(), 6u);
      EXPECT_EQ(sizes.back(), 334 - 5 * 64);
      for (size_t k = 0; k < ids.size(); ++k)
        EXPECT_EQ(ids[k], padded[r + k * nranks]) << "rank " << r;
      seen.insert(ids.begin(), ids.end());
    }
    EXPECT_EQ(seen.size(), 1002u);
    for (int64_t i = 0; i < 1000; ++i) EXPECT_GE(seen.count(i), 1u) << i;
  }
}

TEST(Batcher, MoreRanksThanSamples) {
  Dataset d = Numbered(2);
  for (int r = 0; r < 5; ++r) {
    Batcher b(d, 4, 1, r, 5);
    EXPECT_EQ(b.StepsPerEpoch(), 1);
    EXPECT_EQ(Epoch(&b, 0).size(), 1u);
  }
}

// The samples each step of epoch `epoch` trains on over all `nranks` ranks
// (batch `batch` each), starting at sample position `start`, for at most
// `max_steps` steps; `position` gets rank 0's EpochPosition after them.
std::vector<std::multiset<int64_t>> GlobalSteps(const Dataset& d, int nranks,
                                                int64_t batch, int64_t epoch,
                                                int64_t start,
                                                int64_t max_steps,
                                                int64_t* position = nullptr) {
  std::vector<std::multiset<int64_t>> steps;
  for (int r = 0; r < nranks; ++r) {
    Batcher b(d, batch, 11, r, nranks);
    b.StartEpoch(epoch, start);
    std::vector<Tensor> rows;
    for (int64_t s = 0; s < max_steps && b.Next(&rows); ++s) {
      if (steps.size() <= static_cast<size_t>(s)) steps.emplace_back();
      const int64_t* ids = rows[1].data<int64_t>();
      steps[s].insert(ids, ids + rows[1].shape()[0]);
    }
    if (r == 0 && position != nullptr) *position = b.EpochPosition();
  }
  return steps;
}

TEST(Batcher, ResumesAtASamplePositionOnFewerRanks) {
  // A global batch of 64: 16 x 4 ranks, stopped after 5 steps, resumed as
  // 32 x 2 ranks: every later step takes the samples it would have taken.
  Dataset d = Numbered(1000);
  const auto whole = GlobalSteps(d, 4, 16, 3, 0, 1000);
  ASSERT_EQ(whole.size(), 16u);  // ceil(1000 / 64)
  int64_t position = -1;
  const auto before = GlobalSteps(d, 4, 16, 3, 0, 5, &position);
  EXPECT_EQ(position, 5 * 64);
  Batcher probe(d, 32, 11, 0, 2);
  probe.StartEpoch(3, position);
  EXPECT_EQ(probe.StepsThisEpoch(), 11);  // 16 - 5
  const auto after = GlobalSteps(d, 2, 32, 3, position, 1000);
  ASSERT_EQ(after.size(), 11u);
  std::multiset<int64_t> all;
  for (size_t s = 0; s < whole.size(); ++s) {
    const auto& got = s < 5 ? before[s] : after[s - 5];
    EXPECT_EQ(got, whole[s]) << "step " << s;
    all.insert(got.begin(), got.end());
  }
  EXPECT_EQ(all.size(), 1000u);  // each sample exactly once
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(all.count(i), 1u) << i;
}

TEST(Batcher, ResumedEpochPadsOnlyFromItsStart) {
  // 1003 samples: 6 steps of 48 (3 ranks) done, the rest on 2 ranks: each
  // sample not yet trained comes exactly once; the one pad repeats the
  // epoch's first sample, which was trained already.
  Dataset d = Numbered(1003);
  Batcher whole(d, 1, 11);
  whole.StartEpoch(1);
  const std::vector<int64_t> order = whole.indices();
  int64_t position = -1;
  GlobalSteps(d, 3, 16, 1, 0, 6, &position);
  ASSERT_EQ(position, 288);
  const auto after = GlobalSteps(d, 2, 24, 1, position, 1000, &position);
  EXPECT_EQ(position, 1003);
  std::multiset<int64_t> rest;
  for (const auto& step : after) rest.insert(step.begin(), step.end());
  std::multiset<int64_t> want(order.begin() + 288, order.end());
  want.insert(order[0]);
  EXPECT_EQ(rest, want);
  EXPECT_THROW(Batcher(d, 4, 1).StartEpoch(0, 1004), Error);
}

TEST(Batcher, NoAllocationOnceWarm) {
  Batcher b(Numbered(100), 32, 3);  // batches of 32, 32, 32, 4
  std::vector<Tensor> batch;
  ASSERT_TRUE(b.Next(&batch));
  const void* x = batch[0].raw_data();
  const void* y = batch[1].raw_data();
  for (int epoch = 0; epoch < 3; ++epoch) {
    b.StartEpoch(epoch);
    int steps = 0;
    while (b.Next(&batch)) {
      EXPECT_EQ(batch[0].raw_data(), x);
      EXPECT_EQ(batch[1].raw_data(), y);
      ++steps;
    }
    EXPECT_EQ(steps, 4);
  }
}

TEST(Batcher, TakeFirstSharesAPrefix) {
  Dataset d = Numbered(50);
  Dataset head = TakeFirst(d, 10);
  EXPECT_EQ(head.size(), 10);
  EXPECT_EQ(head.names, d.names);
  EXPECT_EQ(head.tensors[0].shape(), Shape({10, 2}));
  EXPECT_EQ(head.tensors[1].raw_data(), d.tensors[1].raw_data());
  EXPECT_EQ(TakeFirst(d, 500).size(), 50);
  Batcher b(head, 4, 1);
  auto ids = Epoch(&b, 0);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, std::vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(Batcher, BadArgumentsAreErrors) {
  Dataset d = Numbered(10);
  EXPECT_THROW(Batcher(d, 0, 1), Error);
  EXPECT_THROW(Batcher(d, 4, 1, 3, 3), Error);
  Dataset uneven = d;
  uneven.tensors[1] = Numbered(9).tensors[1];
  try {
    Batcher b(uneven, 4, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'y' holds 9 samples"), std::string::npos) << msg;
  }
  EXPECT_THROW(Batcher(Dataset{}, 4, 1), Error);
}

}  // namespace
}  // namespace fluid
