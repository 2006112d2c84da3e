#pragma once
// Checkpoint files: <output.dir>/checkpoint/step-<12 digits>.ckpt, one per checkpoint, the last
// two kept. A file is written whole or not at all (files::write_atomic) and carries a checksum,
// so a torn or corrupt file is recognised and the previous checkpoint is used instead.
//
// Layout (every integer little-endian):
//   "DTCKPT\r\n"                 8 bytes of magic (the \r\n catches text-mode mangling)
//   u32 format version (2, or 3 when an array is stored sparse), u32 0
//   u64 n, n bytes               the manifest: JSON (step, epoch, mode, fingerprints, log, ...)
//   u64 k, then k arrays         each: u64 name length, the name, then
//                                  dense:  u64 count, count doubles
//                                  sparse (version 3): u64 count | 2^63, u64 m, m u32 indices
//                                  (strictly increasing, each < count), m doubles: the entries
//                                  whose bits are not zero, every other one is +0.0
//   u64 checksum                 of every byte before it: CRC-32 (zlib's), zero-extended;
//                                format version 1 (still read) had FNV-1a 64, 3 to 4 times
//                                slower (100 MB: 0.17 s against 0.05 s on the development VM)
//   "DTCKEND\n"                  8 bytes: the file ends here
// Doubles are stored as their raw IEEE-754 bits, so a round trip is exact.
//
// No ZeroMQ here and no knowledge of the modes: the manifest and the arrays are filled and read
// by core/coordinator/resume.hpp and by each mode's save_state/restore_state.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dt::checkpoint {

inline constexpr std::uint32_t kFormatVersion = 3;  // 1 to 3 are read; 2 or 3 written

// An array kept as its entries whose bits are not zero (all others +0.0): a wide sparse model's
// weights and optimizer state, most of whose 2^22 or 2^24 keys no batch has touched yet, cost
// a checkpoint what they hold rather than their width.
struct SparseArray {
  std::uint64_t size = 0;               // the dense length
  std::vector<std::uint32_t> indices;   // strictly increasing, each < size
  std::vector<double> values;           // one per index
};

// What decode accepts of a sparse array's dense length: the product's limit is what u32 indices
// address; the fuzz harnesses pass a small one (a file may claim any length in a few bytes).
inline constexpr std::uint64_t kMaxSparseSize = std::uint64_t{1} << 32;

struct Checkpoint {
  nlohmann::json manifest = nlohmann::json::object();  // "step" (steps completed) is required
  std::map<std::string, std::vector<double>> arrays;    // by name, written in name order
  // Arrays to write sparse (put() chooses); a name is in `arrays` or here, never both. decode
  // gives every array dense, in `arrays`.
  std::map<std::string, SparseArray> sparse;
  std::string origin;  // the file it was decoded from, for messages (not written)

  [[nodiscard]] std::uint64_t step() const;
  // The array `name`; DataError naming the checkpoint when it is missing.
  [[nodiscard]] const std::vector<double>& array(const std::string& name) const;
  [[nodiscard]] bool has(const std::string& name) const { return arrays.count(name) > 0; }
};

// Puts the concatenation of `pieces` into `out` as the array `name`: sparse when it is long
// (64Ki entries or more) and at most a third of its entries have nonzero bits, dense otherwise.
// A sparse copy reads the width once and copies only what it holds.
void put(Checkpoint& out, const std::string& name,
         std::span<const std::span<const double>> pieces);

// put() for pieces that are not all there at once (each read under its own lock): add() them
// in order, then finish(), which puts the array (TrainingError when they do not add up to
// `size`). Each piece is read once, when it is added.
class ArrayBuilder {
 public:
  ArrayBuilder(std::string name, std::uint64_t size);
  void add(std::span<const double> piece);
  // add(piece) when every entry of `piece` outside `at` (ascending offsets into it) is zero:
  // the same array, reading only `at` while the array is sparse.
  void add_at(std::span<const double> piece, std::span<const std::uint32_t> at) {
    add_at(piece.data(), piece.size(), 1, at);
  }
  // The same with the piece's `count` entries every `stride` values from `first` (a slot of an
  // interleaved optimizer state: entry j is first[j * stride]).
  void add_at(const double* first, std::size_t count, std::size_t stride,
              std::span<const std::uint32_t> at);
  void finish(Checkpoint& out);

 private:
  void densify_if_full();
  std::string name_;
  std::uint64_t at_ = 0;
  bool sparse_ = false;
  SparseArray s_;
  std::vector<double> dense_;
};
inline void put(Checkpoint& out, const std::string& name, std::span<const double> values) {
  put(out, name, std::span<const std::span<const double>>(&values, 1));
}

// The file's bytes in one string (write() writes the same bytes without making it).
[[nodiscard]] std::string encode(const Checkpoint& checkpoint);
// DataError naming `origin` and what is wrong (bad magic, other format version, truncated,
// checksum mismatch, bad manifest) for anything that is not a complete checkpoint.
// A sparse array longer than `max_sparse_size` is refused the same way.
[[nodiscard]] Checkpoint decode(std::string_view bytes, const std::string& origin,
                                std::uint64_t max_sparse_size = kMaxSparseSize);

// <dir>/step-000000000123.ckpt
[[nodiscard]] std::filesystem::path file_for(const std::filesystem::path& dir, std::uint64_t step);
// The checkpoint files in `dir` (temp files of an unfinished write are not), by step ascending.
[[nodiscard]] std::vector<std::filesystem::path> list(const std::filesystem::path& dir);

// Removes the temp files of writes that never finished (a second Ctrl-C exits at once, a crash
// or SIGKILL stops anything): files::write_atomic names them ".<name>.tmp.XXXXXX". They are
// never read; write() and a new or resumed run sweep them.
void sweep(const std::filesystem::path& dir);

// Writes `checkpoint` as file_for(dir, step) atomically, then removes all but the newest `keep`
// checkpoint files (only once the new one is durable). Returns the new file.
std::filesystem::path write(const std::filesystem::path& dir, const Checkpoint& checkpoint,
                            std::size_t keep = 2);

struct Found {
  Checkpoint checkpoint;
  std::filesystem::path path;
  std::vector<std::string> skipped;  // one line per newer file that could not be used, and why
};
// The newest checkpoint in `dir` that reads back whole; nullopt when there is none (every
// unreadable file is listed in `skipped` of the result, or in `*rejected` when none is usable).
[[nodiscard]] std::optional<Found> load_latest(const std::filesystem::path& dir,
                                               std::vector<std::string>* rejected = nullptr);

}  // namespace dt::checkpoint
