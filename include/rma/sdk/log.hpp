// Levelled logging to stderr, threshold from RMA_LOG_LEVEL. Control path
// only: the data path reports through return codes and counters.
#pragma once

#include <string_view>

#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma::log {

enum class Level : int { kError = 0, kWarn, kInfo, kDebug, kTrace };

Level threshold() noexcept;
void set_threshold(Level level) noexcept;
Result<Level> parse_level(std::string_view text);
bool enabled(Level level) noexcept;

// printf-style; each call writes one whole line "[rma pid] warn: ...".
void write(Level level, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

}  // namespace rma::log

#define RMA_LOG_(lvl, ...)                                              \
  do {                                                                  \
    if (::rma::log::enabled(lvl)) ::rma::log::write(lvl, __VA_ARGS__);  \
  } while (0)
#define RMA_LOG_ERROR(...) RMA_LOG_(::rma::log::Level::kError, __VA_ARGS__)
#define RMA_LOG_WARN(...) RMA_LOG_(::rma::log::Level::kWarn, __VA_ARGS__)
#define RMA_LOG_INFO(...) RMA_LOG_(::rma::log::Level::kInfo, __VA_ARGS__)
#define RMA_LOG_DEBUG(...) RMA_LOG_(::rma::log::Level::kDebug, __VA_ARGS__)
#define RMA_LOG_TRACE(...) RMA_LOG_(::rma::log::Level::kTrace, __VA_ARGS__)

#pragma GCC visibility pop
