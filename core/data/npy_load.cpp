// Loading the rows of an .npy data.path into a shard (load_shard's NumPy branch, npy.hpp), or
// checking them where they lie in the page cache without keeping them (check_shard).

#include "core/data/npy.hpp"
#include "core/data/dataset.hpp"
#include "core/data/label_sink.hpp"
#include "core/data/missing.hpp"
#include "core/data/row_sums.hpp"
#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

namespace dt::data {
namespace {

// Whether every one of `n` values is finite: x * 0 is NaN for a NaN or an infinity and ±0
// otherwise. Eight sums at once: one would wait on each addition (its latency, not the
// adder's throughput, would set the pace of an .npy load).
constexpr std::uint64_t kFiniteLanes = 8;

bool npy_block_finite(const double* values, std::uint64_t n) {
  double sums[kFiniteLanes] = {};
  std::uint64_t i = 0;
  for (; i + kFiniteLanes <= n; i += kFiniteLanes) {
    for (std::uint64_t k = 0; k < kFiniteLanes; ++k) sums[k] += values[i + k] * 0.0;
  }
  double total = 0.0;
  for (; i < n; ++i) total += values[i] * 0.0;
  for (const double s : sums) total += s;
  return total == 0.0;
}

// The first `p` values of each of `n` rows of `cols` values into `out` (p a row; `out` may be
// `in` itself, the rows already in place), checking all `cols` finite on the way
// (npy_block_finite's test) and making column_stats's first pass in `sums` (detail::row_sums) on
// the rows just copied, four at a time, while they are in L1: one pass over the rows, straight from the page
// cache. Rows with a bad value are copied too: the caller reads the block again value by
// value, to name it, and drops the sums. `bad` is scratch of p values.
bool npy_copy_finite(const double* in, std::uint64_t cols, std::uint64_t p, std::uint64_t n,
                     double* out, ColumnStats& sums, std::vector<double>& bad) {
  bad.assign(p, 0.0);
  double* sum = sums.mean.data();
  double* lo = sums.min.data();
  double* hi = sums.max.data();
  double total = 0.0;
  std::uint64_t k = 0;
  for (; k + 4 <= n; k += 4, in += 4 * cols, out += 4 * p) {
    for (std::uint64_t r = 0; r < 4; ++r) {
      const double* row = in + r * cols;
      if (in != out) std::memcpy(out + r * p, row, p * sizeof(double));
      for (std::uint64_t c = p; c < cols; ++c) total += row[c] * 0.0;
    }
    detail::four_row_sums(out, out + p, out + 2 * p, out + 3 * p, p, sum, lo, hi, bad.data());
  }
  for (; k < n; ++k, in += cols, out += p) {
    if (in != out) std::memcpy(out, in, p * sizeof(double));
    detail::row_sums(out, p, sum, lo, hi, bad.data());
    for (std::uint64_t c = p; c < cols; ++c) total += in[c] * 0.0;
  }
  for (const double b : bad) total += b;
  return total == 0.0;
}

}  // namespace

void load_npy(const config::DataConfig& data, const SourceInfo& source,
              const std::vector<Segment>& segments, Shard& shard, LabelKind kind, bool keep) {
  NpyReader x_reader(read_npy_header(data.path));
  const NpyArray& x = x_reader.array();
  const std::string name = data.path.string();
  const auto target = detail::feature_targets(source, name);
  const bool has_label = source.label_index != kNoLabel;
  const bool label_file = has_label && source.label_index >= x.cols;
  if (source.columns.size() != x.cols &&
      (source.columns.size() != x.cols + 1 || data.labels.empty())) {
    fail<DataError>("{}: {} columns described, the array has {}; did it change?", name,
                    source.columns.size(), x.cols);
  }
  std::optional<NpyReader> y;
  if (label_file) {
    if (data.labels.empty()) fail<DataError>("{}: no data.labels file for the label 'y'", name);
    y.emplace(read_npy_header(data.labels));
  }
  detail::LabelSink sink{shard, kind, source.label};
  const auto bad_value = [](const std::string& file, std::uint64_t row, std::size_t col,
                            const std::string& column, double v) {
    fail<DataError>("{}: row {}, column {} ('{}'): {} is not a finite number; replace or drop "
                    "it (rows and columns count from 0, as in numpy)", file, row, col, column, v);
  };
  // The common layouts: the features are the array's first p columns in order (the label, if
  // any, after them). Their rows are copied whole (a float64 array of features alone is read
  // straight into the shard), and checked finite a block at a time; other layouts, and a block
  // with a NaN or infinity somewhere, go value by value (which names the bad one). Not `keep`:
  // the block is checked where it lies (the page cache, or the buffer it was widened into) and
  // no row is copied; the value-by-value path writes every row into shard.x's one row.
  const auto p = static_cast<std::size_t>(shard.x.cols());
  bool leading = x.cols == p || (x.cols == p + 1 && (!has_label || source.label_index == p));
  for (std::size_t c = 0; leading && c < p; ++c) leading = target[c] == static_cast<std::ptrdiff_t>(c);
  const bool direct = keep && leading && x.cols == p && x.kind == 'f' && x.item == 8;
  const std::uint64_t block = std::max<std::uint64_t>(1, (std::uint64_t{1} << 17) / x.cols);
  std::vector<double> buf, labels, scratch;
  // column_stats's first pass, made in the copy; kept only when every block was fast.
  ColumnStats sums = detail::no_sums(keep && leading ? p : 0);
  bool sums_whole = keep && leading;
  Eigen::Index r = 0;
  for (const Segment& seg : segments) {
    for (std::uint64_t done = 0; done < seg.count; done += block) {
      const std::uint64_t n = std::min(block, seg.count - done);
      const std::uint64_t first = seg.first_row + done;
      // Features alone in float64: read straight into the shard. Else the rows where they lie
      // in the page cache (a float64 array), or widened into a buffer.
      const double* values = direct ? nullptr : x_reader.view(first, n);
      if (direct) {
        double* rows = shard.x.data() + r * shard.x.cols();
        x_reader.read(first, n, rows);
        values = rows;
      } else if (values == nullptr) {
        buf.resize(n * x.cols);
        x_reader.read(first, n, buf.data());
        values = buf.data();
      }
      if (y) {
        labels.resize(n);
        y->read(first, n, labels.data());
      }
      // A block with a NaN or an infinity is read again value by value below.
      bool fast = false;
      if (leading && !keep) {
        fast = npy_block_finite(values, n * x.cols);
      } else if (leading) {
        double* rows = shard.x.data() + r * p;
        fast = npy_copy_finite(values, x.cols, p, n, rows, sums, scratch);
      }
      sums_whole = sums_whole && fast;  // a NaN somewhere: column_stats makes its own
      for (std::uint64_t k = 0; k < n; ++k, ++r) {
        const double* in = values + k * x.cols;
        double* row = shard.x.data() + (keep ? r : 0) * shard.x.cols();
        for (std::size_t c = 0; !fast && c < x.cols; ++c) {
          if (target[c] < 0 && (!has_label || c != source.label_index)) continue;
          if (std::isnan(in[c]) && target[c] >= 0) {  // a missing feature value
            if (data.missing == config::Missing::kError) {
              refuse_missing(fmt::format("{}: row {}, column {} ('{}')", name, first + k, c,
                                         source.columns[c]), "NaN");
            }
            row[target[c]] = missing_value(data.missing);
            continue;
          }
          if (!std::isfinite(in[c])) bad_value(name, first + k, c, source.columns[c], in[c]);
          if (target[c] >= 0) row[target[c]] = in[c];
        }
        if (!has_label) continue;
        const double v = y ? labels[k] : in[source.label_index];
        if (y && !std::isfinite(v)) bad_value(data.labels.string(), first + k, 0, "y", v);
        if (kind == LabelKind::kNumeric) {
          shard.y(r) = v;
          continue;
        }
        const std::string text = fmt::format("{}", v);
        sink.put(r, text, [&] {
          return fmt::format("{}: row {}", y ? data.labels.string() : name, first + k);
        });
      }
      if (!direct) x_reader.release(first, n);
    }
  }
  if (sums_whole) shard.sums = std::move(sums);
}

}  // namespace dt::data
