// The object behind an rma_Info handle (MPI 4.x chapter 10), and the window
// hints librma reads from one (MPI 4.x 12.2.1).
//
// An info object keeps every (key, value) pair it is given, known or not:
// MPI programs pass hints meant for other implementations, which must be
// carried and ignored. Keys librma acts on are checked when a window is
// created or its info is set, so a typo in a known value is reported there
// rather than silently ignored.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rma/rma.h"
#include "rma/sdk/status.hpp"

struct rma_info_s {
  static constexpr std::uint32_t kMagic = 0x52494e46;  // "RINF"
  std::uint32_t magic = kMagic;
  // In insertion order: rma_info_get_nthkey numbers them so.
  std::vector<std::pair<std::string, std::string>> entries;

  const std::string* find(const std::string& key) const noexcept;
  void set(std::string key, std::string value);
  bool erase(const std::string& key);
};

namespace rma::api {

bool live_info(const rma_info_s* info) noexcept;
// RMA_ERR_INFO for a handle that is not a live info object; RMA_INFO_NULL is
// accepted when `null_ok`.
Status check_info_handle(const rma_info_s* info, bool null_ok);
// RMA_ERR_INFO_KEY: null, empty, or longer than RMA_MAX_INFO_KEY.
Status check_info_key(const char* key);
// RMA_ERR_INFO_VALUE: null or longer than RMA_MAX_INFO_VAL.
Status check_info_value(const char* value);

// The window hints librma understands, with MPI's defaults.
struct WindowHints {
  bool no_locks = false;                              // "no_locks"
  std::string accumulate_ordering = "rar,raw,war,waw";  // "accumulate_ordering"
  std::string accumulate_ops = "same_op_no_op";       // "accumulate_ops"
  bool same_size = false;                             // "same_size"
  bool same_disp_unit = false;                        // "same_disp_unit"
  // rma_win_allocate_shared only: each rank's memory in a segment of its
  // own instead of one contiguous segment. Fixed at creation.
  bool alloc_shared_noncontig = false;                // "alloc_shared_noncontig"
};

// Overrides `hints` with the keys of `info` (may be RMA_INFO_NULL) that
// librma reads; others are ignored. A known key whose value is not one MPI
// defines gives RMA_ERR_INFO_VALUE naming key and value, and changes nothing.
Status apply_window_hints(const rma_info_s* info, WindowHints& hints);
// The hints in use, as an info object's entries (rma_win_get_info).
void window_hints_to_info(const WindowHints& hints, rma_info_s& out);

}  // namespace rma::api
