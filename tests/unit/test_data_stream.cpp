// CsvStream (core/data/csv_stream.hpp): a CSV read front to back from a byte source gives the
// rows, values and messages a run's load_shard gives for the same file, whatever sizes the
// source hands its bytes out in (one byte at a time here: every record straddles a refill).

#include "core/data/csv_stream.hpp"
#include "base/error.hpp"
#include "base/files.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>

namespace {

// Bytes of a string, at most `step` per read.
class Trickle final : public dt::data::ByteSource {
 public:
  Trickle(std::string bytes, std::size_t step) : bytes_(std::move(bytes)), step_(step) {}
  std::size_t read(char* out, std::size_t n) override {
    const std::size_t k = std::min({n, step_, bytes_.size() - at_});
    std::memcpy(out, bytes_.data() + at_, k);
    at_ += k;
    return k;
  }

 private:
  std::string bytes_;
  std::size_t step_;
  std::size_t at_ = 0;
};

std::unique_ptr<dt::data::CsvStream> stream_of(const std::string& text, std::size_t step) {
  return std::make_unique<dt::data::CsvStream>(
      std::make_unique<dt::data::PeekedSource>(std::make_unique<Trickle>(text, step)), "mem.csv");
}

dt::data::SourceInfo columns_for(const dt::data::CsvStream& s, std::vector<std::string> features,
                                 const std::string& label) {
  dt::data::SourceInfo info;
  info.columns = s.columns();
  info.delimiter = s.delimiter();
  info.features = std::move(features);
  info.label = label;
  info.label_index = static_cast<std::size_t>(
      std::find(info.columns.begin(), info.columns.end(), label) - info.columns.begin());
  return info;
}

doctest::String stream_refusal(const std::string& text) {
  try {
    auto s = stream_of(text, 5);
    const auto info = columns_for(*s, {"a"}, "y");
    while (s->next(info, 2, dt::data::LabelKind::kNumeric).x.rows() > 0) {
    }
  } catch (const dt::DataError& e) {
    return doctest::String(e.what());
  }
  return doctest::String("(no error)");
}

}  // namespace

TEST_CASE("csv stream: the rows and values of load_shard, in chunks, from any read size") {
  const std::string text =
      "\xEF\xBB\xBFid;a;\"b\";y\r\n"
      "r1;1.5;-2;cat\r\n"
      "\"r;2\";\"3.25\";4e2;dog\r\n"
      "r3; 7 ;8;\"c\"\"at\"\r\n"
      "r4;0.1;0.2;dog\r\n"
      "r5;1e-3;5;cat\r\n";
  const dt::files::TempDir dir("dt-test-stream");
  const auto path = dir.path() / "d.csv";
  std::ofstream(path, std::ios::binary) << text;
  dt::config::Config config;
  config.data.path = path;
  config.data.label = "y";
  config.data.features = {"b", "a"};
  const auto source = dt::data::describe_source(config);
  std::vector<std::uint64_t> rows(source.rows);
  std::iota(rows.begin(), rows.end(), std::uint64_t{0});
  const auto whole = dt::data::load_shard(config, source, dt::data::to_segments(rows, source.csv),
                                          dt::data::LabelKind::kCategorical);
  for (const std::size_t step : {std::size_t{1}, std::size_t{3}, std::size_t{1} << 20}) {
    auto s = stream_of(text, step);
    CHECK(s->delimiter() == ';');
    CHECK(s->columns() == source.columns);
    const auto info = columns_for(*s, source.features, "y");
    dt::data::RowMatrix x(0, 2);
    std::vector<std::string> labels;
    for (;;) {
      const auto chunk = s->next(info, 2, dt::data::LabelKind::kCategorical);
      if (chunk.x.rows() == 0) break;
      CHECK(chunk.x.rows() <= 2);
      x.conservativeResize(x.rows() + chunk.x.rows(), 2);
      x.bottomRows(chunk.x.rows()) = chunk.x;
      labels.insert(labels.end(), chunk.raw_labels.begin(), chunk.raw_labels.end());
    }
    CHECK(x == whole.x);
    CHECK(labels == whole.raw_labels);
    CHECK(labels[2] == "c\"at");
  }
}

TEST_CASE("csv stream: bad rows are refused with their line, as index_csv refuses them") {
  CHECK(stream_refusal("a,y\n1,2\n3\n") == doctest::Contains("mem.csv:3:1: row has 1 field, the header has 2"));
  CHECK(stream_refusal("a,y\n1,2\n\n3,4\n") == doctest::Contains("mem.csv:3:1: blank line in the middle"));
  CHECK(stream_refusal("a,y\n1,2\n3,4\n\n\n") == "(no error)");
  CHECK(stream_refusal("a,y\n1,2\n\"3,4\n") == doctest::Contains("mem.csv:3:1: unterminated quoted field"));
  CHECK(stream_refusal("a,y\n1,x\n") == doctest::Contains("mem.csv:2:3: column 'y': 'x' is not a number"));
  CHECK(stream_refusal("") == doctest::Contains("mem.csv: the file is empty"));
  CHECK(stream_refusal("a,a\n1,2\n") == doctest::Contains("duplicate column name 'a'"));
}

TEST_CASE("PeekedSource::first_line reads up to the first line that is not blank, no further") {
  // 5 bytes a read, as a pipe may hand them out: the look stops at the read that ends the line.
  const std::string text = "\n  \r\n1 3:0.5 7:1\n0 2:1\n" + std::string(100000, 'x');
  dt::data::PeekedSource bytes(std::make_unique<Trickle>(text, 5));
  const std::string_view head = bytes.first_line(1 << 16);
  CHECK(head.substr(0, 17) == "\n  \r\n1 3:0.5 7:1\n");
  CHECK(head.size() <= 20);  // the read that brought the '\n', not 64 KiB
  // What was looked at is read again first, then the rest.
  std::string all(text.size(), '\0');
  std::size_t got = 0;
  while (const std::size_t n = bytes.read(all.data() + got, all.size() - got)) got += n;
  CHECK(got == text.size());
  CHECK(all == text);
  // A source without a line break: `max` bytes, or all of a shorter one.
  dt::data::PeekedSource bare(std::make_unique<Trickle>(std::string(300, 'y'), 7));
  CHECK(bare.first_line(100).size() == 100);
  dt::data::PeekedSource shorter(std::make_unique<Trickle>("1 2:3", 2));
  CHECK(shorter.first_line(100) == "1 2:3");
}
