// RunOnTeam (src/framework/cpu_team.h): the chunks cover the range once,
// respect the grain and the thread count, do not depend on the run, and a
// loop inside a loop runs on the calling thread; the products and kernels
// built on it give a two-thread context the one-thread results bit for bit.
#include "src/framework/cpu_team.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "src/framework/math/blas.h"

namespace fluid {
namespace {

using Chunks = std::vector<std::pair<int64_t, int64_t>>;

Chunks ChunksOf(const CPUDeviceContext& dev, int64_t n, int64_t grain) {
  Chunks chunks;
  std::mutex mu;
  RunOnTeam(dev, n, grain, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    chunks.emplace_back(b, e);
  });
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

TEST(CpuTeam, ChunksCoverTheRangeOnceWithinGrainAndThreads) {
  for (int threads : {1, 2, 3, 4}) {
    CPUDeviceContext dev(threads);
    for (int64_t n : {1, 7, 64, 1000, 100003}) {
      for (int64_t grain : {1, 10, 5000}) {
        const Chunks chunks = ChunksOf(dev, n, grain);
        ASSERT_FALSE(chunks.empty());
        EXPECT_LE(static_cast<int64_t>(chunks.size()), threads);
        EXPECT_EQ(chunks.front().first, 0);
        EXPECT_EQ(chunks.back().second, n);
        for (size_t i = 0; i < chunks.size(); ++i) {
          EXPECT_LT(chunks[i].first, chunks[i].second);
          if (i > 0) {
            EXPECT_EQ(chunks[i].first, chunks[i - 1].second);
          }
          // Every chunk has at least `grain` items unless the range is
          // shorter than two grains (then it is one chunk).
          if (chunks.size() > 1) {
            EXPECT_GE(chunks[i].second - chunks[i].first, grain);
          }
        }
        EXPECT_EQ(ChunksOf(dev, n, grain), chunks) << "chunks vary by run";
      }
    }
  }
}

TEST(CpuTeam, EmptyRangeCallsNothing) {
  CPUDeviceContext dev(2);
  int calls = 0;
  RunOnTeam(dev, 0, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(CpuTeam, ALoopInsideALoopRunsOnTheCallingThread) {
  CPUDeviceContext dev(2);
  std::mutex mu;
  std::vector<Chunks> inner;
  RunOnTeam(dev, 2, 1, [&](int64_t, int64_t) {
    Chunks mine = ChunksOf(dev, 100, 1);
    std::lock_guard<std::mutex> lock(mu);
    inner.push_back(mine);
  });
  ASSERT_FALSE(inner.empty());
  for (const Chunks& c : inner) EXPECT_EQ(c, (Chunks{{0, 100}}));
}

TEST(CpuTeam, AnExceptionInAChunkReachesTheCaller) {
  CPUDeviceContext dev(2);
  for (int64_t bad : {0, 99}) {  // in the caller's chunk, in another's
    EXPECT_THROW(RunOnTeam(dev, 100, 1,
                           [&](int64_t b, int64_t e) {
                             if (b <= bad && bad < e)
                               throw std::runtime_error("bad item");
                           }),
                 std::runtime_error);
  }
}

TEST(CpuTeam, TwoThreadGemmEqualsOneThreadBitForBit) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  CPUDeviceContext one(1), two(2);
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{300, 70, 129},
                         {64, 513, 96},
                         {2048, 128, 128}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        std::vector<float> a(m * k), b(k * n), c1(m * n, 0.5f), c2 = c1;
        for (float& v : a) v = u(rng);
        for (float& v : b) v = u(rng);
        math::Gemm<float>(one, ta, tb, m, n, k, 1.5f, a.data(), b.data(), 0.25f,
                          c1.data());
        math::Gemm<float>(two, ta, tb, m, n, k, 1.5f, a.data(), b.data(), 0.25f,
                          c2.data());
        EXPECT_EQ(c1, c2) << m << "x" << n << "x" << k << " ta " << ta << " tb "
                          << tb;
      }
    }
  }
}

}  // namespace
}  // namespace fluid
