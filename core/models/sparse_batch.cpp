#include "core/models/sparse_batch.hpp"
#include "core/models/sparse_places.hpp"

#include "base/error.hpp"
#include "base/memory.hpp"

#include <algorithm>
#include <bit>
#include <utility>

namespace dt::models {

namespace {

constexpr std::uint64_t words_for(std::uint64_t bits) noexcept { return (bits + 63) / 64; }

// The width of a full vector of `size` values for `outputs` outputs, or a TrainingError.
std::uint64_t full_width(std::size_t size, std::size_t outputs, const char* what) {
  if (outputs == 0 || size < outputs || size % outputs != 0) {
    fail<TrainingError>(
        "{} has {} values, which is not (width + 1) x {} outputs (weights then biases)", what,
        size, outputs);
  }
  return size / outputs - 1;
}

void check_keys_fit(const SparseBatch& batch, std::uint64_t width, const char* what) {
  // Keys are sorted: the last is the largest.
  if (!batch.keys.empty() && batch.keys.back() >= width) {
    fail<TrainingError>("the batch has feature key {} but {} is for a width of {}",
                        batch.keys.back(), what, width);
  }
}

void check_local(std::size_t size, const SparseBatch& batch, std::size_t outputs,
                 const char* what) {
  const std::size_t want = (batch.keys.size() + 1) * outputs;
  if (size != want) {
    fail<TrainingError>("{} has {} values but the batch's {} keys x {} outputs + biases need {}",
                        what, size, batch.keys.size(), outputs, want);
  }
}

// Picked rows lie anywhere in the shard, beyond the hardware prefetcher's sight (a miss a cache
// line otherwise: most of a shuffled batch's compaction). Two stages: the row's bounds
// kRowsAhead * 2 rows ahead, its nonzeros kRowsAhead rows ahead, into L2 (hint 1, as affine.cpp).
constexpr std::size_t kRowsAhead = 8;
// Keys ahead that gather_params and add_gradient fetch the full vector's values of.
constexpr std::size_t kKeysAhead = 16;

DT_PREFETCH void prefetch_ahead(const CsrView& rows, std::span<const std::uint64_t> pick, std::size_t i) {
  const std::size_t row_count = rows.rows();
  if (i + 2 * kRowsAhead < pick.size() && pick[i + 2 * kRowsAhead] < row_count) {
    const std::uint64_t* bounds = rows.row_start.data() + pick[i + 2 * kRowsAhead];
    memory::prefetch_lines(bounds, 2 * sizeof(std::uint64_t));  // the end may start the next line
  }
  if (i + kRowsAhead >= pick.size() || pick[i + kRowsAhead] >= row_count) return;
  const std::uint64_t r = pick[i + kRowsAhead];
  const std::uint64_t begin = std::min<std::uint64_t>(rows.row_start[r], rows.keys.size());
  const std::uint64_t end = std::min<std::uint64_t>(rows.row_start[r + 1], rows.keys.size());
  if (end <= begin) return;
  // Every line of the row's keys and values: 39 keys span 3 or 4 lines, as they start in one.
  memory::prefetch_lines(rows.keys.data() + begin, (end - begin) * sizeof(std::uint32_t));
  if (!rows.ones) memory::prefetch_lines(rows.values.data() + begin, (end - begin) * sizeof(double));
}

// A batch of a view with ones that picked one of its other rows: ones everywhere, then those
// rows' values (rare: two keys of a row in one bucket; most batches have none).
void fill_other_values(const CsrView& rows, std::span<const std::uint64_t> pick,
                       SparseBatch& out) {
  out.values.assign(out.local.size(), 1.0);
  for (std::size_t i = 0; i + 1 < out.row_start.size(); ++i) {
    const std::uint64_t r = pick.empty() ? i : pick[i];
    if (((rows.other_rows[r / 64] >> (r % 64)) & 1) == 0) continue;
    std::copy(rows.values.begin() + static_cast<std::ptrdiff_t>(rows.row_start[r]),
              rows.values.begin() + static_cast<std::ptrdiff_t>(rows.row_start[r + 1]),
              out.values.begin() + static_cast<std::ptrdiff_t>(out.row_start[i]));
  }
}

// Widths up to which compact lists a batch's keys with its KeyIndex (at most 256 KB, in L2:
// cheaper than the sort's passes; the worker's CPU a step at 2^18 was 10% above the bitmap's
// with the sort). Above it the index is a random access into width / 4 bytes a key, twice.
constexpr std::uint64_t kIndexWidth = std::uint64_t{1} << 20;

// out.local's global keys into out.index, listed in order, then each place's key replaced by
// its position. The index's words for keys a few ahead are fetched early.
void index_places(SparseBatch& out) {
  KeyIndex& index = out.index;
  const std::size_t count = out.local.size();
  std::uint32_t* keys = out.local.data();
  for (std::size_t j = 0; j < count; ++j) {
    if (j + kKeysAhead < count) index.prefetch(keys[j + kKeysAhead]);
    index.set(keys[j]);
  }
  index.list(out.keys);
  for (std::size_t j = 0; j < count; ++j) {
    if (j + kKeysAhead < count) index.prefetch(keys[j + kKeysAhead]);
    keys[j] = index.rank(keys[j]);
  }
  index.clear(out.keys);
}

using detail::kDigitBits;  // sparse_places.hpp: the digits both sorts use
using detail::kDigits;

// out.local's global keys (all <= largest) sorted with their places, then out.keys = the
// distinct keys in order and each place's key replaced by its position among them.
void sort_places(std::uint32_t largest, SparseBatch& out) {
  const std::size_t count = out.local.size();
  if (count > UINT32_MAX) {
    fail<TrainingError>("sparse rows: a batch of {} nonzeros (at most 2^32 - 1)", count);
  }
  const unsigned bits = static_cast<unsigned>(std::bit_width(largest));
  const unsigned passes = std::max(1u, (bits + kDigitBits - 1) / kDigitBits);
  auto& pairs = out.sorted;
  auto& spare = out.spare;
  auto& counts = out.counts;
  pairs.resize(count);
  spare.resize(count);
  counts.assign(std::size_t{passes} * kDigits, 0);
  std::uint32_t* local = out.local.data();
  // Key above, place below: a pass moves the pairs by one digit of the key, stably.
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t key = local[j];
    pairs[j] = (std::uint64_t{key} << 32) | j;
    for (unsigned p = 0; p < passes; ++p) ++counts[p * kDigits + ((key >> (p * kDigitBits)) & (kDigits - 1))];
  }
  for (unsigned p = 0; p < passes; ++p) {
    std::uint32_t* at = counts.data() + std::size_t{p} * kDigits;
    detail::starts_from_counts(at);
    const unsigned shift = 32 + p * kDigitBits;
    for (std::size_t j = 0; j < count; ++j) {
      const std::uint64_t pair = pairs[j];
      spare[at[(pair >> shift) & (kDigits - 1)]++] = pair;
    }
    std::swap(pairs, spare);
  }
  // Places of the batch lie within its own arrays (150 KB for 1000 rows of 39): cache hits.
  std::uint64_t last = UINT64_MAX;
  std::uint32_t position = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint64_t key = pairs[j] >> 32;
    if (key != last) {
      position = static_cast<std::uint32_t>(out.keys.size());
      out.keys.push_back(static_cast<std::uint32_t>(key));
      last = key;
    }
    local[pairs[j] & UINT32_MAX] = position;
  }
}

}  // namespace

