// disttrain gen linear|logistic|blobs --rows N --features P --seed S > data.csv
// disttrain gen clicks --rows N [--fields 39] --seed S > clicks.csv (a categorical click log)
// The same generator as `data.synthetic`, so a config can switch between the two.

#include "cli/commands.hpp"
#include "core/config/config.hpp"
#include "core/data/clicks.hpp"
#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

namespace dt::cli {
namespace {

struct GenArgs {
  std::string kind;
  std::int64_t rows = 1000;
  int features = 10;
  int classes = 3;
  double noise = 0.1;
  std::uint64_t seed = 0;
  int fields = 39;
};

// disttrain gen clicks: the click log of core/data/clicks.hpp, a block of rows at a time.
int gen_clicks(const GenArgs& args) {
  if (args.rows < 1) fail<UsageError>("gen: --rows must be at least 1, got {}", args.rows);
  if (args.fields < 1 || args.fields > 1000) {
    fail<UsageError>("gen clicks: --fields must be 1 to 1000, got {}", args.fields);
  }
  print(data::click_header(args.fields));
  constexpr std::uint64_t kChunk = 8192;
  const data::ClickSpec spec{args.fields, args.seed};
  const auto rows = static_cast<std::uint64_t>(args.rows);
  std::string out;
  for (std::uint64_t first = 0; first < rows; first += kChunk) {
    out.clear();
    data::click_rows(spec, first, std::min(kChunk, rows - first), out);
    print(out);
  }
  return 0;
}

int gen(const GenArgs& args) {
  config::SyntheticConfig spec;
  if (args.kind == "clicks") return gen_clicks(args);
  if (args.kind == "linear") spec.kind = config::SyntheticKind::kLinear;
  else if (args.kind == "logistic") spec.kind = config::SyntheticKind::kLogistic;
  else if (args.kind == "blobs") spec.kind = config::SyntheticKind::kBlobs;
  else fail<UsageError>("gen: unknown kind '{}' (expected linear, logistic, blobs or clicks{})",
                        args.kind,
                        text::suggestion_suffix(args.kind, {"linear", "logistic", "blobs", "clicks"}));
  if (args.rows < 1) fail<UsageError>("gen: --rows must be at least 1, got {}", args.rows);
  if (args.features < 1) fail<UsageError>("gen: --features must be at least 1, got {}", args.features);
  if (args.classes < 2) fail<UsageError>("gen: --classes must be at least 2, got {}", args.classes);
  if (!(args.noise >= 0)) fail<UsageError>("gen: --noise must be 0 or more, got {}", args.noise);
  spec.rows = args.rows;
  spec.features = args.features;
  spec.classes = args.classes;
  spec.noise = args.noise;

  print(fmt::format("{}\n", fmt::join(data::synthetic_columns(spec), ",")));
  constexpr std::int64_t kChunk = 4096;
  data::RowMatrix x(kChunk, args.features);
  Eigen::VectorXd y(kChunk);
  std::string out;
  const bool integer_labels = spec.kind != config::SyntheticKind::kLinear;
  for (std::int64_t first = 0; first < args.rows; first += kChunk) {
    const auto n = std::min(kChunk, args.rows - first);
    data::synthesize(spec, args.seed, static_cast<std::uint64_t>(first),
                     static_cast<std::uint64_t>(n), x.topRows(n), y.head(n));
    out.clear();
    for (std::int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < args.features; ++j) fmt::format_to(std::back_inserter(out), "{},", x(i, j));
      if (integer_labels) fmt::format_to(std::back_inserter(out), "{}\n", static_cast<long long>(y(i)));
      else fmt::format_to(std::back_inserter(out), "{}\n", y(i));
    }
    print(out);
  }
  return 0;
}

}  // namespace

void add_gen(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<GenArgs>();
  auto* cmd = app.add_subcommand("gen", "write a synthetic dataset as CSV to stdout");
  cmd->add_option("kind", args->kind, "linear, logistic, blobs or clicks")->required();
  cmd->add_option("--rows", args->rows, "rows to write")->capture_default_str();
  cmd->add_option("--features", args->features, "feature columns")->capture_default_str();
  cmd->add_option("--classes", args->classes, "classes (blobs)")->capture_default_str();
  cmd->add_option("--noise", args->noise, "noise standard deviation")->capture_default_str();
  cmd->add_option("--seed", args->seed, "random seed")->capture_default_str();
  cmd->add_option("--fields", args->fields, "categorical columns (clicks)")->capture_default_str();
  cmd->callback([&action, args] { action = [args] { return gen(*args); }; });
}

}  // namespace dt::cli
