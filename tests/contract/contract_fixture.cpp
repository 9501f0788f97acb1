#include "contract_fixture.hpp"

#include <optional>

namespace rma::contract {
namespace {

// Sets an environment variable for the life of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace

DevicePair open_one_device_twice(const char* provider) {
  DevicePair p;
  auto found = ProviderRegistry::global().find(provider);
  if (!found.ok()) {
    p.skip_reason = std::string("provider '") + provider + "' is not built into this librma (" +
                    found.status().to_string() + ")";
    return p;
  }
  auto listed = (*found)->query_devices();
  if (!listed.ok() || listed->empty()) {
    p.skip_reason = std::string("provider '") + provider + "' has no device on this host (" +
                    (listed.ok() ? std::string("query_devices() is empty") : listed.status().to_string()) +
                    ")" + (std::string(provider) == "verbs"
                               ? "; the verbs cases run inside the soft-RoCE guest (ctest -L softroce, "
                                 "softroce_vm.contract_verbs)"
                               : "");
    return p;
  }
  auto dev = ProviderRegistry::global().open(provider);
  if (!dev.ok()) {
    ADD_FAILURE() << provider << " lists a device but open failed: " << dev.status().to_string();
    p.skip_reason = "open failed";
    return p;
  }
  p.a = *dev;
  p.b = *dev;
  return p;
}

DevicePair open_softroce_ring_pair(const char* provider) {
  DevicePair p;
  if (!ProviderRegistry::global().find(provider).ok()) {
    p.skip_reason = std::string("provider '") + provider + "' is not built into this librma (RMA_BUILD_SOFTROCE=OFF)";
    return p;
  }
  static std::atomic<int> counter{0};
  const std::string ring = "contract" + std::to_string(::getpid()) + "x" + std::to_string(counter++);
  // Progress threads answer for the side nobody polls; the suite also nudges
  // both sides while it waits.
  ScopedEnv progress("RMA_SOFTROCE_PROGRESS_US", "100");
  for (int i = 0; i < 2; ++i) {
    ScopedEnv port("RMA_SOFTROCE_PORT", "ring:" + ring + ",ip=10.77.0." + std::to_string(i + 1));
    auto dev = ProviderRegistry::global().open(provider);
    if (!dev.ok()) {
      ADD_FAILURE() << "softroce over ring:" << ring << ": " << dev.status().to_string();
      p.skip_reason = "open failed";
      return p;
    }
    (i == 0 ? p.a : p.b) = *dev;
  }
  return p;
}

// RMA_CONTRACT_REQUIRE=<provider>[,<provider>...]: those providers must run;
// a missing provider or device fails instead of skipping (the soft-RoCE guest
// sets it for verbs, so a guest that lost rxe0 does not look green).
static bool required(const char* provider) {
  const char* list = ::getenv("RMA_CONTRACT_REQUIRE");
  if (list == nullptr) return false;
  const std::string l = std::string(",") + list + ",";
  return l.find(std::string(",") + provider + ",") != std::string::npos;
}

void Contract::SetUp() {
  DevicePair d = GetParam().open(GetParam().name);
  if (!d.skip_reason.empty()) {
    if (required(GetParam().name)) FAIL() << "RMA_CONTRACT_REQUIRE names it, but: " << d.skip_reason;
    GTEST_SKIP() << d.skip_reason;
  }
  ASSERT_TRUE(d.a && d.b);
  a.dev = d.a;
  b.dev = d.b;
  for (Side* s : {&a, &b}) {
    auto pd = s->dev->alloc_pd();
    ASSERT_TRUE(pd.ok()) << pd.status().to_string();
    s->pd = *pd;
    auto cq = s->dev->create_cq(std::min<std::uint32_t>(1024, s->dev->caps().max_cqe));
    ASSERT_TRUE(cq.ok()) << cq.status().to_string();
    s->cq = *cq;
  }
}

QpConfig Contract::config(const Side& s) const {
  const DeviceCaps& c = s.dev->caps();
  QpConfig q;
  q.send_cq = s.cq;
  q.recv_cq = s.cq;
  q.max_send_wr = std::min<std::uint32_t>(64, c.max_qp_wr);
  q.max_recv_wr = std::min<std::uint32_t>(64, c.max_qp_wr);
  q.max_send_sge = std::min<std::uint32_t>(4, c.max_sge);
  q.max_recv_sge = std::min<std::uint32_t>(4, c.max_recv_sge);
  q.max_inline_data = std::min<std::uint32_t>(64, c.max_inline_data);
  q.max_rd_atomic = std::min<std::uint32_t>(4, c.max_qp_rd_atom);
  q.min_rnr_timer = 1;  // 10 us
  q.serialized = GetParam().serialized;
  return q;
}

std::unique_ptr<QueuePair> Contract::make_qp(Side& s, const QpConfig& c) {
  auto q = s.pd->create_qp(c);
  EXPECT_TRUE(q.ok()) << q.status().to_string();
  return q.ok() ? std::move(q).value() : nullptr;
}

void Contract::connect_pair(QpConfig ca, QpConfig cb) {
  if (!ca.send_cq) ca.send_cq = a.cq;
  if (!ca.recv_cq) ca.recv_cq = a.cq;
  if (!cb.send_cq) cb.send_cq = b.cq;
  if (!cb.recv_cq) cb.recv_cq = b.cq;
  a.qp = make_qp(a, ca);
  b.qp = make_qp(b, cb);
  ASSERT_TRUE(a.qp && b.qp);
  auto aa = a.qp->local_address();
  auto ba = b.qp->local_address();
  ASSERT_TRUE(aa.ok()) << aa.status().to_string();
  ASSERT_TRUE(ba.ok()) << ba.status().to_string();
  Status s1 = a.qp->connect(*ba);
  ASSERT_TRUE(s1.ok()) << s1.to_string();
  Status s2 = b.qp->connect(*aa);
  ASSERT_TRUE(s2.ok()) << s2.to_string();
  ASSERT_EQ(a.qp->state(), QpState::kRts);
  ASSERT_EQ(b.qp->state(), QpState::kRts);
}

Buffer Contract::buffer(Side& s, std::size_t size, Access access, std::uint8_t fill) {
  Buffer buf;
  buf.size = size;
  buf.storage.reset(new std::uint8_t[size + 64]);
  buf.data = buf.storage.get() + (64 - reinterpret_cast<std::uintptr_t>(buf.storage.get()) % 64) % 64;
  std::memset(buf.data, fill, size);
  auto mr = s.pd->register_memory(buf.data, size, access);
  EXPECT_TRUE(mr.ok()) << mr.status().to_string();
  if (mr.ok()) buf.mr = std::move(mr).value();
  return buf;
}

std::vector<Completion> Contract::wait(Side& s, std::size_t n, milliseconds limit) {
  Side& other = &s == &a ? b : a;
  std::vector<Completion> got;
  const auto deadline = Clock::now() + limit;
  Completion c[16];
  while (got.size() < n && Clock::now() < deadline) {
    const int k = s.cq->poll({c, std::min<std::size_t>(16, n - got.size())});
    if (k < 0) {
      ADD_FAILURE() << "CQ overrun: " << s.cq->overrun_reason();
      break;
    }
    got.insert(got.end(), c, c + k);
    if (other.cq != s.cq) (void)other.cq->poll({});
  }
  return got;
}

Completion Contract::wait_one(Side& s) {
  auto v = wait(s, 1);
  if (v.empty()) {
    ADD_FAILURE() << "no completion within " << kDeadline.count() << " ms";
    Completion c;
    c.status = WcStatus::kGeneralErr;
    return c;
  }
  return v[0];
}

bool Contract::quiet_for(Side& s, milliseconds d) {
  Side& other = &s == &a ? b : a;
  const auto until = Clock::now() + d;
  Completion c[4];
  while (Clock::now() < until) {
    const int k = s.cq->poll(c);
    if (k != 0) {
      if (k > 0) {
        ADD_FAILURE() << "unexpected completion: wr_id " << c[0].wr_id << " " << wc_status_name(c[0].status);
      } else {
        ADD_FAILURE() << "CQ overrun: " << s.cq->overrun_reason();
      }
      return false;
    }
    if (other.cq != s.cq) (void)other.cq->poll({});
  }
  return true;
}

bool Contract::wait_state(QueuePair& q, QpState want, milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (q.state() != want && Clock::now() < deadline) nudge();
  return q.state() == want;
}

}  // namespace rma::contract
