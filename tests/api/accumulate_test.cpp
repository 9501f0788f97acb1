// Accumulate, get_accumulate, fetch_and_op and compare_and_swap: every op on
// every type class MPI defines it for, concurrent accumulates from many
// ranks (result = the serial result), NIC-atomic and lock paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::run_ranks;

constexpr int kElems = 6;

struct Case {
  std::string name;
  rma_Datatype type;
  rma_Op op;
  std::size_t elem_size;
  std::function<void(int i, void* out)> init;
  std::function<void(int rank, int i, void* out)> contrib;
  std::function<void(void* acc, const void* in)> fold;
  std::function<bool(const void* a, const void* b)> equal;
};

template <typename T>
Case make_case(std::string name, rma_Datatype type, rma_Op op, std::function<T(int)> init,
               std::function<T(int, int)> contrib, std::function<T(T, T)> fold) {
  Case c;
  c.name = std::move(name);
  c.type = type;
  c.op = op;
  c.elem_size = sizeof(T);
  c.init = [init](int i, void* out) { T v = init(i); std::memcpy(out, &v, sizeof(T)); };
  c.contrib = [contrib](int r, int i, void* out) { T v = contrib(r, i); std::memcpy(out, &v, sizeof(T)); };
  c.fold = [fold](void* acc, const void* in) {
    T a, b;
    std::memcpy(&a, acc, sizeof(T));
    std::memcpy(&b, in, sizeof(T));
    a = fold(a, b);
    std::memcpy(acc, &a, sizeof(T));
  };
  c.equal = [](const void* a, const void* b) {
    T x, y;
    std::memcpy(&x, a, sizeof(T));
    std::memcpy(&y, b, sizeof(T));
    return x == y;
  };
  return c;
}

template <typename T>
void integer_cases(std::vector<Case>& cs, const std::string& tn, rma_Datatype t) {
  auto init = [](int i) { return static_cast<T>(i + 3); };
  auto small = [](int r, int i) { return static_cast<T>((r * 7 + i) % 5 + 1); };
  cs.push_back(make_case<T>(tn + " SUM", t, RMA_SUM, init, small, [](T a, T b) { return static_cast<T>(a + b); }));
  cs.push_back(make_case<T>(tn + " PROD", t, RMA_PROD, init, [](int r, int i) { return static_cast<T>(1 + ((r + i) & 1)); },
                            [](T a, T b) { return static_cast<T>(a * b); }));
  cs.push_back(make_case<T>(tn + " MAX", t, RMA_MAX, init, small, [](T a, T b) { return std::max(a, b); }));
  cs.push_back(make_case<T>(tn + " MIN", t, RMA_MIN, init, small, [](T a, T b) { return std::min(a, b); }));
  auto bits = [](int r, int i) { return static_cast<T>((1 << (r % 6)) | (i & 1)); };
  auto logic = [](int r, int i) { return static_cast<T>((r + i) % 3 == 0 ? 0 : 2); };
  cs.push_back(make_case<T>(tn + " LAND", t, RMA_LAND, init, logic, [](T a, T b) { return static_cast<T>(a && b); }));
  cs.push_back(make_case<T>(tn + " LOR", t, RMA_LOR, [](int i) { return static_cast<T>(i & 1); }, logic,
                            [](T a, T b) { return static_cast<T>(a || b); }));
  cs.push_back(make_case<T>(tn + " LXOR", t, RMA_LXOR, init, logic, [](T a, T b) { return static_cast<T>((a != 0) != (b != 0)); }));
  cs.push_back(make_case<T>(tn + " BAND", t, RMA_BAND, [](int) { return static_cast<T>(0x7f); }, bits,
                            [](T a, T b) { return static_cast<T>(a & b); }));
  cs.push_back(make_case<T>(tn + " BOR", t, RMA_BOR, init, bits, [](T a, T b) { return static_cast<T>(a | b); }));
  cs.push_back(make_case<T>(tn + " BXOR", t, RMA_BXOR, init, bits, [](T a, T b) { return static_cast<T>(a ^ b); }));
}

