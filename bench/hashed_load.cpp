// Loading a hashed click log (data.hash) into sparse rows, beside loading a plain numeric CSV,
// in one pass; and `gen clicks`'s row generator. Built only when asked (bench/README.md):
//
//   cmake --build --preset release --target bench_hashed_load
//   build/release/bench/bench_hashed_load [--rows 1000000] [--reps 5] [--dir DIR] [--out FILE]
//
// It writes two files into DIR (default $TMPDIR): `clicks.csv`, the rows of `disttrain gen
// clicks --rows N` (39 fields; configs/clicks.yaml's layout: 2^22 buckets, the cross of C2 and
// C3, label click), and `plain.csv`, as many bytes of `disttrain gen linear --features 100`
// rows. Each is indexed once (describe_source, as the coordinator does), then every rep loads all
// rows (load_shard, a worker's load) of: the plain CSV (the dense path), the click log (fast
// path) and the click log through the general record parser only (the loader before the fast
// path; its CSR is checked equal). Rates are MB of CSV per second of this thread's CPU time
// (other processes' time slices left out, so a busy machine disturbs the figures less); the
// ratios are taken within each rep, and medians printed. `gen clicks` is timed the same way
// (click_rows, no output). Prints a table and writes JSON (bench/results/hashed_load.json).

#include "core/data/clicks.hpp"
#include "core/data/dataset.hpp"
#include "core/data/hashed_csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace {

using dt::data::LabelKind;

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::uint64_t write_clicks(const std::filesystem::path& path, std::uint64_t rows) {
  std::ofstream out(path, std::ios::binary);
  std::string text = dt::data::click_header(39);
  out << text;
  const dt::data::ClickSpec spec{39, 1};
  for (std::uint64_t first = 0; first < rows; first += 8192) {
    text.clear();
    dt::data::click_rows(spec, first, std::min<std::uint64_t>(8192, rows - first), text);
    out << text;
  }
  out.flush();
  return std::filesystem::file_size(path);
}

// Rows of `gen linear --features 100` (the same formatting) up to `bytes`.
void write_plain(const std::filesystem::path& path, std::uint64_t bytes) {
  dt::config::SyntheticConfig spec;
  spec.kind = dt::config::SyntheticKind::kLinear;
  spec.features = 100;
  spec.rows = 1 << 30;
  std::ofstream out(path, std::ios::binary);
  std::string text = fmt::format("{}\n", fmt::join(dt::data::synthetic_columns(spec), ","));
  constexpr std::int64_t kChunk = 1024;
  dt::data::RowMatrix x(kChunk, spec.features);
  Eigen::VectorXd y(kChunk);
  std::uint64_t written = 0;
  for (std::uint64_t first = 0; written < bytes; first += kChunk) {
    dt::data::synthesize(spec, 1, first, kChunk, x, y);
    for (std::int64_t i = 0; i < kChunk; ++i) {
      for (int j = 0; j < spec.features; ++j) fmt::format_to(std::back_inserter(text), "{},", x(i, j));
      fmt::format_to(std::back_inserter(text), "{}\n", y(i));
    }
    out << text;
    written += text.size();
    text.clear();
  }
}

std::vector<dt::data::Segment> every_row(const dt::data::SourceInfo& source) {
  std::vector<std::uint64_t> rows(source.rows);
  std::iota(rows.begin(), rows.end(), std::uint64_t{0});
  return dt::data::to_segments(rows, source.csv);
}

