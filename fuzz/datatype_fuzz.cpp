// libFuzzer target for the datatype engine and its C API's argument checks
// (rmaapi/datatype). Built and run by fuzz/run-datatype-fuzz.sh (clang++
// -fsanitize=fuzzer,address,undefined): any overflow, out-of-bounds access
// or leak is a crash.
//
// An input is a small program over a stack of handles (predefined types at
// the bottom): each step picks a constructor (or commit, free, dup, the
// queries) and reads its arguments from the input at full range — negative
// and huge counts, strides, displacements, lbs and extents included, arrays
// null or not. Checked on every call:
//  - the return code is RMA_SUCCESS or a datatype error class, never
//    anything else, and a failed call leaves its output untouched;
//  - a committed type's queries agree (size_x vs size, extent = ub - lb);
//  - footprint_fits of count elements either refuses or gives bounds
//    containing every block the cursor walks, whose lengths sum to
//    count x size;
//  - when small enough, pack then unpack into a fresh buffer of the
//    footprint reproduces exactly the data bytes and nothing else.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <cstring>
#include <vector>

#include "datatype/block_cursor.hpp"
#include "datatype/datatype.hpp"
#include "datatype/pack.hpp"
#include "rma/rma_datatype.h"
#include "rma/rma_errors.h"

