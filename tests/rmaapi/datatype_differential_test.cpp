// Differential test against a real MPI (MPICH): random derived types are
// built both with librma and, through tests/rmaapi/mpi_pack_oracle.c, with
// MPI; size, bounds, MPI_Pack output and MPI_Unpack result must be identical
// byte for byte. RMA_DT_SEED=<n> and RMA_DT_CASES=<n> reproduce or widen a run.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "datatype/pack.hpp"
#include "dt_test_util.hpp"

namespace rma::api::test {
namespace {

unsigned char pattern(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + k * 0xBF58476D1CE4E5B9ull + 1;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  return static_cast<unsigned char>(x);
}

struct Predef {
  const char* name;
  rma_Datatype type;
};
// Long double types are left out: MPICH copies them as x87 values, which
// need not preserve the padding bytes of the pattern.
const std::vector<Predef>& predefs() {
  static const std::vector<Predef> p = {
      {"CHAR", RMA_CHAR}, {"SIGNED_CHAR", RMA_SIGNED_CHAR},
      {"UNSIGNED_CHAR", RMA_UNSIGNED_CHAR}, {"BYTE", RMA_BYTE},
      {"SHORT", RMA_SHORT}, {"UNSIGNED_SHORT", RMA_UNSIGNED_SHORT},
      {"INT", RMA_INT}, {"UNSIGNED", RMA_UNSIGNED}, {"LONG", RMA_LONG},
      {"UNSIGNED_LONG", RMA_UNSIGNED_LONG}, {"LONG_LONG", RMA_LONG_LONG},
      {"UNSIGNED_LONG_LONG", RMA_UNSIGNED_LONG_LONG}, {"FLOAT", RMA_FLOAT},
      {"DOUBLE", RMA_DOUBLE}, {"INT8_T", RMA_INT8_T},
      {"INT16_T", RMA_INT16_T}, {"INT32_T", RMA_INT32_T},
      {"INT64_T", RMA_INT64_T}, {"UINT8_T", RMA_UINT8_T},
      {"UINT16_T", RMA_UINT16_T}, {"UINT32_T", RMA_UINT32_T},
      {"UINT64_T", RMA_UINT64_T}, {"C_BOOL", RMA_C_BOOL},
      {"C_FLOAT_COMPLEX", RMA_C_FLOAT_COMPLEX},
      {"C_DOUBLE_COMPLEX", RMA_C_DOUBLE_COMPLEX}, {"WCHAR", RMA_WCHAR},
      {"AINT", RMA_AINT}, {"OFFSET", RMA_OFFSET}, {"FLOAT_INT", RMA_FLOAT_INT},
      {"DOUBLE_INT", RMA_DOUBLE_INT}, {"LONG_INT", RMA_LONG_INT},
      {"2INT", RMA_2INT}, {"SHORT_INT", RMA_SHORT_INT},
  };
  return p;
}

struct Made {
  rma_Datatype type = RMA_DATATYPE_NULL;
  std::string desc;
};

class Generator {
 public:
  Generator(std::uint64_t seed, TypeGuard& g) : rng_(seed), g_(g) {}

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  Made predefined() {
    const auto& p = predefs()[static_cast<std::size_t>(uniform(0, static_cast<int>(predefs().size()) - 1))];
    return Made{p.type, std::string("P ") + p.name};
  }

