#include "rma/sdk/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rma/sdk/config.hpp"

namespace rma::log {
namespace {

constexpr const char* kNames[] = {"error", "warn", "info", "debug", "trace"};

// -1 = not yet read from RMA_LOG_LEVEL.
std::atomic<int> g_threshold{-1};

int load_threshold() noexcept {
  int t = g_threshold.load(std::memory_order_relaxed);
  if (t >= 0) return t;
  t = static_cast<int>(Level::kWarn);
  // Read the environment directly: logging must work before (and while) the
  // configuration table is built.
  if (const char* env = std::getenv("RMA_LOG_LEVEL"); env != nullptr && *env != '\0') {
    auto parsed = parse_level(env);
    if (parsed.ok()) {
      t = static_cast<int>(*parsed);
    } else {
      std::fprintf(stderr, "[rma %d] warn: %s; using 'warn'\n", static_cast<int>(getpid()),
                   parsed.status().message().c_str());
    }
  }
  int expected = -1;
  g_threshold.compare_exchange_strong(expected, t, std::memory_order_relaxed);
  return g_threshold.load(std::memory_order_relaxed);
}

}  // namespace

Result<Level> parse_level(std::string_view text) {
  for (int i = 0; i < 5; ++i) {
    if (text == kNames[i]) return static_cast<Level>(i);
  }
  if (text == "warning") return Level::kWarn;
  return invalid_argument("RMA_LOG_LEVEL: '" + std::string(text) +
                          "' is not a log level; use error, warn, info, debug or trace");
}

Level threshold() noexcept { return static_cast<Level>(load_threshold()); }
void set_threshold(Level level) noexcept {
  g_threshold.store(static_cast<int>(level), std::memory_order_relaxed);
}
bool enabled(Level level) noexcept { return static_cast<int>(level) <= load_threshold(); }

void write(Level level, const char* fmt, ...) noexcept {
  char line[1024];
  int n = std::snprintf(line, sizeof line, "[rma %d] %s: ", static_cast<int>(getpid()),
                        kNames[static_cast<int>(level)]);
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  int m = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n) - 1, fmt, ap);
  va_end(ap);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  // One write(2) per line so lines from several processes/threads do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line, len);
  (void)ignored;
}

}  // namespace rma::log
