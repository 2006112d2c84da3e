// check_shard (validate's load: every cell checked, no row kept) against load_shard, and the
// column statistics against the plain loops, bit for bit: a guard for any faster rewrite (one
// with SSE2 min/max in the wrong operand order failed it).

#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace {

using dt::data::LabelKind;
using dt::data::RowMatrix;

// A (rows, cols) float64 .npy in numpy's format 1 layout.
void write_npy(const std::filesystem::path& path, const std::vector<double>& values,
               std::size_t rows, std::size_t cols) {
  std::string header = fmt::format("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}",
                                   rows, cols);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
  std::ofstream(path, std::ios::binary) << bytes;
}

struct Loaded {
  dt::data::Shard shard;
  std::string error;
};

// All rows of data.path through load_shard (`keep`) or check_shard, or the DataError's text.
Loaded load_all(const std::filesystem::path& path, LabelKind kind, bool keep) {
  dt::config::Config config;
  config.data.path = path;
  try {
    const auto source = dt::data::describe_source(config);
    std::vector<std::uint64_t> rows(source.rows);
    std::iota(rows.begin(), rows.end(), std::uint64_t{0});
    const auto segments = dt::data::to_segments(rows, source.csv);
    return {keep ? dt::data::load_shard(config, source, segments, kind)
                 : dt::data::check_shard(config, source, segments, kind), ""};
  } catch (const dt::DataError& e) {
    return {{}, e.what()};
  }
}

// 300 rows of 4 columns, the label last: a few blocks' worth of values, every one distinct.
std::vector<double> table(std::size_t rows, std::size_t cols) {
  std::vector<double> v(rows * cols);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<double>(i) * 0.37) * 5.0;
  for (std::size_t r = 0; r < rows; ++r) v[r * cols + cols - 1] = static_cast<double>(r % 3);
  return v;
}

