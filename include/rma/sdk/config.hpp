// Configuration by RMA_* environment variables. Every variable is declared
// once with its default and one line of documentation, so `rma_info` can list
// them all and a typo in a value gets an error naming the variable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma::config {

struct Variable {
  std::string name;           // "RMA_LOG_LEVEL"
  std::string default_value;  // as it would be written in the environment
  std::string doc;            // one line
};

// Declares a variable. Declaring the same name twice with the same default is
// harmless; with another default it fails with kAlreadyExists.
Status declare(Variable var);

// Every declared variable, sorted by name.
std::vector<Variable> variables();

// The environment's value, else the declared default. kNotFound when the
// variable was never declared (a bug in the caller).
Result<std::string> get_string(std::string_view name);
// Integers with an optional binary suffix: "4096", "64K", "1G"; "inf" = max.
Result<std::uint64_t> get_size(std::string_view name);
// y/yes/on/true/1 or n/no/off/false/0.
Result<bool> get_bool(std::string_view name);
// One of `choices`; the error lists them.
Result<std::string> get_choice(std::string_view name, const std::vector<std::string>& choices);

// Parsers shared with command-line flags.
Result<std::uint64_t> parse_size(std::string_view text);
Result<bool> parse_bool(std::string_view text);

}  // namespace rma::config

#pragma GCC visibility pop