constexpr std::size_t kMarkedShare = 16;

const CsrView& OnesView::view(std::uint64_t width, std::span<const std::uint64_t> row_start,
                              std::span<const std::uint32_t> keys,
                              std::span<const double> values) {
  const auto same = [](auto a, auto b) { return a.data() == b.data() && a.size() == b.size(); };
  if (view_.width == width && same(view_.row_start, row_start) && same(view_.keys, keys) &&
      same(view_.values, values)) {
    return view_;
  }
  view_ = {width, row_start, keys, values};
  if (keys.size() != values.size() || row_start.empty() || row_start.back() > keys.size()) {
    return view_;  // no ones: compact's checks report the malformed arrays
  }
  // A row's values compared with no early exit (a vector loop, about a nanosecond a value).
  const std::size_t rows = row_start.size() - 1;
  other_rows_.assign(words_for(rows), 0);
  std::size_t marked = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    bool ones = true;
    for (std::uint64_t j = row_start[r]; j < std::min<std::uint64_t>(row_start[r + 1], values.size()); ++j) {
      ones &= values[j] == 1.0;
    }
    other_rows_[r / 64] |= std::uint64_t{!ones} << (r % 64);
    marked += ones ? 0 : 1;
  }
  // Rows of other values in more than 1 of 16 (LIBSVM's real values: all of them): most batches
  // would pick one and fetch their rows twice (keys, then values); the plain view reads once.
  if (marked > rows / kMarkedShare) return view_;
  if (marked == 0) other_rows_.clear();
  view_.ones = true;
  view_.other_rows = other_rows_;
  return view_;
}