template <typename T>
void float_cases(std::vector<Case>& cs, const std::string& tn, rma_Datatype t) {
  // Small integers: every order of the serial fold gives the same bits.
  auto init = [](int i) { return static_cast<T>(i + 1); };
  auto small = [](int r, int i) { return static_cast<T>((r * 3 + i) % 4 + 1); };
  cs.push_back(make_case<T>(tn + " SUM", t, RMA_SUM, init, small, [](T a, T b) { return a + b; }));
  cs.push_back(make_case<T>(tn + " PROD", t, RMA_PROD, init, [](int r, int i) { return static_cast<T>(1 + ((r + i) & 1)); },
                            [](T a, T b) { return a * b; }));
  cs.push_back(make_case<T>(tn + " MAX", t, RMA_MAX, init, small, [](T a, T b) { return std::max(a, b); }));
  cs.push_back(make_case<T>(tn + " MIN", t, RMA_MIN, init, small, [](T a, T b) { return std::min(a, b); }));
}

template <typename T>
void complex_cases(std::vector<Case>& cs, const std::string& tn, rma_Datatype t) {
  using C = std::complex<T>;
  auto init = [](int i) { return C(static_cast<T>(i), 1); };
  cs.push_back(make_case<C>(tn + " SUM", t, RMA_SUM, init, [](int r, int i) { return C(static_cast<T>(r), static_cast<T>(i)); },
                            [](C a, C b) { return a + b; }));
  cs.push_back(make_case<C>(tn + " PROD", t, RMA_PROD, init, [](int r, int) { return r % 2 ? C(0, 1) : C(1, 0); },
                            [](C a, C b) { return a * b; }));
}

template <typename V>
struct Pair {
  V v;
  int i;
  bool operator==(const Pair& o) const { return v == o.v && i == o.i; }
};

template <typename V>
void loc_cases(std::vector<Case>& cs, const std::string& tn, rma_Datatype t) {
  using P = Pair<V>;
  auto init = [](int i) { return P{static_cast<V>(2), 100 + i}; };
  // Ties on purpose: value (r % 3), index r; the smaller index wins a tie.
  auto contrib = [](int r, int i) { return P{static_cast<V>((r + i) % 3 + 1), r}; };
  auto maxloc = [](P a, P b) {
    if (b.v > a.v) return b;
    if (b.v == a.v) a.i = std::min(a.i, b.i);
    return a;
  };
  auto minloc = [](P a, P b) {
    if (b.v < a.v) return b;
    if (b.v == a.v) a.i = std::min(a.i, b.i);
    return a;
  };
  cs.push_back(make_case<P>(tn + " MAXLOC", t, RMA_MAXLOC, init, contrib, maxloc));
  cs.push_back(make_case<P>(tn + " MINLOC", t, RMA_MINLOC, init, contrib, minloc));
}

