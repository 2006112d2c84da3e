#pragma once
// Sparse rows for the sparse models (sparse_model.hpp): a CSR view of rows that core/data owns,
// one batch of them in COMPACT form (its own sorted key list, each nonzero as a position in it),
// and the moves between a model's full parameter vector and a batch's LOCAL vector. A step on a
// compact batch costs the keys it touches, not the model's width.
//
// Layouts (the dense models' own, so a sparse model of width W and the dense model with W inputs
// have the same parameters):
//   full vector   [W x outputs] weights, row-major (key k's outputs at k*outputs ..), then
//                 [outputs] biases; outputs = 1 (linear, logistic) or K (softmax).
//   local vector  [keys.size() x outputs] weights in the batch's key order, then [outputs] biases.
//   KeyedVector   a local vector with its own key list: the sparse form of a full-size gradient.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dt::models {

// CSR rows as spans (core/data builds the storage; models only see views). Row r's nonzeros are
// keys/values[row_start[r] .. row_start[r + 1]); row_start has rows + 1 entries (or none: no
// rows). Keys are 0-based global feature indices below width; a row's keys should be ascending
// (see SparseModel for what that buys) and may repeat (hashing collisions): repeats add up.
// `ones` says every value is exactly 1.0 (a hashed click log's), except in the rows whose bit is
// set in `other_rows` (bit r of word r / 64; empty: no such row), e.g. a row where two columns
// hashed to one key (value 2). compact() then reads the values of those rows only, not the 8 of
// the 12 bytes a nonzero that a shuffled batch otherwise fetches from all over the shard, and a
// batch without such a row has implicit ones. OnesView makes such a view; the results are the
// same bits, as x * 1.0 == x for every double.
struct CsrView {
  std::uint64_t width = 0;
  std::span<const std::uint64_t> row_start;
  std::span<const std::uint32_t> keys;
  std::span<const double> values;
  bool ones = false;
  std::span<const std::uint64_t> other_rows;
  [[nodiscard]] std::size_t rows() const noexcept {
    return row_start.empty() ? 0 : row_start.size() - 1;
  }
};

// A set of keys below a width, listed in order: a three-level bitmap over the width (one bit a
// key; a bit a 64-bit word above it; a bit a word of those above that) and, beside each bottom
// word, the number of listed keys below it (the star's coordinator lists a step's touched keys
// with it). Setting a key is O(1) and branch-free (no load waits on another, so misses
// overlap); listing the set keys in order visits only the touched words plus the top level
// (width / 2^18 words: 64 at 2^24, 16,384 at 2^32); a key's position in the sorted list is its
// word's count plus a popcount, one cache line. Memory: width/4 (+ width/512) bytes, made once
// per width: 4 MB at 2^24, 1 GB at 2^32. Every bit is clear again after clear().
class KeyIndex {
 public:
  // Sized for `width` keys (no-op when already so); all clear.
  void reserve(std::uint64_t width);
  [[nodiscard]] std::uint64_t width() const noexcept { return width_; }
  void set(std::uint32_t key) noexcept {
    const std::uint64_t w = key >> 6;
    words_[w].bits |= std::uint64_t{1} << (key & 63);
    mid_[w >> 6] |= std::uint64_t{1} << (w & 63);
    top_[w >> 12] |= std::uint64_t{1} << ((w >> 6) & 63);
  }
  // Asks for the cache line of a key's word, ahead of set() or rank().
  [[gnu::always_inline]] void prefetch(std::uint32_t key) const noexcept { __builtin_prefetch(&words_[key >> 6]); }
  // Appends the set keys to `out` in ascending order and makes rank() valid for them; clears
  // the upper levels (the bottom level stays until clear()).
  void list(std::vector<std::uint32_t>& out);
  // The position in list()'s output of a set key.
  [[nodiscard]] std::uint32_t rank(std::uint32_t key) const noexcept {
    const Word& word = words_[key >> 6];
    const std::uint64_t below = word.bits & ((std::uint64_t{1} << (key & 63)) - 1);
    return static_cast<std::uint32_t>(word.below) +
           popcount(below);
  }
  // Clears the bottom level of the listed keys.
  void clear(std::span<const std::uint32_t> listed) noexcept;

 private:
  // Bits set in x. The Release build targets baseline x86-64, which has no popcnt instruction:
  // there __builtin_popcountll is a call into libgcc (a table lookup a byte) for every
  // nonzero of a batch; these few register operations are inline.
  static std::uint32_t popcount(std::uint64_t x) noexcept {
#if defined(__POPCNT__) || !defined(__x86_64__)
    return static_cast<std::uint32_t>(__builtin_popcountll(x));
#else
    x -= (x >> 1) & 0x5555555555555555ULL;
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return static_cast<std::uint32_t>((x * 0x0101010101010101ULL) >> 56);
#endif
  }

  struct Word {
    std::uint64_t bits = 0;   // the keys set among the word's 64
    std::uint64_t below = 0;  // listed keys below the word (valid after list())
  };
  std::uint64_t width_ = 0;
  std::vector<Word> words_;          // width / 64
  std::vector<std::uint64_t> mid_;   // words_.size() / 64
  std::vector<std::uint64_t> top_;   // mid_.size() / 64
};

