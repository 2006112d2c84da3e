// disttrain predict model.json data.csv > predictions.csv
// disttrain eval model.json data.csv [--json]

#include "cli/commands.hpp"
#include "base/files.hpp"
#include "core/outputs/inference.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>

namespace dt::cli {
namespace {

struct InferenceArgs {
  std::string model;
  std::string data;
  bool json = false;
};

// The data file; '-' (stdin) spooled, a .gz or .zst file decompressed, an .npz unpacked, into
// `spool`, a private folder, first (read whole, as a file is; the folder goes with `spool`).
// An .npz's labels array (arrays x and y, or X) becomes `data.labels`.
config::DataConfig data_file(const std::string& arg, std::optional<files::TempDir>& spool) {
  config::DataConfig data;
  data.path = readable_data(arg, config::Compression::kAuto, spool, "data");
  (void)resolve_format(data, arg == "-", spool, "data");
  return data;
}

int predict(const InferenceArgs& args) {
  const auto saved = output::read_model(args.model);
  std::optional<files::TempDir> spool;
  const auto data = data_file(args.data, spool);
  const auto shard = inference::load_for_model(saved, data.path, /*with_labels=*/false, data.labels);
  print(inference::predictions_csv(saved, shard));
  return 0;
}

int eval(const InferenceArgs& args) {
  const auto saved = output::read_model(args.model);
  std::optional<files::TempDir> spool;
  const auto data = data_file(args.data, spool);
  const auto shard = inference::load_for_model(saved, data.path, /*with_labels=*/true, data.labels);
  const auto m = inference::evaluate(saved, shard);
  nlohmann::ordered_json j;
  j["rows"] = m.rows;
  j["loss"] = m.loss;
  if (m.mse) j["mse"] = *m.mse;
  if (m.accuracy) j["accuracy"] = *m.accuracy;
  if (m.log_loss) j["log_loss"] = *m.log_loss;
  if (args.json) {
    print(output::json_text(j) + "\n");
  } else {
    std::string line = fmt::format("{} rows: loss {:.6g}", m.rows, m.loss);
    if (m.mse) line += fmt::format(", mse {:.6g}", *m.mse);
    if (m.accuracy) line += fmt::format(", accuracy {:.4f}", *m.accuracy);
    if (m.log_loss) line += fmt::format(", log_loss {:.6g}", *m.log_loss);
    print(line + "\n");
  }
  return 0;
}

void add_inference(CLI::App& app, Action& action, const char* name, const char* help,
                   int (*run)(const InferenceArgs&), bool json_flag) {
  auto args = std::make_shared<InferenceArgs>();
  auto* cmd = app.add_subcommand(name, help);
  cmd->add_option("model", args->model, "a model.json written by `disttrain run`")->required();
  cmd->add_option("data", args->data, "a CSV with the model's feature columns (- for stdin)")
      ->required();
  if (json_flag) cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([&action, args, run] { action = [args, run] { return run(*args); }; });
}

}  // namespace

void add_predict(CLI::App& app, Action& action, const Globals&) {
  add_inference(app, action, "predict", "write predictions for a CSV to stdout", predict, false);
}

void add_eval(CLI::App& app, Action& action, const Globals&) {
  add_inference(app, action, "eval", "metrics of a saved model on a labelled CSV", eval, true);
}

}  // namespace dt::cli