std::vector<Case> all_cases() {
  std::vector<Case> cs;
  integer_cases<int>(cs, "RMA_INT", RMA_INT);
  integer_cases<signed char>(cs, "RMA_SIGNED_CHAR", RMA_SIGNED_CHAR);
  integer_cases<std::uint8_t>(cs, "RMA_UINT8_T", RMA_UINT8_T);
  integer_cases<short>(cs, "RMA_SHORT", RMA_SHORT);
  integer_cases<std::uint16_t>(cs, "RMA_UINT16_T", RMA_UINT16_T);
  integer_cases<unsigned>(cs, "RMA_UNSIGNED", RMA_UNSIGNED);
  integer_cases<std::int64_t>(cs, "RMA_INT64_T", RMA_INT64_T);  // SUM: NIC fetch-add
  integer_cases<unsigned long long>(cs, "RMA_UNSIGNED_LONG_LONG", RMA_UNSIGNED_LONG_LONG);
  integer_cases<long>(cs, "RMA_LONG", RMA_LONG);
  float_cases<float>(cs, "RMA_FLOAT", RMA_FLOAT);
  float_cases<double>(cs, "RMA_DOUBLE", RMA_DOUBLE);
  float_cases<long double>(cs, "RMA_LONG_DOUBLE", RMA_LONG_DOUBLE);
  complex_cases<float>(cs, "RMA_C_FLOAT_COMPLEX", RMA_C_FLOAT_COMPLEX);
  complex_cases<double>(cs, "RMA_C_DOUBLE_COMPLEX", RMA_C_DOUBLE_COMPLEX);
  cs.push_back(make_case<bool>("RMA_C_BOOL LAND", RMA_C_BOOL, RMA_LAND, [](int i) { return i % 2 == 0; },
                               [](int r, int i) { return (r + i) % 4 != 0; }, [](bool a, bool b) { return a && b; }));
  cs.push_back(make_case<bool>("RMA_C_BOOL LOR", RMA_C_BOOL, RMA_LOR, [](int) { return false; },
                               [](int r, int i) { return (r * i) % 5 == 1; }, [](bool a, bool b) { return a || b; }));
  cs.push_back(make_case<bool>("RMA_C_BOOL LXOR", RMA_C_BOOL, RMA_LXOR, [](int i) { return i % 3 == 0; },
                               [](int r, int i) { return (r + i) % 2 == 0; }, [](bool a, bool b) { return a != b; }));
  auto bytebits = [](int r, int i) { return static_cast<std::uint8_t>((1u << (r % 8)) ^ static_cast<unsigned>(i)); };
  cs.push_back(make_case<std::uint8_t>("RMA_BYTE BAND", RMA_BYTE, RMA_BAND, [](int) { return std::uint8_t{0xff}; }, bytebits,
                                       [](std::uint8_t a, std::uint8_t b) { return static_cast<std::uint8_t>(a & b); }));
  cs.push_back(make_case<std::uint8_t>("RMA_BYTE BOR", RMA_BYTE, RMA_BOR, [](int) { return std::uint8_t{0}; }, bytebits,
                                       [](std::uint8_t a, std::uint8_t b) { return static_cast<std::uint8_t>(a | b); }));
  cs.push_back(make_case<std::uint8_t>("RMA_BYTE BXOR", RMA_BYTE, RMA_BXOR, [](int i) { return static_cast<std::uint8_t>(i); }, bytebits,
                                       [](std::uint8_t a, std::uint8_t b) { return static_cast<std::uint8_t>(a ^ b); }));
  loc_cases<float>(cs, "RMA_FLOAT_INT", RMA_FLOAT_INT);
  loc_cases<double>(cs, "RMA_DOUBLE_INT", RMA_DOUBLE_INT);
  loc_cases<long>(cs, "RMA_LONG_INT", RMA_LONG_INT);
  loc_cases<int>(cs, "RMA_2INT", RMA_2INT);
  loc_cases<short>(cs, "RMA_SHORT_INT", RMA_SHORT_INT);
  return cs;
}

