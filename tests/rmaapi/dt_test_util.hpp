// Helpers shared by the datatype tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "datatype/block_cursor.hpp"
#include "datatype/errors.hpp"
#include "datatype/datatype.hpp"
#include "rma/rma_datatype.h"

namespace rma::api::test {

using Blocks = std::vector<std::pair<std::int64_t, std::int64_t>>;

inline Blocks blocks_of(const TypeLayout& t, std::int64_t count) {
  Blocks out;
  BlockCursor c(t, count);
  Block b;
  while (c.next(b)) out.emplace_back(b.offset, b.length);
  return out;
}
inline Blocks blocks_of(rma_Datatype t, std::int64_t count = 1) { return blocks_of(t->layout, count); }

struct Info {
  std::int64_t size, lb, extent, true_lb, true_extent;
  bool operator==(const Info&) const = default;
};
inline std::ostream& operator<<(std::ostream& os, const Info& i) {
  return os << "{size " << i.size << ", lb " << i.lb << ", extent " << i.extent << ", true_lb "
            << i.true_lb << ", true_extent " << i.true_extent << "}";
}
inline Info info_of(rma_Datatype t) {
  Info i{};
  rma_Count size = 0;
  rma_Aint lb = 0, ext = 0, tlb = 0, text = 0;
  EXPECT_EQ(rma_type_size_x(t, &size), RMA_SUCCESS);
  EXPECT_EQ(rma_type_get_extent(t, &lb, &ext), RMA_SUCCESS);
  EXPECT_EQ(rma_type_get_true_extent(t, &tlb, &text), RMA_SUCCESS);
  i.size = size;
  i.lb = lb;
  i.extent = ext;
  i.true_lb = tlb;
  i.true_extent = text;
  return i;
}

// Frees derived types at scope exit.
struct TypeGuard {
  std::vector<rma_Datatype> types;
  rma_Datatype add(rma_Datatype t) {
    types.push_back(t);
    return t;
  }
  ~TypeGuard() {
    for (auto& t : types) {
      if (t != RMA_DATATYPE_NULL && !t->predefined) rma_type_free(&t);
    }
  }
};

}  // namespace rma::api::test
