// disttrain export model.json [--format onnx|npz] [-o OUT] [--dtype float32|float64] [--json]:
// a trained model for the tools that serve it (core/export/export.hpp says what each file
// holds). The file is written atomically; `-o -` writes it to stdout.

#include "cli/commands.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/log.hpp"
#include "core/export/export.hpp"
#include "core/outputs/run_output.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>

namespace dt::cli {
namespace {

struct ExportArgs {
  std::string model;
  std::string format;  // empty: from -o's extension, else onnx
  std::string out;     // empty: beside the model, model.onnx / model.npz
  std::string dtype = "float32";
  bool json = false;
};

int export_model(const ExportArgs& args) {
  namespace fs = std::filesystem;
  std::string format = args.format;
  if (format.empty()) {
    const auto ext = fs::path(args.out).extension().string();
    format = ext == ".npz" ? "npz" : "onnx";
  }
  if (format != "onnx" && format != "npz") {
    fail<UsageError>("export: unknown --format '{}' (use onnx or npz)", format);
  }
  if (args.dtype != "float32" && args.dtype != "float64") {
    fail<UsageError>("export: unknown --dtype '{}' (use float32 or float64)", args.dtype);
  }
  fs::path out = args.out;
  if (out.empty()) out = fs::path(args.model).replace_extension(format);
  if (out == fs::path(args.model)) {
    fail<UsageError>("export: -o {} is the model file itself; choose another path", out.string());
  }
  const auto saved = output::read_model(args.model);
  const std::string bytes =
      format == "onnx"
          ? exporting::to_onnx(saved, args.dtype == "float64" ? exporting::Precision::kFloat64
                                                              : exporting::Precision::kFloat32)
          : exporting::to_npz(saved);
  const bool to_stdout = out == "-";
  if (to_stdout && ::isatty(STDOUT_FILENO) == 1) {
    fail<UsageError>("export: -o - writes the {} file's bytes to stdout, which is a terminal; "
                     "redirect it (> model.{}) or pipe it", format, format);
  }
  if (to_stdout) {
    print(bytes);
  } else {
    if (!out.parent_path().empty() && !fs::is_directory(out.parent_path())) {
      fail<UsageError>("export: folder {} does not exist; create it first",
                       out.parent_path().string());
    }
    files::write_atomic(out, bytes);
    log::info("wrote {} ({}{}, {} bytes)", out.string(), format,
              format == "onnx" ? ", " + args.dtype : "", bytes.size());
  }
  if (args.json && !to_stdout) {
    nlohmann::ordered_json j;
    j["path"] = out.string();
    j["format"] = format;
    if (format == "onnx") j["dtype"] = args.dtype;
    j["bytes"] = bytes.size();
    print(output::json_text(j) + "\n");
  }
  return 0;
}

}  // namespace

void add_export(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand(
      "export", "write a trained model as ONNX (onnxruntime and other runtimes) or NumPy .npz");
  cmd->add_option("model", args->model, "a model.json written by `disttrain run`")->required();
  cmd->add_option("--format", args->format,
                  "onnx or npz (default: from -o's extension, else onnx)");
  cmd->add_option("-o,--output", args->out,
                  "the file to write (default: beside the model, model.onnx or model.npz; - for "
                  "stdout)");
  cmd->add_option("--dtype", args->dtype,
                  "onnx: float32 (default; parameters rounded once) or float64 (model.json's "
                  "bits)");
  cmd->add_flag("--json", args->json, "print one JSON object: path, format, dtype, bytes");
  cmd->callback([&action, args] { action = [args] { return export_model(*args); }; });
}

}  // namespace dt::cli