// A CsrView of arrays that may change between batches (a worker's shard: rows adopted, a
// re-plan), with `ones` and `other_rows` (CsrView) found by one scan of the values when the
// arrays change (their address or size), not per batch; a plain view (no ones) when more than
// 1 row in 16 has other values (LIBSVM's real values). The arrays must not be rewritten in
// place between calls (sparse rows never are: they are not normalized).
class OnesView {
 public:
  // The view of these arrays; the reference stays valid until the next call.
  [[nodiscard]] const CsrView& view(std::uint64_t width, std::span<const std::uint64_t> row_start,
                                    std::span<const std::uint32_t> keys,
                                    std::span<const double> values);

 private:
  CsrView view_;
  std::vector<std::uint64_t> other_rows_;
};

// One batch in compact form: `keys` = the sorted union of the batch's feature keys (global
// indices, no repeats), each nonzero as its position in `keys` (`local`), the rows in batch
// order (row_start as in CsrView). `ones`: every value is 1.0 and `values` is empty (compact of
// a view with ones and none of its other rows picked); the kernels then skip the multiply.
// `sorted`, `spare`, `narrow`, `narrow_spare`, `counts` and `index` are compact()'s scratch, kept here so that a batch
// object reused step after step allocates nothing once warm.
struct SparseBatch {
  std::vector<std::uint32_t> keys;
  std::vector<std::uint64_t> row_start;
  std::vector<std::uint32_t> local;
  std::vector<double> values;
  bool ones = false;
  std::vector<std::uint64_t> sorted;
  std::vector<std::uint64_t> spare;
  std::vector<std::uint32_t> narrow;  // the 32-bit sort's (sparse_places.hpp)
  std::vector<std::uint32_t> narrow_spare;
  std::vector<std::uint32_t> counts;
  KeyIndex index;  // widths up to 2^20 only
  [[nodiscard]] std::size_t rows() const noexcept {
    return row_start.empty() ? 0 : row_start.size() - 1;
  }
};

// Compacts rows pick[0], pick[1], ... of `rows` (every row in order when pick is empty) into
// `out`, reusing its buffers. Above 2^20 keys of width, the nonzeros' (key, place) pairs sorted
// by a least-significant-digit radix sort of 12-bit digits (two passes over the batch for keys
// below 2^24, three above; 32-bit entries when they fit, sparse_places.hpp), then one walk that
// lists the distinct keys and gives each nonzero its position: O(nonzeros), no access that
// depends on the width. Up to 2^20, a KeyIndex (at
// most 256 KB, cheaper there: bench/README.md). TrainingError (nothing half-done is used) on a
// malformed view: row_start not ascending or past the nonzeros, a pick past the rows, a key >=
// width.
void compact(const CsrView& rows, std::span<const std::uint64_t> pick, SparseBatch& out);

// Sorted distinct keys and their values, laid out as a local vector of those keys: the sparse
// form of a full-size vector (what a worker pushes, what a server sums). A batch's local
// gradient with the batch's keys is one. Values of keys not listed are zero.
struct KeyedVector {
  std::vector<std::uint32_t> keys;
  std::vector<double> values;  // keys.size() * outputs weights, then outputs biases
  std::vector<std::uint32_t> scratch_keys;  // add_gradient's merge buffers
  std::vector<double> scratch_values;
};

// local = the batch keys' rows of `full` (width*outputs + outputs values) then its biases;
// resized to batch.keys.size() * outputs + outputs. TrainingError when full's size is not a
// full vector for `outputs` or a key lies beyond its width.
void gather_params(std::span<const double> full, const SparseBatch& batch, std::size_t outputs,
                   std::vector<double>& local);
// full += the local gradient scattered to its keys (the same checks).
void add_gradient(std::span<const double> local_grad, const SparseBatch& batch,
                  std::size_t outputs, std::span<double> full);
// into += the local gradient: keys merged in order, values of shared keys added (into's value
// first, so adding batches in a fixed order gives the same bits every run). An empty `into`
// (no values) takes the batch's keys.
void add_gradient(std::span<const double> local_grad, const SparseBatch& batch,
                  std::size_t outputs, KeyedVector& into);

// One term of sum_parts: sorted distinct keys and their values, `outputs` a key.
struct KeyedPart {
  std::span<const std::uint32_t> keys;
  const double* values = nullptr;
};
// The sum of the parts as sorted distinct keys (their union) and `outputs` sums a key, by one
// merge of the parts: no full-width scratch. A coordinate's sum starts at 0.0 and adds the
// parts that have its key in part order: the bits of adding each part, in order, into a zeroed
// full vector. A part's keys must ascend (key frames' do: decode_keys checks).
void sum_parts(std::span<const KeyedPart> parts, std::size_t outputs,
               std::vector<std::uint32_t>& keys, std::vector<double>& sums);

}  // namespace dt::models
