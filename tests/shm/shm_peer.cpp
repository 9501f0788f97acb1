// The other process of the shm cross-process tests: opens an shm device,
// one QP and two regions, says hello on the socket it was given (argv[1]),
// then runs the commands the test sends, one line each, answering one line.
// Only the SDK is used, as an application would.
//
//   hello <address hex> <buf addr> <buf rkey> <ro addr> <ro rkey> <seg addr> <seg rkey>   (sent first)
//                                 seg: 1 MiB in a node::SharedMemory segment (the mapped path)
//   connect <hex>                 -> ok | err <message>
//   recv <n> <len>                -> ok          (n receives, buf + i*len)
//   waitrecv <n>                  -> ok <status>,<byte_len>,<imm> ...
//   fill <off> <len> <byte>       -> ok
//   sum <off> <len>               -> ok <fnv-1a of the bytes>
//   word <off>                    -> ok <u64>
//   fadd <n> <addr> <rkey> <add>  -> ok | err <status> <vendor_err>   (one at a time)
//   write|read <addr> <rkey> <len>-> ok <status> <vendor_err>
//   state                         -> ok <QP state>
//   dropuid <uid>                 -> ok         (setresuid: the next copies are refused)
//   sword <off> / ssum <off> <len> -> as word / sum, in the segment
//   sadd <n> <off>                -> ok         (n CPU fetch-adds of 1 on the segment's word)
//   sreg <access>                 -> ok <rkey>  (the segment's region deregistered, registered again)
//   sfree                         -> ok         (the segment freed; its region stays registered)
//   hang                          -> (sleeps until killed)
//   exit                          -> ok, then closes everything and exits 0
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rma/sdk/node.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registry.hpp"

using namespace rma;