std::string as_csv(const std::vector<double>& v, std::size_t cols) {
  std::string out = "a,b,c,y\n";
  for (std::size_t i = 0; i < v.size(); ++i) {
    out += fmt::format("{}{}", v[i], (i + 1) % cols == 0 ? "\n" : ",");
  }
  return out;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("check_shard: the labels of load_shard, no rows kept, for .npy and CSV data") {
  const dt::files::TempDir dir("dt-test-check");
  const auto values = table(300, 4);
  write_npy(dir.path() / "a.npy", values, 300, 4);
  dt::files::write_atomic(dir.path() / "a.csv", as_csv(values, 4));
  for (const char* name : {"a.npy", "a.csv"}) {
    for (const auto kind : {LabelKind::kNumeric, LabelKind::kCategorical}) {
      CAPTURE(name);
      const auto kept = load_all(dir.path() / name, kind, true);
      const auto checked = load_all(dir.path() / name, kind, false);
      REQUIRE(kept.error.empty());
      REQUIRE(checked.error.empty());
      CHECK(kept.shard.x.rows() == 300);
      CHECK(checked.shard.x.rows() == 0);
      CHECK(checked.shard.x.cols() == 3);
      CHECK(checked.shard.y == kept.shard.y);
      CHECK(checked.shard.raw_labels == kept.shard.raw_labels);
    }
  }
}

TEST_CASE("check_shard: a bad value gets load_shard's error, naming its row and column") {
  const dt::files::TempDir dir("dt-test-check");
  for (const double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    auto values = table(300, 4);
    values[217 * 4 + 1] = bad;  // row 217, column 1 ('x1')
    write_npy(dir.path() / "a.npy", values, 300, 4);
    const auto kept = load_all(dir.path() / "a.npy", LabelKind::kNumeric, true);
    const auto checked = load_all(dir.path() / "a.npy", LabelKind::kNumeric, false);
    CHECK(kept.error.find("row 217, column 1 ('x1')") != std::string::npos);
    CHECK(checked.error == kept.error);
  }
  const dt::test::CsvFile csv("a,b,y\n1,2,3\n4,oops,6\n");
  const auto kept = load_all(csv.path, LabelKind::kNumeric, true);
  CHECK(kept.error.find(":3:3:") != std::string::npos);
  CHECK(load_all(csv.path, LabelKind::kNumeric, false).error == kept.error);
}

TEST_CASE("column_stats: bit for bit the plain loops over rows and columns, at every width") {
  const double inf = std::numeric_limits<double>::infinity();
  for (const Eigen::Index cols : {1, 7, 8, 9, 17, 101}) {
    for (const Eigen::Index rows : {1, 127, 128, 300}) {
      CAPTURE(cols);
      CAPTURE(rows);
      RowMatrix x(rows, cols);
      for (Eigen::Index r = 0; r < rows; ++r) {
        for (Eigen::Index c = 0; c < cols; ++c) {
          x(r, c) = std::sin(static_cast<double>(r * cols + c)) * std::pow(10.0, static_cast<double>(c % 7));
        }
      }
      // Column 0: -0 then +0 only. std::min and std::max keep the first seen, and so must any
      // vector instructions (minpd and maxpd keep their second operand when equal).
      for (Eigen::Index r = 0; r < rows; ++r) x(r, 0) = r == 0 ? -0.0 : 0.0;
      if (cols > 3) x(rows - 1, 3) = inf;
      // The reference: the loops column_stats was written as.
      std::vector<double> mean(static_cast<std::size_t>(cols), 0.0), m2 = mean, lo = mean, hi = mean;
      for (Eigen::Index c = 0; c < cols; ++c) lo[c] = hi[c] = x(0, c);
      for (Eigen::Index r = 0; r < rows; ++r) {
        for (Eigen::Index c = 0; c < cols; ++c) {
          mean[c] += x(r, c);
          lo[c] = std::min(lo[c], x(r, c));
          hi[c] = std::max(hi[c], x(r, c));
        }
      }
      for (auto& m : mean) m /= static_cast<double>(rows);
      for (Eigen::Index r = 0; r < rows; ++r) {
        for (Eigen::Index c = 0; c < cols; ++c) {
          const double d = x(r, c) - mean[c];
          m2[c] += d * d;
        }
      }
      const auto s = dt::data::column_stats(x);
      CHECK(same_bits(s.mean, mean));
      CHECK(same_bits(s.m2, m2));
      CHECK(same_bits(s.min, lo));
      CHECK(same_bits(s.max, hi));
    }
  }
}

TEST_CASE("column_stats: an .npy loader's first pass, made in its copy, gives the same bits") {
  // 40,000 rows of 5 columns, the label last: two of the loader's blocks. Column 0 holds -0 then
  // +0 (the first seen must stay the minimum and maximum), column 2 1e305 (a sum that
  // overflows to inf, which is no error: only the values must be finite).
  const dt::files::TempDir dir("dt-test-check");
  const std::size_t rows = 40000, cols = 5;
  auto values = table(rows, cols);
  for (std::size_t r = 0; r < rows; ++r) {
    values[r * cols] = r == 0 ? -0.0 : 0.0;
    values[r * cols + 2] = 1e305;
  }
  write_npy(dir.path() / "a.npy", values, rows, cols);
  const auto kept = load_all(dir.path() / "a.npy", LabelKind::kNumeric, true);
  REQUIRE(kept.error.empty());
  REQUIRE(kept.shard.sums.has_value());  // the loader made the first pass
  const auto fused = dt::data::column_stats(kept.shard);
  const auto plain = dt::data::column_stats(kept.shard.x);
  CHECK(fused.count == rows);
  CHECK(same_bits(fused.mean, plain.mean));
  CHECK(same_bits(fused.m2, plain.m2));
  CHECK(same_bits(fused.min, plain.min));
  CHECK(same_bits(fused.max, plain.max));
  CHECK(std::signbit(fused.min[0]));
  CHECK(std::signbit(fused.max[0]));
  CHECK(std::isinf(fused.mean[2]));
  // A CSV's loader makes it too, as it parses (test_data_load_sums.cpp has its bits).
  dt::files::write_atomic(dir.path() / "a.csv", as_csv(table(300, 4), 4));
  CHECK(load_all(dir.path() / "a.csv", LabelKind::kNumeric, true).shard.sums.has_value());
}
