// libFuzzer harness: an .npy or .npz file as `data.path` (or `data.labels`, or predict's data).
// The readers take a path, so the input is held in an in-memory file (MemoryFile) and read by
// its /proc path.
//
// What the product does with it: tells its format by content (format_of); reads it as an .npy
// (read_npy_header: the magic, the version, the header's dict, the shape checked against the
// file's size), describes its columns (describe_npy) and loads its rows (load_shard, a few rows
// at a time as predict reads them); and unpacks it as an .npz (unpack_npz: the zip's central
// directory, zip64 fields, stored and deflated members) into a private folder, whose arrays are
// then read as .npy files in turn.

#include "base/files.hpp"
#include "core/data/dataset.hpp"
#include "core/data/npy.hpp"
#include "tests/fuzz/harness.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace {

namespace fs = std::filesystem;

dt::fuzz::MemoryFile& file() {
  static dt::fuzz::MemoryFile f;
  return f;
}

const fs::path& folder() {
  static dt::files::TempDir dir("disttrain-fuzz-npz-");
  return dir.path();
}

// An .npy as data.path: its header, its columns, and every row (the file holds them all: the
// header was checked against its size, so this reads at most the input's bytes).
void read_array(const fs::path& path) {
  dt::fuzz::refusal_is_fine([&] {
    const auto array = dt::data::read_npy_header(path);
    dt::fuzz::expect(array.cols > 0 && array.item > 0, "a header with a shape and a dtype");
    dt::fuzz::expect(array.data_offset + array.rows * array.row_bytes() <= fs::file_size(path),
                     "the rows the header promises are in the file");
    dt::config::Config config;
    config.data.path = path;
    config.data.format = dt::config::DataFormat::kNpy;
    const auto source = dt::data::describe_npy(config.data);
    for (std::uint64_t first = 0; first < source.rows; first += 3) {
      const std::uint64_t n = std::min<std::uint64_t>(3, source.rows - first);
      const auto shard = dt::data::load_shard(config, source, {dt::data::Segment{first, n, 0, 0}},
                                              dt::data::LabelKind::kCategorical);
      dt::fuzz::expect(static_cast<std::uint64_t>(shard.x.rows()) == n, "every row loaded");
    }
  });
}

void one(std::string_view input) {
  const fs::path path = file().hold(input);
  dt::fuzz::refusal_is_fine([&] { (void)dt::data::format_of(path, dt::config::DataFormat::kAuto, "data", false); });
  read_array(path);
  dt::fuzz::refusal_is_fine([&] {
    const auto [x, y] = dt::data::unpack_npz(path, "x", "y", false, folder());
    read_array(x);
    if (!y.empty()) read_array(y);
  });
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(folder(), ignored)) fs::remove(entry.path(), ignored);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dt::fuzz::refusal_is_fine([&] { one(dt::fuzz::text_of(data, size)); });
  return 0;
}