// load_sparse_shard's set-up, then the loader with the fast path on or off.
dt::data::Shard load_hashed(const dt::data::SourceInfo& source,
                            const std::vector<dt::data::Segment>& segments, bool fast,
                            std::uint64_t& fast_rows) {
  dt::data::Shard shard;
  shard.x.resize(static_cast<Eigen::Index>(source.rows), 0);
  shard.y = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(source.rows));
  shard.sparse.emplace();
  shard.sparse->width = source.sparse->width;
  shard.sparse->row_start.reserve(source.rows + 1);
  fast_rows = dt::data::load_sparse_csv(source.csv->path, &*source.csv, source, segments, shard,
                                  LabelKind::kBinary, dt::config::Missing::kError, fast);
  shard.sparse->shrink();
  return shard;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t rows = 1'000'000;
  int reps = 5;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  std::string out_path = "bench/results/hashed_load.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rows") rows = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--dir") dir = argv[i + 1];
    else if (a == "--out") out_path = argv[i + 1];
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  const auto clicks = dir / "bench_hashed_clicks.csv";
  const auto plain = dir / "bench_hashed_plain.csv";
  const std::uint64_t click_bytes = write_clicks(clicks, rows);
  write_plain(plain, click_bytes);
  const std::uint64_t plain_bytes = std::filesystem::file_size(plain);

  dt::config::Config hashed;
  hashed.data.path = clicks;
  hashed.data.format = dt::config::DataFormat::kCsv;
  hashed.data.label = std::optional<std::string>("click");
  std::vector<std::string> columns;
  for (int f = 1; f <= 39; ++f) columns.push_back(fmt::format("C{}", f));
  hashed.data.hash = dt::config::HashConfig{22, columns, {{"C2", "C3"}}};
  const auto hashed_source = dt::data::describe_source(hashed);
  const auto hashed_segments = every_row(hashed_source);

  dt::config::Config dense;
  dense.data.path = plain;
  dense.data.label = std::optional<std::string>("y");
  const auto dense_source = dt::data::describe_source(dense);
  const auto dense_segments = every_row(dense_source);

  const auto rate = [](std::uint64_t bytes, double seconds) { return bytes / seconds / 1e6; };
  std::vector<double> plain_rate, fast_rate, general_rate, gen_rate, fast_ratio, general_ratio;
  bool same = true;
  std::uint64_t fast_rows = 0, general_fast_rows = 0;
  for (int rep = 0; rep < reps; ++rep) {
    double t = cpu_seconds();
    {
      const auto shard = dt::data::load_shard(dense, dense_source, dense_segments, LabelKind::kNumeric);
    }
    plain_rate.push_back(rate(plain_bytes, cpu_seconds() - t));
    t = cpu_seconds();
    const auto fast = load_hashed(hashed_source, hashed_segments, true, fast_rows);
    fast_rate.push_back(rate(click_bytes, cpu_seconds() - t));
    t = cpu_seconds();
    const auto general = load_hashed(hashed_source, hashed_segments, false, general_fast_rows);
    general_rate.push_back(rate(click_bytes, cpu_seconds() - t));
    same = same && fast.sparse->keys == general.sparse->keys &&
           fast.sparse->values == general.sparse->values &&
           fast.sparse->row_start == general.sparse->row_start && fast.y == general.y;
    t = cpu_seconds();
    std::string text;
    const dt::data::ClickSpec spec{39, 1};
    std::uint64_t generated = 0;
    for (std::uint64_t first = 0; first < rows; first += 8192) {
      text.clear();
      dt::data::click_rows(spec, first, std::min<std::uint64_t>(8192, rows - first), text);
      generated += text.size();
    }
    gen_rate.push_back(rate(generated, cpu_seconds() - t));
    fast_ratio.push_back(fast_rate.back() / plain_rate.back());
    general_ratio.push_back(general_rate.back() / plain_rate.back());
  }
  std::filesystem::remove(clicks);
  std::filesystem::remove(plain);

  fmt::print("{} click rows ({:.0f} MB), plain CSV {:.0f} MB; {} reps, medians, MB/s of CPU time\n",
             rows, click_bytes / 1e6, plain_bytes / 1e6, reps);
  fmt::print("  plain CSV load (dense)          {:8.1f} MB/s\n", median(plain_rate));
  fmt::print("  hashed load, fast path          {:8.1f} MB/s  {:.2f}x the plain load\n",
             median(fast_rate), median(fast_ratio));
  fmt::print("  hashed load, general parser     {:8.1f} MB/s  {:.2f}x the plain load\n",
             median(general_rate), median(general_ratio));
  fmt::print("  gen clicks rows (click_rows)    {:8.1f} MB/s\n", median(gen_rate));
  fmt::print("  fast and general CSR {}; the fast path took {} of {} rows\n",
             same ? "identical" : "DIFFER", fast_rows, rows);
  std::ofstream json(out_path);
  if (json) {
    const auto list = [](const std::vector<double>& v) { return fmt::format("[{:.1f}]", fmt::join(v, ", ")); };
    json << fmt::format(
        "{{\"rows\": {}, \"click_bytes\": {}, \"plain_bytes\": {}, \"reps\": {},\n"
        " \"plain_mb_s\": {}, \"hashed_fast_mb_s\": {}, \"hashed_general_mb_s\": {},\n"
        " \"gen_clicks_mb_s\": {},\n \"median_fast_ratio\": {:.3f}, \"median_general_ratio\": {:.3f},"
        " \"identical\": {}}}\n",
        rows, click_bytes, plain_bytes, reps, list(plain_rate), list(fast_rate),
        list(general_rate), list(gen_rate), median(fast_ratio), median(general_ratio),
        same ? "true" : "false");
  }
  return same ? 0 : 1;
}
