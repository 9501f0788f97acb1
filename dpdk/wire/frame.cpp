// A frame's pieces written out contiguously, the ICRC completed on the way
// when the sender left it open (frame.hpp).
#include "wire/frame.hpp"

#include "rma/sdk/copy_bytes.hpp"
#include "wire/byte_order.hpp"
#include "wire/icrc.hpp"
#include "wire/wire.hpp"

namespace rma::roce {

std::size_t write_tx_frame(const TxFrame& f, std::uint8_t* dst) noexcept {
  std::uint8_t* p = dst;
  // An empty span may carry a null pointer: no copy from it.
  if (!f.head.empty()) copy_bytes(p, f.head.data(), f.head.size());
  p += f.head.size();
  if (!f.icrc_open || f.tail.size() < kIcrcLen) {
    if (!f.payload.empty()) copy_bytes(p, f.payload.data(), f.payload.size());
    p += f.payload.size();
    if (!f.tail.empty()) copy_bytes(p, f.tail.data(), f.tail.size());
    return f.size();
  }
  std::uint32_t crc = detail::copy_crc32_update(p, f.payload.data(), f.payload.size(), f.icrc_partial);
  p += f.payload.size();
  const std::size_t pad = f.tail.size() - kIcrcLen;
  if (pad != 0) {
    copy_bytes(p, f.tail.data(), pad);
    crc = detail::crc32_update(crc, p, pad);
  }
  detail::store_le32(p + pad, crc);
  return f.size();
}

void write_tx_tail(const TxFrame& f, std::uint8_t* dst) noexcept {
  if (f.tail.empty()) return;
  if (!f.icrc_open || f.tail.size() < kIcrcLen) {
    copy_bytes(dst, f.tail.data(), f.tail.size());
    return;
  }
  std::uint32_t crc = f.icrc_partial;
  if (!f.payload.empty()) crc = detail::crc32_update(crc, f.payload.data(), f.payload.size());
  const std::size_t pad = f.tail.size() - kIcrcLen;
  if (pad != 0) {
    copy_bytes(dst, f.tail.data(), pad);
    crc = detail::crc32_update(crc, dst, pad);
  }
  detail::store_le32(dst + pad, crc);
}

bool icrc_folds_in_copy() noexcept { return detail::copy_crc32_folds(); }

}  // namespace rma::roce
