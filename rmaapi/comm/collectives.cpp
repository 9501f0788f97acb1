#include "comm/collectives.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "datatype/errors.hpp"
#include "rma/sdk/wait_backoff.hpp"
#include "window/context.hpp"

namespace rma::api {
namespace {

constexpr std::size_t kPage = 4096;

struct Descriptor {
  std::uint64_t addr;
  endpoint::RemoteKeys rkeys;
};

std::uint64_t load(const std::uint64_t* w) noexcept { return __atomic_load_n(w, __ATOMIC_ACQUIRE); }

void put_u32(std::uint8_t* p, std::uint32_t v) noexcept { std::memcpy(p, &v, 4); }
void put_u64(std::uint8_t* p, std::uint64_t v) noexcept { std::memcpy(p, &v, 8); }
std::uint32_t get_u32(const std::uint8_t* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::uint64_t get_u64(const std::uint8_t* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

Result<std::unique_ptr<Mailbox>> Mailbox::create(Bootstrap& bootstrap, endpoint::EndpointManager& eps) {
  std::unique_ptr<Mailbox> m(new Mailbox());
  m->eps_ = &eps;
  m->world_rank_ = bootstrap.rank();
  m->world_size_ = bootstrap.size();
  const auto n = static_cast<std::size_t>(m->world_size_);
  const std::size_t raw = n * 8 + 2 * n * kSlotBytes;
  m->bytes_ = (raw + kPage - 1) / kPage * kPage;
  m->mem_ = static_cast<std::uint8_t*>(std::aligned_alloc(kPage, m->bytes_));
  m->send_ = static_cast<std::uint8_t*>(std::aligned_alloc(kPage, kPage));
  if (m->mem_ == nullptr || m->send_ == nullptr) {
    return resource_exhausted("cannot allocate the communicator mailbox (" + std::to_string(m->bytes_) + " bytes)");
  }
  std::memset(m->mem_, 0, m->bytes_);
  std::memset(m->send_, 0, kPage);
  auto reg = eps.expose(m->mem_, m->bytes_,
                                  Access::kLocalWrite | Access::kRemoteWrite | Access::kRemoteAtomic);
  if (!reg.ok()) return reg.status().with_context("registering the communicator mailbox");
  m->mem_reg_ = std::move(reg).value();
  auto sreg = eps.expose(m->send_, kPage, Access::kLocalWrite);
  if (!sreg.ok()) return sreg.status().with_context("registering the communicator mailbox");
  m->send_reg_ = std::move(sreg).value();
  Descriptor mine{reinterpret_cast<std::uint64_t>(m->mem_), m->mem_reg_.rkeys()};
  RMA_ASSIGN_OR_RETURN(auto all, bootstrap.allgather({reinterpret_cast<const std::uint8_t*>(&mine), sizeof(mine)}));
  m->peers_.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    if (all[r].size() != sizeof(Descriptor)) {
      return Status(StatusCode::kInternal, "rank " + std::to_string(r) + " sent a mailbox descriptor of " +
                                               std::to_string(all[r].size()) + " bytes");
    }
    Descriptor d;
    std::memcpy(&d, all[r].data(), sizeof(d));
    m->peers_[r] = Peer{d.addr, d.rkeys};
  }
  m->sent_.assign(n, 0);
  m->received_.assign(n, 0);
  return m;
}

Mailbox::~Mailbox() {
  mem_reg_.reset();
  send_reg_.reset();
  std::free(mem_);
  std::free(send_);
}

std::uint64_t* Mailbox::counter(int source) noexcept {
  return reinterpret_cast<std::uint64_t*>(mem_) + source;
}
std::uint8_t* Mailbox::slot(int source, std::uint64_t round) noexcept {
  return mem_ + 8 * static_cast<std::size_t>(world_size_) +
         (2 * static_cast<std::size_t>(source) + (round & 1)) * kSlotBytes;
}
std::uint64_t Mailbox::remote_counter(int dest, int source) const noexcept {
  return peers_[static_cast<std::size_t>(dest)].addr + 8 * static_cast<std::uint64_t>(source);
}
std::uint64_t Mailbox::remote_slot(int dest, int source, std::uint64_t round) const noexcept {
  return peers_[static_cast<std::size_t>(dest)].addr + 8 * static_cast<std::uint64_t>(world_size_) +
         (2 * static_cast<std::uint64_t>(source) + (round & 1)) * kSlotBytes;
}

Status Mailbox::round(const std::vector<int>& members, int me, std::uint64_t comm_id, std::uint32_t total,
                      std::span<const std::uint8_t> chunk, std::vector<std::uint32_t>& totals,
                      std::vector<std::vector<std::uint8_t>>& out) {
  const int n = static_cast<int>(members.size());
  put_u64(send_, comm_id);
  put_u32(send_ + 8, total);
  put_u32(send_ + 12, static_cast<std::uint32_t>(chunk.size()));
  if (!chunk.empty()) std::memcpy(send_ + kHeaderBytes, chunk.data(), chunk.size());
  const auto len = static_cast<std::uint32_t>(kHeaderBytes + chunk.size());
  // 1. The chunk into every other member's slot for this rank.
  endpoint::Request writes;
  for (int i = 0; i < n; ++i) {
    if (i == me) continue;
    const int d = members[static_cast<std::size_t>(i)];
    endpoint::Endpoint& ep = eps_->endpoint(d);
    Sge s{reinterpret_cast<std::uint64_t>(send_), len, send_reg_.lkey(ep.rail())};
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaWrite;
    wr.sgl = {&s, 1};
    wr.remote_addr = remote_slot(d, world_rank_, sent_[static_cast<std::size_t>(d)]);
    wr.rkey = ep.rkey(peers_[static_cast<std::size_t>(d)].rkeys);
    const StatusCode rc = ep.post(wr, endpoint::OnComplete{&writes, {}, nullptr, 0}, true);
    if (rc != StatusCode::kOk) {
      return class_error(RMA_ERR_OTHER, "collective: writing to rank " + std::to_string(d) + " failed (" +
                                            std::string(status_code_name(rc)) + ")");
    }
  }
  StatusCode rc = eps_->wait(writes);
  if (rc != StatusCode::kOk || writes.failed()) {
    return class_error(RMA_ERR_OTHER, "collective: a write to another member did not complete (" +
                                          (writes.failed() ? endpoint::describe_error(writes.error, writes.vendor_err)
                                                           : std::string(status_code_name(rc))) + ")");
  }
  // 2. Then announce it: the counter moves only after the data is there.
  endpoint::Request atomics;
  for (int i = 0; i < n; ++i) {
    if (i == me) continue;
    const int d = members[static_cast<std::size_t>(i)];
    endpoint::Endpoint& ep = eps_->endpoint(d);
    rc = ep.post_atomic(Opcode::kAtomicFetchAdd, remote_counter(d, world_rank_),
                        ep.rkey(peers_[static_cast<std::size_t>(d)].rkeys), 1, 0,
                        endpoint::OnComplete{&atomics, {}, nullptr, 0});
    if (rc != StatusCode::kOk) {
      return class_error(RMA_ERR_OTHER, "collective: signalling rank " + std::to_string(d) + " failed (" +
                                            std::string(status_code_name(rc)) + ")");
    }
    ++sent_[static_cast<std::size_t>(d)];
  }
  rc = eps_->wait(atomics);
  if (rc != StatusCode::kOk || atomics.failed()) {
    return class_error(RMA_ERR_OTHER, "collective: signalling another member did not complete");
  }
  // 3. Every other member's chunk of this round.
  for (int i = 0; i < n; ++i) {
    auto& dst = out[static_cast<std::size_t>(i)];
    if (i == me) {
      totals[static_cast<std::size_t>(i)] = total;
      dst.insert(dst.end(), chunk.begin(), chunk.end());
      continue;
    }
    const int s = members[static_cast<std::size_t>(i)];
    const std::uint64_t r = received_[static_cast<std::size_t>(s)];
    const std::uint64_t* c = counter(s);
    const auto start = std::chrono::steady_clock::now();
    WaitBackoff backoff;
    for (std::uint32_t spin = 0;; ++spin) {
      // progress() first: a software NIC writes on its own thread under the
      // device lock that progress() takes (see rma_win_sync).
      if (eps_->progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
      if (load(c) > r) break;
      if ((spin & 63u) == 63u) {
        if (eps_->expired(start)) {
          return class_error(RMA_ERR_OTHER, "collective: rank " + std::to_string(s) +
                                                " (member " + std::to_string(i) +
                                                ") did not arrive within RMA_WAIT_TIMEOUT_MS");
        }
        backoff.pause();
      }
    }
    const std::uint8_t* sl = slot(s, r);
    ++received_[static_cast<std::size_t>(s)];
    const std::uint64_t id = get_u64(sl);
    if (id != comm_id) {
      return class_error(RMA_ERR_COMM, "collective mismatch: rank " + std::to_string(s) +
                                           " is in a collective on another communicator (id " +
                                           std::to_string(id) + ", this one " + std::to_string(comm_id) +
                                           "): collectives must be called in the same order on every member");
    }
    const std::uint32_t clen = get_u32(sl + 12);
    if (clen > kChunkBytes) return class_error(RMA_ERR_INTERN, "collective: corrupt chunk length");
    totals[static_cast<std::size_t>(i)] = get_u32(sl + 8);
    dst.insert(dst.end(), sl + kHeaderBytes, sl + kHeaderBytes + clen);
  }
  return {};
}

Status Mailbox::allgather(const std::vector<int>& members, int me, std::uint64_t comm_id,
                          std::span<const std::uint8_t> mine, std::vector<std::vector<std::uint8_t>>& out) {
  const std::size_t n = members.size();
  out.assign(n, {});
  if (mine.size() > 0xffffffffu) return arg_error("collective: contribution too large");
  const auto total = static_cast<std::uint32_t>(mine.size());
  std::vector<std::uint32_t> totals(n, 0);
  std::size_t done = 0;
  std::size_t rounds = 1;
  for (std::size_t k = 0; k < rounds; ++k) {
    const std::size_t take = std::min(kChunkBytes, mine.size() - std::min(done, mine.size()));
    RMA_RETURN_IF_ERROR(round(members, me, comm_id, total, mine.subspan(std::min(done, mine.size()), take), totals, out));
    done += take;
    if (k == 0) {
      const std::uint32_t most = *std::max_element(totals.begin(), totals.end());
      rounds = std::max<std::size_t>(1, (most + kChunkBytes - 1) / kChunkBytes);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i].size() != totals[i]) return class_error(RMA_ERR_INTERN, "collective: a contribution arrived incomplete");
  }
  return {};
}

Result<std::vector<std::vector<std::uint8_t>>> comm_allgather(Context& ctx, const rma_comm_s& comm,
                                                              std::span<const std::uint8_t> mine) {
  if (comm.is_world) {
    auto all = ctx.bootstrap().allgather(mine);
    if (!all.ok()) return class_error(RMA_ERR_OTHER, "allgather: " + all.status().message());
    return std::move(all).value();
  }
  std::vector<std::vector<std::uint8_t>> out;
  if (comm.size() == 1) {
    out.emplace_back(mine.begin(), mine.end());
    return out;
  }
  RMA_RETURN_IF_ERROR(ctx.mailbox().allgather(comm.ranks, comm.rank, comm.id, mine, out));
  return out;
}

Status comm_barrier(Context& ctx, const rma_comm_s& comm) {
  if (comm.is_world) {
    Status b = ctx.bootstrap().barrier();
    if (!b.ok()) return class_error(RMA_ERR_OTHER, "barrier: " + b.message());
    return {};
  }
  if (comm.size() == 1) return {};
  return comm_allgather(ctx, comm, {}).status();
}

}  // namespace rma::api
