// SparseRows (sparse_rows.hpp): sealing a row's keys, appending rows.

#include "core/data/sparse_rows.hpp"

#include <algorithm>

namespace dt::data {

void SparseRows::append(std::vector<KeyValue>& entries) {
  // Stable: equal keys keep their order, so their sum is taken in the order the row gave them.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const KeyValue& a, const KeyValue& b) { return a.key < b.key; });
  for (std::size_t i = 0; i < entries.size();) {
    const std::uint32_t key = entries[i].key;
    double sum = entries[i].value;
    for (++i; i < entries.size() && entries[i].key == key; ++i) sum += entries[i].value;
    keys.push_back(key);
    values.push_back(sum);
  }
  row_start.push_back(keys.size());
}

void SparseRows::append_sorted(const KeyValue* entries, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    keys.push_back(entries[i].key);
    values.push_back(entries[i].value);
  }
  row_start.push_back(keys.size());
}

void SparseRows::append_rows(const SparseRows& other) {
  const std::uint64_t base = keys.size();
  keys.insert(keys.end(), other.keys.begin(), other.keys.end());
  values.insert(values.end(), other.values.begin(), other.values.end());
  for (std::size_t r = 1; r < other.row_start.size(); ++r) {
    row_start.push_back(base + other.row_start[r]);
  }
}

void SparseRows::shrink() {
  // A copy of everything: not worth it for less than 1/16 of spare room (the loaders reserve
  // their arrays from an estimate a little above what they fill).
  const auto worth = [](const auto& v) { return v.capacity() - v.size() > v.capacity() / 16; };
  if (worth(row_start)) row_start.shrink_to_fit();
  if (worth(keys)) keys.shrink_to_fit();
  if (worth(values)) values.shrink_to_fit();
}

}  // namespace dt::data
