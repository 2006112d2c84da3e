// check_while_decompressing (validate_stream.hpp): a CsvStream over the decompressor's thread,
// indexing as it reads.

#include "cli/commands/validate_stream.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "core/config/names.hpp"
#include "core/data/byte_stream.hpp"
#include "core/data/compressed.hpp"
#include "core/data/csv_stream.hpp"

#include <memory>
#include <unordered_map>

namespace dt::cli {
namespace {

namespace fs = std::filesystem;
using config::ShardStrategy;

// Whether the streamed check gives what the plain path gives for this config (the header says
// which), and the compression to undo; kNone where the plain path must check the data.
config::Compression streamable(const config::Config& config) {
  const auto& data = config.data;
  if (data.synthetic || data.path.empty() || data.path == "-") return config::Compression::kNone;
  const auto strategy = config.shards.strategy;
  if (!data.categorical.empty() || data.hash || data.sparse == config::SparseChoice::kOn ||
      data.missing == config::Missing::kMean || !data.labels.empty() ||
      strategy == ShardStrategy::kByLabel || strategy == ShardStrategy::kDirichlet ||
      strategy == ShardStrategy::kFiles) {
    return config::Compression::kNone;
  }
  const auto inner = data.path.stem().extension();  // x.csv.zst -> .csv
  if (data.format != config::DataFormat::kCsv &&
      !(data.format == config::DataFormat::kAuto && (inner == ".csv" || inner == ".tsv"))) {
    return config::Compression::kNone;
  }
  return data::compression_of(data.path, data.compression, "data.path");
}

StreamedData check_stream(const config::Config& config, config::Compression compression,
                          const fs::path& name, data::LabelKind kind) {
  const auto& path = config.data.path;
  auto bytes = std::make_unique<data::PeekedSource>(data::read_ahead(
      data::decompressing(data::open_bytes(path), compression, path), path));
  // A binary file named .csv (an .npy, an .npz) is the plain path's to tell apart.
  const auto head = bytes->head(6);
  if (head == std::string_view("\x93NUMPY", 6) || head.starts_with("PK")) {
    fail<DataError>("{}: not a CSV", path.string());
  }
  data::CsvStream csv(std::move(bytes), name, config.data.delimiter, /*index=*/true);
  // The source as make_plan will describe it, from the header alone (no rows yet).
  const auto source = data::describe_source(config, 1, &csv.index());
  StreamedData out;
  std::unordered_map<std::string, std::uint32_t> seen;
  // About 4 MiB of values a chunk, parsed as load_shard parses a shard's rows.
  const std::uint64_t chunk = std::max<std::uint64_t>(
      64, (std::uint64_t{4} << 20) / (8 * (source.features.size() + 1)));
  for (;;) {
    const auto shard = csv.next(source, chunk, kind, config.data.missing);
    const auto rows = static_cast<std::size_t>(shard.y.size());
    if (kind == data::LabelKind::kBinary) {
      for (std::size_t i = 0; i < rows; ++i) {
        out.labels.push_back(shard.y(static_cast<Eigen::Index>(i)) == 1.0 ? 1 : 0);
      }
    } else if (kind == data::LabelKind::kCategorical) {
      for (const auto& text : shard.raw_labels) {
        const auto [it, added] = seen.try_emplace(text, static_cast<std::uint32_t>(out.texts.size()));
        if (added) out.texts.push_back(text);
        out.labels.push_back(it->second);
      }
    }
    if (rows < chunk) break;
  }
  if (!csv.indexed()) fail<DataError>("{}: the index did not reach the end", path.string());
  out.index = csv.index();
  return out;
}

}  // namespace

std::vector<LabelTally> StreamedData::tallies(const roles::Plan& plan,
                                              data::LabelKind kind) const {
  const std::size_t width = kind == data::LabelKind::kBinary ? 2 : texts.size();
  std::vector<std::uint64_t> counts;
  const auto tally = [&](const auto& each_row) {
    LabelTally t;
    counts.assign(width, 0);
    each_row([&](std::uint64_t row) {
      ++t.rows;
      if (!labels.empty()) ++counts[labels[row]];
    });
    if (kind == data::LabelKind::kBinary) t.ones = counts[1];
    if (kind == data::LabelKind::kCategorical) {
      for (std::size_t id = 0; id < width; ++id) {
        if (counts[id] > 0) t.texts[texts[id]] += counts[id];
      }
    }
    return t;
  };
  std::vector<LabelTally> out;
  for (const auto& segments : plan.segments) {
    out.push_back(tally([&](const auto& add) {
      for (const auto& s : segments) {
        for (std::uint64_t row = s.first_row; row < s.first_row + s.count; ++row) add(row);
      }
    }));
  }
  out.push_back(tally([&](const auto& add) {
    for (const std::uint64_t row : plan.validation_rows) add(row);
  }));
  return out;
}

std::optional<StreamedData> check_while_decompressing(config::Config& config,
                                                      data::LabelKind kind) {
  try {
    const auto compression = streamable(config);
    if (compression == config::Compression::kNone) return std::nullopt;
    // Named as the plain path's copy is (x.csv.gz -> x.csv), beside the file: no such file is
    // made or read.
    const auto name = config.data.path.parent_path() / config.data.path.stem();
    auto streamed = check_stream(config, compression, name, kind);
    log::info("checked {} ({}) as it was decompressed: {} bytes, no copy written",
              config.data.path.string(), config::name_of(compression), streamed.index.file_size);
    config.data.path = name;
    config.data.format = config::DataFormat::kCsv;
    return streamed;
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    log::debug("checking the data as it is decompressed gave up ({}); checking a copy",
               e.what());
    return std::nullopt;
  }
}

}  // namespace dt::cli
