// NumPy .npy headers and rows, and telling .npy, .npz and CSV apart (npy.hpp).

#include "core/data/npy.hpp"
#include "core/data/libsvm.hpp"
#include "core/data/dataset.hpp"
#include "core/data/data_file.hpp"
#include "base/error.hpp"
#include "core/config/names.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

namespace dt::data {
namespace {

constexpr std::string_view kNpyMagic{"\x93NUMPY", 6};
constexpr std::string_view kZipMagic{"PK\x03\x04", 4};
constexpr std::uint64_t kMaxColumns = std::uint64_t{1} << 22;

// The value of `key` in the header's dict literal, up to the next ',' or '}' (a tuple for
// 'shape' up to its ')'); empty when the key is absent.
std::string_view dict_value(std::string_view header, std::string_view key) {
  const auto at = header.find(fmt::format("'{}'", key));
  if (at == std::string_view::npos) return {};
  auto rest = header.substr(at + key.size() + 2);
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) return {};
  rest = rest.substr(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) return {};
  const auto end = rest.front() == '(' ? rest.find(')') + 1 : rest.find_first_of(",}");
  return rest.substr(0, std::min(end, rest.size()));
}

// "(1000, 101)" -> {1000, 101}; false for anything else.
bool parse_shape(std::string_view text, std::vector<std::uint64_t>& dims) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return false;
  text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    while (!text.empty() && (text.front() == ' ' || text.front() == ',')) text.remove_prefix(1);
    if (text.empty()) break;
    std::uint64_t v = 0;
    std::size_t n = 0;
    while (n < text.size() && text[n] >= '0' && text[n] <= '9') {
      v = v * 10 + static_cast<std::uint64_t>(text[n] - '0');
      ++n;
    }
    if (n == 0 || n > 15) return false;  // no file holds 10^15 rows: a larger number would wrap
    if (n < text.size() && text[n] == 'L') ++n;  // Python 2's long
    dims.push_back(v);
    text.remove_prefix(n);
  }
  return true;
}

template <class T>
void widen(const char* in, std::size_t n, double* out) {
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, in + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

std::string_view first_bytes(const std::filesystem::path& path, std::array<char, 8>& buf) {
  const detail::FileHandle file(path);
  const auto n = file.read_at(0, buf.data(), buf.size());
  return {buf.data(), n};
}

config::DataFormat content_format(std::string_view head) {
  if (head.starts_with(kNpyMagic)) return config::DataFormat::kNpy;
  if (head.starts_with(kZipMagic)) return config::DataFormat::kNpz;
  return config::DataFormat::kCsv;
}

const char* format_words(config::DataFormat f) {
  switch (f) {
    case config::DataFormat::kNpy: return "a NumPy .npy file";
    case config::DataFormat::kNpz: return "a zip (.npz) archive";
    case config::DataFormat::kLibsvm: return "LIBSVM sparse text (label index:value ...)";
    default: return "text (CSV)";
  }
}

}  // namespace

std::string NpyArray::dtype() const {
  switch (kind) {
    case 'f': return fmt::format("float{}", item * 8);
    case 'i': return fmt::format("int{}", item * 8);
    case 'u': return fmt::format("uint{}", item * 8);
    default: return "bool";
  }
}

