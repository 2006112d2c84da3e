#include "core/coordinator/checkpoint.hpp"

#include "base/error.hpp"
#include "base/files.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>
#include <system_error>

namespace dt::checkpoint {
namespace {

static_assert(std::endian::native == std::endian::little,
              "checkpoints store little-endian bytes as they are in memory");

constexpr std::string_view kMagic = "DTCKPT\r\n";
constexpr std::string_view kEndMagic = "DTCKEND\n";
constexpr std::string_view kPrefix = "step-";
constexpr std::string_view kSuffix = ".ckpt";

// Format version 1's checksum (read only).
std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::uint64_t crc32_of(std::span<const std::string_view> parts) {
  uLong crc = ::crc32_z(0, nullptr, 0);
  for (const auto part : parts) {
    // A null buffer (an empty array's) asks zlib for the initial value: never passed.
    if (part.empty()) continue;
    crc = ::crc32_z(crc, reinterpret_cast<const Bytef*>(part.data()), part.size());
  }
  return crc;
}

std::uint64_t checksum(std::uint32_t version, std::string_view body) {
  return version == 1 ? fnv1a(body) : crc32_of(std::span<const std::string_view>(&body, 1));
}

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

// Reads the file front to back; every read names what it was reading when the bytes run out.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& origin) : bytes_(bytes), origin_(origin) {}

  template <class T>
  T get(const char* what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what).data(), sizeof(T));
    return value;
  }
  std::string_view take(std::uint64_t n, const char* what) {
    if (n > bytes_.size() - pos_) {
      fail<DataError>("{}: truncated checkpoint: {} needs {} bytes at offset {}, the file has {} "
                      "bytes; it was not written completely",
                      origin_, what, n, pos_, bytes_.size());
    }
    const auto out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  [[nodiscard]] std::size_t pos() const noexcept { return pos_; }

 private:
  std::string_view bytes_;
  const std::string& origin_;
  std::size_t pos_ = 0;
};

