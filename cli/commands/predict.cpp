// disttrain predict model.json data.csv > predictions.csv
// disttrain eval model.json data.csv [--json]
//
// Both stream: a CSV or TSV (a file, stdin '-', gzip or zstd decompressed on the fly) is read
// front to back a chunk of rows at a time, and predictions are written a chunk at a time, so
// memory does not grow with the data. An .npy file is read a block of rows at a time; an .npz
// is unpacked (and an .npy that comes through a pipe or a decompressor written) to a private
// folder first, then read the same way.

#include "cli/commands.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/log.hpp"
#include "core/data/byte_stream.hpp"
#include "core/data/compressed.hpp"
#include "core/data/libsvm.hpp"
#include "core/data/npy.hpp"
#include "core/outputs/inference.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

namespace dt::cli {
namespace {

namespace fs = std::filesystem;

struct InferenceArgs {
  std::string model;
  std::string data;
  bool json = false;
};

// The most of piped data looked at to tell LIBSVM text from a CSV: its first line that is not
// blank decides, and it is read only that far (a pipe sending a line at a time is answered at
// once).
constexpr std::size_t kLibsvmHead = std::size_t{64} << 10;

// Whether the first bytes are those of an .npy or a zip (.npz); such data is read from a file.
bool looks_like_array(std::string_view head) {
  return head.starts_with("\x93NUMPY") || head.starts_with("PK\x03\x04");
}

// The rows of `arg` for the model (inference::Rows); `spool` holds what had to be written first.
std::unique_ptr<inference::Rows> open_rows(const output::SavedModel& saved, const std::string& arg,
                                           bool with_labels, std::optional<files::TempDir>& spool) {
  using config::Compression;
  const bool from_stdin = arg == "-";
  config::DataConfig data;
  data.path = arg;
  auto compression = Compression::kNone;
  if (!from_stdin) {
    compression = data::compression_of(arg, Compression::kAuto, "data");
    if (compression == Compression::kNone &&
        data::format_of(data.path, config::DataFormat::kAuto, "data") != config::DataFormat::kCsv) {
      (void)resolve_format(data, false, spool, "data");  // an .npz's arrays unpacked
      return std::make_unique<inference::Rows>(saved, data.path, data.labels, with_labels);
    }
  }
  auto bytes = std::make_unique<data::PeekedSource>(data::open_bytes(arg));
  if (from_stdin) compression = data::compression_by_content(bytes->head(4));
  // Named as the data is once decompressed (x.csv.gz -> x.csv), as before it was streamed.
  const fs::path name = from_stdin ? fs::path("stdin")
                        : compression == Compression::kNone ? data.path
                                                            : data.path.parent_path() / data.path.stem();
  if (compression != Compression::kNone) {
    bytes = std::make_unique<data::PeekedSource>(
        data::decompressing(std::move(bytes), compression, from_stdin ? fs::path("stdin") : data.path));
  }
  const auto ext = name.extension();
  if (looks_like_array(bytes->head(8)) || ext == ".npy" || ext == ".npz" ||
      data::libsvm_extension(name) || data::looks_like_libsvm(bytes->first_line(kLibsvmHead), false)) {
    // An array or a LIBSVM file through a pipe or a decompressor: written out, then checked and
    // read as a file (a LIBSVM file is indexed first).
    data.path = spool_bytes(*bytes, from_stdin ? fs::path("stdin.csv") : name.filename(), spool);
    (void)resolve_format(data, from_stdin, spool, "data");
    return std::make_unique<inference::Rows>(saved, data.path, data.labels, with_labels);
  }
  return std::make_unique<inference::Rows>(
      saved, std::make_unique<data::CsvStream>(std::move(bytes), name), with_labels);
}

// Writes to stdout; false when the reader has gone (a closed pipe: `predict ... | head`) and
// SIGPIPE, which ends the process first, is ignored: then predict ends quietly with exit 0. Any
// other failure (a full disk) must not pass for success.
bool write_out(std::string_view text) {
  if (files::write_fd(STDOUT_FILENO, text)) return true;
  if (errno == EPIPE) return false;
  fail<IoError>("cannot write to standard output: {}", std::strerror(errno));
}

int predict(const InferenceArgs& args) {
  const auto saved = output::read_model(args.model);
  std::optional<files::TempDir> spool;
  auto rows = open_rows(saved, args.data, /*with_labels=*/false, spool);
  // A sparse model computes on compact sparse chunks (sparse_inference.hpp), a dense one on rows.
  std::unique_ptr<inference::SparsePredictor> sparse;
  std::unique_ptr<models::Model> model;
  if (saved.sparse) {
    sparse = std::make_unique<inference::SparsePredictor>(saved);
  } else {
    model = models::make_model(saved.spec);
  }
  (void)log::flush();  // what was logged shows before the output (print() does the same)
  std::string out = inference::predictions_header(saved);
  data::Shard chunk;
  while (rows->next(chunk)) {
    if (sparse) {
      inference::append_predictions(saved, *sparse, chunk, out);
    } else {
      inference::append_predictions(saved, *model, chunk, out);
    }
    if (!write_out(out)) return 0;
    out.clear();
  }
  (void)write_out(out);  // the header alone, for data without rows
  return 0;
}

int eval(const InferenceArgs& args) {
  const auto saved = output::read_model(args.model);
  std::optional<files::TempDir> spool;
  auto rows = open_rows(saved, args.data, /*with_labels=*/true, spool);
  inference::Evaluation evaluation(saved);
  data::Shard chunk;
  while (rows->next(chunk)) evaluation.add(chunk);
  const auto m = evaluation.metrics();
  if (args.json) {
    const auto j = output::metrics_json(m);
    print(output::json_text(j) + "\n");
  } else {
    std::string line = fmt::format("{} rows: loss {:.6g}", m.rows, m.loss);
    if (m.mse) line += fmt::format(", mse {:.6g}", *m.mse);
    if (m.accuracy) line += fmt::format(", accuracy {:.4f}", *m.accuracy);
    if (m.log_loss) line += fmt::format(", log_loss {:.6g}", *m.log_loss);
    if (m.auc_measured) {
      line += m.auc ? fmt::format(", auc {:.4f}", *m.auc) : ", auc undefined (one class only)";
    }
    print(line + "\n");
  }
  return 0;
}

void add_inference(CLI::App& app, Action& action, const char* name, const char* help,
                   int (*run)(const InferenceArgs&), bool json_flag) {
  auto args = std::make_shared<InferenceArgs>();
  auto* cmd = app.add_subcommand(name, help);
  cmd->add_option("model", args->model, "a model.json written by `disttrain run`")->required();
  cmd->add_option("data", args->data,
                  "a CSV/TSV (.gz, .zst), .npy or .npz with the model's feature columns (- for "
                  "stdin); read a chunk of rows at a time")
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
