// Compact sparse batches (core/models/sparse_batch.hpp): the sorted key union and each nonzero's
// position in it, picks, empty rows and batches, reuse, malformed views; gathering a batch's
// parameters and adding its gradient back into a full or keyed vector.

#include "core/models/sparse_batch.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"
#include "tests/unit/sparse_rows.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

namespace {

using dt::models::compact;
using dt::models::CsrView;
using dt::models::KeyedVector;
using dt::models::SparseBatch;
using dt::test::random_sparse;
using dt::test::SparseRows;

// Every property compact promises, checked against the rows it was given.
void check_compacted(const SparseRows& s, const std::vector<std::uint64_t>& pick,
                     const SparseBatch& b) {
  const std::size_t n = pick.empty() ? s.row_start.size() - 1 : pick.size();
  REQUIRE(b.rows() == n);
  CHECK(std::is_sorted(b.keys.begin(), b.keys.end()));
  CHECK(std::adjacent_find(b.keys.begin(), b.keys.end()) == b.keys.end());
  std::set<std::uint32_t> want;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = pick.empty() ? i : pick[i];
    const std::uint64_t begin = s.row_start[r];
    const std::uint64_t count = s.row_start[r + 1] - begin;
    REQUIRE(b.row_start[i + 1] - b.row_start[i] == count);
    for (std::uint64_t j = 0; j < count; ++j) {
      const std::uint32_t at = b.local[b.row_start[i] + j];
      REQUIRE(at < b.keys.size());
      CHECK(b.keys[at] == s.keys[begin + j]);
      CHECK(b.values[b.row_start[i] + j] == s.values[begin + j]);
      want.insert(s.keys[begin + j]);
    }
  }
  CHECK(std::vector<std::uint32_t>(want.begin(), want.end()) == b.keys);
}

}  // namespace

TEST_CASE("sparse batch: compact lists the sorted union of the keys and each nonzero's place") {
  const auto s = random_sparse(40, 50, 5, dt::config::Task::kRegression, 0, 11);
  SparseBatch b;
  compact(s.view(), {}, b);
  check_compacted(s, {}, b);
  CHECK(b.keys.size() > 5);  // rows share some keys, not all

  SUBCASE("picked rows, in the pick's order, a row twice, empty rows among them") {
    const std::vector<std::uint64_t> pick{9, 3, 0, 39, 3, 17, 10};  // row 3 and 10 are empty
    compact(s.view(), pick, b);
    check_compacted(s, pick, b);
    CHECK(b.row_start[2] == b.row_start[1]);  // row 3 has no nonzeros
  }
  SUBCASE("a wide, sparse width: keys far apart, in every digit of the radix sort") {
    const std::uint64_t width = std::uint64_t{1} << 25;  // keys of 25 bits: three passes
    const std::vector<std::uint64_t> starts{0, 3, 3, 6};
    const std::vector<std::uint32_t> keys{33554431u, 7, 262144, 63, 64, 33554431u};
    const std::vector<double> values{1, 2, 3, 4, 5, 6};
    const CsrView view{width, starts, keys, values};
    compact(view, {}, b);
    CHECK(b.keys == std::vector<std::uint32_t>{7, 63, 64, 262144, 33554431u});
    CHECK(b.local == std::vector<std::uint32_t>{4, 0, 3, 1, 2, 4});
    CHECK(b.row_start == std::vector<std::uint64_t>{0, 3, 3, 6});
  }
  SUBCASE("random keys up to 2^32 - 1 (no width-sized memory), and keys of one digit") {
    for (const std::uint64_t width : {std::uint64_t{1} << 32, std::uint64_t{4096}}) {
      CAPTURE(width);
      SparseRows r;
      r.width = width;
      for (std::uint64_t row = 0; row < 300; ++row) {
        for (std::uint64_t j = 0; j < 1 + row % 9; ++j) {
          const double u = dt::random::uniform(14, 1, row, j);
          // Keys that share low digits and differ above, and the extremes.
          const std::uint64_t low = row % 3 == 0 ? 0xfff : 0;  // cleared: only high digits differ
          const auto drawn = static_cast<std::uint64_t>(u * static_cast<double>(width)) & ~low;
          const auto key = static_cast<std::uint32_t>(j == 0 && row % 50 == 0 ? width - 1 : drawn);
          r.keys.push_back(key);
          r.values.push_back(1.0);
        }
        r.row_start.push_back(r.keys.size());
      }
      std::vector<std::uint64_t> pick;
      for (std::uint64_t i = 0; i < 300; ++i) pick.push_back((i * 101 + 7) % 300);
      compact(r.view(), pick, b);
      check_compacted(r, pick, b);
      CHECK(b.keys.back() == width - 1);
    }
  }
  SUBCASE("a repeated key in a row stays two nonzeros, at one place") {
    const std::vector<std::uint64_t> starts{0, 3};
    const std::vector<std::uint32_t> keys{5, 2, 5};
    const std::vector<double> values{1, 2, 3};
    compact(CsrView{10, starts, keys, values}, {}, b);
    CHECK(b.keys == std::vector<std::uint32_t>{2, 5});
    CHECK(b.local == std::vector<std::uint32_t>{1, 0, 1});
  }
}

