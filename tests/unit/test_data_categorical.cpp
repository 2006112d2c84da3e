// data.categorical: the category lists, encoded feature names, loading encoded rows, the hash.

#include "core/data/categorical.hpp"
#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "base/hash.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <numeric>
#include <string>
#include <vector>

namespace {

using dt::data::LabelKind;
using dt::test::CsvFile;
using dt::test::data_error;
using Names = std::vector<std::string>;

// A CSV file read with data.categorical (one_hot when buckets is 0).
struct Categorical {
  CsvFile file;
  dt::config::Config config;
  Categorical(const std::string& content, std::vector<dt::config::CategoricalColumn> columns)
      : file(content) {
    config.data.path = file.path;
    config.data.categorical = std::move(columns);
  }
  [[nodiscard]] dt::data::Shard load_all(const dt::data::SourceInfo& source) const {
    std::vector<std::uint64_t> rows(source.rows);
    std::iota(rows.begin(), rows.end(), std::uint64_t{0});
    return dt::data::load_shard(config, source, dt::data::to_segments(rows, source.csv),
                                LabelKind::kNumeric);
  }
};

}  // namespace

TEST_CASE("categorical hash: FNV-1a 64 of the bytes, as docs/categorical.md computes it") {
  // The FNV reference values (empty string, "a") and values docs/categorical.md asserts.
  CHECK(dt::hash::fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(dt::hash::fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(dt::hash::fnv1a64("foobar") == 0x85944171f73967e8ULL);
  CHECK(dt::hash::bucket_of("city07", 16) == 3);
  CHECK(dt::hash::bucket_of("red", 64) == 28);
  // UTF-8 bytes as they are (no normalization): "é" is C3 A9.
  CHECK(dt::hash::fnv1a64("\xc3\xa9") != dt::hash::fnv1a64("e"));
}

TEST_CASE("categorical: one_hot categories over all rows, sorted, in place of the column") {
  Categorical c("id,color,x,y\na,red,1,5\nb,blue,2,6\nc, red ,3,7\nd,\"green\",4,8\n",
                {{"color", 0}});
  c.config.data.exclude = {"id"};
  const auto source = dt::data::describe_source(c.config);
  CHECK(source.features == Names{"color=blue", "color=green", "color=red", "x"});
  REQUIRE(source.categorical.size() == 1);
  CHECK(source.categorical[0].categories == Names{"blue", "green", "red"});
  const auto shard = c.load_all(source);
  REQUIRE(shard.x.rows() == 4);
  // Rows: red, blue, " red " (trimmed), green (quoted): one 1 each, then x.
  const double expected[4][4] = {{0, 0, 1, 1}, {1, 0, 0, 2}, {0, 0, 1, 3}, {0, 1, 0, 4}};
  for (int r = 0; r < 4; ++r) {
    for (int f = 0; f < 4; ++f) CHECK(shard.x(r, f) == expected[r][f]);
  }
}

TEST_CASE("categorical: hash buckets named column#B, one 1 per row at FNV-1a mod N") {
  const Categorical c("city,x,y\nparis,1,0\nrome,2,1\nparis,3,0\n", {{"city", 4}});
  const auto source = dt::data::describe_source(c.config);
  CHECK(source.features == Names{"city#0", "city#1", "city#2", "city#3", "x"});
  const auto shard = c.load_all(source);
  const char* cities[] = {"paris", "rome", "paris"};
  for (int r = 0; r < 3; ++r) {
    const auto bucket = static_cast<int>(dt::hash::bucket_of(cities[r], 4));
    for (int b = 0; b < 4; ++b) CHECK(shard.x(r, b) == (b == bucket ? 1.0 : 0.0));
    CHECK(shard.x(r, 4) == r + 1);
  }
}

TEST_CASE("categorical: an unseen category encodes as all zeros (predict)") {
  const Categorical c("color,x,y\nred,1,0\nblue,2,1\npurple,3,0\n", {{"color", 0}});
  auto source = dt::data::describe_source(c.config);
  source.categorical[0].categories = {"blue", "red"};  // as a model trained without purple has it
  source.features = {"color=blue", "color=red", "x"};
  const auto shard = c.load_all(source);
  CHECK(shard.x(2, 0) == 0.0);
  CHECK(shard.x(2, 1) == 0.0);
  CHECK(shard.x(0, 1) == 1.0);
}

TEST_CASE("categorical: with data.missing zero or mean an empty cell encodes as all zeros") {
  for (const std::uint64_t buckets : {std::uint64_t{0}, std::uint64_t{8}}) {
    Categorical c("id,color,x,y\na,red,1,5\nb,,2,6\nc, ,3,7\n", {{"color", buckets}});
    c.config.data.exclude = {"id"};
    c.config.data.missing = dt::config::Missing::kZero;
    const auto source = dt::data::describe_source(c.config);
    const auto width = static_cast<Eigen::Index>(buckets == 0 ? 1 : buckets);
    CHECK(source.features.size() == static_cast<std::size_t>(width) + 1);  // + x
    const auto shard = c.load_all(source);
    REQUIRE(shard.x.rows() == 3);
    CHECK(shard.x.row(0).head(width).sum() == 1.0);  // red
    for (int r = 1; r < 3; ++r) {
      CHECK(shard.x.row(r).head(width).isZero());  // empty, and spaces only
      CHECK(shard.x(r, width) == r + 1);
    }
  }
}

TEST_CASE("categorical: bad columns and cells are refused with where and what to do") {
  const std::string text = "id,color,x,y\na,red,1,5\nb,,2,6\n";
  {
    const Categorical c(text, {{"colour", 0}});
    CHECK(data_error([&] { (void)dt::data::describe_source(c.config); }) ==
          c.file.path.string() + ": data.categorical: no column 'colour' (did you mean "
                                 "'color'?); columns are: id, color, x, y");
  }
  {
    const Categorical c(text, {{"y", 0}});
    CHECK(data_error([&] { (void)dt::data::describe_source(c.config); })
              .find("'y' is the label column") != std::string::npos);
  }
  {
    Categorical c(text, {{"id", 0}});
    c.config.data.exclude = {"id"};
    CHECK(data_error([&] { (void)dt::data::describe_source(c.config); })
              .find("column 'id' is not a feature") != std::string::npos);
  }
  {
    const Categorical c(text, {{"color", 0}});
    CHECK(data_error([&] { (void)dt::data::describe_source(c.config); }) ==
          c.file.path.string() + ":3:3: column 'color': empty cell; a data.categorical column "
                                 "needs a value in every row, or data.missing: zero (or mean) to encode "
                                 "an empty one as all zeros");
  }
  {  // hash finds no categories first: the empty cell is found while loading
    Categorical c(text, {{"color", 8}});
    c.config.data.exclude = {"id"};
    const auto source = dt::data::describe_source(c.config);
    CHECK(data_error([&] { (void)c.load_all(source); }) ==
          c.file.path.string() + ":3:3: column 'color': empty cell; a data.categorical column "
                                 "needs a value in every row, or data.missing: zero (or mean) to encode "
                                 "an empty one as all zeros");
  }
  {  // an encoded name that another column already has
    const Categorical c("color=red,color,y\n1,red,0\n", {{"color", 0}});
    CHECK(data_error([&] { (void)dt::data::describe_source(c.config); })
              .find("the encoded feature 'color=red' has the name of another feature") !=
          std::string::npos);
  }
}

TEST_CASE("categorical: more than 1000 values is refused naming the column and suggesting hash") {
  std::string text = "user,y\n";
  for (int i = 0; i <= 1000; ++i) text += fmt::format("u{},1\n", i);
  const Categorical c(text, {{"user", 0}});
  const auto message = data_error([&] { (void)dt::data::describe_source(c.config); });
  CHECK(message == c.file.path.string() + ":1002:1: column 'user' has more than 1000 distinct "
                                          "values, too many for one_hot (one feature each); hash "
                                          "them into buckets instead: data.categorical: {user: "
                                          "{hash: 256}}");
  // Exactly 1000 is accepted.
  text = "user,y\n";
  for (int i = 0; i < 1000; ++i) text += fmt::format("u{},1\n", i);
  const Categorical fits(text, {{"user", 0}});
  CHECK(dt::data::describe_source(fits.config).features.size() == 1000);
}

TEST_CASE("categorical: encoded features keep shift 0 and scale 1 and are not constant columns") {
  dt::data::Normalization norm;
  norm.shift = {5, 0.25, 0.5};
  norm.scale = {2, 0.4, 0.5};
  norm.constant_columns = {"c=a", "x"};
  const std::vector<dt::data::Encoding> encodings = {{"c", {"a", "b"}, 0}};
  dt::data::leave_encoded_unscaled(norm, {"x", "c=a", "c=b"}, encodings);
  CHECK(norm.shift == std::vector<double>{5, 0, 0});
  CHECK(norm.scale == std::vector<double>{2, 1, 1});
  CHECK(norm.constant_columns == Names{"x"});
}

TEST_CASE("categorical: encoding_problem finds what a model.json or message could get wrong") {
  using dt::data::Encoding;
  const Names features = {"c=a", "c=b", "h#0", "h#1"};
  CHECK_FALSE(dt::data::encoding_problem({{"c", {"a", "b"}, 0}, {"h", {}, 2}}, features));
  CHECK(dt::data::encoding_problem({{"c", {"b", "a"}, 0}}, features));   // unsorted
  CHECK(dt::data::encoding_problem({{"c", {"a", "a"}, 0}}, features));   // repeated
  CHECK(dt::data::encoding_problem({{"c", {}, 0}}, features));           // none
  CHECK(dt::data::encoding_problem({{"h", {}, 1}}, features));           // 1 bucket
  CHECK(dt::data::encoding_problem({{"h", {}, 3}}, features));           // h#2 not a feature
  CHECK(dt::data::encoding_problem({{"c", {"a", "z"}, 0}}, features));   // c=z not a feature
  CHECK_FALSE(dt::data::encoding_problem({{"h", {}, 3}}, {}));           // features unchecked
}

TEST_CASE("categorical config: one_hot, hash (64 buckets) and {hash: N}; errors say what to write") {
  const auto config = dt::test::parse_text(
      "version: 1\ndata: {path: a.csv, categorical: {color: one_hot, city: hash, zip: {hash: 8}}}\n");
  REQUIRE(config.data.categorical.size() == 3);
  CHECK(config.data.categorical[0].column == "color");
  CHECK(config.data.categorical[0].buckets == 0);
  CHECK(config.data.categorical[1].buckets == 64);
  CHECK(config.data.categorical[2].buckets == 8);
  const auto error = [](const std::string& data) {
    return dt::test::message_of<dt::ConfigError>(
        [&] { (void)dt::test::parse_text("version: 1\ndata: " + data + "\n"); });
  };
  CHECK(error("{path: a.csv, categorical: {color: onehot}}") ==
        "test.yaml:2:42: data.categorical.color: expected one_hot, hash or {hash: N} (N "
        "buckets, 2 to 1048576), got 'onehot'");
  CHECK(error("{path: a.csv, categorical: {color: {hash: 1}}}").find("data.categorical.color.hash") !=
        std::string::npos);
  CHECK(error("{path: a.csv, categorical: [color]}").find("expected a map of column") !=
        std::string::npos);
  CHECK(error("{synthetic: {kind: linear}, categorical: {c: hash}}")
            .find("applies to data.path only") != std::string::npos);
  CHECK(error("{path: a.npy, format: npy, categorical: {c: hash}}")
            .find("a NumPy array holds only numbers") != std::string::npos);
}

TEST_CASE("categorical: fast and general paths encode alike (last column, CRLF, spaces, quotes)") {
  // Label first, the categorical column last; plain rows take the fast path, the quoted one
  // and the one with a tab the general path.
  Categorical c("y,x,color\r\n1,1,red\r\n2,2,blue\r\n3,3,\"red\"\r\n4,4, blue\t\r\n5,5,red\r\n",
                {{"color", 0}});
  c.config.data.label = "y";
  const auto source = dt::data::describe_source(c.config);
  CHECK(source.features == Names{"x", "color=blue", "color=red"});
  const auto shard = c.load_all(source);
  const double expected[5][3] = {{1, 0, 1}, {2, 1, 0}, {3, 0, 1}, {4, 1, 0}, {5, 0, 1}};
  for (int r = 0; r < 5; ++r) {
    for (int f = 0; f < 3; ++f) CHECK(shard.x(r, f) == expected[r][f]);
  }
}

TEST_CASE("categorical: the category scan splits a line at separators only outside quotes") {
  // A quoted cell with the separator and a newline before the categorical column: read as the
  // record parser reads it, not split at the comma or the line break inside the quotes.
  Categorical c("name,color,y\n\"a,b\",red,1\n\"c\nd\",green,2\ne,blue,3\n", {{"color", 0}});
  c.config.data.exclude = {"name"};
  const auto source = dt::data::describe_source(c.config);
  REQUIRE(source.categorical.size() == 1);
  CHECK(source.categorical[0].categories == Names{"blue", "green", "red"});
}