std::optional<std::uint64_t> step_of(const std::filesystem::path& file) {
  const auto name = file.filename().string();
  if (name.size() != kPrefix.size() + 12 + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  std::uint64_t step = 0;
  for (std::size_t i = kPrefix.size(); i < kPrefix.size() + 12; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  return step;
}

}  // namespace

std::uint64_t Checkpoint::step() const {
  const auto it = manifest.find("step");
  if (it == manifest.end() || !it->is_number_unsigned()) {
    fail<DataError>("checkpoint manifest has no step count");
  }
  return it->get<std::uint64_t>();
}

const std::vector<double>& Checkpoint::array(const std::string& name) const {
  const auto it = arrays.find(name);
  if (it == arrays.end()) fail<DataError>("the checkpoint holds no '{}' array", name);
  return it->second;
}

namespace {

// A checkpoint file as pieces written one after the other: the small ones made here, the
// arrays' bytes where they lie (a model of 2^22 weights with two optimizer slots is 100 MB,
// copied once less, and into no freshly faulted-in buffer).
struct Pieces {
  std::string head;                // magic, version, manifest, array count
  std::vector<std::string> names;  // each array's name length, name and value count
  std::string tail;                // checksum, end magic
  std::vector<std::string_view> parts;
};

constexpr std::uint64_t kSparseBit = std::uint64_t{1} << 63;
constexpr std::uint64_t kSparseFrom = 65536;  // shorter arrays are always dense

template <class T>
std::string_view bytes_of(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

void pieces_of(const Checkpoint& checkpoint, Pieces& out) {
  // The arrays in name order, whichever map holds them.
  std::vector<std::pair<const std::string*, const void*>> order;  // name, then array or sparse
  for (const auto& [name, values] : checkpoint.arrays) order.emplace_back(&name, nullptr);
  for (const auto& [name, sparse] : checkpoint.sparse) {
    if (checkpoint.arrays.count(name) > 0) {
      fail<TrainingError>("checkpoint array '{}' is both dense and sparse", name);
    }
    order.emplace_back(&name, &sparse);
  }
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  out.head = std::string(kMagic);
  put<std::uint32_t>(out.head, checkpoint.sparse.empty() ? 2 : kFormatVersion);
  put<std::uint32_t>(out.head, 0);
  const std::string manifest = checkpoint.manifest.dump();
  put<std::uint64_t>(out.head, manifest.size());
  out.head += manifest;
  put<std::uint64_t>(out.head, order.size());
  for (const auto& [name, sparse] : order) {
    std::string& piece = out.names.emplace_back();
    put<std::uint64_t>(piece, name->size());
    piece += *name;
    if (sparse == nullptr) {
      put<std::uint64_t>(piece, checkpoint.arrays.at(*name).size());
    } else {
      const auto& s = *static_cast<const SparseArray*>(sparse);
      put<std::uint64_t>(piece, s.size | kSparseBit);
      put<std::uint64_t>(piece, s.indices.size());
    }
  }
  // Views only once every string is in place (names' growth moves short strings).
  out.parts.push_back(out.head);
  std::size_t a = 0;
  for (const auto& [name, sparse] : order) {
    out.parts.push_back(out.names[a++]);
    if (sparse == nullptr) {
      out.parts.push_back(bytes_of(checkpoint.arrays.at(*name)));
    } else {
      const auto& s = *static_cast<const SparseArray*>(sparse);
      out.parts.push_back(bytes_of(s.indices));
      out.parts.push_back(bytes_of(s.values));
    }
  }
  put<std::uint64_t>(out.tail, crc32_of(out.parts));
  out.tail += kEndMagic;
  out.parts.push_back(out.tail);
}

// One array of a version 3 file stored sparse: `size` entries, those not listed +0.0.
std::vector<double> read_sparse(Reader& fields, std::uint64_t size, std::uint64_t max_size,
                                std::size_t body, const std::string& origin,
                                const std::string& name) {
  if (size > max_size) {
    fail<DataError>("{}: corrupt checkpoint: array '{}' claims {} entries, more than the {} a "
                    "checkpoint may hold", origin, name, size, max_size);
  }
  const auto m = fields.get<std::uint64_t>("a sparse array's entry count");
  const auto index_bytes =
      fields.take(m > body ? body + 1 : m * sizeof(std::uint32_t), "a sparse array's indices");
  const auto value_bytes =
      fields.take(m * sizeof(double), "a sparse array's values");  // m <= body here
  std::vector<double> values;
  try {
    values.assign(size, 0.0);
  } catch (const std::bad_alloc&) {
    fail<DataError>("{}: array '{}' of {} entries does not fit in memory", origin, name, size);
  }
  std::int64_t last = -1;
  for (std::uint64_t i = 0; i < m; ++i) {
    std::uint32_t index = 0;
    std::memcpy(&index, index_bytes.data() + i * sizeof index, sizeof index);
    if (static_cast<std::int64_t>(index) <= last || index >= size) {
      fail<DataError>("{}: corrupt checkpoint: array '{}' lists index {} after {} (indices must "
                      "increase and stay below {})", origin, name, index, last, size);
    }
    last = index;
    std::memcpy(&values[index], value_bytes.data() + i * sizeof(double), sizeof(double));
  }
  return values;
}

}  // namespace

std::string encode(const Checkpoint& checkpoint) {
  Pieces pieces;
  pieces_of(checkpoint, pieces);
  std::string out;
  for (const auto part : pieces.parts) out += part;
  return out;
}

Checkpoint decode(std::string_view bytes, const std::string& origin,
                  std::uint64_t max_sparse_size) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    fail<DataError>("{}: not a disttrain checkpoint (the file does not start with the "
                    "checkpoint magic bytes)", origin);
  }
  Reader in(bytes, origin);
  (void)in.take(kMagic.size(), "the magic");
  const auto version = in.get<std::uint32_t>("the format version");
  if (version < 1 || version > kFormatVersion) {
    fail<DataError>("{}: checkpoint format version {}, this disttrain reads versions 1 to {}; "
                    "resume it with the disttrain that wrote it", origin, version, kFormatVersion);
  }
  // The end marker and the checksum first: a torn or damaged file is named as such, not by
  // whatever field its damage happens to fall on.
  constexpr std::size_t kTrailer = sizeof(std::uint64_t) + kEndMagic.size();
  if (bytes.size() < kMagic.size() + 8 + kTrailer ||
      bytes.substr(bytes.size() - kEndMagic.size()) != kEndMagic) {
    fail<DataError>("{}: truncated checkpoint: {} bytes without the end marker; it was not "
                    "written completely", origin, bytes.size());
  }
  const std::size_t body = bytes.size() - kTrailer;
  std::uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + body, sizeof stored);
  if (checksum(version, bytes.substr(0, body)) != stored) {
    fail<DataError>("{}: corrupt checkpoint: the checksum does not match its contents", origin);
  }
  Reader fields(bytes.substr(0, body), origin);
  (void)fields.take(kMagic.size() + 8, "the header");
  const auto manifest_size = fields.get<std::uint64_t>("the manifest length");
  const auto manifest_text = fields.take(manifest_size, "the manifest");
  const auto count = fields.get<std::uint64_t>("the array count");
  Checkpoint out;
  out.origin = origin;
  for (std::uint64_t a = 0; a < count; ++a) {
    const auto name_size = fields.get<std::uint64_t>("an array name length");
    const std::string name(fields.take(name_size, "an array name"));
    const auto n = fields.get<std::uint64_t>("an array length");
    if (version >= 3 && (n & kSparseBit) != 0) {
      out.arrays[name] = read_sparse(fields, n & ~kSparseBit, max_sparse_size, body, origin, name);
      continue;
    }
    const auto data = fields.take(n > body ? body + 1 : n * sizeof(double), "an array");
    std::vector<double> values(n);
    if (!data.empty()) std::memcpy(values.data(), data.data(), data.size());  // never a null source
    out.arrays[name] = std::move(values);
  }
  if (fields.pos() != body) {
    fail<DataError>("{}: corrupt checkpoint: {} bytes after the last array", origin,
                    body - fields.pos());
  }
  try {
    out.manifest = nlohmann::json::parse(manifest_text);
  } catch (const nlohmann::json::exception& e) {
    fail<DataError>("{}: corrupt checkpoint: the manifest is not JSON ({})", origin, e.what());
  }
  if (!out.manifest.is_object() || !out.manifest.contains("step") ||
      !out.manifest["step"].is_number_unsigned()) {
    fail<DataError>("{}: corrupt checkpoint: the manifest has no step count", origin);
  }
  return out;
}