TEST_CASE("sparse batch: empty batches, and the buffers reused batch after batch") {
  const auto s = random_sparse(30, 50, 5, dt::config::Task::kRegression, 0, 12);
  SparseBatch b;
  SUBCASE("no rows at all") {
    const std::vector<std::uint64_t> none{0};
    compact(CsrView{50, none, {}, {}}, {}, b);
    CHECK(b.rows() == 0);
    CHECK(b.keys.empty());
    CHECK(b.row_start == std::vector<std::uint64_t>{0});
  }
  SUBCASE("only empty rows") {
    compact(s.view(), std::vector<std::uint64_t>{3, 10, 17}, b);
    CHECK(b.rows() == 3);
    CHECK(b.keys.empty());
    CHECK(b.local.empty());
  }
  SUBCASE("a batch after a batch: nothing of the first is left") {
    compact(s.view(), std::vector<std::uint64_t>{0, 1, 2, 4}, b);
    const auto keys_before = b.keys.capacity();
    const std::vector<std::uint64_t> pick{5, 6};
    compact(s.view(), pick, b);
    check_compacted(s, pick, b);
    CHECK(b.keys.capacity() == keys_before);  // reused, not reallocated
  }
}

TEST_CASE("sparse batch: a malformed view is refused and leaves nothing for the next batch") {
  const auto s = random_sparse(10, 50, 5, dt::config::Task::kRegression, 0, 13);
  SparseBatch b;
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          compact(s.view(), std::vector<std::uint64_t>{0, 10}, b);
        }) == "sparse rows: the batch picks row 10 of 10 rows");
  auto narrow = s.view();
  narrow.width = 20;
  const auto message = dt::test::message_of<dt::TrainingError>([&] { compact(narrow, {}, b); });
  CHECK(message.find("beyond the width 20") != std::string::npos);
  const std::vector<std::uint64_t> backwards{0, 2, 1};
  const std::vector<std::uint32_t> keys{1, 2};
  const std::vector<double> values{1, 1};
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          compact(CsrView{50, backwards, keys, values}, {}, b);
        }) == "sparse rows: row 1 spans nonzeros 2 to 1 of 2");
  // The failed batches' keys are gone: the next batch lists only its own.
  const std::vector<std::uint64_t> pick{4};
  compact(s.view(), pick, b);
  check_compacted(s, pick, b);
}

TEST_CASE("sparse batch: gather, scatter into a full vector and merge into a keyed one") {
  const std::size_t k = 3;
  const auto s = random_sparse(20, 50, 5, dt::config::Task::kRegression, 0, 14);
  const auto full = dt::test::random_params((50 + 1) * k, 15, 1.0);
  SparseBatch a;
  compact(s.view(), std::vector<std::uint64_t>{0, 1, 2, 4}, a);
  std::vector<double> local;
  dt::models::gather_params(full, a, k, local);
  REQUIRE(local.size() == (a.keys.size() + 1) * k);
  for (std::size_t i = 0; i < a.keys.size(); ++i) {
    for (std::size_t c = 0; c < k; ++c) CHECK(local[i * k + c] == full[a.keys[i] * k + c]);
  }
  for (std::size_t c = 0; c < k; ++c) CHECK(local[a.keys.size() * k + c] == full[50 * k + c]);

  // Two batches' gradients (here: their gathered parameters) added into a full vector and into
  // a keyed one give the same sums.
  SparseBatch b;
  compact(s.view(), std::vector<std::uint64_t>{5, 6, 8}, b);
  std::vector<double> local_b;
  dt::models::gather_params(full, b, k, local_b);
  std::vector<double> sum(full.size(), 0.0);
  dt::models::add_gradient(local, a, k, sum);
  dt::models::add_gradient(local_b, b, k, sum);
  KeyedVector keyed;
  dt::models::add_gradient(local, a, k, keyed);
  dt::models::add_gradient(local_b, b, k, keyed);
  CHECK(std::is_sorted(keyed.keys.begin(), keyed.keys.end()));
  CHECK(std::adjacent_find(keyed.keys.begin(), keyed.keys.end()) == keyed.keys.end());
  REQUIRE(keyed.values.size() == (keyed.keys.size() + 1) * k);
  std::vector<double> scattered(full.size(), 0.0);
  for (std::size_t i = 0; i < keyed.keys.size(); ++i) {
    for (std::size_t c = 0; c < k; ++c) scattered[keyed.keys[i] * k + c] = keyed.values[i * k + c];
  }
  for (std::size_t c = 0; c < k; ++c) scattered[50 * k + c] = keyed.values[keyed.keys.size() * k + c];
  CHECK(scattered == sum);
  // Untouched keys stay zero; shared keys got both parts.
  std::size_t touched = 0;
  for (std::size_t key = 0; key < 50; ++key) touched += sum[key * k] != 0.0 ? 1 : 0;
  CHECK(touched == keyed.keys.size());

  SUBCASE("sizes that do not fit are refused") {
    CHECK(dt::test::message_of<dt::TrainingError>([&] {
            dt::models::gather_params(std::vector<double>(10, 0.0), a, k, local);
          }) == "the parameter vector has 10 values, which is not (width + 1) x 3 outputs "
                "(weights then biases)");
    std::vector<double> narrow((5 + 1) * k, 0.0);
    CHECK(dt::test::message_of<dt::TrainingError>([&] {
            dt::models::add_gradient(local, a, k, narrow);
          }).find("but the gradient is for a width of 5") != std::string::npos);
    CHECK(dt::test::message_of<dt::TrainingError>([&] {
            dt::models::add_gradient(local_b, a, k, sum);
          }).find("the local gradient has") == 0);
  }
}

