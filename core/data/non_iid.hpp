#pragma once
// Non-IID shard plans for federated experiments: by label ("pathological", McMahan et al. 2017),
// by Dirichlet proportions (Hsu et al. 2019), and one CSV file per worker. Like the IID plans in
// sharding.cpp, every plan is a pure function of (data, seed): the coordinator computes it once
// and sends each worker only its segments.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace dt::random {
class Generator;
}

namespace dt::data {

// The rows of 0..rows-1 not in `held_out`, in order. DataError when there are fewer than
// `count` (one per worker).
[[nodiscard]] std::vector<std::uint64_t> training_rows(std::uint64_t rows,
                                                       const std::vector<std::uint64_t>& held_out,
                                                       int count);

// The class of every source row, read before any worker starts.
struct LabelColumn {
  std::vector<std::string> classes;  // as resolve_classes makes them; {"0", "1"} for binary
  std::vector<std::uint32_t> ids;    // per source row: index into `classes`
};

// Reads only the label column of every row (validation rows included): a CSV is streamed in
// chunks with no feature cell parsed, synthetic labels are generated in chunks, so memory is
// O(rows) for the ids. Labels are checked as load_shard checks them (same file:line:column
// errors). `kind` must be kBinary or kCategorical.
[[nodiscard]] LabelColumn read_labels(const config::Config& config, const SourceInfo& source,
                                      LabelKind kind);

// The rows of `training` (sorted source rows) whose class is not held out, by class.
// by_label: class slots s = w * L + j (worker w, j < L) hold the classes of a seeded permutation
// pi, slot s holding pi[s mod C]; so every worker holds exactly L distinct classes, and every
// class is held by floor(W*L/C) or ceil(W*L/C) slots. Each class's rows, in a seeded order, are
// cut into equal consecutive pieces (sizes differ by at most one), one per slot that holds it.
// DataError when L > C, or when W*L < C (some class would belong to no worker).
[[nodiscard]] std::vector<std::vector<std::uint64_t>> plan_by_label(
    const std::vector<std::uint64_t>& training, const LabelColumn& labels, int count,
    int labels_per_worker, std::uint64_t seed);

// dirichlet: for each class c, proportions p_c ~ Dir(alpha, ..., alpha) over the workers (drawn
// from the seed); the class's rows, in a seeded order, go to the workers in rank order with
// counts from p_c * n_c rounded by largest remainder (ties to the lower rank), so they sum
// exactly to n_c. Small alpha: each class concentrates on few workers; large alpha: near-IID.
[[nodiscard]] std::vector<std::vector<std::uint64_t>> plan_dirichlet(
    const std::vector<std::uint64_t>& training, const LabelColumn& labels, int count, double alpha,
    std::uint64_t seed);

// One draw of Dir(alpha, ..., alpha) with k components (gamma draws by Marsaglia & Tsang, in
// log space so that tiny alphas do not underflow to 0/0). Exposed for tests.
[[nodiscard]] std::vector<double> dirichlet_draw(std::size_t k, double alpha,
                                                 random::Generator& gen);

// Counts that sum exactly to `total`: floor(total * p_i), then one more for the largest
// remainders (ties to the lower index). `p` sums to 1.
[[nodiscard]] std::vector<std::uint64_t> largest_remainder(std::uint64_t total,
                                                           std::span<const double> p);

// Strategy files: indexes every file of shards.files and checks that they agree: the same header
// (names and order), the label column present. DataError names the file and the difference.
// Returns one SourceInfo per file (with its index and `file` set).
[[nodiscard]] std::vector<SourceInfo> describe_files(const config::Config& config);

// The rows of every source in `parts` as one virtual table (part k's row i is row
// first_row[k] + i): what the validation split and the plan count in.
[[nodiscard]] std::vector<std::uint64_t> first_rows(const std::vector<SourceInfo>& parts);

// Row counts per class of a loaded shard whose labels are assigned (y holds class indices).
[[nodiscard]] std::vector<std::uint64_t> class_counts(const Shard& shard, std::size_t classes);

// Appends `more`'s rows to `into` (both with the same columns; sparse rows too).
void append_rows(Shard& into, Shard&& more);
// Rows first, first + step, first + 2 step, ... of `all` (dense or sparse, labels and their
// text): a lost worker's share that a survivor takes over (continue).
[[nodiscard]] Shard every_nth_row(const Shard& all, std::uint64_t first, std::uint64_t step);

}  // namespace dt::data