NpyArray read_npy_header(const std::filesystem::path& path) {
  const std::string name = path.string();
  const detail::FileHandle file(path);
  std::array<char, 12> pre{};
  const auto got = file.read_at(0, pre.data(), pre.size());
  if (got < 10 || std::string_view(pre.data(), 6) != kNpyMagic) {
    fail<DataError>("{}: not a NumPy .npy file (it does not start with \\x93NUMPY); write it "
                    "with numpy.save, or set data.format to the file's format", name);
  }
  const auto major = static_cast<unsigned char>(pre[6]);
  if (major < 1 || major > 3) {
    fail<DataError>("{}: .npy format version {} is not supported (1 to 3 are); write it with "
                    "numpy.save", name, major);
  }
  const auto b = [&](int i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(pre[i])); };
  const std::uint32_t header_len = major == 1 ? b(8) | b(9) << 8
                                              : b(8) | b(9) << 8 | b(10) << 16 | b(11) << 24;
  const std::uint64_t start = major == 1 ? 10 : 12;
  if (header_len > (1U << 20) || start + header_len > file.size()) {
    fail<DataError>("{}: the .npy header is cut off ({} bytes in the file); the file is "
                    "truncated: write it again", name, file.size());
  }
  std::string header(header_len, '\0');
  (void)file.read_at(start, header.data(), header_len);

  NpyArray a;
  a.path = path;
  a.data_offset = start + header_len;
  const auto descr = dict_value(header, "descr");
  if (descr.size() < 4 || descr.front() != '\'' || descr.back() != '\'') {
    fail<DataError>("{}: the array's dtype {} is not a plain number type; save a float32 or "
                    "float64 array (a structured array is not read)", name, descr);
  }
  const auto code = descr.substr(1, descr.size() - 2);  // "<f8"
  if (code[0] == '>') {
    fail<DataError>("{}: the array is big-endian ({}); save it little-endian: "
                    "numpy.save(path, a.astype('<{}'))", name, code, code.substr(1));
  }
  a.kind = code[1];
  const auto size_text = code.substr(2);  // "8" of "<f8"; anything else is not a known size
  const auto [stop, ec] =
      std::from_chars(size_text.data(), size_text.data() + size_text.size(), a.item);
  if (ec != std::errc{} || stop != size_text.data() + size_text.size()) a.item = 0;
  const bool known = (code[0] == '<' || code[0] == '|' || code[0] == '=') &&
                     ((a.kind == 'f' && (a.item == 4 || a.item == 8)) ||
                      ((a.kind == 'i' || a.kind == 'u') &&
                       (a.item == 1 || a.item == 2 || a.item == 4 || a.item == 8)) ||
                      (a.kind == 'b' && a.item == 1));
  if (!known) {
    fail<DataError>("{}: the array's dtype '{}' is not read; save float32 or float64 (or "
                    "integers for labels): numpy.save(path, a.astype('float64'))", name, code);
  }
  if (dict_value(header, "fortran_order") != "False") {
    fail<DataError>("{}: the array is in Fortran (column-major) order; save it in C order: "
                    "numpy.save(path, numpy.ascontiguousarray(a))", name);
  }
  std::vector<std::uint64_t> dims;
  if (!parse_shape(dict_value(header, "shape"), dims) || dims.empty() || dims.size() > 2) {
    fail<DataError>("{}: the array's shape {} is not 1-D or 2-D (rows, columns); reshape it "
                    "to 2-D", name, dict_value(header, "shape"));
  }
  a.rows = dims[0];
  a.one_d = dims.size() == 1;
  a.cols = a.one_d ? 1 : dims[1];
  if (a.cols == 0) fail<DataError>("{}: the array has no columns (shape {})", name, dict_value(header, "shape"));
  if (a.cols > kMaxColumns) {  // each is named (x0, x1, ...): a corrupt header would fill memory
    fail<DataError>("{}: the array's shape {} has more than {} columns; if the header is not "
                    "corrupt, save fewer columns", name, dict_value(header, "shape"), kMaxColumns);
  }
  const std::uint64_t held = (file.size() - a.data_offset) / a.row_bytes();
  if (held < a.rows) {
    fail<DataError>("{}: the header says {} rows of {} {}, the file holds {} rows; the file is "
                    "truncated: write it again", name, a.rows, a.cols, a.dtype(), held);
  }
  return a;
}

NpyReader::NpyReader(NpyArray array)
    : array_(std::move(array)), file_(std::make_unique<detail::FileHandle>(array_.path)) {
  if (array_.kind == 'f' && array_.item == 8 && array_.data_offset % 8 == 0) {
    map_ = std::make_unique<detail::MappedFile>(file_->fd(), file_->size());
    if (!map_->ok()) map_.reset();
  }
}

NpyReader::~NpyReader() = default;

void NpyReader::short_file(std::uint64_t end) const {
  fail<DataError>("{}: the file ends before row {}; did it change after it was read?",
                  array_.path.string(), end);
}

const double* NpyReader::view(std::uint64_t first, std::uint64_t count) {
  if (!map_) return nullptr;
  const std::uint64_t from = array_.data_offset + first * array_.row_bytes();
  const std::uint64_t to = from + count * array_.row_bytes();
  // Mapped in before it is read: a file that shrank since its header was read is an error
  // here, not a SIGBUS at the first row past its end.
  if (to > from && !map_->populate(from, to)) short_file(first + count);
  return reinterpret_cast<const double*>(map_->data() + from);
}

void NpyReader::release(std::uint64_t first, std::uint64_t count) noexcept {
  if (!map_) return;
  // The pages the rows share with their neighbours too: a shard with held-out rows is read a
  // few rows at a time, and a page read again is mapped again from the page cache.
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t from = array_.data_offset + first * array_.row_bytes();
  const std::uint64_t to = from + count * array_.row_bytes();
  map_->drop(from - from % page, (to + page - 1) / page * page);
}

void NpyReader::read(std::uint64_t first, std::uint64_t count, double* out) {
  const NpyArray& a = array_;
  const detail::FileHandle& file = *file_;
  const std::uint64_t values = count * a.cols;
  const std::uint64_t offset = a.data_offset + first * a.row_bytes();
  if (a.kind == 'f' && a.item == 8) {  // the common case: straight into the rows
    const std::size_t bytes = values * 8;
    if (file.read_at(offset, reinterpret_cast<char*>(out), bytes) != bytes) {
      short_file(first + count);
    }
    return;
  }
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 16;  // values per read
  std::vector<char>& buf = buffer_;
  buf.resize(kChunk * a.item);
  for (std::uint64_t done = 0; done < values; done += kChunk) {
    const std::uint64_t n = std::min(kChunk, values - done);
    const std::size_t bytes = n * a.item;
    if (file.read_at(offset + done * a.item, buf.data(), bytes) != bytes) {
      short_file(first + count);
    }
    double* to = out + done;
    if (a.kind == 'f') {
      a.item == 4 ? widen<float>(buf.data(), n, to) : widen<double>(buf.data(), n, to);
    } else if (a.kind == 'i') {
      switch (a.item) {
        case 1: widen<std::int8_t>(buf.data(), n, to); break;
        case 2: widen<std::int16_t>(buf.data(), n, to); break;
        case 4: widen<std::int32_t>(buf.data(), n, to); break;
        default: widen<std::int64_t>(buf.data(), n, to); break;
      }
    } else {  // unsigned and bool
      switch (a.item) {
        case 1: widen<std::uint8_t>(buf.data(), n, to); break;
        case 2: widen<std::uint16_t>(buf.data(), n, to); break;
        case 4: widen<std::uint32_t>(buf.data(), n, to); break;
        default: widen<std::uint64_t>(buf.data(), n, to); break;
      }
    }
  }
}

