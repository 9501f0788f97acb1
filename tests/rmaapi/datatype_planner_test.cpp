// Pairing origin and target descriptions into work-request plans.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "datatype/transfer_planner.hpp"
#include "dt_test_util.hpp"

namespace rma::api::test {
namespace {

#define MAKE(var, call)                                  \
  rma_Datatype var = RMA_DATATYPE_NULL;                  \
  ASSERT_EQ(call, RMA_SUCCESS) << last_error_message(); \
  g.add(var)

struct Plan {
  std::uint64_t taddr;
  std::uint32_t len;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> sges;  // addr, length
  bool operator==(const Plan&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Plan& p) {
  os << "{target " << p.taddr << "+" << p.len << ":";
  for (auto& s : p.sges) os << " (" << s.first << "," << s.second << ")";
  return os << "}";
}

std::vector<Plan> run(TransferPlanner& p, std::size_t span = 16) {
  std::vector<Plan> out;
  std::vector<Sge> sges(span);
  TargetRange t;
  while (p.next(sges, t)) {
    Plan pl{t.addr, t.length, {}};
    std::uint64_t sum = 0;
    for (std::uint32_t k = 0; k < t.num_sge; ++k) {
      pl.sges.emplace_back(sges[k].addr, sges[k].length);
      sum += sges[k].length;
    }
    EXPECT_EQ(sum, t.length);
    out.push_back(pl);
  }
  return out;
}

TransferPlanner make(const Buffer& o, const Buffer& t, PlanLimits lim, LkeyLookup lk = {}) {
  auto r = TransferPlanner::create(o, t, lim, lk);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return std::move(r).value();
}

TEST(TransferPlanner, StridedOriginContiguousTargetSmallMaxSge) {
  TypeGuard g;
  MAKE(v, rma_type_vector(4, 1, 2, RMA_INT, &v));  // 4 bytes every 8
  auto p = make({1000, 1, &v->layout}, {5000, 4, &RMA_INT->layout}, {2, 1 << 20});
  EXPECT_EQ(p.total_bytes(), 16u);
  auto plans = run(p);
  EXPECT_EQ(plans, (std::vector<Plan>{{5000, 8, {{1000, 4}, {1008, 4}}},
                                      {5008, 8, {{1016, 4}, {1024, 4}}}}));
  EXPECT_EQ(p.state(), TransferPlanner::State::kDone);
  EXPECT_EQ(p.planned_bytes(), 16u);
}

TEST(TransferPlanner, StridedTargetSplitsRanges) {
  TypeGuard g;
  MAKE(t, rma_type_vector(2, 2, 3, RMA_INT, &t));  // (0,8) (12,8)
  auto p = make({1000, 4, &RMA_INT->layout}, {0, 1, &t->layout}, {4, 1 << 20});
  EXPECT_EQ(run(p), (std::vector<Plan>{{0, 8, {{1000, 8}}}, {12, 8, {{1008, 8}}}}));
}

TEST(TransferPlanner, BothSidesStridedBreakWhereEitherBreaks) {
  TypeGuard g;
  MAKE(o, rma_type_create_hvector(3, 4, 10, RMA_CHAR, &o));  // (0,4) (10,4) (20,4)
  MAKE(t, rma_type_create_hvector(2, 6, 100, RMA_CHAR, &t)); // (0,6) (100,6)
  auto p = make({0, 1, &o->layout}, {0, 1, &t->layout}, {8, 1 << 20});
  EXPECT_EQ(run(p), (std::vector<Plan>{{0, 6, {{0, 4}, {10, 2}}}, {100, 6, {{12, 2}, {20, 4}}}}));
}

TEST(TransferPlanner, MaxMessageSizeSplitsContiguous) {
  auto p = make({100, 16, &RMA_CHAR->layout}, {200, 4, &RMA_INT->layout}, {4, 6});
  EXPECT_EQ(run(p), (std::vector<Plan>{{200, 6, {{100, 6}}}, {206, 6, {{106, 6}}}, {212, 4, {{112, 4}}}}));
}

TEST(TransferPlanner, SgeSpanSmallerThanMaxSge) {
  TypeGuard g;
  MAKE(v, rma_type_vector(3, 1, 2, RMA_INT, &v));
  auto p = make({0, 1, &v->layout}, {0, 3, &RMA_INT->layout}, {30, 1 << 20});
  auto plans = run(p, 1);
  ASSERT_EQ(plans.size(), 3u);
  EXPECT_EQ(plans[2], (Plan{8, 4, {{16, 4}}}));
}

struct Regions {
  int calls = 0;
  static bool lookup(void* ctx, std::uint64_t addr, std::uint64_t, LocalKey* out) noexcept {
    auto* self = static_cast<Regions*>(ctx);
    ++self->calls;
    if (addr >= 1000 && addr < 1012) { *out = {1000, 1012, 11}; return true; }
    if (addr >= 1012 && addr < 2000) { *out = {1012, 2000, 22}; return true; }
    return false;
  }
};

TEST(TransferPlanner, SgesNeverCrossRegistrationsAndLookupsAreCached) {
  TypeGuard g;
  MAKE(v, rma_type_vector(4, 1, 2, RMA_INT, &v));  // 1000,1008,1016,1024 (4 each)
  Regions r;
  auto p = make({1000, 1, &v->layout}, {0, 16, &RMA_CHAR->layout}, {8, 1 << 20},
                {&Regions::lookup, &r});
  std::vector<Sge> sges(8);
  TargetRange t;
  ASSERT_TRUE(p.next(sges, t));
  ASSERT_EQ(t.num_sge, 4u);
  EXPECT_EQ(sges[0].lkey, 11u);
  EXPECT_EQ(sges[1].lkey, 11u);
  EXPECT_EQ(sges[2].lkey, 22u);
  EXPECT_EQ(sges[3].lkey, 22u);
  EXPECT_EQ(r.calls, 2);
  // A contiguous block straddling two registrations is split.
  Regions r2;
  auto q = make({1004, 12, &RMA_CHAR->layout}, {0, 12, &RMA_CHAR->layout}, {8, 1 << 20},
                {&Regions::lookup, &r2});
  EXPECT_EQ(run(q), (std::vector<Plan>{{0, 12, {{1004, 8}, {1012, 4}}}}));
}

TEST(TransferPlanner, LookupFailureStopsThePlanner) {
  Regions r;
  auto p = make({3000, 8, &RMA_CHAR->layout}, {0, 8, &RMA_CHAR->layout}, {8, 1 << 20},
                {&Regions::lookup, &r});
  std::vector<Sge> sges(8);
  TargetRange t;
  EXPECT_FALSE(p.next(sges, t));
  EXPECT_EQ(p.state(), TransferPlanner::State::kLkeyFailed);
  EXPECT_EQ(p.failed_addr(), 3000u);
  EXPECT_FALSE(p.next(sges, t));
}

TEST(TransferPlanner, SizeMismatchIsATypeError) {
  auto r = TransferPlanner::create({0, 3, &RMA_INT->layout}, {0, 2, &RMA_INT->layout}, {4, 1024});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(error_code(r.status()), RMA_ERR_TYPE);
  EXPECT_NE(r.status().message().find("12"), std::string::npos);
  auto c = TransferPlanner::create({0, -1, &RMA_INT->layout}, {0, 2, &RMA_INT->layout}, {4, 1024});
  EXPECT_EQ(error_code(c.status()), RMA_ERR_COUNT);
  auto n = TransferPlanner::create({0, 1, nullptr}, {0, 2, &RMA_INT->layout}, {4, 1024});
  EXPECT_EQ(error_code(n.status()), RMA_ERR_TYPE);
  auto z = TransferPlanner::create({0, 1, &RMA_INT->layout}, {0, 1, &RMA_INT->layout}, {0, 1024});
  EXPECT_EQ(error_code(z.status()), RMA_ERR_ARG);
}

TEST(TransferPlanner, ZeroBytesPlanNothing) {
  auto p = make({0, 0, &RMA_INT->layout}, {0, 0, &RMA_DOUBLE->layout}, {4, 1024});
  EXPECT_EQ(p.total_bytes(), 0u);
  EXPECT_TRUE(run(p).empty());
  EXPECT_EQ(p.state(), TransferPlanner::State::kDone);
}

TEST(TransferPlanner, UncommittedTypesAreRejectedAtTheHandle) {
  TypeGuard g;
  MAKE(v, rma_type_vector(2, 1, 2, RMA_INT, &v));
  auto l = committed_layout(v, "origin datatype");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(error_code(l.status()), RMA_ERR_TYPE);
  ASSERT_EQ(rma_type_commit(&v), RMA_SUCCESS);
  EXPECT_TRUE(committed_layout(v, "origin datatype").ok());
}

TEST(TransferPlanner, DataMovedByPlansEqualsPack) {
  // Execute the plans as memcpy "RDMA writes" and compare with typed copies.
  TypeGuard g;
  int bl[3] = {2, 1, 3};
  int d[3] = {5, 0, 9};
  MAKE(o, rma_type_indexed(3, bl, d, RMA_SHORT, &o));
  MAKE(t, rma_type_vector(3, 1, 3, RMA_SHORT, &t));
  ASSERT_EQ(o->layout.size * 2, t->layout.size * 4);  // 24 bytes on each side
  std::vector<std::uint8_t> src(256), dst(512, 0), want(512, 0);
  for (std::size_t k = 0; k < src.size(); ++k) src[k] = static_cast<std::uint8_t>(k * 7 + 1);
  const auto obase = reinterpret_cast<std::uint64_t>(src.data());
  const auto tbase = reinterpret_cast<std::uint64_t>(dst.data());
  auto p = make({obase, 2, &o->layout}, {tbase, 4, &t->layout}, {2, 5});
  std::vector<Sge> sges(2);
  TargetRange tr;
  while (p.next(sges, tr)) {
    auto* to = reinterpret_cast<std::uint8_t*>(tr.addr);
    for (std::uint32_t k = 0; k < tr.num_sge; ++k) {
      std::memcpy(to, reinterpret_cast<const void*>(sges[k].addr), sges[k].length);
      to += sges[k].length;
    }
  }
  // Reference: the same bytes, element by element.
  auto ob = blocks_of(o->layout, 2);
  auto tb = blocks_of(t->layout, 4);
  std::vector<std::uint8_t> stream;
  for (auto [off, len] : ob) stream.insert(stream.end(), src.begin() + off, src.begin() + off + len);
  std::size_t pos = 0;
  for (auto [off, len] : tb) {
    std::memcpy(want.data() + off, stream.data() + pos, static_cast<std::size_t>(len));
    pos += static_cast<std::size_t>(len);
  }
  EXPECT_EQ(dst, want);
}

TEST(TransferPlanner, MillionBlockPairing) {
  TypeGuard g;
  MAKE(v, rma_type_vector(1000000, 1, 2, RMA_INT, &v));
  auto p = make({0, 1, &v->layout}, {0, 1000000, &RMA_INT->layout}, {30, 1u << 30});
  std::vector<Sge> sges(30);
  TargetRange t;
  std::uint64_t plans = 0, pieces = 0;
  while (p.next(sges, t)) {
    ++plans;
    pieces += t.num_sge;
  }
  EXPECT_EQ(pieces, 1000000u);
  EXPECT_EQ(plans, (1000000u + 29) / 30);
  EXPECT_EQ(p.planned_bytes(), 4000000u);
}

}  // namespace
}  // namespace rma::api::test