ArrayBuilder::ArrayBuilder(std::string name, std::uint64_t size) : name_(std::move(name)) {
  s_.size = size;
  sparse_ = size >= kSparseFrom && size <= kMaxSparseSize;
  if (sparse_) {
    s_.indices.reserve(size / 3 + 1);  // capacity only: the pages are touched as they fill
    s_.values.reserve(size / 3 + 1);
  } else {
    dense_.reserve(size);
  }
}

void ArrayBuilder::add(std::span<const double> piece) {
  if (piece.size() > s_.size - at_) {
    fail<TrainingError>("checkpoint array '{}' is given more than its {} entries", name_, s_.size);
  }
  if (!sparse_) {
    dense_.insert(dense_.end(), piece.begin(), piece.end());
    at_ += piece.size();
    return;
  }
  // The entries with nonzero bits (past a third of the array, dense: densify_if_full). Eight values
  // at a time: a run of zeros (most of a wide sparse model, checkpointed every 100 steps by
  // default) costs one test instead of a branch a value.
  const double* v = piece.data();
  const std::size_t n = piece.size();
  const auto take = [&](std::size_t j) {
    if (std::bit_cast<std::uint64_t>(v[j]) != 0) {
      s_.indices.push_back(static_cast<std::uint32_t>(at_ + j));
      s_.values.push_back(v[j]);
    }
  };
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t any = 0;
    for (std::size_t j = 0; j < 8; ++j) any |= std::bit_cast<std::uint64_t>(v[i + j]);
    if (any == 0) continue;
    for (std::size_t j = 0; j < 8; ++j) take(i + j);
  }
  for (; i < n; ++i) take(i);
  at_ += n;
  densify_if_full();
}

