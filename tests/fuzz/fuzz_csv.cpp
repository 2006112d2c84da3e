// libFuzzer harness: a CSV as `data.path` (and predict's data file) is read. The readers take a
// path, so the input is held in an in-memory file (MemoryFile) and read by its /proc path.
//
// What a run does with it: the coordinator indexes the file and resolves the label column
// (describe_source), plans the validation rows and the shards; the workers load their segments
// (by byte offset, without the index, in pieces of a few rows as a streaming shard does) for
// each kind of label, compute column statistics and the normalization, and resolve classes.
// Also read record by record with the public CsvReader.

#include "core/data/dataset.hpp"
#include "tests/fuzz/harness.hpp"

#include <numeric>

namespace {

dt::fuzz::MemoryFile& file() {
  static dt::fuzz::MemoryFile f;
  return f;
}

void load(const dt::config::Config& config, const dt::data::SourceInfo& source,
          dt::data::LabelKind kind) {
  dt::fuzz::refusal_is_fine([&] {
    // The coordinator's view: the whole file, through the index.
    std::vector<std::uint64_t> rows(source.rows);
    std::iota(rows.begin(), rows.end(), std::uint64_t{0});
    const auto held_out = dt::data::validation_rows(source.rows, 0.25, 7);
    const auto all = dt::data::to_segments(rows, source.csv);
    auto shard = dt::data::load_shard(config, source, all, kind);
    dt::fuzz::expect(static_cast<std::uint64_t>(shard.x.rows()) == source.rows, "every row loaded");
    const auto stats = dt::data::column_stats(shard.x);
    for (const auto norm : {dt::config::Normalize::kStandard, dt::config::Normalize::kMinmax}) {
      const auto n = dt::data::make_normalization(norm, stats, source.features);
      auto x = shard.x;
      dt::data::apply(n, x);
    }
    if (kind == dt::data::LabelKind::kCategorical) {
      const auto classes = dt::data::resolve_classes(dt::data::distinct_labels(shard));
      dt::data::assign_classes(shard, classes);
    }
    // A worker's view: two shards without the index (byte offsets only), read in pieces.
    dt::data::SourceInfo worker = source;
    worker.csv.reset();
    const auto shards = dt::data::contiguous_segments(source.rows, held_out, 2, source.csv);
    for (const auto& segments : shards) {
      for (const auto& piece : dt::data::chunk_segments(segments, 2, source.csv, false)) {
        (void)dt::data::load_shard(config, worker, piece, kind);
      }
    }
  });
}

void one(std::string_view input) {
  dt::config::Config config;
  config.data.path = file().hold(input);
  dt::fuzz::refusal_is_fine([&] {
    dt::data::CsvReader reader(config.data.path, 0, 1);
    std::vector<dt::data::CsvField> fields;
    while (reader.next(fields)) {
    }
  });
  const auto source = dt::data::describe_source(config);
  for (const auto kind : {dt::data::LabelKind::kNumeric, dt::data::LabelKind::kBinary,
                          dt::data::LabelKind::kCategorical}) {
    load(config, source, kind);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dt::fuzz::refusal_is_fine([&] { one(dt::fuzz::text_of(data, size)); });
  return 0;
}