void KeyIndex::reserve(std::uint64_t width) {
  if (width == width_ && !words_.empty()) return;
  width_ = width;
  const std::uint64_t bottom = std::max<std::uint64_t>(words_for(width), 1);
  words_.assign(bottom, Word{});
  mid_.assign(words_for(bottom), 0);
  top_.assign(words_for(mid_.size()), 0);
}

void KeyIndex::list(std::vector<std::uint32_t>& out) {
  for (std::size_t t = 0; t < top_.size(); ++t) {
    std::uint64_t top = top_[t];
    top_[t] = 0;
    while (top != 0) {
      const std::uint64_t m = t * 64 + static_cast<std::uint64_t>(__builtin_ctzll(top));
      top &= top - 1;
      std::uint64_t mid = mid_[m];
      mid_[m] = 0;
      while (mid != 0) {
        const std::uint64_t w = m * 64 + static_cast<std::uint64_t>(__builtin_ctzll(mid));
        mid &= mid - 1;
        Word& word = words_[w];
        word.below = out.size();
        for (std::uint64_t bits = word.bits; bits != 0; bits &= bits - 1) {
          out.push_back(static_cast<std::uint32_t>(w * 64 + static_cast<std::uint64_t>(__builtin_ctzll(bits))));
        }
      }
    }
  }
}

void KeyIndex::clear(std::span<const std::uint32_t> listed) noexcept {
  for (const std::uint32_t key : listed) words_[key >> 6].bits = 0;
}

void compact(const CsrView& rows, std::span<const std::uint64_t> pick, SparseBatch& out) {
  const std::size_t row_count = rows.rows();
  if ((!rows.ones || !rows.other_rows.empty()) && rows.keys.size() != rows.values.size()) {
    fail<TrainingError>("sparse rows: {} keys but {} values", rows.keys.size(),
                        rows.values.size());
  }
  if (!rows.other_rows.empty() && rows.other_rows.size() < words_for(row_count)) {
    fail<TrainingError>("sparse rows: {} words of marks for {} rows", rows.other_rows.size(),
                        row_count);
  }
  const std::size_t n = pick.empty() ? row_count : pick.size();
  out.keys.clear();
  out.local.clear();
  out.values.clear();
  out.ones = rows.ones;
  out.row_start.assign(1, 0);
  if (rows.width <= kIndexWidth) out.index.reserve(rows.width);
  // First pass: the rows' nonzeros copied in batch order (local holds the global keys until
  // sort_places), every key checked.
  std::uint32_t largest_key = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = pick.empty() ? i : pick[i];
    if (!pick.empty()) prefetch_ahead(rows, pick, i);
    if (r >= row_count) {
      fail<TrainingError>("sparse rows: the batch picks row {} of {} rows", r, row_count);
    }
    const std::uint64_t begin = rows.row_start[r];
    const std::uint64_t end = rows.row_start[r + 1];
    if (end < begin || end > rows.keys.size()) {
      fail<TrainingError>("sparse rows: row {} spans nonzeros {} to {} of {}", r, begin, end,
                          rows.keys.size());
    }
    std::uint32_t largest = 0;
    for (std::uint64_t j = begin; j < end; ++j) largest = std::max(largest, rows.keys[j]);
    if (end > begin && largest >= rows.width) {
      fail<TrainingError>("sparse rows: row {} has feature key {}, beyond the width {}", r,
                          largest, rows.width);
    }
    largest_key = std::max(largest_key, largest);
    out.local.insert(out.local.end(), rows.keys.begin() + static_cast<std::ptrdiff_t>(begin),
                     rows.keys.begin() + static_cast<std::ptrdiff_t>(end));
    if (!rows.ones) {
      out.values.insert(out.values.end(), rows.values.begin() + static_cast<std::ptrdiff_t>(begin),
                        rows.values.begin() + static_cast<std::ptrdiff_t>(end));
    } else if (!rows.other_rows.empty()) {
      out.ones = out.ones && ((rows.other_rows[r / 64] >> (r % 64)) & 1) == 0;
    }
    out.row_start.push_back(out.local.size());
  }
  if (rows.ones && !out.ones) fill_other_values(rows, pick, out);
  if (rows.width <= kIndexWidth) {
    index_places(out);
  } else {
    if (!detail::narrow_places(largest_key, out)) sort_places(largest_key, out);
  }
}

