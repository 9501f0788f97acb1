// Thread levels (rma_init_thread, rma_query_thread) and RMA_THREAD_MULTIPLE
// under stress: several threads of each rank call librma at once, on one
// shared window (inside one lock_all epoch) and each on its own window
// (exclusive lock epochs), with every kind of operation, requests and
// flushes. Run under the tsan preset it must be free of data races.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api_test_util.hpp"
#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/registry.hpp"

namespace {

// As api_test::run_ranks, at a given thread level.
void run_ranks_at(int n, int level, const std::function<void(int, int)>& body) {
  auto group = api_test::make_group(n);
  ASSERT_EQ(group.size(), static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const int rc = rma::api::testing::init_thread(std::move(group[static_cast<std::size_t>(r)]), "self", level);
      ASSERT_EQ(rc, RMA_SUCCESS) << "rank " << r;
      body(r, n);
      EXPECT_EQ(rma_finalize(), RMA_SUCCESS) << "rank " << r;
    });
  }
  for (auto& t : threads) t.join();
}

TEST(ApiThreads, EveryLevelIsProvidedAndQueried) {
  for (int level : {RMA_THREAD_SINGLE, RMA_THREAD_FUNNELED, RMA_THREAD_SERIALIZED, RMA_THREAD_MULTIPLE}) {
    run_ranks_at(2, level, [level](int, int) {
      int provided = -1;
      EXPECT_EQ(rma_query_thread(&provided), RMA_SUCCESS);
      EXPECT_EQ(provided, level);
      EXPECT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    });
  }
  // Before rma_init errors go to RMA_ERRORS_ARE_FATAL (no window, no communicator yet).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int provided = -1;
  EXPECT_DEATH((void)rma_init_thread(nullptr, nullptr, 7, &provided), "required 7 is not RMA_THREAD_SINGLE");
  EXPECT_DEATH((void)rma_init_thread(nullptr, nullptr, RMA_THREAD_MULTIPLE, nullptr), "provided is null");
  EXPECT_DEATH((void)rma_query_thread(&provided), "not initialized");
}

constexpr int kRanks = 3;
constexpr int kWorkers = 4;
constexpr int kIters = 150;  // a multiple of kRanks

