// The synthetic click log (`disttrain gen clicks`): rows a pure function of (seed, row), the
// field cardinalities, Zipf-like values, and labels that depend on the values.

#include "core/data/clicks.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

std::vector<std::vector<std::string>> click_cells(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    rows.emplace_back();
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) rows.back().push_back(cell);
  }
  return rows;
}

}  // namespace

TEST_CASE("clicks: the header, and rows the same in pieces and for a seed") {
  CHECK(dt::data::click_header(3) == "click,C1,C2,C3\n");
  const dt::data::ClickSpec spec{39, 7};
  std::string whole, pieces, other;
  dt::data::click_rows(spec, 0, 100, whole);
  dt::data::click_rows(spec, 0, 37, pieces);
  dt::data::click_rows(spec, 37, 63, pieces);
  CHECK(whole == pieces);
  dt::data::click_rows({39, 8}, 0, 100, other);
  CHECK(other != whole);
  const auto rows = click_cells(whole);
  REQUIRE(rows.size() == 100);
  for (const auto& row : rows) {
    REQUIRE(row.size() == 40);
    CHECK((row[0] == "0" || row[0] == "1"));
    for (std::size_t f = 1; f < row.size(); ++f) CHECK(row[f].size() == 8);
  }
}

TEST_CASE("clicks: a few tiny fields, a few near a million values, the rest in the thousands") {
  int tiny = 0, huge = 0, thousands = 0;
  for (int f = 1; f <= 39; ++f) {
    const auto n = dt::data::click_cardinality(f);
    if (n <= 10) ++tiny;
    else if (n >= 500'000 && n <= 1'200'000) ++huge;
    else if (n >= 1'000 && n <= 10'000) ++thousands;
  }
  CHECK(tiny == 3);
  CHECK(huge == 3);
  CHECK(thousands == 33);
}

TEST_CASE("clicks: values are Zipf-like and the label depends on them") {
  std::string text;
  dt::data::click_rows({39, 1}, 0, 10000, text);
  const auto rows = click_cells(text);
  std::map<std::string, int> c2;  // a field of thousands of values
  int clicks = 0;
  for (const auto& row : rows) {
    ++c2[row[2]];
    clicks += row[0] == "1";
  }
  int top = 0;
  for (const auto& [token, n] : c2) top = std::max(top, n);
  CHECK(top > 10000 / 20);  // the most frequent value: over 5% of the rows
  CHECK(c2.size() > 500);   // and many rare ones
  CHECK(clicks > 10000 / 10);
  CHECK(clicks < 10000 / 2);
  // Learnable: smoothed click rates per (field, value) from the first half score the second
  // half well above chance (AUC 0.5 if labels did not depend on the values).
  std::unordered_map<std::string, std::pair<double, double>> rate;  // "f:token": rows, clicks
  const std::size_t half = rows.size() / 2;
  for (std::size_t i = 0; i < half; ++i) {
    for (std::size_t f = 1; f < rows[i].size(); ++f) {
      auto& [n, k] = rate[std::to_string(f) + ":" + rows[i][f]];
      n += 1;
      k += rows[i][0] == "1";
    }
  }
  const double prior = static_cast<double>(clicks) / static_cast<double>(rows.size());
  std::vector<std::pair<double, bool>> scored;
  for (std::size_t i = half; i < rows.size(); ++i) {
    double score = 0.0;
    for (std::size_t f = 1; f < rows[i].size(); ++f) {
      const auto it = rate.find(std::to_string(f) + ":" + rows[i][f]);
      const auto [n, k] = it == rate.end() ? std::pair{0.0, 0.0} : it->second;
      score += (k + 10 * prior) / (n + 10) - prior;
    }
    scored.emplace_back(score, rows[i][0] == "1");
  }
  std::sort(scored.begin(), scored.end());
  // AUC: the share of (click, non-click) pairs where the click scores higher.
  double negatives = 0, concordant = 0, positives = 0;
  for (const auto& [score, click] : scored) {
    if (click) {
      concordant += negatives;
      ++positives;
    } else {
      ++negatives;
    }
  }
  const double pairs = positives * negatives;
  CHECK(concordant / pairs > 0.6);
}
