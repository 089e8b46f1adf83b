#include "tests/testing/in_process_ranks.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "src/distributed/in_process_backend.h"

namespace fluid {
namespace testing {

void RunRanks(int n, const std::function<void(int, Communicator*)>& fn,
              const BackendWrapper& wrap) {
  auto group = InProcessGroup::Create(n);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < n; ++r) {
    std::unique_ptr<CommBackend> b = group->Backend(r);
    if (wrap) b = wrap(std::move(b));
    comms.push_back(std::make_unique<Communicator>(std::move(b)));
  }
  std::vector<std::thread> threads;
  std::vector<std::string> errors(n);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r, comms[r].get());
      } catch (const std::exception& e) {
        errors[r] = e.what();
        // Said at once: a rank waiting for this one would hide it.
        std::fprintf(stderr, "rank %d failed: %s\n", r, e.what());
        // The ranks waiting for this one (in any ring) throw too.
        group->AbortAll();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace testing
}  // namespace fluid
