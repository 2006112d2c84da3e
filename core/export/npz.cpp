// model.json -> .npz: NumPy's format (a zip archive of .npy files, "stored" as numpy.savez
// writes it), with zlib's CRC-32. The .npy header follows format version 1.0: the magic, a
// little-endian header length, and a Python dict literal padded to a 64-byte boundary.

#include "core/export/export.hpp"

#include "base/error.hpp"
#include "core/config/names.hpp"
#include "core/models/model.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <bit>
#include <span>

static_assert(std::endian::native == std::endian::little,
              "the .npy headers say little-endian ('<f8'): a big-endian build would need swaps");

namespace dt::exporting {
namespace {

constexpr std::uint64_t kZipLimit = 0xFFFFFFFFu;  // sizes and offsets of a zip without ZIP64

void put16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v & 0xFF));
  out.push_back(static_cast<char>(v >> 8));
}
void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return "()";
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// The .npy bytes: header for `descr` and `shape`, then `data` (C order, little-endian).
std::string npy(const std::string& descr, const std::vector<std::int64_t>& shape,
                std::string_view data) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr,
                                 shape_text(shape));
  // magic (6) + version (2) + length (2) + dict + padding + '\n', a multiple of 64.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  put16(out, static_cast<std::uint16_t>(dict.size()));
  out += dict;
  out.append(data);
  return out;
}

std::string doubles(std::span<const double> values, const std::vector<std::int64_t>& shape) {
  return npy("<f8", shape,
             std::string_view(reinterpret_cast<const char*>(values.data()), values.size_bytes()));
}

// UTF-8 -> code points (a malformed byte becomes U+FFFD, as model.json's own reader does).
std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2
                            : (c >> 3) == 0x1E ? 3 : 4;  // 4: not a lead byte
    bool ok = extra < 4 && i + extra < s.size();
    char32_t cp = extra == 0 ? c : extra == 1 ? (c & 0x1F) : extra == 2 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; ok && k <= extra; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      ok = (d & 0xC0) == 0x80;
      cp = (cp << 6) | (d & 0x3F);
    }
    out.push_back(ok ? cp : char32_t{0xFFFD});
    i += ok ? 1 + extra : 1;
  }
  return out;
}

// Fixed-width unicode ('<U<width>', UTF-32LE), shape [n] or () for a single string.
std::string unicode(const std::vector<std::string>& values, bool scalar) {
  std::vector<std::vector<char32_t>> cps;
  std::size_t width = 1;
  for (const auto& v : values) {
    cps.push_back(code_points(v));
    width = std::max(width, cps.back().size());
  }
  std::string data;
  for (const auto& v : cps) {
    for (std::size_t i = 0; i < width; ++i) put32(data, i < v.size() ? v[i] : 0);
  }
  const std::vector<std::int64_t> shape =
      scalar ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{static_cast<std::int64_t>(values.size())};
  return npy(fmt::format("<U{}", width), shape, data);
}

class Zip {
 public:
  void add(const std::string& name, const std::string& content) {
    const std::string file = name + ".npy";
    if (content.size() > kZipLimit || out_.size() > kZipLimit) {
      fail<DataError>("array '{}' takes the archive past 4 GiB, more than a zip without ZIP64 "
                      "holds; export to ONNX, or read model.json directly",
                      name);
    }
    uLong sum = crc32(0L, Z_NULL, 0);
    for (std::size_t at = 0; at < content.size();) {  // crc32 takes a uInt length a call
      const std::size_t n = std::min<std::size_t>(content.size() - at, std::size_t{1} << 30);
      sum = crc32(sum, reinterpret_cast<const Bytef*>(content.data() + at), static_cast<uInt>(n));
      at += n;
    }
    Entry e{file, static_cast<std::uint32_t>(sum), static_cast<std::uint32_t>(content.size()),
            static_cast<std::uint32_t>(out_.size())};
    put32(out_, 0x04034b50);  // local file header
    put16(out_, 20);          // version needed: 2.0
    put16(out_, 0);           // flags
    put16(out_, 0);           // method: stored
    put16(out_, 0);           // time
    put16(out_, 0x21);        // date: 1980-01-01
    put32(out_, e.crc);
    put32(out_, e.size);
    put32(out_, e.size);
    put16(out_, static_cast<std::uint16_t>(file.size()));
    put16(out_, 0);
    out_ += file;
    out_ += content;
    entries_.push_back(std::move(e));
  }