// Every rank accumulates its contribution into rank 0 at once (shared
// locks); rank 0 then compares with the serial fold. The same again through
// get_accumulate, whose fetched values must be states the target went through.
TEST(ApiAccumulate, EveryOpOnEveryTypeClass) {
  const std::vector<Case> cases = all_cases();
  run_ranks(4, [&](int rank, int size) {
    unsigned char* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(4096, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    for (const Case& c : cases) {
      for (int fetch = 0; fetch < 2; ++fetch) {
        SCOPED_TRACE(c.name + (fetch ? " (get_accumulate)" : " (accumulate)"));
        const std::size_t bytes = c.elem_size * kElems;
        // Element alignment: offset 64 keeps every element type aligned.
        unsigned char* t = base + 64;
        if (rank == 0) for (int i = 0; i < kElems; ++i) c.init(i, t + i * c.elem_size);
        ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
        std::vector<unsigned char> mine(bytes), result(bytes, 0xee);
        for (int i = 0; i < kElems; ++i) c.contrib(rank, i, mine.data() + i * c.elem_size);
        ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
        if (fetch) {
          ASSERT_EQ(rma_get_accumulate(mine.data(), kElems, c.type, result.data(), kElems, c.type, 0, 64,
                                       kElems, c.type, c.op, win),
                    RMA_SUCCESS) << api_test::last_message();
        } else {
          ASSERT_EQ(rma_accumulate(mine.data(), kElems, c.type, 0, 64, kElems, c.type, c.op, win),
                    RMA_SUCCESS) << api_test::last_message();
        }
        ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
        ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
        if (rank == 0) {
          for (int i = 0; i < kElems; ++i) {
            std::vector<unsigned char> want(c.elem_size);
            c.init(i, want.data());
            for (int r = 0; r < size; ++r) {
              std::vector<unsigned char> in(c.elem_size);
              c.contrib(r, i, in.data());
              c.fold(want.data(), in.data());
            }
            EXPECT_TRUE(c.equal(want.data(), t + i * c.elem_size)) << "element " << i;
          }
        }
        ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
      }
    }
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiAccumulate, OpsMpiDoesNotDefineAreRejected) {
  run_ranks(1, [](int, int) {
    double* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(256, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    char buf[64] = {};
    struct { rma_Datatype t; rma_Op op; } bad[] = {
        {RMA_C_DOUBLE_COMPLEX, RMA_MAX}, {RMA_DOUBLE, RMA_LAND}, {RMA_FLOAT, RMA_BAND},
        {RMA_INT, RMA_MAXLOC}, {RMA_C_BOOL, RMA_SUM}, {RMA_CHAR, RMA_SUM}, {RMA_BYTE, RMA_SUM},
        {RMA_DOUBLE_INT, RMA_SUM}, {RMA_WCHAR, RMA_MAX}};
    for (const auto& b : bad) {
      EXPECT_EQ(rma_accumulate(buf, 1, b.t, 0, 0, 1, b.t, b.op, win), RMA_ERR_OP);
      EXPECT_NE(api_test::last_message().find("is not defined for"), std::string::npos) << api_test::last_message();
    }
    EXPECT_EQ(rma_accumulate(buf, 1, RMA_INT, 0, 0, 1, RMA_INT, RMA_NO_OP, win), RMA_ERR_OP);
    EXPECT_EQ(rma_accumulate(buf, 1, RMA_INT, 0, 0, 1, RMA_INT, RMA_OP_NULL, win), RMA_ERR_OP);
    EXPECT_EQ(rma_accumulate(buf, 1, RMA_INT, 0, 0, 1, RMA_INT, reinterpret_cast<rma_Op>(99), win), RMA_ERR_OP);
    // REPLACE and NO_OP are defined on every predefined type.
    EXPECT_EQ(rma_accumulate(buf, 1, RMA_CHAR, 0, 0, 1, RMA_CHAR, RMA_REPLACE, win), RMA_SUCCESS);
    EXPECT_EQ(rma_fetch_and_op(buf, buf + 8, RMA_C_DOUBLE_COMPLEX, 0, 0, RMA_NO_OP, win), RMA_SUCCESS);
    // Mixed element types are refused.
    EXPECT_EQ(rma_accumulate(buf, 2, RMA_INT, 0, 0, 1, RMA_INT64_T, RMA_SUM, win), RMA_ERR_TYPE);
    rma_Datatype mixed;
    int bl[2] = {1, 1};
    rma_Aint disp[2] = {0, 8};
    rma_Datatype types[2] = {RMA_INT, RMA_DOUBLE};
    ASSERT_EQ(rma_type_create_struct(2, bl, disp, types, &mixed), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&mixed), RMA_SUCCESS);
    EXPECT_EQ(rma_accumulate(buf, 1, mixed, 0, 0, 1, mixed, RMA_REPLACE, win), RMA_ERR_TYPE);
    rma_type_free(&mixed);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

// Many origins on one location at once: the result is the serial result,
// through the NIC fetch-add path (int64) and the lock path (double, int32),
// and fetch_and_op hands out every ticket exactly once.
TEST(ApiAccumulate, ManyRanksIntoOneLocation) {
  constexpr int kIters = 150;
  constexpr int kRanks = 8;
  run_ranks(kRanks, [](int rank, int size) {
    unsigned char* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    const rma_Aint seen_off = 64;
    ASSERT_EQ(rma_win_allocate(64 + 4 * kIters * kRanks, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    for (int it = 0; it < kIters; ++it) {
      const std::int64_t one = 1;
      const double half = 0.5;
      const std::int32_t three = 3;
      ASSERT_EQ(rma_accumulate(&one, 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
      ASSERT_EQ(rma_accumulate(&half, 1, RMA_DOUBLE, 0, 8, 1, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
      ASSERT_EQ(rma_accumulate(&three, 1, RMA_INT32_T, 0, 16, 1, RMA_INT32_T, RMA_SUM, win), RMA_SUCCESS);
      std::int64_t ticket = -1;
      ASSERT_EQ(rma_fetch_and_op(&one, &ticket, RMA_INT64_T, 0, 24, RMA_SUM, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
      ASSERT_GE(ticket, 0);
      ASSERT_LT(ticket, kIters * size);
      const std::int32_t mark = 1;
      ASSERT_EQ(rma_accumulate(&mark, 1, RMA_INT32_T, 0, seen_off + 4 * ticket, 1, RMA_INT32_T, RMA_SUM, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      std::int64_t i64;
      double d;
      std::int32_t i32;
      std::memcpy(&i64, base, 8);
      std::memcpy(&d, base + 8, 8);
      std::memcpy(&i32, base + 16, 4);
      EXPECT_EQ(i64, kIters * size);
      EXPECT_EQ(d, 0.5 * kIters * size);
      EXPECT_EQ(i32, 3 * kIters * size);
      for (int k = 0; k < kIters * size; ++k) {
        std::int32_t s;
        std::memcpy(&s, base + seen_off + 4 * k, 4);
        ASSERT_EQ(s, 1) << "ticket " << k;
      }
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiAccumulate, CompareAndSwapHasOneWinner) {
  run_ranks(6, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    // 8 bytes: NIC compare-swap; 4 bytes: under the accumulate lock.
    const std::int64_t mine = rank + 1, zero = 0;
    std::int64_t seen = -1;
    ASSERT_EQ(rma_compare_and_swap(&mine, &zero, &seen, RMA_INT64_T, 0, 1, win), RMA_SUCCESS);
    const std::int32_t mine32 = rank + 1, zero32 = 0;
    std::int32_t seen32 = -1;
    ASSERT_EQ(rma_compare_and_swap(&mine32, &zero32, &seen32, RMA_INT32_T, 0, 4, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    std::int64_t winner = 0;
    std::int32_t winner32 = 0;
    ASSERT_EQ(rma_get(&winner, 1, RMA_INT64_T, 0, 1, 1, RMA_INT64_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_get(&winner32, 1, RMA_INT32_T, 0, 4, 1, RMA_INT32_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_TRUE(seen == 0 ? winner == mine : seen == winner) << seen << " " << winner;
    EXPECT_TRUE(seen32 == 0 ? winner32 == mine32 : seen32 == winner32);
    // Exactly one rank saw 0: count with a SUM.
    const std::int64_t won = seen == 0 ? 1 : 0, won32 = seen32 == 0 ? 1 : 0;
    ASSERT_EQ(rma_accumulate(&won, 1, RMA_INT64_T, 0, 5, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
    ASSERT_EQ(rma_accumulate(&won32, 1, RMA_INT64_T, 0, 6, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    if (rank == 0) {
      EXPECT_EQ(base[5], 1);
      EXPECT_EQ(base[6], 1);
    }
    // Floating point is not a compare_and_swap type.
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    double dv = 1, dc = 0, dr = 0;
    EXPECT_EQ(rma_compare_and_swap(&dv, &dc, &dr, RMA_DOUBLE, 0, 0, win), RMA_ERR_TYPE);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiAccumulate, FetchAndOpReplaceAndNoOp) {
  run_ranks(2, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    base[0] = 40 + rank;
    std::int32_t* b32 = reinterpret_cast<std::int32_t*>(base + 1);
    b32[0] = 7 + rank;
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    const int peer = 1 - rank;
    std::int64_t got = 0, repl = 100 + rank, old = 0;
    ASSERT_EQ(rma_fetch_and_op(nullptr, &got, RMA_INT64_T, peer, 0, RMA_NO_OP, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_EQ(got, 40 + peer);
    ASSERT_EQ(rma_fetch_and_op(&repl, &old, RMA_INT64_T, peer, 0, RMA_REPLACE, win), RMA_SUCCESS);
    std::int32_t r32 = 9, o32 = 0;
    ASSERT_EQ(rma_fetch_and_op(&r32, &o32, RMA_INT32_T, peer, 1, RMA_PROD, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_EQ(old, 40 + peer);
    EXPECT_EQ(o32, 7 + peer);
    EXPECT_EQ(base[0], 100 + peer);
    EXPECT_EQ(b32[0], 9 * (7 + rank));
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace

namespace {

// Derived datatypes on all three sides: a strided target, a contiguous
// origin, a strided result; through the NIC path (int64 SUM: per-element
// fetch-add over a walked type) and the lock path (double PROD, int64 MAX).
TEST(ApiAccumulate, DerivedDatatypesOnEverySide) {
  run_ranks(3, [](int rank, int size) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64 * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    for (int i = 0; i < 64; ++i) base[i] = i;
    rma_Datatype every_third, every_other_d;
    ASSERT_EQ(rma_type_vector(5, 1, 3, RMA_INT64_T, &every_third), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&every_third), RMA_SUCCESS);
    ASSERT_EQ(rma_type_vector(5, 1, 2, RMA_DOUBLE, &every_other_d), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&every_other_d), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    const std::int64_t add[5] = {1, 1, 1, 1, 1};
    // NIC path: elements 1, 4, 7, 10, 13 of rank 0 get +1 from every rank.
    ASSERT_EQ(rma_accumulate(add, 5, RMA_INT64_T, 0, 1, 1, every_third, RMA_SUM, win), RMA_SUCCESS);
    // Lock path: MAX into elements 32, 35, ... with a strided result of the old values.
    const std::int64_t big[5] = {100 + rank, 100 + rank, 100 + rank, 100 + rank, 100 + rank};
    std::int64_t old[15];
    for (auto& o : old) o = -1;
    ASSERT_EQ(rma_get_accumulate(big, 5, RMA_INT64_T, old, 1, every_third, 0, 32, 1, every_third,
                                 RMA_MAX, win),
              RMA_SUCCESS);
    ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
    for (int k = 0; k < 5; ++k) {
      EXPECT_TRUE(old[3 * k] == 32 + 3 * k || (old[3 * k] >= 100 && old[3 * k] < 100 + size)) << old[3 * k];
      EXPECT_EQ(old[3 * k + 1], -1);  // the result type's gaps are untouched
    }
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      for (int k = 0; k < 5; ++k) {
        EXPECT_EQ(base[1 + 3 * k], 1 + 3 * k + size);
        EXPECT_EQ(base[2 + 3 * k], 2 + 3 * k);  // between the strided elements: untouched
        EXPECT_EQ(base[32 + 3 * k], 100 + size - 1);
      }
    }
    // Doubles, strided on the target, under the lock: PROD by 2 from each rank.
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    double* d = reinterpret_cast<double*>(base);
    if (rank == 0) for (int i = 0; i < 10; ++i) d[i] = 1.5;
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    const double two[5] = {2, 2, 2, 2, 2};
    ASSERT_EQ(rma_accumulate(two, 5, RMA_DOUBLE, 0, 0, 1, every_other_d, RMA_PROD, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      for (int i = 0; i < 10; ++i) EXPECT_EQ(d[i], i % 2 == 0 ? 1.5 * (1 << size) : 1.5) << i;
    }
    rma_type_free(&every_third);
    rma_type_free(&every_other_d);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace
