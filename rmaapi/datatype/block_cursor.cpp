#include "datatype/block_cursor.hpp"

namespace rma::api {

BlockCursor::BlockCursor(const TypeLayout& type, std::int64_t count) {
  if (count <= 0 || type.size == 0) return;
  total_ = type.size * count;
  root_.kind = Node::Kind::kVector;
  if (type.is_run()) {
    root_.offset = type.run_offset;
    if (type.extent() == type.size) {
      root_.count = 1;
      root_.blen = total_;
    } else {
      root_.count = count;
      root_.stride = type.extent();
      root_.blen = type.size;
    }
  } else {
    root_.count = 1;
    root_.blen = count;
    root_.child = type.node.get();
    root_.child_extent = type.extent();
  }
  const std::uint32_t depth = type.depth() + 1;
  if (depth > kInlineDepth) heap_ = std::make_unique<Frame[]>(depth);
  frames()[0] = Frame{nullptr, 0, 0, 0};
  sp_ = 1;
}

}  // namespace rma::api
