// librma's version, as built.
#pragma once

namespace rma {
// "MAJOR.MINOR.PATCH"
const char* version_string() noexcept;
int version_major() noexcept;
int version_minor() noexcept;
int version_patch() noexcept;
}  // namespace rma
