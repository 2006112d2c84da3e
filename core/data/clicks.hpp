#pragma once
// A synthetic click log (`disttrain gen clicks`): a 0/1 `click` label, then categorical columns
// C1..C<fields> of 8-hex-digit tokens. Row i is a pure function of (seed, i), like the other
// synthetic data, so the log streams in pieces and is the same bytes on every machine.
//
// Field f (from 1) has cardinality click_cardinality(f): a few tiny fields (2 to 10 values),
// a few near 10^6, the rest in the thousands. A row's value in a field has rank
// floor((n + 1)^u) - 1 for u uniform in [0, 1) (n values): log-uniform, so P(rank k) falls
// like 1/(k + 1) (Zipf-like: a few values are frequent, most are rare). The token is a hash of
// (seed, field, rank). The label is drawn from a hidden logistic model: P(click) =
// sigmoid(kClickBias + sum over fields of w(field, token)), w about N(0, (2 / sqrt(fields))^2)
// per token, so a logistic model over the hashed tokens can learn it (frequent tokens best).

#include <cstdint>
#include <string>

namespace dt::data {

inline constexpr double kClickBias = -1.5;  // with 39 fields, about 37% of rows are clicks

struct ClickSpec {
  int fields = 39;
  std::uint64_t seed = 0;
};

// How many distinct values field `field` (1-based) draws from (the same for every seed).
[[nodiscard]] std::uint64_t click_cardinality(int field) noexcept;
// "click,C1,...,C<fields>\n"
[[nodiscard]] std::string click_header(int fields);
// Appends rows first .. first + count - 1, each ending in '\n'.
void click_rows(const ClickSpec& spec, std::uint64_t first, std::uint64_t count, std::string& out);

}  // namespace dt::data
