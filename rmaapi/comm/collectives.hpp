// The bootstrap collectives communicators and windows need: barrier and
// allgather over any communicator. Not a general collective library.
//
// RMA_COMM_WORLD uses the bootstrap's own. Any other communicator uses the
// context's Mailbox: every rank exposes, registered for remote writes and
// atomics, two slots per world rank and one arrival counter per world rank.
// A round of an allgather WRITEs this rank's chunk into slot (round & 1) of
// every other member, waits until the WRITEs completed, then FETCH_ADDs 1 to
// each member's counter for this rank; a member reads a slot once its
// counter reached the round. Two slots per source suffice: a rank cannot
// start round n + 1 towards a peer before that peer sent round n, which it
// does only after it read round n - 1. Rounds are counted per pair of
// ranks, over all communicators both belong to (MPI orders collectives on
// every communicator the same way on all members); every slot carries the
// communicator's id, so a rank in a collective on another communicator is
// reported, not mixed in.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/comm.hpp"
#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/bootstrap.hpp"
#include "rma/sdk/status.hpp"

namespace rma::api {

class Mailbox {
 public:
  // Collective over the bootstrap (all ranks): allocates, registers and
  // exchanges every rank's mailbox.
  static Result<std::unique_ptr<Mailbox>> create(Bootstrap& bootstrap, endpoint::EndpointManager& eps);
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Allgather over `members` (world ranks, `me` = this rank's index):
  // out[i] = what member i passed. Sizes may differ per member.
  Status allgather(const std::vector<int>& members, int me, std::uint64_t comm_id,
                   std::span<const std::uint8_t> mine, std::vector<std::vector<std::uint8_t>>& out);

  static constexpr std::size_t kSlotBytes = 512;
  static constexpr std::size_t kHeaderBytes = 16;  // comm id, total length, chunk length
  static constexpr std::size_t kChunkBytes = kSlotBytes - kHeaderBytes;

 private:
  Mailbox() = default;
  struct Peer {
    std::uint64_t addr = 0;
    endpoint::RemoteKeys rkeys;
  };
  std::uint64_t* counter(int source) noexcept;
  std::uint8_t* slot(int source, std::uint64_t round) noexcept;
  std::uint64_t remote_counter(int dest, int source) const noexcept;
  std::uint64_t remote_slot(int dest, int source, std::uint64_t round) const noexcept;
  Status round(const std::vector<int>& members, int me, std::uint64_t comm_id, std::uint32_t total,
               std::span<const std::uint8_t> chunk, std::vector<std::uint32_t>& totals,
               std::vector<std::vector<std::uint8_t>>& out);

  endpoint::EndpointManager* eps_ = nullptr;
  int world_rank_ = 0;
  int world_size_ = 0;
  std::uint8_t* mem_ = nullptr;  // counters, then slots
  std::size_t bytes_ = 0;
  std::uint8_t* send_ = nullptr;  // one slot: this rank's outgoing chunk
  endpoint::ExposedRegion mem_reg_, send_reg_;
  std::vector<Peer> peers_;
  std::vector<std::uint64_t> sent_, received_;  // rounds per world rank
};

// Over any communicator of the calling context (world: the bootstrap).
Status comm_barrier(Context& ctx, const rma_comm_s& comm);
Result<std::vector<std::vector<std::uint8_t>>> comm_allgather(Context& ctx, const rma_comm_s& comm,
                                                              std::span<const std::uint8_t> mine);

}  // namespace rma::api
