// "Did you mean": the known word a mistyped one was most likely meant to be.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace evgate {

// Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The first of `known` closest to `typed`, when at most two edits away and not a rewrite of
// all of it (`rm` is not `run`); nullopt otherwise.
std::optional<std::string> closest_word(const std::string& typed, const std::vector<std::string>& known);

}  // namespace evgate
