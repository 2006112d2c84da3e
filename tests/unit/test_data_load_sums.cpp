// The CSV loader's first statistics pass (Shard::sums, row_sums.hpp) and the thread that
// faults a shard's fresh pages in beside the parse (memory::Prefaulter): the same statistics,
// bit for bit, as column_stats's own passes, and the same rows.

#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"
#include "base/prefault.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace {

using dt::test::CsvFile;

// Every figure's bits: a sum taken in another order, or a row left out, changes some of them.
std::string bits(const dt::data::ColumnStats& s) {
  std::string out = fmt::format("count {} present {}\n", s.count, fmt::join(s.present, " "));
  for (const auto* v : {&s.mean, &s.m2, &s.min, &s.max}) {
    for (const double d : *v) out += fmt::format("{:016x} ", std::bit_cast<std::uint64_t>(d));
    out += "\n";
  }
  return out;
}

dt::data::Shard load(const CsvFile& file, const std::vector<std::uint64_t>& rows,
                     dt::config::Missing missing) {
  dt::config::Config config;
  config.data.path = file.path;
  config.data.missing = missing;
  config.data.label = std::optional<std::string>("y");
  const auto source = dt::data::describe_source(config);
  return dt::data::load_shard(config, source, dt::data::to_segments(rows, source.csv),
                              dt::data::LabelKind::kNumeric);
}

// Fresh anonymous memory, and how many of its pages are in memory (mincore).
struct Mapping {
  std::size_t bytes;
  unsigned char* data;
  explicit Mapping(std::size_t n)
      : bytes(n),
        data(static_cast<unsigned char*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE,
                                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {
    REQUIRE(static_cast<void*>(data) != MAP_FAILED);
  }
  ~Mapping() { ::munmap(data, bytes); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  [[nodiscard]] std::size_t pages() const { return bytes / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
  [[nodiscard]] std::size_t resident() const {
    std::vector<unsigned char> in(pages());
    REQUIRE(::mincore(data, bytes, in.data()) == 0);
    return static_cast<std::size_t>(
        std::count_if(in.begin(), in.end(), [](unsigned char c) { return (c & 1) != 0; }));
  }
};

}  // namespace

TEST_CASE("csv load: the loader's first statistics pass gives column_stats's bits") {
  // Values of every magnitude (sums that round differently in another order), both zeros
  // (min and max keep the first of equal values), a quoted row (the general path), rows in
  // two orders (one segment, many), and counts that are and are not a multiple of four.
  std::mt19937_64 rng(5);
  for (const std::size_t n : {1, 3, 4, 7, 203}) {
    for (const bool missing : {false, true}) {
      std::string text = "a,b,c,y\n";
      for (std::size_t i = 0; i < n; ++i) {
        const double v = std::uniform_real_distribution<double>(-1.0, 1.0)(rng) *
                         std::pow(10.0, static_cast<int>(rng() % 30) - 15);
        const char* zero = i % 2 == 0 ? "-0" : "0";
        const std::string c = missing && i == n / 2 ? "" : fmt::format("{}", i % 5);
        text += i == 1 ? fmt::format("\"{}\",{},{},{}\n", v, zero, c, i)
                       : fmt::format("{},{},{},{}\n", v, zero, c, i);
      }
      const CsvFile file(text);
      std::vector<std::uint64_t> rows(n);
      std::iota(rows.begin(), rows.end(), std::uint64_t{0});
      for (const bool shuffled : {false, true}) {
        if (shuffled) std::shuffle(rows.begin(), rows.end(), rng);
        CAPTURE(n);
        CAPTURE(missing);
        CAPTURE(shuffled);
        const auto shard = load(file, rows, missing ? dt::config::Missing::kMean
                                                    : dt::config::Missing::kError);
        REQUIRE(shard.sums.has_value());  // made by the loader, not by column_stats
        CHECK(bits(dt::data::column_stats(shard)) == bits(dt::data::column_stats(shard.x)));
      }
    }
  }
}

TEST_CASE("memory::Prefaulter: faults the pages in ahead, and leaves what is written alone") {
  const std::size_t bytes = std::size_t{16} << 20;
  const Mapping untouched(bytes), written(bytes), small(bytes);
  {
    const dt::memory::Prefaulter none(small.data, bytes);  // under its 64 MiB minimum: nothing
    const dt::memory::Prefaulter ahead(untouched.data, bytes, 0);
    const dt::memory::Prefaulter beside(written.data, bytes, 0);
    // Written meanwhile, back to front (where the thread comes last): nothing is lost.
    for (std::size_t i = bytes; i-- > 0;) written.data[i] = static_cast<unsigned char>(i * 7 + 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (untouched.resident() < untouched.pages() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  CHECK(untouched.resident() == untouched.pages());  // every page, without a write
  CHECK(small.resident() == 0);
  CHECK(std::all_of(untouched.data, untouched.data + bytes, [](unsigned char c) { return c == 0; }));
  bool same = true;
  for (std::size_t i = 0; i < bytes; ++i) same = same && written.data[i] == static_cast<unsigned char>(i * 7 + 1);
  CHECK(same);
}
