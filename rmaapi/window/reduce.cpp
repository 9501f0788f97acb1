#include "window/reduce.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <type_traits>

namespace rma::api {
namespace {

// Which C type sits behind a predefined handle.
enum class Scalar : std::uint8_t {
  kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64, kFloat, kDouble, kLongDouble,
  kCFloat, kCDouble, kCLongDouble, kBool, kByte,
  kFloatInt, kDoubleInt, kLongInt, kIntInt, kShortInt, kLongDoubleInt, kNone,
};

template <typename T>
constexpr Scalar int_scalar() {
  if constexpr (sizeof(T) == 1) return std::is_signed_v<T> ? Scalar::kI8 : Scalar::kU8;
  else if constexpr (sizeof(T) == 2) return std::is_signed_v<T> ? Scalar::kI16 : Scalar::kU16;
  else if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? Scalar::kI32 : Scalar::kU32;
  else return std::is_signed_v<T> ? Scalar::kI64 : Scalar::kU64;
}

struct Entry {
  const rma_datatype_s* type;
  Scalar scalar;
  TypeClass cls;
};

const Entry kTable[] = {
    {&rma_dt_char_, Scalar::kNone, TypeClass::kNone},
    {&rma_dt_wchar_, Scalar::kNone, TypeClass::kNone},
    {&rma_dt_signed_char_, Scalar::kI8, TypeClass::kCInteger},
    {&rma_dt_unsigned_char_, Scalar::kU8, TypeClass::kCInteger},
    {&rma_dt_byte_, Scalar::kByte, TypeClass::kByte},
    {&rma_dt_short_, int_scalar<short>(), TypeClass::kCInteger},
    {&rma_dt_unsigned_short_, int_scalar<unsigned short>(), TypeClass::kCInteger},
    {&rma_dt_int_, int_scalar<int>(), TypeClass::kCInteger},
    {&rma_dt_unsigned_, int_scalar<unsigned>(), TypeClass::kCInteger},
    {&rma_dt_long_, int_scalar<long>(), TypeClass::kCInteger},
    {&rma_dt_unsigned_long_, int_scalar<unsigned long>(), TypeClass::kCInteger},
    {&rma_dt_long_long_, int_scalar<long long>(), TypeClass::kCInteger},
    {&rma_dt_unsigned_long_long_, int_scalar<unsigned long long>(), TypeClass::kCInteger},
    {&rma_dt_int8_t_, Scalar::kI8, TypeClass::kCInteger},
    {&rma_dt_int16_t_, Scalar::kI16, TypeClass::kCInteger},
    {&rma_dt_int32_t_, Scalar::kI32, TypeClass::kCInteger},
    {&rma_dt_int64_t_, Scalar::kI64, TypeClass::kCInteger},
    {&rma_dt_uint8_t_, Scalar::kU8, TypeClass::kCInteger},
    {&rma_dt_uint16_t_, Scalar::kU16, TypeClass::kCInteger},
    {&rma_dt_uint32_t_, Scalar::kU32, TypeClass::kCInteger},
    {&rma_dt_uint64_t_, Scalar::kU64, TypeClass::kCInteger},
    {&rma_dt_aint_, int_scalar<std::intptr_t>(), TypeClass::kCInteger},
    {&rma_dt_offset_, Scalar::kI64, TypeClass::kCInteger},
    {&rma_dt_float_, Scalar::kFloat, TypeClass::kFloating},
    {&rma_dt_double_, Scalar::kDouble, TypeClass::kFloating},
    {&rma_dt_long_double_, Scalar::kLongDouble, TypeClass::kFloating},
    {&rma_dt_c_float_complex_, Scalar::kCFloat, TypeClass::kComplex},
    {&rma_dt_c_double_complex_, Scalar::kCDouble, TypeClass::kComplex},
    {&rma_dt_c_long_double_complex_, Scalar::kCLongDouble, TypeClass::kComplex},
    {&rma_dt_c_bool_, Scalar::kBool, TypeClass::kLogical},
    {&rma_dt_float_int_, Scalar::kFloatInt, TypeClass::kPair},
    {&rma_dt_double_int_, Scalar::kDoubleInt, TypeClass::kPair},
    {&rma_dt_long_int_, Scalar::kLongInt, TypeClass::kPair},
    {&rma_dt_2int_, Scalar::kIntInt, TypeClass::kPair},
    {&rma_dt_short_int_, Scalar::kShortInt, TypeClass::kPair},
    {&rma_dt_long_double_int_, Scalar::kLongDoubleInt, TypeClass::kPair},
};

const Entry* find(const rma_datatype_s* t) noexcept {
  // Programs accumulate on one or two types over and over: remember the last.
  static thread_local const Entry* last = nullptr;
  if (last != nullptr && last->type == t) return last;
  for (const Entry& e : kTable) {
    if (e.type == t) return last = &e;
  }
  return nullptr;
}

// One loop per op (the switch outside it), so that the compiler vectorizes
// each: accumulates of thousands of elements are one pass over them.
// Cloned for AVX-512 and AVX2 besides the baseline, chosen at load time by
// an ifunc resolver (Open MPI's op component dispatches the same way): 4 KiB
// accumulates ran at half the speed of its loops. Not under ThreadSanitizer,
// whose instrumented resolver runs before its runtime and crashes the
// program at load.
#if defined(__SANITIZE_THREAD__)
#define RMA_REDUCE_CLONES
#else
#define RMA_REDUCE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
template <typename T, typename F>
RMA_REDUCE_CLONES void each(T* a, const T* b, std::size_t n, F f) noexcept {
  for (std::size_t i = 0; i < n; ++i) a[i] = f(a[i], b[i]);
}

template <typename T>
void integer_op(OpKind op, T* a, const T* b, std::size_t n) noexcept {
  // Signed overflow wraps as the hardware does: computed in 64-bit unsigned
  // arithmetic (no promotion to a signed int that could overflow).
  using U = std::uint64_t;
  switch (op) {
    case OpKind::kMax: each(a, b, n, [](T x, T y) { return std::max(x, y); }); break;
    case OpKind::kMin: each(a, b, n, [](T x, T y) { return std::min(x, y); }); break;
    case OpKind::kSum: each(a, b, n, [](T x, T y) { return static_cast<T>(static_cast<U>(x) + static_cast<U>(y)); }); break;
    case OpKind::kProd: each(a, b, n, [](T x, T y) { return static_cast<T>(static_cast<U>(x) * static_cast<U>(y)); }); break;
    case OpKind::kLand: each(a, b, n, [](T x, T y) { return static_cast<T>((x != 0) && (y != 0)); }); break;
    case OpKind::kLor: each(a, b, n, [](T x, T y) { return static_cast<T>((x != 0) || (y != 0)); }); break;
    case OpKind::kLxor: each(a, b, n, [](T x, T y) { return static_cast<T>((x != 0) != (y != 0)); }); break;
    case OpKind::kBand: each(a, b, n, [](T x, T y) { return static_cast<T>(x & y); }); break;
    case OpKind::kBor: each(a, b, n, [](T x, T y) { return static_cast<T>(x | y); }); break;
    case OpKind::kBxor: each(a, b, n, [](T x, T y) { return static_cast<T>(x ^ y); }); break;
    default: break;
  }
}

template <typename T>
void float_op(OpKind op, T* a, const T* b, std::size_t n) noexcept {
  switch (op) {
    case OpKind::kMax: each(a, b, n, [](T x, T y) { return std::max(x, y); }); break;
    case OpKind::kMin: each(a, b, n, [](T x, T y) { return std::min(x, y); }); break;
    case OpKind::kSum: each(a, b, n, [](T x, T y) { return x + y; }); break;
    case OpKind::kProd: each(a, b, n, [](T x, T y) { return x * y; }); break;
    default: break;
  }
}

template <typename T>
void complex_op(OpKind op, void* av, const void* bv, std::size_t n) noexcept {
  // The C complex layout (re, im) is std::complex's.
  auto* a = static_cast<std::complex<T>*>(av);
  const auto* b = static_cast<const std::complex<T>*>(bv);
  for (std::size_t i = 0; i < n; ++i) {
    if (op == OpKind::kSum) a[i] += b[i];
    else if (op == OpKind::kProd) a[i] *= b[i];
  }
}

void bool_op(OpKind op, bool* a, const bool* b, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    switch (op) {
      case OpKind::kLand: a[i] = a[i] && b[i]; break;
      case OpKind::kLor: a[i] = a[i] || b[i]; break;
      case OpKind::kLxor: a[i] = a[i] != b[i]; break;
      default: break;
    }
  }
}

template <typename V>
void loc_op(OpKind op, void* av, const void* bv, std::size_t n) noexcept {
  // Packed pairs: the value, then the int index, no padding (the type's
  // size, not its extent).
  constexpr std::size_t kStride = sizeof(V) + sizeof(int);
  auto* a = static_cast<unsigned char*>(av);
  const auto* b = static_cast<const unsigned char*>(bv);
  for (std::size_t k = 0; k < n; ++k, a += kStride, b += kStride) {
    V av_, bv_;
    int ai, bi;
    std::memcpy(&av_, a, sizeof(V));
    std::memcpy(&ai, a + sizeof(V), sizeof(int));
    std::memcpy(&bv_, b, sizeof(V));
    std::memcpy(&bi, b + sizeof(V), sizeof(int));
    // MPI 6.9.4: the better value wins; on a tie, the smaller index.
    const bool better = op == OpKind::kMaxloc ? bv_ > av_ : bv_ < av_;
    if (better) {
      std::memcpy(a, b, kStride);
    } else if (bv_ == av_ && bi < ai) {
      std::memcpy(a + sizeof(V), &bi, sizeof(int));
    }
  }
}

}  // namespace