  Made make(int depth) {
    if (depth == 0 || chance(0.2)) return predefined();
    const int kind = uniform(0, 9);
    std::ostringstream d;
    rma_Datatype out = RMA_DATATYPE_NULL;
    int rc = RMA_SUCCESS;
    switch (kind) {
      case 0: {  // contiguous
        Made t = make(depth - 1);
        int n = chance(0.05) ? 0 : uniform(1, 4);
        rc = rma_type_contiguous(n, t.type, &out);
        d << "C " << n << " " << t.desc;
        break;
      }
      case 1: {  // vector
        Made t = make(depth - 1);
        // (MPICH gives blocklength-0 vectors bounds from its formulas; librma
        // gives every zero-size type lb = ub = 0, so bl >= 1 here.)
        int n = uniform(1, 4), bl = uniform(1, 3), st = uniform(-4, 6);
        rc = rma_type_vector(n, bl, st, t.type, &out);
        d << "V " << n << " " << bl << " " << st << " " << t.desc;
        break;
      }
      case 2: {  // hvector
        Made t = make(depth - 1);
        std::int64_t e = std::max<std::int64_t>(1, t.type->layout.extent());
        int n = uniform(1, 4), bl = uniform(1, 3);
        long st = uniform(static_cast<int>(-3 * e), static_cast<int>(3 * e + 8));
        rc = rma_type_create_hvector(n, bl, st, t.type, &out);
        d << "HV " << n << " " << bl << " " << st << " " << t.desc;
        break;
      }
      case 3:
      case 4: {  // indexed / hindexed
        Made t = make(depth - 1);
        std::int64_t e = std::max<std::int64_t>(1, t.type->layout.extent());
        int n = uniform(1, 4);
        std::vector<int> bl(static_cast<std::size_t>(n)), di(static_cast<std::size_t>(n));
        std::vector<rma_Aint> dh(static_cast<std::size_t>(n));
        for (int k = 0; k < n; ++k) {
          bl[static_cast<std::size_t>(k)] = chance(0.1) ? 0 : uniform(1, 3);
          di[static_cast<std::size_t>(k)] = uniform(-4, 8);
          dh[static_cast<std::size_t>(k)] = uniform(static_cast<int>(-2 * e - 8), static_cast<int>(4 * e + 8));
        }
        const bool h = kind == 4;
        rc = h ? rma_type_create_hindexed(n, bl.data(), dh.data(), t.type, &out)
               : rma_type_indexed(n, bl.data(), di.data(), t.type, &out);
        d << (h ? "HI " : "I ") << n;
        for (int b : bl) d << " " << b;
        for (int k = 0; k < n; ++k) d << " " << (h ? dh[static_cast<std::size_t>(k)] : di[static_cast<std::size_t>(k)]);
        d << " " << t.desc;
        break;
      }
      case 5:
      case 6: {  // indexed_block / hindexed_block
        Made t = make(depth - 1);
        std::int64_t e = std::max<std::int64_t>(1, t.type->layout.extent());
        int n = uniform(1, 4), bl = uniform(1, 3);
        std::vector<int> di(static_cast<std::size_t>(n));
        std::vector<rma_Aint> dh(static_cast<std::size_t>(n));
        for (int k = 0; k < n; ++k) {
          di[static_cast<std::size_t>(k)] = uniform(-4, 8);
          dh[static_cast<std::size_t>(k)] = uniform(static_cast<int>(-2 * e - 8), static_cast<int>(4 * e + 8));
        }
        const bool h = kind == 6;
        rc = h ? rma_type_create_hindexed_block(n, bl, dh.data(), t.type, &out)
               : rma_type_create_indexed_block(n, bl, di.data(), t.type, &out);
        d << (h ? "HIB " : "IB ") << n << " " << bl;
        for (int k = 0; k < n; ++k) d << " " << (h ? dh[static_cast<std::size_t>(k)] : di[static_cast<std::size_t>(k)]);
        d << " " << t.desc;
        break;
      }
      case 7: {  // struct
        int n = uniform(1, 3);
        std::vector<Made> m;
        for (int k = 0; k < n; ++k) m.push_back(make(depth - 1));
        std::vector<int> bl(static_cast<std::size_t>(n));
        std::vector<rma_Aint> dh(static_cast<std::size_t>(n));
        std::vector<rma_Datatype> ty(static_cast<std::size_t>(n));
        d << "S " << n;
        for (int k = 0; k < n; ++k) {
          const auto i = static_cast<std::size_t>(k);
          bl[i] = chance(0.1) ? 0 : uniform(1, 2);
          dh[i] = uniform(-16, 64);
          ty[i] = m[i].type;
          d << " " << bl[i] << " " << dh[i] << " " << m[i].desc;
        }
        rc = rma_type_create_struct(n, bl.data(), dh.data(), ty.data(), &out);
        break;
      }
      case 8: {  // subarray
        Made t = make(depth - 1);
        int nd = uniform(1, 3);
        const bool c = chance(0.5);
        std::array<int, 3> s{}, u{}, st{};
        for (int k = 0; k < nd; ++k) {
          const auto i = static_cast<std::size_t>(k);
          s[i] = uniform(1, 5);
          u[i] = chance(0.05) ? 0 : uniform(1, s[i]);
          st[i] = uniform(0, s[i] - u[i]);
        }
        rc = rma_type_create_subarray(nd, s.data(), u.data(), st.data(),
                                      c ? RMA_ORDER_C : RMA_ORDER_FORTRAN, t.type, &out);
        d << "SA " << nd << " " << (c ? "C" : "F");
        for (int k = 0; k < nd; ++k) d << " " << s[static_cast<std::size_t>(k)];
        for (int k = 0; k < nd; ++k) d << " " << u[static_cast<std::size_t>(k)];
        for (int k = 0; k < nd; ++k) d << " " << st[static_cast<std::size_t>(k)];
        d << " " << t.desc;
        break;
      }
      default: {
        Made t = make(depth - 1);
        if (chance(0.3)) {
          rc = rma_type_dup(t.type, &out);
          d << "D " << t.desc;
        } else if (chance(0.4)) {  // darray
          const int nd = uniform(1, 3);
          const bool c = chance(0.5);
          std::array<int, 3> g{}, di{}, da{}, ps{};
          const char* names = "BCN";
          std::array<char, 3> dn{};
          int size = 1;
          for (int k = 0; k < nd; ++k) {
            const auto i = static_cast<std::size_t>(k);
            g[i] = uniform(1, 6);
            const int kindd = uniform(0, 2);
            dn[i] = names[kindd];
            ps[i] = kindd == 2 ? 1 : uniform(1, 3);
            di[i] = kindd == 0 ? RMA_DISTRIBUTE_BLOCK : kindd == 1 ? RMA_DISTRIBUTE_CYCLIC : RMA_DISTRIBUTE_NONE;
            if (kindd == 2 || chance(0.4)) {
              da[i] = -1;
            } else if (kindd == 0) {
              da[i] = uniform((g[i] + ps[i] - 1) / ps[i], g[i]);
            } else {
              da[i] = uniform(1, 3);
            }
            size *= ps[i];
          }
          const int rank = uniform(0, size - 1);
          std::array<int, 3> dargs{};
          for (std::size_t i = 0; i < 3; ++i) dargs[i] = da[i] < 0 ? RMA_DISTRIBUTE_DFLT_DARG : da[i];
          rc = rma_type_create_darray(size, rank, nd, g.data(), di.data(), dargs.data(), ps.data(),
                                      c ? RMA_ORDER_C : RMA_ORDER_FORTRAN, t.type, &out);
          d << "DA " << size << " " << rank << " " << nd << " " << (c ? "C" : "F");
          for (int k = 0; k < nd; ++k) d << " " << g[static_cast<std::size_t>(k)];
          for (int k = 0; k < nd; ++k) d << " " << dn[static_cast<std::size_t>(k)];
          for (int k = 0; k < nd; ++k) d << " " << da[static_cast<std::size_t>(k)];
          for (int k = 0; k < nd; ++k) d << " " << ps[static_cast<std::size_t>(k)];
          d << " " << t.desc;
        } else {  // resized
          std::int64_t e = std::max<std::int64_t>(1, t.type->layout.extent());
          int lb = uniform(-16, 16);
          int ext = uniform(1, static_cast<int>(2 * e + 16));
          rc = rma_type_create_resized(t.type, lb, ext, &out);
          d << "R " << lb << " " << ext << " " << t.desc;
        }
        break;
      }
    }
    EXPECT_EQ(rc, RMA_SUCCESS) << d.str() << ": " << last_error_message();
    g_.add(out);
    return Made{out, d.str()};
  }

