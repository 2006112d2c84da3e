#pragma once
// Seeded random sparse rows for the sparse model tests: CSR storage, the same rows as a dense
// matrix, and labels of a task's kind. Header-only (as harness.hpp).

#include "core/models/model.hpp"
#include "core/models/sparse_batch.hpp"
#include "tests/unit/harness.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dt::test {

struct SparseRows {
  std::uint64_t width = 0;
  std::vector<std::uint64_t> row_start{0};
  std::vector<std::uint32_t> keys;
  std::vector<double> values;
  models::RowMatrix dense;  // rows x width, the same values (repeated keys added up)
  Eigen::VectorXd y;
  [[nodiscard]] models::CsrView view() const { return {width, row_start, keys, values}; }
};

// `rows` rows of about `per_row` nonzeros among `width` features, ascending and distinct within
// a row (unless `repeats`: then a row's keys are left unsorted and one may repeat); every 7th row
// is empty. Values standard normal; labels as random_batch gives them.
[[nodiscard]] inline SparseRows random_sparse(std::size_t rows, std::uint32_t width, int per_row,
                                              config::Task task, int classes, std::uint64_t seed,
                                              bool repeats = false) {
  SparseRows s;
  s.width = width;
  s.dense = models::RowMatrix::Zero(static_cast<Eigen::Index>(rows), width);
  s.y = random_batch(static_cast<Eigen::Index>(rows), 1, task, classes, seed).y;
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<std::uint32_t> row;
    if (r % 7 != 3) {
      for (int j = 0; j < per_row; ++j) {
        const double u = random::uniform(seed, kTestStream + 5, r, static_cast<std::uint64_t>(j));
        row.push_back(static_cast<std::uint32_t>(u * width));
      }
      if (repeats) {
        row.push_back(row.front());
      } else {
        std::sort(row.begin(), row.end());
        row.erase(std::unique(row.begin(), row.end()), row.end());
      }
    }
    for (std::size_t j = 0; j < row.size(); ++j) {
      const double v = random::normal(seed, kTestStream + 6, r, j);
      s.keys.push_back(row[j]);
      s.values.push_back(v);
      s.dense(static_cast<Eigen::Index>(r), row[j]) += v;
    }
    s.row_start.push_back(s.keys.size());
  }
  return s;
}

}  // namespace dt::test