namespace {

constexpr std::size_t kBuf = 1 << 20;
constexpr std::size_t kResults = 1 << 19;  // atomic results land from here

int g_fd = -1;

void reply(const std::string& s) {
  const std::string line = s + "\n";
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(g_fd, p, left);
    if (n <= 0) std::_Exit(3);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

bool read_line(std::string& out) {
  out.clear();
  char c;
  for (;;) {
    const ssize_t n = ::read(g_fd, &c, 1);
    if (n <= 0) return false;
    if (c == '\n') return true;
    out += c;
  }
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "shm_peer: %s\n", why.c_str());
  reply("err " + why);
  std::_Exit(2);
}

// Polls until n completions or 20 s.
std::vector<Completion> wait(CompletionQueue& cq, std::size_t n) {
  std::vector<Completion> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  Completion c[16];
  while (got.size() < n && std::chrono::steady_clock::now() < deadline) {
    const int k = cq.poll({c, std::min<std::size_t>(16, n - got.size())});
    if (k < 0) die(std::string("CQ overrun: ") + cq.overrun_reason());
    got.insert(got.end(), c, c + k);
  }
  return got;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 1;
  g_fd = std::atoi(argv[1]);
  auto dev = ProviderRegistry::global().open("shm");
  if (!dev.ok()) die("open: " + dev.status().to_string());
  auto pd = (*dev)->alloc_pd();
  auto cq = (*dev)->create_cq(4096);
  if (!pd.ok() || !cq.ok()) die("pd/cq");
  auto* buf = static_cast<std::uint8_t*>(std::aligned_alloc(4096, kBuf));
  auto* ro = static_cast<std::uint8_t*>(std::aligned_alloc(4096, 4096));
  std::memset(buf, 0, kBuf);
  std::memset(ro, 0x42, 4096);
  auto mr = (*pd)->register_memory(buf, kBuf, kAllAccess);
  auto ro_mr = (*pd)->register_memory(ro, 4096, Access::kRemoteRead);
  if (!mr.ok() || !ro_mr.ok()) die("register");
  auto seg = rma::node::SharedMemory::allocate(kBuf, "test");
  if (!seg.ok()) die("allocate: " + seg.status().to_string());
  auto* sbuf = reinterpret_cast<std::uint8_t*>((*seg)->data());
  auto seg_mr = (*pd)->register_memory(sbuf, kBuf, kAllAccess);
  if (!seg_mr.ok()) die("register seg");
  QpConfig qc;
  qc.send_cq = *cq;
  qc.recv_cq = *cq;
  qc.max_send_wr = 256;
  qc.max_recv_wr = 256;
  qc.max_send_sge = 4;
  qc.max_recv_sge = 4;
  auto qp = (*pd)->create_qp(qc);
  if (!qp.ok()) die("create_qp: " + qp.status().to_string());
  auto addr = (*qp)->local_address();
  char hello[256];
  std::snprintf(hello, sizeof hello, " %" PRIu64 " %u %" PRIu64 " %u %" PRIu64 " %u",
                reinterpret_cast<std::uint64_t>(buf), (*mr)->rkey(), reinterpret_cast<std::uint64_t>(ro),
                (*ro_mr)->rkey(), reinterpret_cast<std::uint64_t>(sbuf), (*seg_mr)->rkey());
  reply("hello " + addr->to_hex() + hello);

  auto one = [&](Opcode op, std::uint64_t raddr, std::uint32_t rkey, std::uint32_t len, std::uint64_t loc,
                 std::uint64_t add) {
    Sge s{reinterpret_cast<std::uint64_t>(buf) + loc, len, (*mr)->lkey()};
    WorkRequest w;
    w.opcode = op;
    w.sgl = {&s, 1};
    w.remote_addr = raddr;
    w.rkey = rkey;
    w.compare_add = add;
    PostResult pr = (*qp)->post({&w, 1});
    if (!pr.ok()) die("post: " + pr.to_status().to_string());
    auto c = wait(**cq, 1);
    if (c.empty()) die("no completion");
    return c[0];
  };

  std::string line;
  while (read_line(line)) {
    char cmd[32] = {};
    std::sscanf(line.c_str(), "%31s", cmd);
    const std::string c = cmd;
    if (c == "connect") {
      auto a = EndpointAddress::from_hex(line.substr(8));
      if (!a.ok()) die("address: " + a.status().to_string());
      Status s = (*qp)->connect(*a);
      reply(s.ok() ? "ok" : "err " + s.to_string());
    } else if (c == "recv") {
      unsigned n = 0, len = 0;
      std::sscanf(line.c_str(), "recv %u %u", &n, &len);
      for (unsigned i = 0; i < n; ++i) {
        Sge s{reinterpret_cast<std::uint64_t>(buf) + std::uint64_t{i} * len, len, (*mr)->lkey()};
        RecvRequest r{i, {&s, 1}};
        if (!(*qp)->post_recv({&r, 1}).ok()) die("post_recv");
      }
      reply("ok");
    } else if (c == "waitrecv") {
      unsigned n = 0;
      std::sscanf(line.c_str(), "waitrecv %u", &n);
      std::string out = "ok";
      for (const Completion& wc : wait(**cq, n)) {
        char b[64];
        std::snprintf(b, sizeof b, " %s,%u,%u", std::string(wc_status_name(wc.status)).c_str(), wc.byte_len,
                      wc.has_imm ? wc.imm_data : 0u);
        out += b;
      }
      reply(out);
    } else if (c == "fill") {
      unsigned long off = 0, len = 0;
      unsigned byte = 0;
      std::sscanf(line.c_str(), "fill %lu %lu %u", &off, &len, &byte);
      std::memset(buf + off, static_cast<int>(byte), len);
      reply("ok");
    } else if (c == "sum") {
      unsigned long off = 0, len = 0;
      std::sscanf(line.c_str(), "sum %lu %lu", &off, &len);
      std::uint64_t h = 1469598103934665603ull;
      for (unsigned long i = 0; i < len; ++i) h = (h ^ buf[off + i]) * 1099511628211ull;
      reply("ok " + std::to_string(h));
    } else if (c == "word") {
      unsigned long off = 0;
      std::sscanf(line.c_str(), "word %lu", &off);
      reply("ok " + std::to_string(__atomic_load_n(reinterpret_cast<std::uint64_t*>(buf + off), __ATOMIC_SEQ_CST)));
    } else if (c == "fadd") {
      unsigned long n = 0, raddr = 0, add = 0;
      unsigned rkey = 0;
      std::sscanf(line.c_str(), "fadd %lu %lu %u %lu", &n, &raddr, &rkey, &add);
      std::string out = "ok";
      for (unsigned long i = 0; i < n; ++i) {
        Completion wc = one(Opcode::kAtomicFetchAdd, raddr, rkey, 8, kResults + (i % 4096) * 8, add);
        if (wc.status != WcStatus::kSuccess) {
          out = "err " + std::string(wc_status_name(wc.status)) + " " + std::to_string(wc.vendor_err);
          break;
        }
      }
      reply(out);
    } else if (c == "write" || c == "read") {
      unsigned long raddr = 0, len = 0;
      unsigned rkey = 0;
      std::sscanf(line.c_str() + c.size(), " %lu %u %lu", &raddr, &rkey, &len);
      Completion wc = one(c == "write" ? Opcode::kRdmaWrite : Opcode::kRdmaRead, raddr, rkey,
                          static_cast<std::uint32_t>(len), 0, 0);
      reply("ok " + std::string(wc_status_name(wc.status)) + " " + std::to_string(wc.vendor_err));
    } else if (c == "state") {
      (void)(*cq)->poll({});  // progress: act on break requests
      reply("ok " + std::string(qp_state_name((*qp)->state())));
    } else if (c == "dropuid") {
      unsigned uid = 0;
      std::sscanf(line.c_str(), "dropuid %u", &uid);
      const bool ok = ::setresuid(uid, uid, uid) == 0;
      ::prctl(PR_SET_DUMPABLE, 1);  // LeakSanitizer at exit traces us
      reply(ok ? "ok" : "err setresuid");
    } else if (c == "sword") {
      unsigned long off = 0;
      std::sscanf(line.c_str(), "sword %lu", &off);
      reply("ok " + std::to_string(__atomic_load_n(reinterpret_cast<std::uint64_t*>(sbuf + off), __ATOMIC_SEQ_CST)));
    } else if (c == "ssum") {
      unsigned long off = 0, len = 0;
      std::sscanf(line.c_str(), "ssum %lu %lu", &off, &len);
      std::uint64_t h = 1469598103934665603ull;
      for (unsigned long i = 0; i < len; ++i) h = (h ^ sbuf[off + i]) * 1099511628211ull;
      reply("ok " + std::to_string(h));
    } else if (c == "sadd") {
      unsigned long n = 0, off = 0;
      std::sscanf(line.c_str(), "sadd %lu %lu", &n, &off);
      for (unsigned long i = 0; i < n; ++i) __atomic_fetch_add(reinterpret_cast<std::uint64_t*>(sbuf + off), 1, __ATOMIC_SEQ_CST);
      reply("ok");
    } else if (c == "sreg") {
      unsigned access = 0;
      std::sscanf(line.c_str(), "sreg %u", &access);
      seg_mr->reset();
      seg_mr = (*pd)->register_memory(sbuf, kBuf, static_cast<Access>(access));
      if (!seg_mr.ok()) die("sreg: " + seg_mr.status().to_string());
      reply("ok " + std::to_string((*seg_mr)->rkey()));
    } else if (c == "sfree") {
      seg->reset();
      reply("ok");
    } else if (c == "hang") {
      for (;;) ::pause();
    } else if (c == "exit") {
      reply("ok");
      break;
    } else {
      reply("err unknown command " + c);
    }
  }
  qp->reset();
  if (seg_mr.ok()) seg_mr->reset();
  mr->reset();
  ro_mr->reset();
  std::free(buf);
  std::free(ro);
  return 0;
}
