// config: --set overrides, parse_override and load() from a file.

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <fstream>

#include "core/config/config.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "tests/unit/harness.hpp"

using namespace dt::config;

namespace {

using dt::test::kMinimal;
using dt::test::parse_text;

Override set(const std::string& text) { return parse_override(text); }

}  // namespace

TEST_CASE("config: --set overrides values, creates maps and takes YAML values") {
  SUBCASE("a value in the file") {
    const Config c = parse_text("version: 1\ndata: {path: a.csv}\ntraining: {epochs: 5}\n",
                                {set("training.epochs=7"), set("training.optimizer.lr=0.1")});
    CHECK(c.training.epochs == 7);
    CHECK(c.training.optimizer.lr == 0.1);
  }
  SUBCASE("missing maps are created") {
    const Config c = parse_text("version: 1\n",
                                {set("data.synthetic.kind=blobs"), set("data.synthetic.classes=4"),
                                 set("expect.accuracy.min=0.9")});
    REQUIRE(c.data.synthetic.has_value());
    CHECK(c.data.synthetic->kind == SyntheticKind::kBlobs);
    CHECK(c.data.synthetic->classes == 4);
    CHECK(c.expect.at("accuracy").min == 0.9);
  }
  SUBCASE("lists, maps and full") {
    const Config c = parse_text(kMinimal, {set("model.type=mlp"), set("model.hidden=[32,16]"),
                                           set("training.batch_size=full"),
                                           set("training.optimizer={type: adam, lr: 0.2}")});
    CHECK(c.model.hidden == std::vector<int>{32, 16});
    CHECK(c.training.full_batch);
    CHECK(c.training.optimizer.type == OptimizerType::kAdam);
    CHECK(c.training.optimizer.lr == 0.2);
  }
  SUBCASE("an empty section in the file becomes a map") {
    const Config c = parse_text("version: 1\ndata: {path: a.csv}\nmodel:\n", {set("model.l2=0.5")});
    CHECK(c.model.l2 == 0.5);
  }
  SUBCASE("the last override wins, and name moves output.dir") {
    const Config c = parse_text(kMinimal, {set("seed=1"), set("seed=2"), set("name=other")});
    CHECK(c.seed == 2);
    CHECK(c.output.dir == std::filesystem::current_path() / "runs" / "other");
  }
}

TEST_CASE("config: parse_override splits at the first '='") {
  const Override o = parse_override("training.optimizer.lr=0.1");
  CHECK(o.key_path == "training.optimizer.lr");
  CHECK(o.value == "0.1");
  CHECK(parse_override("name=a=b").value == "a=b");
  CHECK(parse_override(" seed =1").key_path == "seed");
  CHECK(parse_override("data.label=").value.empty());
  REQUIRE_THROWS_WITH_AS(parse_override("a.b"), "--set expects key.path=value, got 'a.b'",
                         dt::UsageError);
  REQUIRE_THROWS_WITH_AS(parse_override("=5"), "--set expects key.path=value, got '=5'",
                         dt::UsageError);
}

TEST_CASE("config: load reads a file, resolves paths against its folder and keeps the source") {
  const dt::files::TempDir dir("dt-config-test");
  std::filesystem::create_directories(dir.path() / "configs");
  const auto file = dir.path() / "configs" / "x.yaml";
  std::ofstream(file) << "version: 1\nname: x\ndata: {path: ../data/d.csv}\n";

  const Config c = load(file, {set("seed=9")});
  CHECK(c.source == file);
  CHECK(c.seed == 9);
  CHECK(c.data.path == (dir.path() / "data" / "d.csv").lexically_normal());
  CHECK(c.output.dir == std::filesystem::current_path() / "runs" / "x");

  std::ofstream(file) << "version: 1\nseed: x\n";
  REQUIRE_THROWS_WITH_AS(
      (void)load(file),
      (file.string() + ":2:7: seed: expected a non-negative integer, got 'x'").c_str(),
      dt::ConfigError);
  REQUIRE_THROWS_WITH_AS((void)load(dir.path() / "missing.yaml"),
                         ("cannot read config '" + (dir.path() / "missing.yaml").string() +
                          "': No such file or directory")
                             .c_str(),
                         dt::ConfigError);
  REQUIRE_THROWS_WITH_AS(
      (void)load(dir.path()),
      ("cannot read config '" + dir.path().string() +
       "': it is a directory, not a regular file (give the path of a file)")
          .c_str(),
      dt::ConfigError);
  // An endless device and a FIFO nobody writes to are refused at once (no read, no wait).
  REQUIRE_THROWS_WITH_AS((void)load("/dev/zero"),
                         "cannot read config '/dev/zero': it is a character device, not a regular "
                         "file (give the path of a file)",
                         dt::ConfigError);
  const auto fifo = dir.path() / "fifo.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE_THROWS_WITH_AS((void)load(fifo),
                         ("cannot read config '" + fifo.string() +
                          "': it is a FIFO (named pipe), not a regular file (give the path of a "
                          "file)")
                             .c_str(),
                         dt::ConfigError);
  // A regular file past the bound is refused before it is read whole.
  const auto huge = dir.path() / "huge.yaml";
  std::ofstream(huge).close();
  std::filesystem::resize_file(huge, std::uintmax_t{17} << 20);
  REQUIRE_THROWS_WITH_AS((void)load(huge),
                         ("cannot read config '" + huge.string() +
                          "': it is 17 MiB, more than the 16 MiB such a file may be")
                             .c_str(),
                         dt::ConfigError);
}

TEST_CASE("config: one YAML document, nested within reason") {
  const auto error_of = [](const std::string& text) {
    return dt::test::message_of<dt::ConfigError>([&] { (void)parse_text(text); });
  };
  const std::string head = "version: 1\ndata: {path: a.csv}\n";
  const std::string second =
      ": a second YAML document (after '---'); a config is one document: merge the two, or put "
      "the second in a file of its own";
  // A second document was silently ignored; an empty one after a closing '---' is harmless.
  CHECK(error_of(head + "---\nseed: 5\n") == "test.yaml:4:1" + second);
  CHECK(error_of(head + "---\n---\nseed: 5\n") == "test.yaml:5:1" + second);
  CHECK_NOTHROW((void)parse_text(head + "---\n"));
  // yaml-cpp 0.7's LoadAll looped forever on a stray ',' (an endless run of empty documents at
  // the same place, memory growing): found by tests/fuzz/fuzz_config.
  CHECK(error_of(",\n") == "test.yaml:1:1: invalid YAML: unexpected ','");
  CHECK(error_of(head + "---\n,\n") == "test.yaml:4:1: invalid YAML: unexpected ','");
  // yaml-cpp's own text for this was "bad file".
  CHECK(error_of("version: 1\nx: " + std::string(600, '[') + std::string(600, ']') + "\n") ==
        "test.yaml: invalid YAML: nested more than 499 levels deep (a config nests a few levels "
        "at the most)");
}
