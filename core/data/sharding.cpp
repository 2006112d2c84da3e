// The validation split, shard plans and segments. Every process computes the same plan from
// (rows, seed), so the coordinator only has to send each worker its segments.

#include "core/data/dataset.hpp"
#include "core/data/non_iid.hpp"
#include "base/error.hpp"
#include "base/random.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

namespace dt::data {
namespace {

// Splits `rows` into `count` consecutive runs whose sizes differ by at most one; the first
// shards take the extra rows.
std::vector<std::vector<std::uint64_t>> split_contiguous(const std::vector<std::uint64_t>& rows,
                                                         std::size_t count) {
  std::vector<std::vector<std::uint64_t>> shards(count);
  const std::size_t base = rows.size() / count;
  const std::size_t extra = rows.size() % count;
  auto it = rows.begin();
  for (std::size_t w = 0; w < count; ++w) {
    const auto size = static_cast<std::ptrdiff_t>(base + (w < extra ? 1 : 0));
    shards[w].assign(it, it + size);
    it += size;
  }
  return shards;
}

// DataError when `training` rows (of `rows` in the source) cannot give each of `count` workers
// at least one.
void check_enough_rows(std::uint64_t training, std::uint64_t rows, int count) {
  if (training >= static_cast<std::uint64_t>(count)) return;
  const std::uint64_t held = rows - training;
  fail<DataError>(
      "{} training rows cannot be split across {} workers; use fewer shards (shards.count) or "
      "more data{}",
      training, count,
      held == 0 ? std::string()
                : fmt::format(" (data.validation holds out {} of the {} rows)", held, rows));
}

// The held-out rows sorted, each once.
std::vector<std::uint64_t> sorted_unique(std::vector<std::uint64_t> rows) {
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

Segment segment_at(std::uint64_t first, std::uint64_t count, const std::optional<CsvIndex>& csv) {
  Segment segment;
  segment.first_row = first;
  segment.count = count;
  if (csv) {
    if (first + count - 1 >= csv->rows()) {
      fail<DataError>("{}: row {} is out of range; the file has {} data rows", csv->path.string(),
                      first + count - 1, csv->rows());
    }
    segment.byte_offset = csv->row_offset[first];
    segment.line = csv->row_line[first];
  }
  return segment;
}

}  // namespace

std::vector<std::uint64_t> validation_rows(std::uint64_t rows, double fraction,
                                           std::uint64_t seed) {
  if (!(fraction >= 0.0 && fraction < 1.0)) {
    fail<DataError>("data.validation: {} is not a fraction in [0, 1)", fraction);
  }
  const auto held = static_cast<std::uint64_t>(std::llround(fraction * static_cast<double>(rows)));
  if (held == 0) return {};
  // The last `held` steps of the same Fisher-Yates walk that random::shuffle does: the held-out
  // set equals the tail of a full seeded shuffle, at a cost proportional to `held` swaps.
  std::vector<std::uint64_t> order(rows);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  random::Generator gen(seed, random::stream::kValidationSplit);
  for (std::uint64_t i = rows; i > rows - held && i > 1; --i) {
    const std::uint64_t j = gen.below(i);
    std::swap(order[i - 1], order[j]);
  }
  std::vector<std::uint64_t> out(order.end() - static_cast<std::ptrdiff_t>(held), order.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::uint64_t> training_rows(std::uint64_t rows,
                                         const std::vector<std::uint64_t>& held_out, int count) {
  if (count < 1) fail<DataError>("shards.count must be at least 1, not {}", count);

  const auto sorted_out = sorted_unique(held_out);
  std::vector<std::uint64_t> training;
  training.reserve(rows);
  auto skip = sorted_out.begin();
  for (std::uint64_t r = 0; r < rows; ++r) {
    if (skip != sorted_out.end() && *skip == r) {
      ++skip;
      continue;
    }
    training.push_back(r);
  }

  check_enough_rows(training.size(), rows, count);
  return training;
}

std::vector<std::vector<std::uint64_t>> plan_shards(std::uint64_t rows,
                                                    const std::vector<std::uint64_t>& held_out,
                                                    int count, config::ShardStrategy strategy,
                                                    std::uint64_t seed) {
  auto training = training_rows(rows, held_out, count);
  const auto workers = static_cast<std::size_t>(count);

  switch (strategy) {
    case config::ShardStrategy::kContiguous:
      return split_contiguous(training, workers);
    case config::ShardStrategy::kRoundRobin: {
      std::vector<std::vector<std::uint64_t>> shards(workers);
      for (auto& shard : shards) shard.reserve(training.size() / workers + 1);
      for (std::size_t j = 0; j < training.size(); ++j) shards[j % workers].push_back(training[j]);
      return shards;
    }
    case config::ShardStrategy::kRandom: {
      random::Generator gen(seed, random::stream::kShardPlan);
      random::shuffle(std::span<std::uint64_t>(training), gen);
      auto shards = split_contiguous(training, workers);
      // Sorted rows read the file front to back and merge into the longest segments.
      for (auto& shard : shards) std::sort(shard.begin(), shard.end());
      return shards;
    }
    case config::ShardStrategy::kByLabel:
    case config::ShardStrategy::kDirichlet:
    case config::ShardStrategy::kFiles:
      // These need the label column or the files: make_plan calls plan_by_label,
      // plan_dirichlet or describe_files instead.
      fail<DataError>("plan_shards cannot plan by_label, dirichlet or files shards; they are "
                      "planned from the labels or the files (make_plan)");
  }
  // Not config::name_of: dt_data does not link dt_config (unit_data links dt_data alone).
  fail<DataError>("unknown shard strategy {}", static_cast<int>(strategy));
}

std::vector<Segment> to_segments(const std::vector<std::uint64_t>& rows,
                                 const std::optional<CsvIndex>& csv) {
  std::vector<Segment> segments;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
    segments.push_back(segment_at(rows[i], j - i, csv));
    i = j;
  }
  return segments;
}

std::vector<std::vector<Segment>> contiguous_segments(std::uint64_t rows,
                                                      const std::vector<std::uint64_t>& held_out,
                                                      int count,
                                                      const std::optional<CsvIndex>& csv) {
  if (count < 1) fail<DataError>("shards.count must be at least 1, not {}", count);
  const auto held = sorted_unique(held_out);
  const auto in_range = static_cast<std::uint64_t>(
      std::lower_bound(held.begin(), held.end(), rows) - held.begin());
  const std::uint64_t training = rows - in_range;
  check_enough_rows(training, rows, count);

  // Shard w takes the next base (+1 for the first `extra` shards) training rows in source
  // order: the runs between held-out rows, cut at the shard boundaries.
  const auto workers = static_cast<std::uint64_t>(count);
  const std::uint64_t base = training / workers;
  const std::uint64_t extra = training % workers;
  std::vector<std::vector<Segment>> shards(workers);
  auto next_held = held.begin();
  std::uint64_t row = 0;
  for (std::uint64_t w = 0; w < workers; ++w) {
    std::uint64_t left = base + (w < extra ? 1 : 0);
    while (left > 0) {
      while (next_held != held.end() && *next_held == row) {
        ++row;
        ++next_held;
      }
      const std::uint64_t run_end = next_held != held.end() ? std::min(*next_held, rows) : rows;
      const std::uint64_t take = std::min(left, run_end - row);
      shards[w].push_back(segment_at(row, take, csv));
      row += take;
      left -= take;
    }
  }
  return shards;
}

std::vector<std::vector<Segment>> chunk_segments(const std::vector<Segment>& segments,
                                                 std::uint64_t max_rows,
                                                 const std::optional<CsvIndex>& csv,
                                                 bool by_number) {
  max_rows = std::max<std::uint64_t>(1, max_rows);
  const bool cut = csv.has_value() || by_number;
  std::vector<std::vector<Segment>> chunks(1);
  std::uint64_t in_chunk = 0;
  for (const auto& whole : segments) {
    Segment rest = whole;
    while (rest.count > 0) {
      if (in_chunk == max_rows) {
        chunks.emplace_back();
        in_chunk = 0;
      }
      const std::uint64_t take = cut ? std::min(rest.count, max_rows - in_chunk) : rest.count;
      Segment piece = rest;
      piece.count = take;
      chunks.back().push_back(piece);
      in_chunk = cut ? in_chunk + take : max_rows;  // an uncut segment closes its chunk
      if (take == rest.count) break;
      rest = segment_at(rest.first_row + take, rest.count - take, csv);  // only when cut
    }
  }
  if (chunks.back().empty() && chunks.size() > 1) chunks.pop_back();
  return chunks;
}

}  // namespace dt::data
