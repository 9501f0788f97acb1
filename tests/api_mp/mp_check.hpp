// What every rma_mp_* program of a multi-process test checks with: the
// rank, size and scenario it reports, and CALL / CHECK / CHECK_EQ, which
// print the program, scenario, rank, line and librma's last error message
// and end the process with status 1 (the launcher then fails the job).
// One program is one translation unit, so the globals live in it.
#pragma once

#include <errno.h>  // program_invocation_short_name

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rma/rma.h"

namespace {

int g_rank = -1, g_size = 0;
const char* g_scenario = "?";

[[noreturn]] [[gnu::format(printf, 2, 3)]] void fail(int line, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char why[RMA_MAX_ERROR_STRING];
  int len = 0;
  rma_last_error_message(why, &len);
  std::fprintf(stderr, "%s %s: rank %d of %d, line %d: %s (last librma error: %.*s)\n",
               program_invocation_short_name, g_scenario, g_rank, g_size, line, msg, len, why);
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

#define CALL(expr)                                                        \
  do {                                                                    \
    const int rc_ = (expr);                                               \
    if (rc_ != RMA_SUCCESS) fail(__LINE__, "%s returned %d", #expr, rc_); \
  } while (0)
#define CHECK(cond, ...)                      \
  do {                                        \
    if (!(cond)) fail(__LINE__, __VA_ARGS__); \
  } while (0)
#define CHECK_EQ(a, b)                                                                            \
  do {                                                                                            \
    const auto va_ = (a);                                                                         \
    const auto vb_ = (b);                                                                         \
    if (!(va_ == vb_)) fail(__LINE__, "%s == %s: %s != %s", #a, #b, std::to_string(va_).c_str(), \
                            std::to_string(vb_).c_str());                                         \
  } while (0)
