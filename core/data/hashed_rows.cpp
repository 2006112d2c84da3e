// The fast path of loading hashed CSV rows (hashed_rows.hpp).

#include "core/data/hashed_rows.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/hashed_csv.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <cstring>

namespace dt::data::detail {

void append_hashed_row(SparseRows& rows, const std::vector<KeyValue>& entries,
                       std::size_t hashed, int bits, std::vector<std::uint32_t>& sorted) {
  sorted.resize(hashed);
  constexpr std::size_t kBucketMax = 256;
  if (hashed <= kBucketMax) {
    // Hashed keys are spread evenly over [0, 2^bits): a counting pass on their top 6 bits puts
    // them in order but within a bucket (a click log's 40 keys: mostly one key a bucket), and
    // an insertion sort of that nearly sorted list finishes with few moves. A comparison sort
    // of random keys mispredicts about every other comparison instead.
    const int shift = bits > 6 ? bits - 6 : 0;  // keys < 2^bits: buckets 0..63
    std::uint32_t start[65] = {};
    for (std::size_t i = 0; i < hashed; ++i) ++start[(entries[i].key >> shift) + 1];
    for (std::size_t b = 1; b < 65; ++b) start[b] += start[b - 1];
    for (std::size_t i = 0; i < hashed; ++i) sorted[start[entries[i].key >> shift]++] = entries[i].key;
    for (std::size_t i = 1; i < hashed; ++i) {
      const std::uint32_t k = sorted[i];
      std::size_t j = i;
      for (; j > 0 && sorted[j - 1] > k; --j) sorted[j] = sorted[j - 1];
      sorted[j] = k;
    }
  } else {
    for (std::size_t i = 0; i < hashed; ++i) sorted[i] = entries[i].key;
    std::sort(sorted.begin(), sorted.end());
  }
  // Written in place (a push_back each would store the vectors' ends back every time).
  const std::size_t old = rows.keys.size();
  rows.keys.resize(old + entries.size());
  rows.values.resize(old + entries.size());
  std::uint32_t* keys = rows.keys.data() + old;
  double* values = rows.values.data() + old;
  std::size_t n = 0;
  for (std::size_t i = 0; i < hashed;) {
    const std::uint32_t k = sorted[i];
    std::size_t j = i + 1;
    while (j < hashed && sorted[j] == k) ++j;
    keys[n] = k;
    values[n++] = static_cast<double>(j - i);
    i = j;
  }
  for (std::size_t i = hashed; i < entries.size(); ++i) {
    keys[n] = entries[i].key;
    values[n++] = entries[i].value;
  }
  rows.keys.resize(old + n);
  rows.values.resize(old + n);
  rows.row_start.push_back(old + n);
}

HashedRow::HashedRow(const HashPlan& plan, std::size_t width, std::size_t label_column,
                     HashedLabel label, config::Missing missing, char sep)
    : plan_(plan), width_(width), label_column_(label_column), label_(label),
      refuse_empty_(missing == config::Missing::kError), sep_(sep), starts_(width + 1),
      state_(plan.hashed.size()), present_(plan.hashed.size()) {}

bool HashedRow::split(const char* p, const char* end) noexcept {
  if (p == end || *p == '\n' || *p == '\r') return false;  // a blank line: the general path's
  const std::size_t last = width_ - 1;                     // the separators a row has
  std::size_t seps = 0;
  starts_[0] = p;
  const char* q = p;
  // 64 bytes at a time: the separators before the first newline are the field starts; a quote
  // before it sends the row to the general parser.
  while (end - q >= 64) {
    const ByteMasks m = byte_masks(q, sep_);
    const std::uint64_t before = m.newline == 0 ? ~std::uint64_t{0} : (m.newline & -m.newline) - 1;
    if ((m.quote & before) != 0) return false;
    for (std::uint64_t s = m.comma & before; s != 0; s &= s - 1) {
      if (seps == last) return false;  // more fields than the header
      starts_[++seps] = q + __builtin_ctzll(s) + 1;
    }
    if (m.newline != 0) {
      if (seps != last) return false;
      starts_[width_] = q + __builtin_ctzll(m.newline) + 1;
      return true;
    }
    q += 64;
  }
  for (; q < end; ++q) {  // the tail of the buffer, a byte at a time
    const char c = *q;
    if (c == '\n') {
      if (seps != last) return false;
      starts_[width_] = q + 1;
      return true;
    }
    if (c == '"') return false;
    if (c == sep_) {
      if (seps == last) return false;
      starts_[++seps] = q + 1;
    }
  }
  return false;  // no line end in the buffer: the general path reads on
}

std::string_view HashedRow::field(std::size_t c) const noexcept {
  const char* first = starts_[c];
  const char* stop = starts_[c + 1] - 1;  // its separator, or the row's '\n'
  if (c + 1 == width_ && stop > first && stop[-1] == '\r') --stop;  // CRLF
  return {first, static_cast<std::size_t>(stop - first)};
}

const char* HashedRow::parse(const char* p, const char* end, std::vector<KeyValue>& entries,
                             double& label, std::string_view& text) {
  if (!split(p, end)) return nullptr;
  entries.clear();
  const std::size_t hashed = plan_.hashed.size();
  // Four cells at a time: FNV-1a is one chain of multiplies per cell, each waiting for the one
  // before, so hashing cells in lockstep keeps four chains in flight (the loader's hot loop).
  std::size_t h = 0;
  for (; h + 4 <= hashed; h += 4) {
    std::string_view v[4];
    std::uint64_t s[4];
    std::size_t common = ~std::size_t{0};
    for (int i = 0; i < 4; ++i) {
      v[i] = field(plan_.hashed[h + i]);
      s[i] = plan_.prefix[h + i];
      common = std::min(common, v[i].size());
    }
    for (std::size_t b = 0; b < common; ++b) {
      for (int i = 0; i < 4; ++i) {
        s[i] = (s[i] ^ static_cast<unsigned char>(v[i][b])) * 0x100000001b3ULL;
      }
    }
    for (int i = 0; i < 4; ++i) state_[h + i] = fnv_more(s[i], v[i].substr(common));
  }
  for (; h < hashed; ++h) state_[h] = fnv_more(plan_.prefix[h], field(plan_.hashed[h]));
  for (h = 0; h < hashed; ++h) {
    present_[h] = !field(plan_.hashed[h]).empty();
    if (!present_[h]) {
      if (refuse_empty_) return nullptr;
      continue;  // zero or mean: no key
    }
    entries.push_back({top_bits(state_[h], plan_.bits), 1.0});
  }
  for (std::size_t k = 0; k < plan_.crosses.size(); ++k) {
    const auto [a, b] = plan_.crosses[k];
    if (!present_[a] || !present_[b]) continue;  // a missing half: no cross key
    std::uint64_t s = fnv_more(state_[a], std::string_view(&kCrossSeparator, 1));
    s = fnv_more(fnv_more(fnv_more(s, plan_.cross_names[k]), "="), field(plan_.hashed[b]));
    entries.push_back({top_bits(s, plan_.bits), 1.0});
  }
  hashed_entries_ = entries.size();
  for (std::size_t n = 0; n < plan_.numeric.size(); ++n) {
    const std::string_view cell = field(plan_.numeric[n]);
    if (cell.empty()) {
      if (refuse_empty_) return nullptr;
      continue;  // missing under zero or mean: no key
    }
    const char* q = cell.data();
    double v = 0.0;
    if (!plain_cell_number(q, end, v) || q != cell.data() + cell.size()) return nullptr;
    if (v == 0.0) continue;  // zero: no key
    entries.push_back({plan_.numeric_base + static_cast<std::uint32_t>(n), v});
  }
  switch (label_) {
    case HashedLabel::kNone:
      break;
    case HashedLabel::kNumeric: {
      const std::string_view cell = field(label_column_);
      const char* q = cell.data();
      if (!plain_cell_number(q, end, label) || q != cell.data() + cell.size()) return nullptr;
      break;
    }
    case HashedLabel::kBinary: {
      const std::string_view cell = field(label_column_);
      if (cell != "0" && cell != "1") return nullptr;
      label = cell == "1" ? 1.0 : 0.0;
      break;
    }
    case HashedLabel::kText: {
      // The general path trims spaces and checks the class is UTF-8: such cells go there.
      text = field(label_column_);
      if (text.empty() || text.front() == ' ' || text.front() == '\t' || text.back() == ' ' ||
          text.back() == '\t' || !text::valid_utf8(text)) {
        return nullptr;
      }
      break;
    }
  }
  return starts_[width_];
}

}  // namespace dt::data::detail
