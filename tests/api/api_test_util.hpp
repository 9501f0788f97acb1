// Runs the ranks of one job as threads of this process, each initialised
// through rma::api::testing::init_thread on the self provider.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rma/sdk/bootstrap.hpp"
#include "rma/rma.h"
#include "thread_group.hpp"
#include "window/testing.hpp"

namespace api_test {

// Calls body(rank, size) on n threads, each an initialised rank; finalizes.
inline void run_ranks(int n, const std::function<void(int, int)>& body) {
  auto group = make_group(n);
  ASSERT_EQ(group.size(), static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const int rc = rma::api::testing::init_thread(std::move(group[static_cast<std::size_t>(r)]));
      ASSERT_EQ(rc, RMA_SUCCESS) << "rank " << r;
      body(r, n);
      EXPECT_EQ(rma_finalize(), RMA_SUCCESS) << "rank " << r;
    });
  }
  for (auto& t : threads) t.join();
}

inline std::string last_message() {
  char buf[RMA_MAX_ERROR_STRING];
  int len = 0;
  rma_last_error_message(buf, &len);
  return std::string(buf, static_cast<std::size_t>(len));
}

}  // namespace api_test