TEST(ApiThreads, MultipleThreadsPerRankOnSharedAndOwnWindows) {
  // Tickets fetched from each rank's counter, by every worker of every rank.
  std::vector<std::vector<std::int64_t>> tickets(kRanks);
  std::mutex tickets_mutex;
  run_ranks_at(kRanks, RMA_THREAD_MULTIPLE, [&](int rank, int n) {
    // Shared window: [0] SUM counter, [1] fetch_and_op tickets, [2] CAS-swapped
    // word, then one put slot per (rank, worker).
    std::int64_t* shared = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(8 * (3 + n * kWorkers), 8, RMA_INFO_NULL, RMA_COMM_WORLD, &shared, &win),
              RMA_SUCCESS);
    std::vector<rma_Win> own(kWorkers, RMA_WIN_NULL);
    std::vector<std::int64_t*> own_base(kWorkers, nullptr);
    for (int k = 0; k < kWorkers; ++k) {
      ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &own_base[static_cast<std::size_t>(k)],
                                 &own[static_cast<std::size_t>(k)]),
                RMA_SUCCESS);
    }
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    rma::api::Context* ctx = rma::api::testing::thread_context();
    std::vector<std::thread> workers;
    std::vector<std::int64_t> mine[kWorkers];
    for (int k = 0; k < kWorkers; ++k) {
      workers.emplace_back([&, k] {
        rma::api::testing::share_context(ctx);
        rma_Win w = own[static_cast<std::size_t>(k)];
        auto& got = mine[k];
        for (int it = 0; it < kIters; ++it) {
          const int t = (it + rank + k) % n;
          const std::int64_t one = 1, id = rank * 100 + k;
          std::int64_t ticket = -1, back = -1;
          EXPECT_EQ(rma_accumulate(&one, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
          EXPECT_EQ(rma_fetch_and_op(&one, &ticket, RMA_INT64_T, t, 1, RMA_SUM, win), RMA_SUCCESS);
          EXPECT_EQ(rma_put(&id, 1, RMA_INT64_T, t, 3 + rank * kWorkers + k, 1, RMA_INT64_T, win), RMA_SUCCESS);
          rma_Request req = RMA_REQUEST_NULL;
          EXPECT_EQ(rma_rget(&back, 1, RMA_INT64_T, t, 3 + rank * kWorkers + k, 1, RMA_INT64_T, win, &req),
                    RMA_SUCCESS);
          EXPECT_EQ(rma_win_flush(t, win), RMA_SUCCESS);
          EXPECT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
          EXPECT_EQ(back, id);
          got.push_back(ticket * kRanks + t);  // tickets are per target: tag them
          // Swap tokens on the CAS word (compare_and_swap vs REPLACE).
          std::int64_t old = 0;
          const std::int64_t tok = (rank * kWorkers + k) * 1000 + it + 1;
          EXPECT_EQ(rma_fetch_and_op(&tok, &old, RMA_INT64_T, t, 2, RMA_REPLACE, win), RMA_SUCCESS);
          // Own window: an exclusive epoch, concurrent with the other workers' epochs.
          EXPECT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, t, 0, w), RMA_SUCCESS);
          std::int64_t v = 0;
          EXPECT_EQ(rma_get(&v, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, w), RMA_SUCCESS);
          EXPECT_EQ(rma_win_flush(t, w), RMA_SUCCESS);
          ++v;
          EXPECT_EQ(rma_put(&v, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, w), RMA_SUCCESS);
          EXPECT_EQ(rma_win_unlock(t, w), RMA_SUCCESS);
        }
        rma::api::testing::share_context(nullptr);
      });
    }
    for (auto& th : workers) th.join();
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    {
      std::lock_guard g(tickets_mutex);
      for (auto& m : mine) {
        for (std::int64_t v : m) tickets[static_cast<std::size_t>(v % kRanks)].push_back(v / kRanks);
      }
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    // Every worker of every rank hit each target kIters / n times.
    EXPECT_EQ(shared[0], std::int64_t{n} * kWorkers * kIters / n);
    EXPECT_EQ(shared[1], std::int64_t{n} * kWorkers * kIters / n);
    for (int k = 0; k < kWorkers; ++k) {
      // The read-modify-write under exclusive locks: no increment lost.
      ASSERT_EQ(rma_win_sync(own[static_cast<std::size_t>(k)]), RMA_SUCCESS);
      EXPECT_EQ(own_base[static_cast<std::size_t>(k)][0], std::int64_t{n} * kIters / n) << "window " << k;
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    for (auto& w : own) ASSERT_EQ(rma_win_free(&w), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
  for (auto& t : tickets) {
    std::sort(t.begin(), t.end());
    for (std::size_t i = 0; i < t.size(); ++i) ASSERT_EQ(t[i], static_cast<std::int64_t>(i));
  }
}

// Attribute caching and names on one window from every thread of a rank at
// once (they take the API lock like every other window call), with
// accumulate_ordering=none accumulates recorded and run from several
// threads meanwhile.
TEST(ApiThreads, AttributesNamesAndRecordedAccumulatesFromManyThreads) {
  constexpr int kThreads = 4, kRounds = 200;
  run_ranks_at(2, RMA_THREAD_MULTIPLE, [&](int rank, int n) {
    rma_Info info = RMA_INFO_NULL;
    ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "accumulate_ordering", "none"), RMA_SUCCESS);
    double* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(8 * kThreads, 8, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_info_free(&info), RMA_SUCCESS);
    std::vector<int> keyvals(kThreads, RMA_KEYVAL_INVALID);
    for (int& k : keyvals) {
      ASSERT_EQ(rma_win_create_keyval(RMA_WIN_NULL_COPY_FN, RMA_WIN_NULL_DELETE_FN, &k, nullptr), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    rma::api::Context* ctx = rma::api::testing::thread_context();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        rma::api::testing::share_context(ctx);
        static int values[kThreads];
        for (int i = 0; i < kRounds; ++i) {
          EXPECT_EQ(rma_win_set_attr(win, keyvals[static_cast<std::size_t>(t)], &values[t]), RMA_SUCCESS);
          void* got = nullptr;
          int flag = 0;
          EXPECT_EQ(rma_win_get_attr(win, keyvals[static_cast<std::size_t>(t)], &got, &flag), RMA_SUCCESS);
          EXPECT_TRUE(flag != 0 && got == &values[t]);
          const std::string name = "thread " + std::to_string(t);
          EXPECT_EQ(rma_win_set_name(win, name.c_str()), RMA_SUCCESS);
          char back[RMA_MAX_OBJECT_NAME];
          int len = 0;
          EXPECT_EQ(rma_win_get_name(win, back, &len), RMA_SUCCESS);
          EXPECT_EQ(std::strncmp(back, "thread ", 7), 0) << back;
          const double one = 1;
          EXPECT_EQ(rma_accumulate(&one, 1, RMA_DOUBLE, (rank + i) % n, t, 1, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
          if (i % 50 == 49) { EXPECT_EQ(rma_win_flush_all(win), RMA_SUCCESS); }
          if (i % 2 == 1) { EXPECT_EQ(rma_win_delete_attr(win, keyvals[static_cast<std::size_t>(t)]), RMA_SUCCESS); }
        }
        rma::api::testing::share_context(nullptr);
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(base[t], 1.0 * kRounds) << t;  // every rank added kRounds / n
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
    for (int& k : keyvals) ASSERT_EQ(rma_win_free_keyval(&k), RMA_SUCCESS);
  });
}

// The engine on its own, as a layer driving one manager from many threads
// (SHMEM) uses it: EndpointOptions::thread_safe, 4 threads per rank posting
// fetch-adds (reserve -> bounce -> post under lock()), inline writes and
// waiting for their own requests, with few send slots so credits run out.
TEST(ApiThreads, ThreadSafeEndpointManagerFromManyThreads) {
  constexpr int kThreads = 4, kPosts = 400;
  auto group = api_test::make_group(2);
  ASSERT_EQ(group.size(), 2u);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      rma::Bootstrap& bs = *group[static_cast<std::size_t>(r)];
      auto dev = rma::ProviderRegistry::global().open("self");
      ASSERT_TRUE(dev.ok()) << dev.status().to_string();
      rma::endpoint::EndpointOptions o;
      o.thread_safe = true;
      o.sq_depth = 8;
      auto m = rma::endpoint::EndpointManager::create(bs, *dev, o);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      rma::endpoint::EndpointManager& mgr = **m;
      std::vector<std::uint64_t> mem(64, 0);
      auto reg = mgr.rcache(rma::endpoint::kNetworkRail).acquire_exact(mem.data(), mem.size() * 8, rma::kAllAccess);
      ASSERT_TRUE(reg.ok());
      struct Exposed {
        std::uint64_t addr;
        std::uint32_t rkey;
      } mine{reinterpret_cast<std::uint64_t>(mem.data()), reg->rkey()}, peer{};
      auto all = bs.allgather({reinterpret_cast<const std::uint8_t*>(&mine), sizeof(mine)});
      ASSERT_TRUE(all.ok());
      std::memcpy(&peer, (*all)[static_cast<std::size_t>(1 - r)].data(), sizeof(peer));
      std::vector<std::thread> ts;
      std::vector<std::vector<std::uint64_t>> fetched(kThreads);
      for (int k = 0; k < kThreads; ++k) {
        ts.emplace_back([&, k] {
          auto& ep = mgr.endpoint(1 - r);
          for (int i = 0; i < kPosts; ++i) {
            rma::endpoint::Request req;
            std::uint64_t old = ~0ull;
            {
              auto g = mgr.lock();
              ASSERT_EQ(ep.reserve(true), rma::StatusCode::kOk);
              const rma::Sge b = ep.bounce(8);
              rma::WorkRequest wr;
              wr.opcode = rma::Opcode::kAtomicFetchAdd;
              wr.sgl = {&b, 1};
              wr.remote_addr = peer.addr;
              wr.rkey = peer.rkey;
              wr.compare_add = 1;
              ASSERT_EQ(ep.post(wr, rma::endpoint::OnComplete{&req, {}, &old, 8}), rma::StatusCode::kOk);
            }
            const std::uint64_t v = static_cast<std::uint64_t>(k * 100000 + i);
            rma::Sge s{reinterpret_cast<std::uint64_t>(&v), 8, 0};
            rma::WorkRequest w;
            w.opcode = rma::Opcode::kRdmaWrite;
            w.flags = rma::kWrInline;
            w.sgl = {&s, 1};
            w.remote_addr = peer.addr + 8 * static_cast<std::uint64_t>(1 + k);
            w.rkey = peer.rkey;
            ASSERT_EQ(ep.post(w, rma::endpoint::OnComplete{&req, {}, nullptr, 0}), rma::StatusCode::kOk);
            ASSERT_EQ(mgr.wait(req), rma::StatusCode::kOk);
            auto g = mgr.lock();
            ASSERT_FALSE(req.failed());
            fetched[static_cast<std::size_t>(k)].push_back(old);
          }
          ASSERT_EQ(ep.flush(), rma::StatusCode::kOk);
        });
      }
      for (auto& t : ts) t.join();
      ASSERT_TRUE(bs.barrier().ok());
      // This rank's counter was raised by the peer's threads only: every
      // fetched value (of the peer's counter) distinct, 0..N-1.
      std::vector<std::uint64_t> all_old;
      for (auto& f : fetched) all_old.insert(all_old.end(), f.begin(), f.end());
      std::sort(all_old.begin(), all_old.end());
      for (std::size_t i = 0; i < all_old.size(); ++i) ASSERT_EQ(all_old[i], i);
      (void)mgr.progress();  // takes the lock the NIC's writes were made under
      EXPECT_EQ(__atomic_load_n(&mem[0], __ATOMIC_ACQUIRE), std::uint64_t{kThreads} * kPosts);
      for (int k = 0; k < kThreads; ++k) {
        EXPECT_EQ(__atomic_load_n(&mem[static_cast<std::size_t>(1 + k)], __ATOMIC_ACQUIRE),
                  static_cast<std::uint64_t>(k * 100000 + kPosts - 1));
      }
      ASSERT_TRUE(bs.barrier().ok());
      reg->reset();
    });
  }
  for (auto& t : ranks) t.join();
}

}  // namespace
