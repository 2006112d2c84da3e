#pragma once
// Sparse rows in memory (CSR): per row, sorted unique 32-bit feature keys and their values.
// What a sparse shard holds instead of a dense matrix (dataset.hpp, Shard::sparse); filled by
// the LIBSVM and hashed-CSV loaders (libsvm_sparse.cpp, hashed_csv.cpp). 12 bytes per nonzero
// (a 4-byte key, an 8-byte value) plus 8 bytes per row.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dt::data {

// A key and a value before a row is sealed (unsorted, keys may repeat).
struct KeyValue {
  std::uint32_t key = 0;
  double value = 0.0;
};

struct SparseRows {
  std::uint64_t width = 0;                  // feature count (keys are < width)
  std::vector<std::uint64_t> row_start{0};  // rows + 1 offsets into keys/values
  std::vector<std::uint32_t> keys;          // per row: sorted, unique global feature indices
  std::vector<double> values;

  [[nodiscard]] std::size_t rows() const noexcept { return row_start.size() - 1; }
  [[nodiscard]] std::uint64_t nonzeros() const noexcept { return keys.size(); }
  // The bytes held (capacity, not size: what the process pays).
  [[nodiscard]] std::uint64_t memory_bytes() const noexcept {
    return row_start.capacity() * sizeof(std::uint64_t) + keys.capacity() * sizeof(std::uint32_t) +
           values.capacity() * sizeof(double);
  }
  [[nodiscard]] std::uint64_t row_size(std::size_t r) const noexcept {
    return row_start[r + 1] - row_start[r];
  }

  // Appends a row of `entries` (reordered in place): keys sorted, a key that repeats gets the
  // sum of its values (in the order given, so the result is the same on every run). Keys must
  // be < width (the loaders check).
  void append(std::vector<KeyValue>& entries);
  // Appends a row whose keys are already strictly increasing (a LIBSVM line).
  void append_sorted(const KeyValue* entries, std::size_t count);
  // Appends the rows of `other` (same width).
  void append_rows(const SparseRows& other);
  // Gives back unused capacity (after loading, when the sizes are final) when it is more than
  // 1/16 of what an array holds (less is not worth copying the array for).
  void shrink();
};

}  // namespace dt::data