void ArrayBuilder::add_at(const double* first, std::size_t count, std::size_t stride,
                          std::span<const std::uint32_t> at) {
  if (!sparse_ || count > s_.size - at_) {  // dense (every entry), or the error
    if (stride == 1) {
      add(std::span<const double>(first, count));
      return;
    }
    std::vector<double> piece(count);
    for (std::size_t j = 0; j < count; ++j) piece[j] = first[j * stride];
    add(piece);
    return;
  }
  // `at` is ascending but far apart in a wide model (a few hundred bytes between two keys at
  // 2^24: beyond the hardware prefetcher, a cache miss a key), so each key's value is fetched
  // kAtAhead keys early; and the entries' room is made once (at most one a key of `at`, and
  // never more than densify_if_full's third of the array) instead of by doubling.
  constexpr std::size_t kAtAhead = 32;
  const std::size_t room = s_.indices.size() + std::min<std::size_t>(at.size(), s_.size / 3 + 1);
  s_.indices.reserve(room);
  s_.values.reserve(room);
  const double* v = first;
  for (std::size_t i = 0; i < at.size(); ++i) {
    if (i + kAtAhead < at.size()) __builtin_prefetch(v + at[i + kAtAhead] * stride, 0, 1);
    const std::uint32_t j = at[i];
    const double value = v[j * stride];
    if (std::bit_cast<std::uint64_t>(value) != 0) {
      s_.indices.push_back(static_cast<std::uint32_t>(at_ + j));
      s_.values.push_back(value);
    }
  }
  at_ += count;
  densify_if_full();
}

void ArrayBuilder::densify_if_full() {
  // Past a third of the array: dense from here on.
  if (s_.indices.size() <= s_.size / 3) return;
  dense_.reserve(s_.size);
  dense_.assign(at_, 0.0);
  for (std::size_t i = 0; i < s_.indices.size(); ++i) dense_[s_.indices[i]] = s_.values[i];
  s_.indices = {};
  s_.values = {};
  sparse_ = false;
}

void ArrayBuilder::finish(Checkpoint& out) {
  const std::uint64_t size = s_.size;
  if (at_ != size) {
    fail<TrainingError>("checkpoint array '{}' has {} of its {} entries", name_, at_, size);
  }
  out.arrays.erase(name_);
  out.sparse.erase(name_);
  if (sparse_) {
    out.sparse[name_] = std::move(s_);
  } else {
    out.arrays[name_] = std::move(dense_);
  }
}

void put(Checkpoint& out, const std::string& name,
         std::span<const std::span<const double>> pieces) {
  std::uint64_t size = 0;
  for (const auto piece : pieces) size += piece.size();
  ArrayBuilder array(name, size);
  for (const auto piece : pieces) array.add(piece);
  array.finish(out);
}

std::filesystem::path file_for(const std::filesystem::path& dir, std::uint64_t step) {
  return dir / fmt::format("{}{:012}{}", kPrefix, step, kSuffix);
}

std::vector<std::filesystem::path> list(const std::filesystem::path& dir) {
  std::vector<std::pair<std::uint64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (const auto step = step_of(entry.path())) found.emplace_back(*step, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

void sweep(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with(".step-") && name.find(".ckpt.tmp.") != std::string::npos) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

std::filesystem::path write(const std::filesystem::path& dir, const Checkpoint& checkpoint,
                            std::size_t keep) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail<IoError>("cannot create the checkpoint folder {}: {}", dir.string(), ec.message());
  sweep(dir);
  const auto path = file_for(dir, checkpoint.step());
  Pieces pieces;
  pieces_of(checkpoint, pieces);
  files::write_atomic(path, pieces.parts);
  // Only now that the new file is durable may the older ones go.
  const auto all = list(dir);
  if (all.size() > keep) {
    for (std::size_t i = 0; i + keep < all.size(); ++i) {
      if (all[i] != path) std::filesystem::remove(all[i], ec);
    }
  }
  return path;
}

std::optional<Found> load_latest(const std::filesystem::path& dir,
                                 std::vector<std::string>* rejected) {
  auto files = list(dir);
  std::vector<std::string> skipped;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    try {
      auto checkpoint = decode(files::read_all(*it), it->string());
      const auto expected = step_of(*it);
      if (expected != checkpoint.step()) {
        fail<DataError>("{}: the file name says step {} but it holds step {}", it->string(),
                        *expected, checkpoint.step());
      }
      return Found{std::move(checkpoint), *it, std::move(skipped)};
    } catch (const Error& e) {
      skipped.push_back(e.what());
    }
  }
  if (rejected != nullptr) *rejected = std::move(skipped);
  return std::nullopt;
}

}  // namespace dt::checkpoint