 private:
  std::mt19937_64 rng_;
  TypeGuard& g_;
};

struct Case {
  int id;
  std::int64_t count;
  std::uint64_t seed;
  Made made;
};

std::string hex(const unsigned char* p, std::size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (std::size_t k = 0; k < n; ++k) {
    s[2 * k] = digits[p[k] >> 4];
    s[2 * k + 1] = digits[p[k] & 15];
  }
  return s;
}

int run_command(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::uint64_t env_or(const char* name, std::uint64_t dflt) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : dflt;
}

TEST(DatatypeDifferential, PackAndUnpackMatchMpich) {
  const std::uint64_t seed = env_or("RMA_DT_SEED", 20240601);
  const int ncases = static_cast<int>(env_or("RMA_DT_CASES", 600));
  TypeGuard g;
  Generator gen(seed, g);
  std::vector<Case> cases;
  int attempts = 0;
  while (static_cast<int>(cases.size()) < ncases && attempts < ncases * 20) {
    ++attempts;
    Made m = gen.make(gen.uniform(1, 3));
    if (::testing::Test::HasFailure()) return;
    const std::int64_t count = gen.uniform(1, 3);
    const Footprint f = footprint(m.type->layout, count);
    if (f.hi - f.lo > (1 << 20) || m.type->layout.size * count > (1 << 18)) continue;
    if (m.type->layout.size > 0 && m.type->layout.is_run() && gen.chance(0.5)) continue;  // favour trees
    cases.push_back(Case{static_cast<int>(cases.size()), count, seed * 1000 + cases.size(), m});
  }
  ASSERT_GE(static_cast<int>(cases.size()), ncases) << "generator gave up";

  char dir_template[] = "/tmp/rma_dt_diff_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string in = dir + "/cases.txt", out = dir + "/results.txt", log = dir + "/oracle.log";
  // MPICH 4.0 starts to mis-pack after a few hundred types in one process
  // (MPI_Pack of a 1-byte type, count 3, returns 2 bytes), so the oracle runs
  // in batches, each a fresh process.
  const std::string oracle = RMA_MPI_ORACLE;
  const std::string mpiexec = RMA_MPIEXEC;
  const bool have_mpiexec = !mpiexec.empty() && mpiexec.find("NOTFOUND") == std::string::npos;
  bool use_mpiexec = false;
  constexpr std::size_t kBatch = 50;
  {
    std::ofstream all(out, std::ios::trunc);
  }
  for (std::size_t first = 0; first < cases.size(); first += kBatch) {
    {
      std::ofstream f(in, std::ios::trunc);
      for (std::size_t k = first; k < std::min(cases.size(), first + kBatch); ++k) {
        const auto& c = cases[k];
        f << c.id << " " << c.count << " " << c.seed << " " << c.made.desc << "\n";
      }
    }
    const std::string part = dir + "/part.txt";
    const std::string args = " " + in + " " + part + " > " + log + " 2>&1";
    int rc = use_mpiexec ? -1 : run_command(oracle + args);
    if (rc != 0 && have_mpiexec) {
      // Singleton init did not work here: run under the launcher.
      rc = run_command(mpiexec + " -n 1 " + oracle + args);
      use_mpiexec = rc == 0;
    }
    if (rc != 0) {
      std::ifstream l(log);
      std::stringstream ss;
      ss << l.rdbuf();
      FAIL() << "the MPI oracle failed (exit " << rc << "):\n" << ss.str();
    }
    std::ifstream p(part);
    std::ofstream all(out, std::ios::app);
    all << p.rdbuf();
    std::remove(part.c_str());
  }

  std::ifstream res(out);
  int compared = 0, unpack_compared = 0, tree_cases = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE("case " + std::to_string(c.id) + ": count " + std::to_string(c.count) + " seed " +
                 std::to_string(c.seed) + " type " + c.made.desc);
    std::string header, packed_hex, unpacked_hex;
    ASSERT_TRUE(std::getline(res, header)) << "oracle output ends early";
    ASSERT_TRUE(std::getline(res, packed_hex));
    ASSERT_TRUE(std::getline(res, unpacked_hex));
    std::istringstream h(header);
    long long id, size, lb, ext, tlb, text, psize, lo, hi;
    h >> id >> size >> lb >> ext >> tlb >> text >> psize >> lo >> hi;
    ASSERT_EQ(id, c.id);
    const TypeLayout& t = c.made.type->layout;
    EXPECT_EQ(t.size, size);
    EXPECT_EQ(t.lb, lb);
    EXPECT_EQ(t.extent(), ext);
    EXPECT_EQ(t.true_lb, tlb);
    EXPECT_EQ(t.true_extent(), text);
    if (t.size != size || t.extent() != ext || t.true_lb != tlb || t.true_extent() != text) continue;
    if (!t.is_run()) ++tree_cases;

    const std::size_t span = static_cast<std::size_t>(hi - lo);
    std::vector<unsigned char> buf(span);
    for (std::size_t k = 0; k < span; ++k) buf[k] = pattern(c.seed, k);
    std::vector<std::byte> packed(static_cast<std::size_t>(size * c.count));
    auto n = pack(buf.data() - lo, c.count, t, packed);
    ASSERT_TRUE(n.ok()) << n.status().to_string();
    EXPECT_EQ(*n, psize);
    EXPECT_EQ(hex(reinterpret_cast<const unsigned char*>(packed.data()), packed.size()), packed_hex)
        << "pack differs";
    ++compared;

    // Unpack: only meaningful when no byte is written twice.
    std::vector<unsigned char> hits(span, 0);
    bool overlap = false;
    for (auto [off, len] : blocks_of(t, c.count)) {
      for (std::int64_t k = 0; k < len; ++k) overlap = overlap || hits[static_cast<std::size_t>(off - lo + k)]++ > 0;
    }
    if (overlap) continue;
    std::vector<std::byte> stream(packed.size());
    for (std::size_t k = 0; k < stream.size(); ++k) stream[k] = static_cast<std::byte>(pattern(c.seed ^ 0x5555u, k));
    std::vector<unsigned char> outbuf(span, 0);
    auto m = unpack(stream, outbuf.data() - lo, c.count, t);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(hex(outbuf.data(), outbuf.size()), unpacked_hex) << "unpack differs";
    ++unpack_compared;
    if (::testing::Test::HasFailure()) break;  // one case's detail is enough
  }
  std::printf("differential: %d cases, %d packs and %d unpacks compared with MPICH, %d with trees\n",
              static_cast<int>(cases.size()), compared, unpack_compared, tree_cases);
  EXPECT_GE(compared, 500);
  EXPECT_GE(unpack_compared, 250);
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(log.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace rma::api::test