const char* op_name(OpKind op) noexcept {
  switch (op) {
    case OpKind::kMax: return "RMA_MAX";
    case OpKind::kMin: return "RMA_MIN";
    case OpKind::kSum: return "RMA_SUM";
    case OpKind::kProd: return "RMA_PROD";
    case OpKind::kLand: return "RMA_LAND";
    case OpKind::kBand: return "RMA_BAND";
    case OpKind::kLor: return "RMA_LOR";
    case OpKind::kBor: return "RMA_BOR";
    case OpKind::kLxor: return "RMA_LXOR";
    case OpKind::kBxor: return "RMA_BXOR";
    case OpKind::kMaxloc: return "RMA_MAXLOC";
    case OpKind::kMinloc: return "RMA_MINLOC";
    case OpKind::kReplace: return "RMA_REPLACE";
    case OpKind::kNoOp: return "RMA_NO_OP";
  }
  return "unknown op";
}

TypeClass type_class(const rma_datatype_s* element) noexcept {
  const Entry* e = find(element);
  return e == nullptr ? TypeClass::kNone : e->cls;
}

const char* type_class_name(TypeClass c) noexcept {
  switch (c) {
    case TypeClass::kCInteger: return "C integer";
    case TypeClass::kFloating: return "floating point";
    case TypeClass::kComplex: return "complex";
    case TypeClass::kLogical: return "logical";
    case TypeClass::kByte: return "byte";
    case TypeClass::kPair: return "pair (value, index)";
    case TypeClass::kNone: return "character";
  }
  return "unknown";
}

