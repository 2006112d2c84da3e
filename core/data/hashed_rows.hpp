#pragma once
// Internal to core/data: the layout of a hashed CSV source as the loader uses it (HashPlan), and
// the fast path of loading its rows (HashedRow), the counterpart of the dense path's PlainRow.

#include "core/config/names.hpp"
#include "core/data/sparse_rows.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace dt::data::detail {

// FNV-1a 64 from state h over more bytes (fnv1a64(a + b) == fnv_more(fnv1a64(a), b)).
[[nodiscard]] constexpr std::uint64_t fnv_more(std::uint64_t h, std::string_view bytes) noexcept {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

[[nodiscard]] constexpr std::uint32_t top_bits(std::uint64_t h, int bits) noexcept {
  return static_cast<std::uint32_t>(h >> (64 - bits));
}

// What a loader needs of the layout: column indices and FNV states of "column=".
struct HashPlan {
  std::vector<std::size_t> hashed;               // column index per hashed column
  std::vector<std::uint64_t> prefix;             // fnv1a64("column=") per hashed column
  std::vector<std::pair<std::size_t, std::size_t>> crosses;  // into `hashed`
  std::vector<std::string_view> cross_names;     // per cross: its second column's name
  std::vector<std::size_t> numeric;              // column index per numeric feature
  std::uint32_t numeric_base = 0;                // key of the first numeric feature
  int bits = 0;                                  // data.hash.bits
};

// SparseRows::append(entries) for a row as the hashed loader makes it, faster: `entries` holds
// `hashed` keys of value 1 (hashed cells and crosses, < 2^bits, any order) and then the numeric
// columns' keys (>= 2^bits, increasing); `bits` is data.hash.bits. append stable-sorts by key and adds up repeated keys'
// values in order; here only the hashed keys are sorted (as plain integers), a key repeated k
// times gets k (the sum of k ones, in any order, is exact), and the numeric entries follow as
// they are: the same row, bit for bit.
void append_hashed_row(SparseRows& rows, const std::vector<KeyValue>& entries,
                       std::size_t hashed, int bits, std::vector<std::uint32_t>& sorted);

// How the fast path reads the label cell.
enum class HashedLabel : std::uint8_t { kNone, kNumeric, kBinary, kText };

// One row of plain cells (no quote anywhere in the row, exactly `width` fields, a '\n' at its
// end inside the buffer) turned into the row's entries in the order the general loader makes
// them (hashed columns, crosses, numeric columns), with the same keys and values. The hashed
// cells' bytes are hashed where they lie, the numeric ones parsed by the dense fast path's
// exact number parser. Anything the fast path does not take -- a quote, a row that runs past
// the buffer, a missing or extra field, an empty cell under data.missing: error, a numeric cell
// that is not a plain number (spaces, a marker, text), a label that is not plainly valid, a
// blank line -- makes parse() return nullptr, and the caller reads the row again with the
// general parser (RecordReader::next_views), which accepts it or reports the exact error with
// file:line:column. So this path only accepts what the general one accepts, with the same
// result.
class HashedRow {
 public:
  HashedRow(const HashPlan& plan, std::size_t width, std::size_t label_column, HashedLabel label,
            config::Missing missing, char sep);
  // Returns the byte after the row's '\n', or nullptr (see above). `entries` gets the row's
  // keys and values (unsorted), `label` a numeric or binary label, `text` a text label's bytes.
  [[nodiscard]] const char* parse(const char* p, const char* end, std::vector<KeyValue>& entries,
                                  double& label, std::string_view& text);
  // How many of the last parsed row's entries are hashed keys (the rest are numeric).
  [[nodiscard]] std::size_t hashed_entries() const noexcept { return hashed_entries_; }

 private:
  // Fills starts_[0 .. width_]: where each field starts, and one past the row's '\n' -- so
  // field c is [starts_[c], starts_[c + 1] - 1). False for anything but a plain row.
  [[nodiscard]] bool split(const char* p, const char* end) noexcept;
  // Field c's bytes, a CR before the line's '\n' dropped (as the general parser does).
  [[nodiscard]] std::string_view field(std::size_t c) const noexcept;

  const HashPlan& plan_;
  std::size_t width_;
  std::size_t label_column_;
  HashedLabel label_;
  bool refuse_empty_;  // data.missing: error (an empty cell is the general path's error)
  char sep_;
  std::vector<const char*> starts_;
  std::vector<std::uint64_t> state_;  // fnv1a64("column=value") per hashed column
  std::vector<char> present_;         // the hashed cell has a value
  std::size_t hashed_entries_ = 0;
};

}  // namespace dt::data::detail