namespace {

using rma::api::Block;
using rma::api::BlockCursor;
using rma::api::Footprint;

[[noreturn]] void fail(const char* what) {
  __builtin_printf("datatype_fuzz: %s\n", what);
  std::abort();
}

class Input {
 public:
  Input(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  std::uint8_t byte() { return i_ < n_ ? d_[i_++] : 0; }
  std::int64_t i64() {
    std::uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v = (v << 8) | byte();
    return static_cast<std::int64_t>(v);
  }
  // Mostly small values, sometimes extreme ones: what finds the edges.
  std::int64_t value() {
    switch (byte() % 8) {
      case 0: return i64();
      case 1: return -static_cast<std::int64_t>(byte());
      case 2: return std::int64_t{1} << (byte() % 63);
      case 3: return -(std::int64_t{1} << (byte() % 63));
      default: return byte() % 17;
    }
  }
  int count() { return static_cast<int>(value()); }
  int small_count() { return byte() % 9; }

 private:
  const std::uint8_t* d_;
  std::size_t n_;
  std::size_t i_ = 0;
};

bool datatype_error(int rc) {
  return rc == RMA_ERR_COUNT || rc == RMA_ERR_ARG || rc == RMA_ERR_TYPE || rc == RMA_ERR_INTERN ||
         rc == RMA_ERR_NO_MEM;
}

void check_rc(int rc, rma_Datatype before, rma_Datatype after) {
  if (rc == RMA_SUCCESS) return;
  if (!datatype_error(rc)) fail("unexpected error class");
  if (before != after) fail("a failed call wrote its output");
}

const rma_Datatype kBase[] = {RMA_BYTE,   RMA_INT8_T,  RMA_INT32_T,   RMA_INT64_T, RMA_DOUBLE,
                              RMA_2INT,   RMA_DOUBLE_INT, RMA_SHORT_INT, RMA_C_DOUBLE_COMPLEX,
                              RMA_LONG_DOUBLE_INT};

// The checks on one committed type.
void exercise(rma_Datatype t, Input& in) {
  int size = 0;
  rma_Count size_x = 0;
  rma_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  if (rma_type_size(t, &size) != RMA_SUCCESS || rma_type_size_x(t, &size_x) != RMA_SUCCESS ||
      rma_type_get_extent(t, &lb, &extent) != RMA_SUCCESS ||
      rma_type_get_true_extent(t, &tlb, &textent) != RMA_SUCCESS) {
    fail("a query of a committed type failed");
  }
  if (size != RMA_UNDEFINED && size != size_x) fail("size and size_x disagree");
  const rma::api::TypeLayout& l = t->layout;
  if (l.size != size_x || l.extent() != extent || l.lb != lb) fail("queries disagree with the layout");

  const std::int64_t count = in.byte() % 2 ? in.value() : in.byte() % 5;
  Footprint fp;
  if (!rma::api::footprint_fits(l, count, fp)) return;  // refused: nothing may be walked
  std::int64_t bytes = 0;
  if (count > 0 && __builtin_mul_overflow(l.size, count, &bytes)) return;
  if (count <= 0 || bytes == 0) return;
  // Walk at most 4096 blocks: every block inside the footprint.
  BlockCursor c(l, count);
  Block b;
  std::int64_t walked = 0;
  for (int k = 0; k < 4096 && c.next(b); ++k) {
    if (b.length <= 0) fail("empty block");
    if (b.offset < fp.lo || b.offset > fp.hi - b.length) fail("block outside the footprint");
    walked += b.length;
  }
  if (c.done() && walked != bytes) fail("blocks do not sum to count x size");
  // Pack and unpack through a buffer holding the footprint and the buffer
  // address (offsets are relative to it and may all be positive or negative).
  const std::int64_t first = fp.lo < 0 ? fp.lo : 0, last = fp.hi > 0 ? fp.hi : 0;
  if (last - first > (1 << 20) || bytes > (1 << 18)) return;
  const auto span = static_cast<std::size_t>(last - first);
  std::vector<std::uint8_t> src(span + 1), dst(span + 1, 0xee);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 131 + 7);
  std::uint8_t* const sbase = src.data() - first;
  std::uint8_t* const dbase = dst.data() - first;
  std::vector<std::byte> packed(static_cast<std::size_t>(bytes));
  auto p = rma::api::pack(sbase, count, l, packed);
  if (!p.ok() || *p != bytes) fail("pack failed on a footprint-sized buffer");
  auto u = rma::api::unpack(packed, dbase, count, l);
  if (!u.ok() || *u != bytes) fail("unpack failed on a footprint-sized buffer");
  // Data bytes equal the source; the gaps keep the fill (types may overlap
  // themselves, in which case the later copy wins: only check disjoint ones).
  std::vector<std::uint8_t> mark(src.size(), 0);
  BlockCursor c2(l, count);
  bool overlap = false;
  while (c2.next(b)) {
    for (std::int64_t k = 0; k < b.length; ++k) {
      auto& m = mark[static_cast<std::size_t>(b.offset - first + k)];
      overlap |= m != 0;
      m = 1;
    }
  }
  if (overlap) return;
  for (std::size_t i = 0; i < mark.size(); ++i) {
    if (mark[i] != 0 ? dst[i] != src[i] : dst[i] != 0xee) fail("pack/unpack moved the wrong bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  std::vector<rma_Datatype> stack(std::begin(kBase), std::end(kBase));
  std::vector<rma_Datatype> derived;
  auto pick = [&]() -> rma_Datatype {
    const std::uint8_t k = in.byte();
    if (k == 255) return RMA_DATATYPE_NULL;  // invalid handles are checked too
    return stack[k % stack.size()];
  };
  for (int step = 0; step < 24 && !in.empty(); ++step) {
    const std::uint8_t op = in.byte() % 16;
    rma_Datatype old = pick();
    rma_Datatype out = RMA_DATATYPE_NULL;
    int rc = RMA_SUCCESS;
    const int n = in.small_count();
    std::vector<int> ia(static_cast<std::size_t>(n)), ib(static_cast<std::size_t>(n)), ic(static_cast<std::size_t>(n));
    std::vector<rma_Aint> aa(static_cast<std::size_t>(n));
    std::vector<rma_Datatype> ta(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      ia[static_cast<std::size_t>(k)] = in.count();
      ib[static_cast<std::size_t>(k)] = in.count();
      ic[static_cast<std::size_t>(k)] = in.count();
      aa[static_cast<std::size_t>(k)] = static_cast<rma_Aint>(in.value());
      ta[static_cast<std::size_t>(k)] = pick();
    }
    // Sometimes a count that does not match the arrays' length, with null arrays.
    const bool nulls = in.byte() % 8 == 0;
    const int cnt = nulls ? in.count() : n;
    const int* pa = nulls ? nullptr : ia.data();
    const int* pb = nulls ? nullptr : ib.data();
    const int* pc = nulls ? nullptr : ic.data();
    const rma_Aint* pd = nulls ? nullptr : aa.data();
    const rma_Datatype* pt = nulls ? nullptr : ta.data();
    switch (op) {
      case 0: rc = rma_type_contiguous(in.count(), old, &out); break;
      case 1: rc = rma_type_vector(in.count(), in.count(), in.count(), old, &out); break;
      case 2: rc = rma_type_create_hvector(in.count(), in.count(), static_cast<rma_Aint>(in.value()), old, &out); break;
      case 3: rc = rma_type_indexed(cnt, pa, pb, old, &out); break;
      case 4: rc = rma_type_create_hindexed(cnt, pa, pd, old, &out); break;
      case 5: rc = rma_type_create_indexed_block(cnt, in.count(), pb, old, &out); break;
      case 6: rc = rma_type_create_hindexed_block(cnt, in.count(), pd, old, &out); break;
      case 7: rc = rma_type_create_struct(cnt, pa, pd, pt, &out); break;
      case 8: rc = rma_type_create_subarray(cnt, pa, pb, pc, in.byte() % 2 ? RMA_ORDER_C : RMA_ORDER_FORTRAN,
                                            old, &out);
        break;
      case 9:
        rc = rma_type_create_resized(old, static_cast<rma_Aint>(in.value()), static_cast<rma_Aint>(in.value()), &out);
        break;
      case 10: rc = rma_type_dup(old, &out); break;
      case 11: {  // commit a derived type in place
        if (derived.empty()) break;
        rma_Datatype& t = derived[in.byte() % derived.size()];
        const rma_Datatype before = t;
        rc = rma_type_commit(&t);
        if (rc != RMA_SUCCESS || t != before) fail("commit of a live derived type failed or moved it");
        exercise(t, in);
        break;
      }
      case 12: {  // free a derived type (types built from it must stay valid)
        if (derived.empty()) break;
        const std::size_t k = in.byte() % derived.size();
        rma_Datatype t = derived[k];
        if (rma_type_free(&t) != RMA_SUCCESS || t != RMA_DATATYPE_NULL) fail("free failed");
        stack.erase(std::find(stack.begin(), stack.end(), derived[k]));
        derived.erase(derived.begin() + static_cast<std::ptrdiff_t>(k));
        break;
      }
      case 13: {  // predefined types cannot be freed or changed
        rma_Datatype t = kBase[in.byte() % std::size(kBase)];
        const rma_Datatype before = t;
        rc = rma_type_free(&t);
        if (rc != RMA_ERR_TYPE || t != before) fail("freeing a predefined type did not fail cleanly");
        rc = RMA_SUCCESS;
        break;
      }
      default: {  // queries with null outputs or invalid handles
        int s = 0;
        if (rma_type_size(old, nullptr) == RMA_SUCCESS) fail("null output accepted");
        rc = rma_type_size(old, &s);
        if (old == RMA_DATATYPE_NULL && rc == RMA_SUCCESS) fail("null handle accepted");
        rc = RMA_SUCCESS;
        break;
      }
    }
    check_rc(rc, RMA_DATATYPE_NULL, out);
    if (rc == RMA_SUCCESS && out != RMA_DATATYPE_NULL) {
      if (derived.size() >= 12) {
        rma_Datatype t = out;
        if (rma_type_free(&t) != RMA_SUCCESS) fail("free of a new type failed");
      } else {
        derived.push_back(out);
        stack.push_back(out);
      }
    }
  }
  for (rma_Datatype t : derived) {
    if (rma_type_free(&t) != RMA_SUCCESS) fail("final free failed");
  }
  return 0;
}