config::DataFormat format_of(const std::filesystem::path& path, config::DataFormat wanted,
                             const char* what, bool named) {
  using config::DataFormat;
  std::array<char, 8> buf{};
  auto found = content_format(first_bytes(path, buf));
  const bool libsvm_name = named && libsvm_extension(path);
  if (found == DataFormat::kCsv &&
      libsvm_content(path, wanted == DataFormat::kLibsvm || (wanted == DataFormat::kAuto && libsvm_name))) {
    found = DataFormat::kLibsvm;
  }
  const std::string name = path.string();
  if (wanted != DataFormat::kAuto) {
    if (found != wanted) {
      fail<DataError>("{} {}: data.format is {}, but the file looks like {}; set data.format: {} "
                      "(or auto)", what, name, config::name_of(wanted), format_words(found),
                      config::name_of(found));
    }
    return wanted;
  }
  if (!named) return found;
  const auto ext = path.extension().string();
  const DataFormat by_name = ext == ".npy"   ? DataFormat::kNpy
                             : ext == ".npz" ? DataFormat::kNpz
                             : libsvm_name   ? DataFormat::kLibsvm
                                             : DataFormat::kCsv;
  if (by_name == found) return found;
  // LIBSVM files are often named .txt, .t or nothing at all: their content decides.
  if (found == DataFormat::kLibsvm && ext != ".csv" && ext != ".tsv") return found;
  const auto stem = path.parent_path() / path.stem();
  const auto proper = found == DataFormat::kCsv ? stem.string() + ".csv"
                                                : fmt::format("{}.{}", stem.string(),
                                                              config::name_of(found));
  fail<DataError>("{} {}: the name says {}, but the file starts like {}: name it {}, or set "
                  "data.format: {}", what, name, format_words(by_name), format_words(found),
                  proper, config::name_of(found));
}

bool reads_npy(const config::DataConfig& data) {
  return data.format == config::DataFormat::kNpy ||
         (data.format == config::DataFormat::kAuto && data.path.extension() == ".npy");
}

SourceInfo describe_npy(const config::DataConfig& data) {
  const std::string name = data.path.string();
  const NpyArray x = read_npy_header(data.path);
  SourceInfo info;
  info.rows = x.rows;
  for (std::uint64_t c = 0; c < x.cols; ++c) info.columns.push_back(fmt::format("x{}", c));
  info.label = std::string{"y"};  // not = "y": GCC 12 -Wrestrict false positive (PR105329)
  if (!data.labels.empty()) {
    if (x.one_d) {
      fail<DataError>("{}: the features array is 1-D; save it as (rows, columns): "
                      "a.reshape(-1, 1)", name);
    }
    const NpyArray y = read_npy_header(data.labels);
    if (y.cols != 1) {
      fail<DataError>("{}: data.labels must be a 1-D array (one label per row), not {} columns",
                      data.labels.string(), y.cols);
    }
    if (y.rows != x.rows) {
      fail<DataError>("{}: {} labels, but data.path {} has {} rows; give one label per row",
                      data.labels.string(), y.rows, name, x.rows);
    }
    if (data.label && *data.label != "y") {
      fail<DataError>("{}: data.label '{}' with data.labels: the labels are the file's; remove "
                      "data.label", name, *data.label);
    }
    info.features = info.columns;
    info.columns.push_back("y");
    info.label_index = info.columns.size() - 1;
    return info;
  }
  std::size_t label = info.columns.size() - 1;
  if (data.label && *data.label != "y") {
    std::string_view text = *data.label;
    if (text.starts_with('x')) text.remove_prefix(1);
    std::size_t index = 0;
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
    if (digits) index = std::stoul(std::string(text));
    if (!digits || index >= info.columns.size()) {
      fail<DataError>("{}: data.label '{}' is not a column of the array; give y (the last "
                      "column), xJ or an index J from 0 to {}", name, *data.label,
                      info.columns.size() - 1);
    }
    label = index;
  }
  if (info.columns.size() < 2) {
    fail<DataError>("{}: the array has one column, the label; add feature columns, or give the "
                    "labels as data.labels: y.npy", name);
  }
  info.columns[label] = std::string{"y"};
  info.label_index = label;
  for (std::size_t c = 0; c < info.columns.size(); ++c) {
    if (c != label) info.features.push_back(info.columns[c]);
  }
  return info;
}

}  // namespace dt::data
