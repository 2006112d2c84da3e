// Non-IID shard plans: by_label and dirichlet over the label column, and the per-worker files of
// strategy files. See non_iid.hpp for the algorithms; the random draws are:
//   class permutation (by_label)      Generator(seed, kShardPlan, kPermutationSalt)
//   row order within class c          Generator(seed, kShardPlan, kRowOrderSalt + c)
//   Dir(alpha) proportions of class c Generator(seed, kShardPlan, kProportionSalt + c)
// (plan_shards' random strategy uses a = 0 of the same stream.)

#include "core/data/non_iid.hpp"

#include "base/error.hpp"
#include "base/random.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <unordered_map>

namespace dt::data {
namespace {

constexpr std::uint64_t kPermutationSalt = std::uint64_t{1} << 40;
constexpr std::uint64_t kRowOrderSalt = std::uint64_t{2} << 40;
constexpr std::uint64_t kProportionSalt = std::uint64_t{3} << 40;
// Rows per chunk of the label pass: bounds the memory of one chunk's raw labels.
constexpr std::uint64_t kLabelChunk = std::uint64_t{1} << 16;
// More distinct label texts than this cannot be a class column (resolve_classes allows 1000
// classes; integer labels may be spelled "7", "07", ...). Stops the interning table from growing
// with the rows of a mistaken column.
constexpr std::size_t kMaxLabelTexts = 100000;

// The training rows of each class, in source order.
std::vector<std::vector<std::uint64_t>> rows_by_class(const std::vector<std::uint64_t>& training,
                                                      const LabelColumn& labels) {
  std::vector<std::vector<std::uint64_t>> by_class(labels.classes.size());
  for (const std::uint64_t row : training) {
    if (row >= labels.ids.size()) {
      fail<DataError>("row {} has no label (the label column has {} rows)", row,
                      labels.ids.size());
    }
    by_class[labels.ids[row]].push_back(row);
  }
  return by_class;
}

// The class's rows in a seeded order, so that a class split among several workers gives each a
// sample of the class rather than a run of the file.
void shuffle_class(std::vector<std::uint64_t>& rows, std::uint64_t seed, std::size_t c) {
  random::Generator gen(seed, random::stream::kShardPlan, kRowOrderSalt + c);
  random::shuffle(std::span<std::uint64_t>(rows), gen);
}

// Uniform in (0, 1]: safe to take the log of.
double open_uniform(random::Generator& gen) { return 1.0 - gen.next_uniform(); }

double standard_normal(random::Generator& gen) {
  const double u1 = open_uniform(gen);
  const double u2 = gen.next_uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// log of a Gamma(alpha, 1) draw. Marsaglia & Tsang (2000) for shape >= 1; for alpha < 1 the
// boost Gamma(alpha) = Gamma(alpha + 1) * U^(1/alpha), kept as a log because U^(1/alpha)
// underflows to 0 for alphas like 0.01.
double log_gamma_draw(double alpha, random::Generator& gen) {
  const bool boost = alpha < 1.0;
  const double a = boost ? alpha + 1.0 : alpha;
  const double d = a - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  double log_value = 0.0;
  for (;;) {
    double x = 0.0;
    double v = 0.0;
    do {
      x = standard_normal(gen);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = open_uniform(gen);
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2 ||
        std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) {
      log_value = std::log(d * v);
      break;
    }
  }
  if (boost) log_value += std::log(open_uniform(gen)) / alpha;
  return log_value;
}

std::string quoted_classes(const std::vector<std::string>& classes) {
  std::vector<std::string> q;
  for (std::size_t i = 0; i < classes.size() && i < 10; ++i) q.push_back("'" + classes[i] + "'");
  if (classes.size() > 10) q.emplace_back("...");
  return fmt::format("{}", fmt::join(q, ", "));
}

}  // namespace

LabelColumn read_labels(const config::Config& config, const SourceInfo& source, LabelKind kind) {
  if (kind == LabelKind::kNumeric) {
    fail<DataError>("the label column of a regression model has no classes to shard by; use "
                    "shards.strategy contiguous, round_robin or random");
  }
  // A copy without features: load_shard then parses (or generates) only the label cells.
  SourceInfo labels_only = source;
  labels_only.features.clear();

  LabelColumn out;
  out.ids.resize(source.rows);
  std::unordered_map<std::string, std::uint32_t> text_id;  // categorical: raw text -> first-seen id
  std::vector<std::string> texts;
  for (std::uint64_t first = 0; first < source.rows; first += kLabelChunk) {
    const std::uint64_t n = std::min(kLabelChunk, source.rows - first);
    Segment segment{first, n, 0, 0};
    if (source.csv) {
      segment.byte_offset = source.csv->row_offset[first];
      segment.line = source.csv->row_line[first];
    }
    const Shard chunk = load_shard(config, labels_only, {segment}, kind);
    for (std::uint64_t k = 0; k < n; ++k) {
      const auto i = static_cast<Eigen::Index>(k);
      if (kind == LabelKind::kBinary) {
        out.ids[first + k] = chunk.y(i) == 1.0 ? 1U : 0U;
        continue;
      }
      const std::string& text = chunk.raw_labels[k];
      auto it = text_id.find(text);
      if (it == text_id.end()) {
        if (texts.size() >= kMaxLabelTexts) {
          fail<DataError>("label column '{}' has more than {} distinct values; is it the right "
                          "column? (a classifier supports at most 1000 classes)",
                          source.label, kMaxLabelTexts);
        }
        it = text_id.emplace(text, static_cast<std::uint32_t>(texts.size())).first;
        texts.push_back(text);
      }
      out.ids[first + k] = it->second;
    }
  }
  if (kind == LabelKind::kBinary) {
    out.classes = {"0", "1"};
    return out;
  }
  // The class list and each text's class exactly as the run will resolve them.
  out.classes = resolve_classes(texts);
  Shard mapping;
  mapping.raw_labels = texts;
  assign_classes(mapping, out.classes);
  for (auto& id : out.ids) id = static_cast<std::uint32_t>(mapping.y(static_cast<Eigen::Index>(id)));
  return out;
}

std::vector<std::vector<std::uint64_t>> plan_by_label(const std::vector<std::uint64_t>& training,
                                                      const LabelColumn& labels, int count,
                                                      int labels_per_worker, std::uint64_t seed) {
  const std::size_t classes = labels.classes.size();
  if (labels_per_worker < 1) {
    fail<DataError>("shards.labels_per_worker must be at least 1, not {}", labels_per_worker);
  }
  const auto per = static_cast<std::size_t>(labels_per_worker);
  const auto workers = static_cast<std::size_t>(count);
  if (per > classes) {
    fail<DataError>("shards.labels_per_worker is {} but the data has only {} classes ({}); use "
                    "at most {}",
                    labels_per_worker, classes, quoted_classes(labels.classes), classes);
  }
  const std::size_t slots = workers * per;
  if (slots < classes) {
    fail<DataError>(
        "shards: {} workers x {} labels_per_worker hold only {} of the {} classes, so the rows "
        "of the other classes would belong to no worker; raise shards.labels_per_worker to {} or "
        "shards.count to {}",
        count, labels_per_worker, slots, classes, (classes + workers - 1) / workers,
        (classes + per - 1) / per);
  }

  std::vector<std::size_t> permutation(classes);
  std::iota(permutation.begin(), permutation.end(), std::size_t{0});
  random::Generator gen(seed, random::stream::kShardPlan, kPermutationSalt);
  random::shuffle(std::span<std::size_t>(permutation), gen);

  // The slots (in increasing order) that hold each class.
  std::vector<std::vector<std::size_t>> holders(classes);
  for (std::size_t s = 0; s < slots; ++s) holders[permutation[s % classes]].push_back(s);

  auto by_class = rows_by_class(training, labels);
  std::vector<std::vector<std::uint64_t>> shards(workers);
  for (std::size_t c = 0; c < classes; ++c) {
    auto& rows = by_class[c];
    shuffle_class(rows, seed, c);
    const std::size_t pieces = holders[c].size();
    const std::size_t base = rows.size() / pieces;
    const std::size_t extra = rows.size() % pieces;
    auto it = rows.begin();
    for (std::size_t i = 0; i < pieces; ++i) {
      const auto size = static_cast<std::ptrdiff_t>(base + (i < extra ? 1 : 0));
      auto& shard = shards[holders[c][i] / per];
      shard.insert(shard.end(), it, it + size);
      it += size;
    }
  }
  // Sorted rows read the file front to back and merge into the longest segments.
  for (auto& shard : shards) std::sort(shard.begin(), shard.end());
  return shards;
}

std::vector<double> dirichlet_draw(std::size_t k, double alpha, random::Generator& gen) {
  if (!(alpha > 0.0) || !std::isfinite(alpha)) {
    fail<DataError>("shards.alpha must be a positive number, not {}", alpha);
  }
  std::vector<double> p(k);
  for (auto& v : p) v = log_gamma_draw(alpha, gen);
  const double top = *std::max_element(p.begin(), p.end());
  double sum = 0.0;
  for (auto& v : p) {
    v = std::exp(v - top);  // the largest is exactly 1: the sum is never 0
    sum += v;
  }
  for (auto& v : p) v /= sum;
  return p;
}

std::vector<std::uint64_t> largest_remainder(std::uint64_t total, std::span<const double> p) {
  std::vector<std::uint64_t> counts(p.size());
  std::vector<double> remainder(p.size());
  std::uint64_t given = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double quota = static_cast<double>(total) * p[i];
    const double whole = std::floor(quota);
    counts[i] = std::min(static_cast<std::uint64_t>(whole), total - given);
    remainder[i] = quota - whole;
    given += counts[i];
  }
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  // Rounding can leave more than p.size() rows over only if p does not sum to 1; cycle anyway
  // so that the counts always sum exactly.
  for (std::size_t i = 0; given < total && !order.empty(); ++i, ++given) ++counts[order[i % order.size()]];
  return counts;
}

std::vector<std::vector<std::uint64_t>> plan_dirichlet(const std::vector<std::uint64_t>& training,
                                                       const LabelColumn& labels, int count,
                                                       double alpha, std::uint64_t seed) {
  const auto workers = static_cast<std::size_t>(count);
  auto by_class = rows_by_class(training, labels);
  std::vector<std::vector<std::uint64_t>> shards(workers);
  for (std::size_t c = 0; c < by_class.size(); ++c) {
    auto& rows = by_class[c];
    random::Generator gen(seed, random::stream::kShardPlan, kProportionSalt + c);
    const auto p = dirichlet_draw(workers, alpha, gen);
    const auto counts = largest_remainder(rows.size(), p);
    shuffle_class(rows, seed, c);
    auto it = rows.begin();
    for (std::size_t w = 0; w < workers; ++w) {
      const auto size = static_cast<std::ptrdiff_t>(counts[w]);
      shards[w].insert(shards[w].end(), it, it + size);
      it += size;
    }
  }
  for (auto& shard : shards) std::sort(shard.begin(), shard.end());
  return shards;
}

std::vector<std::uint64_t> class_counts(const Shard& shard, std::size_t classes) {
  std::vector<std::uint64_t> counts(classes, 0);
  for (Eigen::Index i = 0; i < shard.y.size(); ++i) {
    const auto k = static_cast<std::size_t>(shard.y(i));
    if (k < classes) ++counts[k];
  }
  return counts;
}

void append_rows(Shard& into, Shard&& more) {
  if (into.y.size() == 0 && into.raw_labels.empty()) {
    into = std::move(more);
    return;
  }
  const auto a = into.x.rows();
  const auto b = more.x.rows();
  into.x.conservativeResize(a + b, into.x.cols());
  into.x.bottomRows(b) = more.x;
  into.y.conservativeResize(a + b);
  into.y.tail(b) = more.y;
  if (into.sparse && more.sparse) into.sparse->append_rows(*more.sparse);
  into.raw_labels.insert(into.raw_labels.end(), std::make_move_iterator(more.raw_labels.begin()),
                         std::make_move_iterator(more.raw_labels.end()));
}

Shard every_nth_row(const Shard& all, std::uint64_t first, std::uint64_t step) {
  Shard mine;
  const auto total = static_cast<std::uint64_t>(all.y.size());
  const auto rows = step == 0 || first >= total ? 0 : (total - first + step - 1) / step;
  mine.x.resize(static_cast<Eigen::Index>(rows), all.x.cols());
  mine.y.resize(static_cast<Eigen::Index>(rows));
  if (all.sparse) {
    mine.sparse.emplace();
    mine.sparse->width = all.sparse->width;
  }
  std::vector<KeyValue> entries;
  for (std::uint64_t i = 0; i < rows; ++i) {
    const auto from = first + i * step;
    const auto r = static_cast<Eigen::Index>(i);
    const auto f = static_cast<Eigen::Index>(from);
    mine.x.row(r) = all.x.row(f);
    mine.y(r) = all.y(f);
    if (!all.raw_labels.empty()) mine.raw_labels.push_back(all.raw_labels[from]);
    if (all.sparse) {
      const auto& s = *all.sparse;
      entries.clear();
      for (auto j = s.row_start[from]; j < s.row_start[from + 1]; ++j) {
        entries.push_back({s.keys[j], s.values[j]});
      }
      mine.sparse->append_sorted(entries.data(), entries.size());
    }
  }
  return mine;
}

}  // namespace dt::data