TEST_CASE("sparse batch: sum_parts adds keyed parts in order, to the bits of a zeroed full vector") {
  // One output (two parts take a branch-free merge of their own) and two.
  for (const std::size_t k : {std::size_t{1}, std::size_t{2}}) {
    CAPTURE(k);
    const std::size_t width = 40;
    // Parts with overlapping, sorted keys; one is empty; -0.0 values, which a sum starting at +0.0
    // turns into +0.0 exactly as the full vector does.
    const std::vector<std::vector<std::uint32_t>> keys = {{1, 5, 7, 39}, {}, {0, 5, 6, 7, 20}};
    std::vector<std::vector<double>> values;
    std::uint64_t seed = 30;
    for (const auto& part : keys) {
      auto v = dt::test::random_params(part.size() * k, seed++, 1.0);
      if (!v.empty()) v[0] = -0.0;
      if (v.size() > k) v[k] = -0.0;  // key 5 in parts 0 and 2: -0.0 twice
      values.push_back(std::move(v));
    }
    // Each subset of the parts (two parts take a path of their own), against the full vector.
    const std::vector<std::vector<std::size_t>> subsets = {{0, 1, 2}, {0, 2}, {2, 0}, {0}, {0, 1},
                                                           {1, 2}};
    for (const auto& subset : subsets) {
      CAPTURE(subset.size());
      std::vector<double> full(width * k, 0.0);
      std::vector<dt::models::KeyedPart> parts;
      std::set<std::uint32_t> want_keys;
      for (const std::size_t j : subset) {
        parts.push_back({keys[j], values[j].data()});
        want_keys.insert(keys[j].begin(), keys[j].end());
        for (std::size_t i = 0; i < keys[j].size(); ++i) {
          for (std::size_t c = 0; c < k; ++c) full[keys[j][i] * k + c] += values[j][i * k + c];
        }
      }
      std::vector<std::uint32_t> union_keys = {99};  // replaced, not appended to
      std::vector<double> sums = {1.0};
      dt::models::sum_parts(parts, k, union_keys, sums);
      CHECK(union_keys == std::vector<std::uint32_t>(want_keys.begin(), want_keys.end()));
      REQUIRE(sums.size() == union_keys.size() * k);
      for (std::size_t i = 0; i < union_keys.size(); ++i) {
        for (std::size_t c = 0; c < k; ++c) {
          const double want = full[union_keys[i] * k + c];
          CHECK(std::memcmp(&sums[i * k + c], &want, sizeof want) == 0);  // the same bits
        }
      }
      // Key 1's first value was -0.0, alone: +0.0 + -0.0 is +0.0 (key 1 is part 0's only).
      const auto one = std::find(union_keys.begin(), union_keys.end(), 1U);
      if (one != union_keys.end()) {
        CHECK_FALSE(std::signbit(sums[static_cast<std::size_t>(one - union_keys.begin()) * k]));
      }
    }
  }
  const std::size_t k = 2;
  std::vector<std::uint32_t> union_keys = {3};
  std::vector<double> sums = {1.0};
  dt::models::sum_parts({}, k, union_keys, sums);
  CHECK(union_keys.empty());
  CHECK(sums.empty());
}