void gather_params(std::span<const double> full, const SparseBatch& batch, std::size_t outputs,
                   std::vector<double>& local) {
  const std::uint64_t width = full_width(full.size(), outputs, "the parameter vector");
  check_keys_fit(batch, width, "the parameter vector");
  local.resize((batch.keys.size() + 1) * outputs);
  double* to = local.data();
  const std::size_t count = batch.keys.size();
  if (outputs == 1) {
    // Keys ascend but lie far apart in a wide model: fetched ahead, each a miss otherwise.
    for (std::size_t i = 0; i < count; ++i) {
      if (i + kKeysAhead < count) __builtin_prefetch(full.data() + batch.keys[i + kKeysAhead], 0, 1);
      *to++ = full[batch.keys[i]];
    }
  } else {
    for (const std::uint32_t key : batch.keys) {
      to = std::copy_n(full.data() + std::size_t{key} * outputs, outputs, to);
    }
  }
  std::copy_n(full.data() + width * outputs, outputs, to);
}

void add_gradient(std::span<const double> local_grad, const SparseBatch& batch,
                  std::size_t outputs, std::span<double> full) {
  const std::uint64_t width = full_width(full.size(), outputs, "the gradient");
  check_keys_fit(batch, width, "the gradient");
  check_local(local_grad.size(), batch, outputs, "the local gradient");
  const double* from = local_grad.data();
  const std::size_t count = batch.keys.size();
  for (std::size_t i = 0; i < count; ++i) {
    if (i + kKeysAhead < count) {
      __builtin_prefetch(full.data() + std::size_t{batch.keys[i + kKeysAhead]} * outputs, 1, 1);
    }
    double* to = full.data() + std::size_t{batch.keys[i]} * outputs;
    for (std::size_t c = 0; c < outputs; ++c) to[c] += *from++;
  }
  double* bias = full.data() + width * outputs;
  for (std::size_t c = 0; c < outputs; ++c) bias[c] += *from++;
}

void add_gradient(std::span<const double> local_grad, const SparseBatch& batch,
                  std::size_t outputs, KeyedVector& into) {
  check_local(local_grad.size(), batch, outputs, "the local gradient");
  if (into.values.empty()) {
    into.keys.assign(batch.keys.begin(), batch.keys.end());
    into.values.assign(local_grad.begin(), local_grad.end());
    return;
  }
  if (into.values.size() != (into.keys.size() + 1) * outputs) {
    fail<TrainingError>("the keyed gradient has {} values for {} keys x {} outputs + biases",
                        into.values.size(), into.keys.size(), outputs);
  }
  // A sorted merge into the scratch buffers, swapped in at the end.
  auto& keys = into.scratch_keys;
  auto& values = into.scratch_values;
  keys.clear();
  values.clear();
  const auto& a = into.keys;
  const auto& b = batch.keys;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    const bool take_a = j == b.size() || (i < a.size() && a[i] <= b[j]);
    const bool take_b = i == a.size() || (j < b.size() && b[j] <= a[i]);
    const double* va = into.values.data() + i * outputs;
    const double* vb = local_grad.data() + j * outputs;
    keys.push_back(take_a ? a[i] : b[j]);
    for (std::size_t c = 0; c < outputs; ++c) {
      values.push_back(take_a && take_b ? va[c] + vb[c] : (take_a ? va[c] : vb[c]));
    }
    i += take_a ? 1 : 0;
    j += take_b ? 1 : 0;
  }
  const double* ba = into.values.data() + a.size() * outputs;
  const double* bb = local_grad.data() + b.size() * outputs;
  for (std::size_t c = 0; c < outputs; ++c) values.push_back(ba[c] + bb[c]);
  std::swap(into.keys, keys);
  std::swap(into.values, values);
}

