#pragma once
// Small text helpers shared by the config, data and CLI layers.

#include <string>
#include <string_view>
#include <vector>

namespace dt::text {

[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);
// The closest candidate within a small edit distance, or "" when none is close:
// "lr" -> "lr"; "learning_rat" -> "learning_rate".
[[nodiscard]] std::string did_you_mean(std::string_view word,
                                       const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "".
[[nodiscard]] std::string suggestion_suffix(std::string_view word,
                                            const std::vector<std::string>& candidates);
// Shortest text that reads back to the same double ("0.1", "1e-09", "nan").
[[nodiscard]] std::string format_double(double value);
// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
[[nodiscard]] bool valid_utf8(std::string_view s) noexcept;
// "a, b or c"
[[nodiscard]] std::string join_or(const std::vector<std::string>& words);

}  // namespace dt::text
