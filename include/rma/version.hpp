// librma's version, as built.
#pragma once

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {
// "MAJOR.MINOR.PATCH"
const char* version_string() noexcept;
int version_major() noexcept;
int version_minor() noexcept;
int version_patch() noexcept;
}  // namespace rma

#pragma GCC visibility pop