namespace {

// sum_parts of two single-output parts, without a branch on the keys' order (a merge of two
// random key lists mispredicts about every other key): each place takes the smaller key and
// (0.0 + a's value or 0.0) + (b's value or 0.0), the bits of sum_parts' general form (0.0, then
// a, then b: a lone -0.0 becomes +0.0 there too).
void merge_two(const KeyedPart& a, const KeyedPart& b, std::vector<std::uint32_t>& keys,
               std::vector<double>& sums) {
  const std::size_t na = a.keys.size();
  const std::size_t nb = b.keys.size();
  keys.resize(na + nb);
  sums.resize(na + nb);
  std::uint32_t* key_out = keys.data();
  double* sum_out = sums.data();
  std::size_t i = 0, j = 0, o = 0;
  while (i < na && j < nb) {
    const std::uint32_t ka = a.keys[i];
    const std::uint32_t kb = b.keys[j];
    const bool take_a = ka <= kb;
    const bool take_b = kb <= ka;
    key_out[o] = take_a ? ka : kb;
    sum_out[o] = (0.0 + (take_a ? a.values[i] : 0.0)) + (take_b ? b.values[j] : 0.0);
    i += take_a ? 1 : 0;
    j += take_b ? 1 : 0;
    ++o;
  }
  for (; i < na; ++i, ++o) {
    key_out[o] = a.keys[i];
    sum_out[o] = 0.0 + a.values[i];
  }
  for (; j < nb; ++j, ++o) {
    key_out[o] = b.keys[j];
    sum_out[o] = 0.0 + b.values[j];
  }
  keys.resize(o);
  sums.resize(o);
}

}  // namespace

void sum_parts(std::span<const KeyedPart> parts, std::size_t outputs,
               std::vector<std::uint32_t>& keys, std::vector<double>& sums) {
  keys.clear();
  sums.clear();
  std::size_t total = 0;
  for (const auto& part : parts) total += part.keys.size();
  keys.reserve(total);
  sums.reserve(total * outputs);
  if (parts.size() == 2 && outputs == 1) {  // two workers' or pushes' single-output gradients
    merge_two(parts[0], parts[1], keys, sums);
    return;
  }
  if (parts.size() == 2) {  // the common case (two workers, or two pushes), merged directly
    const auto& a = parts[0];
    const auto& b = parts[1];
    std::size_t i = 0, j = 0;
    while (i < a.keys.size() || j < b.keys.size()) {
      const bool take_a = j == b.keys.size() || (i < a.keys.size() && a.keys[i] <= b.keys[j]);
      const bool take_b = i == a.keys.size() || (j < b.keys.size() && b.keys[j] <= a.keys[i]);
      keys.push_back(take_a ? a.keys[i] : b.keys[j]);
      for (std::size_t c = 0; c < outputs; ++c) {
        double sum = 0.0;  // from 0.0 as below: the same bits
        if (take_a) sum += a.values[i * outputs + c];
        if (take_b) sum += b.values[j * outputs + c];
        sums.push_back(sum);
      }
      i += take_a ? 1 : 0;
      j += take_b ? 1 : 0;
    }
    return;
  }
  // Each part's place; a linear scan for the smallest key (workers and servers are few).
  std::vector<std::size_t> at(parts.size(), 0);
  constexpr std::uint64_t kDone = UINT64_MAX;
  for (;;) {
    std::uint64_t key = kDone;
    for (std::size_t j = 0; j < parts.size(); ++j) {
      if (at[j] < parts[j].keys.size()) key = std::min<std::uint64_t>(key, parts[j].keys[at[j]]);
    }
    if (key == kDone) break;
    keys.push_back(static_cast<std::uint32_t>(key));
    const std::size_t first = sums.size();
    sums.resize(first + outputs, 0.0);
    for (std::size_t j = 0; j < parts.size(); ++j) {
      if (at[j] >= parts[j].keys.size() || parts[j].keys[at[j]] != key) continue;
      const double* in = parts[j].values + at[j] * outputs;
      for (std::size_t c = 0; c < outputs; ++c) sums[first + c] += in[c];
      ++at[j];
    }
  }
}

}  // namespace dt::models
