// The accumulates accumulate_ordering=none lets librma postpone (see
// deferred_accumulate.hpp).
#include "window/deferred_accumulate.hpp"

#include <chrono>
#include <string>

#include "datatype/errors.hpp"
#include "window/window.hpp"

namespace rma::api {

struct DeferredAccumulates::Word {
  int target = 0;
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
  OpKind op = OpKind::kReplace;
  const rma_datatype_s* elem = nullptr;
  std::uint64_t value = 0;     // the origin's operand (combined ones included)
  std::uint64_t expected = 0;  // what the next compare-and-swap expects at the target
  std::uint64_t seen = 0;      // what the last one found there
  bool done = false;
  bool in_flight = false;  // posted this round, not yet waited for
  endpoint::Request request{};
};

namespace {

// Combining two updates with `op` gives exactly the value applying them one
// after the other would.
bool combines_exactly(OpKind op, const rma_datatype_s* elem) noexcept {
  const TypeClass c = type_class(elem);
  if (c != TypeClass::kFloating && c != TypeClass::kComplex) return true;
  return op != OpKind::kSum && op != OpKind::kProd;
}

}  // namespace

DeferredAccumulates::DeferredAccumulates()
    : words_(new Word[kCapacity]), slots_(new std::uint16_t[kSlots]()) {}
DeferredAccumulates::~DeferredAccumulates() = default;

std::size_t DeferredAccumulates::slot_of(int target, std::uint64_t addr) const noexcept {
  std::uint64_t h = (addr >> 3) * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(target);
  h ^= h >> 29;
  std::size_t i = static_cast<std::size_t>(h) & (kSlots - 1);
  // At most kCapacity of kSlots are used: an empty slot or the word is near.
  while (slots_[i] != 0) {
    const Word& w = words_[slots_[i] - 1];
    if (w.target == target && w.addr == addr) break;
    i = (i + 1) & (kSlots - 1);
  }
  return i;
}

bool DeferredAccumulates::add(int target, std::uint64_t addr, std::uint32_t rkey, OpKind op,
                              const rma_datatype_s* elem, std::uint64_t value) noexcept {
  const std::size_t slot = slot_of(target, addr);
  if (slots_[slot] != 0) {
    Word& w = words_[slots_[slot] - 1];
    if (w.op != op || w.elem != elem || !combines_exactly(op, elem)) return false;
    // Later update on the right, as if it ran second.
    apply_op(op, elem, &w.value, &value, 1);
    return true;
  }
  if (size_ == kCapacity) return false;
  words_[size_] = Word{.target = target, .addr = addr, .rkey = rkey, .op = op, .elem = elem, .value = value};
  slots_[slot] = static_cast<std::uint16_t>(++size_);
  return true;
}

Status DeferredAccumulates::run(rma_win_s* win, const char* call) {
  endpoint::EndpointManager& eps = win->ctx->eps();
  const auto start = std::chrono::steady_clock::now();
  std::size_t left = size_;
  Status result;
  while (left > 0 && result.ok()) {
    // One compare-and-swap in flight per unfinished word, then wait for all.
    std::size_t posted = 0;
    for (std::size_t i = 0; i < size_ && result.ok(); ++i) {
      Word& w = words_[i];
      if (w.done) continue;
      std::uint64_t desired = w.expected;
      apply_op(w.op, w.elem, &desired, &w.value, 1);
      endpoint::Endpoint& ep = win->endpoint(w.target);
      w.request = endpoint::Request{};
      const StatusCode rc = ep.post_atomic(Opcode::kAtomicCmpSwap, w.addr, w.rkey, w.expected, desired,
                                           endpoint::OnComplete{&w.request, {}, &w.seen, 8});
      if (rc != StatusCode::kOk) {
        result = transport_error(win, call, w.target, rc);
        break;
      }
      w.in_flight = true;
      ++posted;
      ++cas_posted_;
    }
    // Every posted one is waited for, also after an error: their requests
    // and result slots live in this list.
    for (std::size_t i = 0; i < size_ && posted > 0; ++i) {
      Word& w = words_[i];
      if (w.done || !w.in_flight) continue;
      w.in_flight = false;
      --posted;
      const StatusCode rc = eps.wait(w.request);
      if (rc != StatusCode::kOk || w.request.failed()) {
        if (result.ok()) result = transport_error(win, call, w.target, rc);
        continue;
      }
      if (w.seen == w.expected) {
        w.done = true;
        --left;
      } else {
        w.expected = w.seen;  // lost to another origin: retry from what it left
      }
    }
    if (left > 0 && result.ok() && eps.expired(start)) {
      result = class_error(RMA_ERR_OTHER,
                           std::string(call) + ": " + std::to_string(left) +
                               " accumulates recorded under accumulate_ordering=none kept losing "
                               "their compare-and-swaps to other origins past RMA_WAIT_TIMEOUT_MS");
    }
  }
  // Newest first: every probe path then still runs over occupied slots.
  for (std::size_t i = size_; i-- > 0;) slots_[slot_of(words_[i].target, words_[i].addr)] = 0;
  size_ = 0;
  return result;
}

Status run_deferred_accumulates(rma_win_s* win, const char* call) {
  if (!win->deferred || win->deferred->empty()) return {};
  return win->deferred->run(win, call);
}

}  // namespace rma::api
