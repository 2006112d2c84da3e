// libFuzzer harness: a LIBSVM file as `data.path` (and predict's data file) is read. The readers
// take a path, so the input is held in an in-memory file (MemoryFile) and read by its /proc path.
//
// Each line through the line parser (the layer a sparse loader reuses), with its properties:
// a parsed row has finite values and strictly increasing indices. Then what a run does: the
// coordinator indexes the file and describes it (auto index base, a small dense limit so that
// an index of millions is refused rather than allocated); the workers load their segments by
// byte offset, without the index, in pieces of a few rows, for each kind of label.

#include "core/data/dataset.hpp"
#include "core/data/libsvm.hpp"
#include "tests/fuzz/harness.hpp"

#include <cmath>
#include <numeric>

namespace {

dt::fuzz::MemoryFile& file() {
  static dt::fuzz::MemoryFile f;
  return f;
}

void lines(std::string_view input) {
  dt::data::LibsvmRow row;
  dt::data::LibsvmProblem problem;
  while (!input.empty()) {
    const auto nl = input.find('\n');
    const auto line = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
    const auto kind = dt::data::parse_libsvm_line(line, row, problem);
    if (kind == dt::data::LineKind::kError) {
      dt::fuzz::expect(problem.column >= 1 && problem.column <= line.size() + 1, "problem column in the line");
      continue;
    }
    if (kind != dt::data::LineKind::kRow) continue;
    dt::fuzz::expect(std::isfinite(row.label_value), "finite label");
    for (std::size_t i = 0; i < row.entries.size(); ++i) {
      dt::fuzz::expect(std::isfinite(row.entries[i].value), "finite value");
      dt::fuzz::expect(row.entries[i].index <= dt::data::kMaxLibsvmIndex, "index in range");
      dt::fuzz::expect(i == 0 || row.entries[i - 1].index < row.entries[i].index, "indices increase");
    }
  }
}

// Every row through the index, then a worker's pieces without it, for each kind of label.
void load(const dt::config::Config& config, const dt::data::SourceInfo& source) {
  for (const auto kind : {dt::data::LabelKind::kNumeric, dt::data::LabelKind::kBinary,
                          dt::data::LabelKind::kCategorical}) {
    dt::fuzz::refusal_is_fine([&] {
      std::vector<std::uint64_t> rows(source.rows);
      std::iota(rows.begin(), rows.end(), std::uint64_t{0});
      const auto shard = dt::data::load_shard(config, source, dt::data::to_segments(rows, source.csv), kind);
      dt::fuzz::expect(static_cast<std::uint64_t>(shard.x.rows()) == source.rows, "every row loaded");
      dt::data::SourceInfo worker = source;
      worker.csv.reset();
      const auto held_out = dt::data::validation_rows(source.rows, 0.25, 7);
      for (const auto& segments : dt::data::contiguous_segments(source.rows, held_out, 2, source.csv)) {
        for (const auto& piece : dt::data::chunk_segments(segments, 2, source.csv, false)) {
          const auto part = dt::data::load_shard(config, worker, piece, kind);
          for (Eigen::Index r = 0; r < part.x.rows(); ++r) {
            for (Eigen::Index c = 0; c < part.x.cols(); ++c) {
              dt::fuzz::expect(std::isfinite(part.x(r, c)), "finite features");
            }
          }
        }
      }
    });
  }
}

void one(std::string_view input) {
  lines(input);
  dt::config::Config config;
  config.data.path = file().hold(input);
  config.data.format = dt::config::DataFormat::kLibsvm;
  config.data.max_dense_gib = 1.0 / 1024;  // 1 MiB
  (void)dt::data::looks_like_libsvm(input, false);
  load(config, dt::data::describe_source(config));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dt::fuzz::refusal_is_fine([&] { one(dt::fuzz::text_of(data, size)); });
  return 0;
}
