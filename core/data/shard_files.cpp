// Strategy files: one CSV (or .npy array, or LIBSVM file) per worker (federated clients). The files are indexed and checked to
// agree before any worker starts, so that a client with a different schema fails the run with
// exit 2 instead of a worker failing mid-setup.

#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"
#include "core/data/non_iid.hpp"
#include "core/data/npy.hpp"
#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dt::data {
namespace {

// What differs between two headers, for the message: missing and extra columns, or the first
// column in a different place.
std::string header_difference(const std::vector<std::string>& want,
                              const std::vector<std::string>& got) {
  std::vector<std::string> missing;
  std::vector<std::string> extra;
  for (const auto& c : want) {
    if (std::find(got.begin(), got.end(), c) == got.end()) missing.push_back("'" + c + "'");
  }
  for (const auto& c : got) {
    if (std::find(want.begin(), want.end(), c) == want.end()) extra.push_back("'" + c + "'");
  }
  if (!missing.empty() || !extra.empty()) {
    std::string out;
    if (!missing.empty()) out += fmt::format("it lacks {}", fmt::join(missing, ", "));
    if (!extra.empty()) {
      out += fmt::format("{}it has {} too", out.empty() ? "" : " and ", fmt::join(extra, ", "));
    }
    if (want.size() != got.size()) {
      out += fmt::format(" ({} columns, not {})", got.size(), want.size());
    }
    return out;
  }
  if (want.size() != got.size()) {  // the same names, one of them twice
    return fmt::format("it has {} columns, not {} (a column name repeats)", got.size(), want.size());
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] != got[i]) {
      return fmt::format("column {} is '{}' where the first file has '{}' (same columns, "
                         "another order)",
                         i + 1, got[i], want[i]);
    }
  }
  return "the headers differ";
}

// Each file CSV, or each an .npy (with its labels as a column), as the first one is.
void check_format(const std::vector<std::filesystem::path>& files, std::size_t k,
                  config::DataFormat format) {
  using config::DataFormat;
  if (format == DataFormat::kNpz) {
    fail<DataError>("shards.files {}: strategy files reads CSV, .npy or LIBSVM files, not an "
                    ".npz; save each worker's rows as one array (numpy.save) or CSV",
                    files[k].string());
  }
  // data.labels is refused with strategy files by the config itself: each array's labels are a
  // column (data.label names it; default the last).
  const auto first = k > 0 ? format_of(files[0], DataFormat::kAuto, "shards.files") : format;
  if (format != first) {
    fail<DataError>("shards.files {}: the first file, {}, is {}; give every worker the same kind "
                    "of file", files[k].string(), files[0].string(),
                    first == DataFormat::kNpy ? "an .npy array"
                    : first == DataFormat::kLibsvm ? "LIBSVM text" : "CSV");
  }
}

// The rows of the .npy `file`, which must have the first file's columns (`columns` of them).
std::uint64_t same_array_width(const std::filesystem::path& file, const std::filesystem::path& first,
                               std::size_t columns) {
  const NpyArray array = read_npy_header(file);
  if (array.cols != columns || array.one_d) {
    fail<DataError>("{}: {} columns, where {} (shards.files[0]) has {}; every array of "
                    "shards.files needs the same columns in the same order",
                    file.string(), array.cols, first.string(), columns);
  }
  return array.rows;
}

// LIBSVM files: each was described alone (its own index base and largest index); every
// worker must see the same features, so all take the lowest base and the highest index of any
// (a client whose rows never use the last features still has them, as zeros).
void common_libsvm_width(std::vector<SourceInfo>& parts) {
  const auto number = [](const std::string& name) -> std::uint64_t { return std::stoull(name.substr(1)); };
  std::uint64_t base = UINT64_MAX, last = 0;
  for (const auto& p : parts) {
    base = std::min(base, number(p.features.front()));
    last = std::max(last, number(p.features.back()));
  }
  std::vector<std::string> features;
  for (std::uint64_t i = base; i <= last; ++i) features.push_back(fmt::format("f{}", i));
  for (auto& p : parts) {
    p.features = features;
    p.columns = features;
    p.columns.push_back(p.label);
    p.label_index = features.size();
  }
}

}  // namespace

std::vector<SourceInfo> describe_files(const config::Config& config) {
  const auto& files = config.shards.files;
  if (files.empty()) {
    fail<DataError>("shards.strategy files needs shards.files: a list of CSV (or .npy) files, "
                    "one per worker");
  }
  if (config.data.synthetic) {
    fail<DataError>("shards.strategy files reads shards.files; remove data.synthetic");
  }
  if (static_cast<std::size_t>(config.shards.count) != files.size()) {
    fail<DataError>("shards.count is {} but shards.files lists {} files; with strategy files each "
                    "worker trains on one file",
                    config.shards.count, files.size());
  }
  std::vector<SourceInfo> out;
  bool libsvm = false;
  out.reserve(files.size());
  for (std::size_t k = 0; k < files.size(); ++k) {
    // The first file is described like data.path (label lookup, UTF-8 names); the others must
    // have exactly its header.
    const auto format = format_of(files[k], config::DataFormat::kAuto, "shards.files");
    check_format(files, k, format);
    config::Config one = config;
    one.data.path = files[k];
    one.data.synthetic.reset();
    libsvm = format == config::DataFormat::kLibsvm;
    if (libsvm) {  // each indexed; the widths made one below
      one.data.format = format;
      out.push_back(describe_source(one));
      out.back().file = files[k];
      continue;
    }
    if (k == 0) {
      out.push_back(describe_source(one));
    } else {
      SourceInfo info = out.front();
      if (format == config::DataFormat::kNpy) {
        info.rows = same_array_width(files[k], files[0], info.columns.size());
        out.push_back(std::move(info));
        out.back().file = files[k];
        continue;
      }
      info.csv = index_csv(files[k], 1, std::uint64_t{64} << 20, config.data.delimiter);
      info.delimiter = info.csv->delimiter;
      info.rows = info.csv->rows();
      if (info.csv->columns != out.front().columns) {
        fail<DataError>("{}:1: the header does not match {} (shards.files[0]): {}; every file of "
                        "shards.files needs the same columns in the same order",
                        files[k].string(), files[0].string(),
                        header_difference(out.front().columns, info.csv->columns));
      }
      out.push_back(std::move(info));
    }
    out.back().file = files[k];
  }
  if (libsvm) common_libsvm_width(out);  // check_format made every file the first one's kind
  return out;
}

std::vector<std::uint64_t> first_rows(const std::vector<SourceInfo>& parts) {
  std::vector<std::uint64_t> first;
  std::uint64_t total = 0;
  for (const auto& p : parts) {
    first.push_back(total);
    total += p.rows;
  }
  return first;
}

}  // namespace dt::data