bool op_defined(OpKind op, const rma_datatype_s* element) noexcept {
  const Entry* e = find(element);
  if (e == nullptr) return false;
  if (op == OpKind::kReplace || op == OpKind::kNoOp) return true;
  switch (e->cls) {
    case TypeClass::kCInteger:
      return op != OpKind::kMaxloc && op != OpKind::kMinloc;
    case TypeClass::kFloating:
      return op == OpKind::kMax || op == OpKind::kMin || op == OpKind::kSum || op == OpKind::kProd;
    case TypeClass::kComplex:
      return op == OpKind::kSum || op == OpKind::kProd;
    case TypeClass::kLogical:
      return op == OpKind::kLand || op == OpKind::kLor || op == OpKind::kLxor;
    case TypeClass::kByte:
      return op == OpKind::kBand || op == OpKind::kBor || op == OpKind::kBxor;
    case TypeClass::kPair:
      return op == OpKind::kMaxloc || op == OpKind::kMinloc;
    case TypeClass::kNone:
      return false;
  }
  return false;
}

bool is_int64_like(const rma_datatype_s* element) noexcept {
  const Entry* e = find(element);
  return e != nullptr && (e->scalar == Scalar::kI64 || e->scalar == Scalar::kU64);
}

void apply_op(OpKind op, const rma_datatype_s* element, void* target, const void* origin,
              std::size_t n) noexcept {
  if (op == OpKind::kNoOp || n == 0) return;
  if (op == OpKind::kReplace) {
    std::memmove(target, origin, n * static_cast<std::size_t>(element->layout.size));
    return;
  }
  const Entry* e = find(element);
  if (e == nullptr) return;
  switch (e->scalar) {
    case Scalar::kI8: integer_op(op, static_cast<std::int8_t*>(target), static_cast<const std::int8_t*>(origin), n); break;
    case Scalar::kU8: integer_op(op, static_cast<std::uint8_t*>(target), static_cast<const std::uint8_t*>(origin), n); break;
    case Scalar::kByte: integer_op(op, static_cast<std::uint8_t*>(target), static_cast<const std::uint8_t*>(origin), n); break;
    case Scalar::kI16: integer_op(op, static_cast<std::int16_t*>(target), static_cast<const std::int16_t*>(origin), n); break;
    case Scalar::kU16: integer_op(op, static_cast<std::uint16_t*>(target), static_cast<const std::uint16_t*>(origin), n); break;
    case Scalar::kI32: integer_op(op, static_cast<std::int32_t*>(target), static_cast<const std::int32_t*>(origin), n); break;
    case Scalar::kU32: integer_op(op, static_cast<std::uint32_t*>(target), static_cast<const std::uint32_t*>(origin), n); break;
    case Scalar::kI64: integer_op(op, static_cast<std::int64_t*>(target), static_cast<const std::int64_t*>(origin), n); break;
    case Scalar::kU64: integer_op(op, static_cast<std::uint64_t*>(target), static_cast<const std::uint64_t*>(origin), n); break;
    case Scalar::kFloat: float_op(op, static_cast<float*>(target), static_cast<const float*>(origin), n); break;
    case Scalar::kDouble: float_op(op, static_cast<double*>(target), static_cast<const double*>(origin), n); break;
    case Scalar::kLongDouble: float_op(op, static_cast<long double*>(target), static_cast<const long double*>(origin), n); break;
    case Scalar::kCFloat: complex_op<float>(op, target, origin, n); break;
    case Scalar::kCDouble: complex_op<double>(op, target, origin, n); break;
    case Scalar::kCLongDouble: complex_op<long double>(op, target, origin, n); break;
    case Scalar::kBool: bool_op(op, static_cast<bool*>(target), static_cast<const bool*>(origin), n); break;
    case Scalar::kFloatInt: loc_op<float>(op, target, origin, n); break;
    case Scalar::kDoubleInt: loc_op<double>(op, target, origin, n); break;
    case Scalar::kLongInt: loc_op<long>(op, target, origin, n); break;
    case Scalar::kIntInt: loc_op<int>(op, target, origin, n); break;
    case Scalar::kShortInt: loc_op<short>(op, target, origin, n); break;
    case Scalar::kLongDoubleInt: loc_op<long double>(op, target, origin, n); break;
    case Scalar::kNone: break;
  }
}

}  // namespace rma::api
