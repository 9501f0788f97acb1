// The predefined datatypes: sizes and alignments of this platform's C types.
#include <cstddef>
#include <cstdint>
#include <cwchar>

#include "datatype/constructors.hpp"
#include "datatype/datatype.hpp"

namespace {
using rma::api::make_basic;
using rma::api::make_pair;

// Identities (see TypeLayout::identity): integer types of one size are one
// type, as in MPICH; every other predefined type is its own.
std::uint64_t integer_class(std::size_t size) { return 100 + size; }
std::uint64_t next_own = 200;

template <typename T>
rma_datatype_s basic(const char* name, bool integer = false) {
  return rma_datatype_s{rma_datatype_s::kMagic, true, true, name,
                        make_basic(sizeof(T), alignof(T),
                                   integer ? integer_class(sizeof(T)) : next_own++),
                        nullptr, rma::api::TypeEnvelope{}};
}
template <typename T>
rma_datatype_s integer(const char* name) {
  return basic<T>(name, true);
}
template <typename A, typename B>
rma_datatype_s pair(const char* name) {
  struct S { A a; B b; };
  rma_datatype_s t{rma_datatype_s::kMagic, true, true, name,
                   make_pair(sizeof(A), alignof(A), sizeof(B), alignof(B), next_own++),
                   nullptr, rma::api::TypeEnvelope{}};
  static_assert(offsetof(S, b) % alignof(B) == 0);
  return t;
}
struct FloatComplex { float re, im; };
struct DoubleComplex { double re, im; };
struct LongDoubleComplex { long double re, im; };
}  // namespace

struct rma_datatype_s rma_dt_char_ = integer<char>("RMA_CHAR");
struct rma_datatype_s rma_dt_signed_char_ = integer<signed char>("RMA_SIGNED_CHAR");
struct rma_datatype_s rma_dt_unsigned_char_ = integer<unsigned char>("RMA_UNSIGNED_CHAR");
struct rma_datatype_s rma_dt_byte_ = integer<unsigned char>("RMA_BYTE");
struct rma_datatype_s rma_dt_short_ = integer<short>("RMA_SHORT");
struct rma_datatype_s rma_dt_unsigned_short_ = integer<unsigned short>("RMA_UNSIGNED_SHORT");
struct rma_datatype_s rma_dt_int_ = integer<int>("RMA_INT");
struct rma_datatype_s rma_dt_unsigned_ = integer<unsigned>("RMA_UNSIGNED");
struct rma_datatype_s rma_dt_long_ = integer<long>("RMA_LONG");
struct rma_datatype_s rma_dt_unsigned_long_ = integer<unsigned long>("RMA_UNSIGNED_LONG");
struct rma_datatype_s rma_dt_long_long_ = integer<long long>("RMA_LONG_LONG");
struct rma_datatype_s rma_dt_unsigned_long_long_ = integer<unsigned long long>("RMA_UNSIGNED_LONG_LONG");
struct rma_datatype_s rma_dt_float_ = basic<float>("RMA_FLOAT");
struct rma_datatype_s rma_dt_double_ = basic<double>("RMA_DOUBLE");
struct rma_datatype_s rma_dt_long_double_ = basic<long double>("RMA_LONG_DOUBLE");
struct rma_datatype_s rma_dt_int8_t_ = integer<std::int8_t>("RMA_INT8_T");
struct rma_datatype_s rma_dt_int16_t_ = integer<std::int16_t>("RMA_INT16_T");
struct rma_datatype_s rma_dt_int32_t_ = integer<std::int32_t>("RMA_INT32_T");
struct rma_datatype_s rma_dt_int64_t_ = integer<std::int64_t>("RMA_INT64_T");
struct rma_datatype_s rma_dt_uint8_t_ = integer<std::uint8_t>("RMA_UINT8_T");
struct rma_datatype_s rma_dt_uint16_t_ = integer<std::uint16_t>("RMA_UINT16_T");
struct rma_datatype_s rma_dt_uint32_t_ = integer<std::uint32_t>("RMA_UINT32_T");
struct rma_datatype_s rma_dt_uint64_t_ = integer<std::uint64_t>("RMA_UINT64_T");
struct rma_datatype_s rma_dt_c_bool_ = basic<bool>("RMA_C_BOOL");
struct rma_datatype_s rma_dt_c_float_complex_ = basic<FloatComplex>("RMA_C_FLOAT_COMPLEX");
struct rma_datatype_s rma_dt_c_double_complex_ = basic<DoubleComplex>("RMA_C_DOUBLE_COMPLEX");
struct rma_datatype_s rma_dt_c_long_double_complex_ =
    basic<LongDoubleComplex>("RMA_C_LONG_DOUBLE_COMPLEX");
struct rma_datatype_s rma_dt_wchar_ = basic<wchar_t>("RMA_WCHAR");
struct rma_datatype_s rma_dt_aint_ = integer<std::intptr_t>("RMA_AINT");
struct rma_datatype_s rma_dt_offset_ = integer<std::int64_t>("RMA_OFFSET");
struct rma_datatype_s rma_dt_float_int_ = pair<float, int>("RMA_FLOAT_INT");
struct rma_datatype_s rma_dt_double_int_ = pair<double, int>("RMA_DOUBLE_INT");
struct rma_datatype_s rma_dt_long_int_ = pair<long, int>("RMA_LONG_INT");
struct rma_datatype_s rma_dt_2int_ = pair<int, int>("RMA_2INT");
struct rma_datatype_s rma_dt_short_int_ = pair<short, int>("RMA_SHORT_INT");
struct rma_datatype_s rma_dt_long_double_int_ = pair<long double, int>("RMA_LONG_DOUBLE_INT");