  std::string finish() {
    const auto directory = static_cast<std::uint32_t>(out_.size());
    for (const auto& e : entries_) {
      put32(out_, 0x02014b50);  // central directory entry
      put16(out_, 20);          // made by: 2.0
      put16(out_, 20);
      put16(out_, 0);
      put16(out_, 0);
      put16(out_, 0);
      put16(out_, 0x21);
      put32(out_, e.crc);
      put32(out_, e.size);
      put32(out_, e.size);
      put16(out_, static_cast<std::uint16_t>(e.name.size()));
      put16(out_, 0);  // extra
      put16(out_, 0);  // comment
      put16(out_, 0);  // disk
      put16(out_, 0);  // internal attributes
      put32(out_, 0);  // external attributes
      put32(out_, e.offset);
      out_ += e.name;
    }
    if (out_.size() > kZipLimit) {
      fail<DataError>("the archive passes 4 GiB, more than a zip without ZIP64 holds");
    }
    const auto size = static_cast<std::uint32_t>(out_.size() - directory);
    put32(out_, 0x06054b50);  // end of central directory
    put16(out_, 0);
    put16(out_, 0);
    put16(out_, static_cast<std::uint16_t>(entries_.size()));
    put16(out_, static_cast<std::uint16_t>(entries_.size()));
    put32(out_, size);
    put32(out_, directory);
    put16(out_, 0);
    return std::move(out_);
  }

 private:
  struct Entry {
    std::string name;
    std::uint32_t crc = 0;
    std::uint32_t size = 0;
    std::uint32_t offset = 0;
  };
  std::string out_;
  std::vector<Entry> entries_;
};

}  // namespace

void refuse_sparse(const output::SavedModel& model, const char* format) {
  if (!model.sparse) return;
  fail<DataError>("export: this is a sparse model ({} keys, {} nonzero weights), which {} "
                  "export does not take: its inputs are keys made from raw rows (LIBSVM indices "
                  "or hashed CSV columns), not feature columns; use `disttrain predict` or "
                  "`disttrain eval` with it, or read model.json's nonzeros yourself "
                  "(docs/sparse.md)", model.sparse->width, model.weight_index.size(), format);
}

std::string to_npz(const output::SavedModel& saved) {
  refuse_sparse(saved, "npz");
  const auto model = models::make_model(saved.spec);
  const std::span<const double> all(saved.params);
  Zip zip;
  for (const auto& block : model->layout()) {
    zip.add(block.name, doubles(all.subspan(block.offset, block.size), block.shape));
  }
  const auto& n = saved.normalization;
  if (n.kind != config::Normalize::kNone) {
    const std::vector<std::int64_t> shape{static_cast<std::int64_t>(n.shift.size())};
    zip.add("normalization.shift", doubles(n.shift, shape));
    zip.add("normalization.scale", doubles(n.scale, shape));
  }
  if (!n.fill.empty()) {  // data.missing: NaN cells get these before the normalization
    zip.add("missing.fill", doubles(n.fill, {static_cast<std::int64_t>(n.fill.size())}));
  }
  zip.add("features", unicode(saved.features, false));
  if (model->task() != config::Task::kRegression) zip.add("classes", unicode(saved.classes, false));
  zip.add("label", unicode({saved.label}, true));
  if (!saved.categorical.empty()) {
    zip.add("categorical", unicode({output::categorical_json(saved.categorical).dump()}, true));
  }
  zip.add("model.type", unicode({config::name_of(saved.spec.config.type)}, true));
  zip.add("model.task", unicode({config::name_of(model->task())}, true));
  zip.add("normalization.kind", unicode({config::name_of(n.kind)}, true));
  if (saved.spec.config.type == config::ModelType::kMlp) {
    zip.add("model.activation", unicode({config::name_of(saved.spec.config.activation)}, true));
    std::vector<std::int64_t> hidden(saved.spec.config.hidden.begin(),
                                     saved.spec.config.hidden.end());
    zip.add("model.hidden",
            npy("<i8", {static_cast<std::int64_t>(hidden.size())},
                std::string_view(reinterpret_cast<const char*>(hidden.data()),
                                 hidden.size() * sizeof(std::int64_t))));
  }
  return zip.finish();
}

}  // namespace dt::exporting
