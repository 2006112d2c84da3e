// disttrain validate config.yaml: checks the config and every row of the data, and prints the
// plan a run would follow. Exit 0 when valid, 2 otherwise; nothing is written.

#include "cli/commands.hpp"
#include "cli/commands/validate_stream.hpp"
#include "base/files.hpp"
#include "core/config/config.hpp"
#include "core/models/model.hpp"
#include "core/modes/mode.hpp"
#include "core/coordinator/plan.hpp"
#include "core/data/missing.hpp"
#include "core/protocol/keys.hpp"
#include "core/outputs/initial_model.hpp"
#include "core/outputs/run_output.hpp"
#include "base/error.hpp"
#include "base/signals.hpp"
#include "base/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <optional>
#include <thread>

namespace dt::cli {
namespace {

struct ValidateArgs {
  std::string config_path;
  std::vector<std::string> sets;
  bool json = false;
};

// The per-worker label histogram, classes as columns:
//   labels:     rows per class
//     rank          0      1      2
//     0           375      0      0
// "encoded:    color one_hot (4 values), city hash (16 buckets)\n", or "" without
// data.categorical.
std::string describe_categorical(const std::vector<data::Encoding>& encodings) {
  if (encodings.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& e : encodings) {
    parts.push_back(e.hashed() ? fmt::format("{} hash ({} buckets)", e.column, e.buckets)
                               : fmt::format("{} one_hot ({} values)", e.column,
                                             e.categories.size()));
  }
  return fmt::format("encoded:    {}\n", fmt::join(parts, ", "));
}

std::string sparse_mib(std::uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// A shard's sparse rows, added up a piece at a time: nonzeros, the longest row, and the bytes
// the whole shard takes as one CSR (12 per nonzero, 8 per row offset).
struct SparseTally {
  std::uint64_t rows = 0, nonzeros = 0, max_row = 0, bytes = 8;
  void add(const data::SparseRows& part) {
    rows += part.rows();
    nonzeros += part.nonzeros();
    for (std::size_t r = 0; r < part.rows(); ++r) max_row = std::max(max_row, part.row_size(r));
    bytes += part.rows() * sizeof(std::uint64_t) +
             part.nonzeros() * (sizeof(std::uint32_t) + sizeof(double));
  }
  void merge(const SparseTally& other) {  // a piece's, counted from 0 bytes
    rows += other.rows;
    nonzeros += other.nonzeros;
    max_row = std::max(max_row, other.max_row);
    bytes += other.bytes;
  }
};

// One piece of a shard (about 16 MiB of values), and what validate keeps of it once loaded.
struct Piece {
  std::size_t rank = 0;
  std::vector<data::Segment> segments;
};
struct CheckedPiece {
  std::size_t rank = 0;
  LabelTally labels;
  SparseTally sparse;  // bytes from 0: the shard's 8 are counted once, in its own tally
  data::ColumnStats present;  // data.missing: mean only
  std::exception_ptr error;
};

// Loads every piece, on `threads` threads (1 or 2), and returns what each gave, in order. A
// pass in order reports the first failing piece's error; so does the caller here, since the
// pieces before it loaded, and pieces after a failed one are skipped rather than read.
std::vector<CheckedPiece> check_pieces(const config::Config& config, const roles::Plan& plan,
                                       const std::vector<Piece>& pieces, data::LabelKind kind,
                                       bool mean_fill, int threads) {
  std::vector<CheckedPiece> out(pieces.size());
  std::atomic<std::size_t> next{0}, failed{pieces.size()};
  const auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < pieces.size() && i < failed.load();) {
      out[i].rank = pieces[i].rank;
      out[i].sparse.bytes = 0;
      try {
        // Ctrl-C: stop between pieces (16 MiB, a few tens of ms), so the private folder goes.
        if (signals::interrupted()) fail<InterruptedError>("interrupted while checking the data");
        // Only data.missing: mean needs the values (their statistics); else no row is kept.
        const auto& source = plan.source_of(pieces[i].rank);
        const auto shard = mean_fill ? data::load_shard(config, source, pieces[i].segments, kind)
                                     : data::check_shard(config, source, pieces[i].segments, kind);
        if (mean_fill) out[i].present = data::column_stats(shard.x);
        out[i].labels.add(shard, kind);
        if (shard.sparse) out[i].sparse.add(*shard.sparse);
      } catch (...) {
        out[i].error = std::current_exception();
        for (std::size_t f = failed.load(); i < f && !failed.compare_exchange_weak(f, i);) {
        }
      }
    }
  };
  if (threads > 1) {
    std::jthread second(work);
    work();
  } else {
    work();
  }
  out.resize(std::min(out.size(), failed.load() + 1));  // the skipped ones say nothing
  return out;
}

nlohmann::ordered_json sparse_json(const data::SparseSource& source,
                                   const std::vector<SparseTally>& shards) {
  SparseTally all;
  all.bytes = 0;
  for (const auto& s : shards) {
    all.rows += s.rows;
    all.nonzeros += s.nonzeros;
    all.max_row = std::max(all.max_row, s.max_row);
    all.bytes += s.bytes;
  }
  nlohmann::ordered_json j;
  j["width"] = source.width;
  if (source.hash_bits > 0) j["hash_bits"] = source.hash_bits;
  if (!source.numeric.empty()) j["numeric_columns"] = source.numeric.size();
  j["nonzeros"] = all.nonzeros;
  j["nonzeros_per_row_mean"] =
      all.rows == 0 ? 0.0 : static_cast<double>(all.nonzeros) / static_cast<double>(all.rows);
  j["nonzeros_per_row_max"] = all.max_row;
  j["memory_bytes"] = all.bytes;  // the training shards, all workers
  return j;
}

// "sparse:     4194304 keys (2^22 hashed), 39.0 nonzeros per row (max 39), 45.8 MiB in memory\n"
std::string describe_sparse(const nlohmann::ordered_json& j) {
  std::string keys = fmt::format("{} keys", j["width"].get<std::uint64_t>());
  if (j.contains("hash_bits")) {
    keys += fmt::format(" (2^{} hashed{})", j["hash_bits"].get<int>(),
                        j.contains("numeric_columns")
                            ? fmt::format(" + {} numeric", j["numeric_columns"].get<std::size_t>())
                            : std::string());
  }
  return fmt::format("sparse:     {}, {:.1f} nonzeros per row (max {}), {} in memory (training "
                     "shards)\n",
                     keys, j["nonzeros_per_row_mean"].get<double>(),
                     j["nonzeros_per_row_max"].get<std::uint64_t>(),
                     sparse_mib(j["memory_bytes"].get<std::uint64_t>()));
}

// The model's parameter count. Sparse rows: weights [width, outputs] and a bias, counted
// without making the (possibly 2^30-wide) model; only the linear families read them.
std::uint64_t parameter_count(const config::Config& config, const data::SourceInfo& source,
                              std::size_t classes) {
  if (!source.sparse) {
    return models::make_model({config.model, static_cast<int>(source.features.size()),
                               static_cast<int>(classes)})
        ->parameter_count();
  }
  if (config.model.type == config::ModelType::kMlp) {
    fail<ConfigError>("model.type mlp: sparse rows (data.hash, data.sparse) train linear_regression, "
                      "logistic_regression or softmax_regression; for an mlp, read the data "
                      "densely (data.sparse: false)");
  }
  // One input: (1 + 1) x outputs parameters.
  const auto outputs =
      models::make_model({config.model, 1, static_cast<int>(classes)})->parameter_count() / 2;
  return (source.sparse->width + 1) * static_cast<std::uint64_t>(outputs);
}

std::string label_table(const std::vector<std::string>& classes,
                        const nlohmann::ordered_json& shards,
                        const nlohmann::ordered_json& validation) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"rank"});
  for (const auto& c : classes) rows.back().push_back(c);
  for (const auto& s : shards) {
    rows.push_back({std::to_string(s["rank"].get<std::size_t>())});
    for (const auto& c : classes) {
      rows.back().push_back(std::to_string(s["labels"][c].get<std::uint64_t>()));
    }
  }
  if (validation.is_object()) {
    rows.push_back({"validation"});
    for (const auto& c : classes) {
      rows.back().push_back(std::to_string(validation[c].get<std::uint64_t>()));
    }
  }
  std::vector<std::size_t> width(classes.size() + 1, 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out = "labels:     rows per class and worker\n";
  for (const auto& row : rows) {
    out += fmt::format("  {:<{}}", row[0], width[0]);
    for (std::size_t i = 1; i < row.size(); ++i) out += fmt::format("  {:>{}}", row[i], width[i]);
    out += "\n";
  }
  return out;
}

int validate(const ValidateArgs& args) {
  // Ctrl-C or SIGTERM stops the check with exit 130 and removes the private folder of a
  // decompressed or piped copy (a second one exits at once, as `run` does).
  signals::install_interrupt_handlers();
  std::vector<config::Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(config::parse_override(s));
  auto config = config::load(args.config_path, overrides);
  const auto kind = data::label_kind(config::task_of(config.model));
  // A compressed CSV is checked as it is decompressed, where that gives what the plain path
  // gives (validate_stream.hpp); else data.path '-' (stdin) or a compressed file is read as
  // `run` reads it, through a copy in a private folder.
  std::optional<files::TempDir> spool;
  const auto given_path = config.data.path;
  auto streamed = check_while_decompressing(config, kind);
  if (!streamed && !config.data.synthetic && !config.data.path.empty()) {
    config.data.path = readable_data(config.data.path, config.data.compression, spool, "data.path");
    (void)resolve_format(config.data, given_path == "-", spool, "data.path");
  }
  (void)roles::run_keys(config);  // key files readable, private, well-formed
  const auto plan = roles::make_plan(config, 1, streamed ? &streamed->index : nullptr);
  std::optional<roles::InitialModel> init;
  if (!config.model.init.empty()) init = output::read_initial_model(config, plan.source);

  const std::size_t ranks = plan.segments.size();
  std::vector<LabelTally> tallies(ranks + 1);  // the ranks, then the validation rows
  std::vector<SparseTally> sparse(ranks);
  if (streamed) {
    tallies = streamed->tallies(plan, kind);  // every row was checked on the way
  } else {
    // Load every shard as the workers would, and the held-out rows as the coordinator would, so
    // that every cell is checked; count each shard's labels on the way. A shard is read a piece
    // at a time (about 16 MiB of values each), so memory stays bounded and warm whatever its size;
    // the rows are checked, not kept (data::check_shard), unless their statistics are needed.
    // Sparse rows: 64Ki rows a piece (their size is the nonzeros', unknown before reading).
    const std::uint64_t piece_rows = plan.source.sparse
                                         ? std::uint64_t{1} << 16
                                         : (16ULL << 20) / (8 * (plan.source.columns.size() + 1));
    // data.missing: mean needs a present value in every column, over all training rows.
    const bool mean_fill = config.data.missing == config::Missing::kMean && plan.columns.empty();
    std::vector<Piece> pieces;
    for (std::size_t r = 0; r < ranks; ++r) {
      const auto& source = plan.source_of(r);
      for (auto& piece : data::chunk_segments(plan.segments[r], piece_rows, source.csv,
                                              data::rows_by_number(config, source))) {
        pieces.push_back({r, std::move(piece)});
      }
    }
    data::ColumnStats present;
    // Data that came through the private folder (decompressed, or stdin's copy) is checked on
    // two threads: this pass is what is left of its time once it is there (issue 15: a .zst at
    // the decompressor's speed). A plain file keeps validate on one core, as measured.
    for (auto& checked : check_pieces(config, plan, pieces, kind, mean_fill, spool ? 2 : 1)) {
      if (checked.error) std::rethrow_exception(checked.error);
      if (mean_fill) data::merge_into(present, checked.present);
      tallies[checked.rank].merge(checked.labels);
      sparse[checked.rank].merge(checked.sparse);
    }
    if (mean_fill) (void)data::missing_fill(config.data.missing, present, plan.source.features);
    tallies[ranks].add(roles::load_validation(config, plan, kind), kind);
  }
  std::vector<std::string> classes;
  if (kind == data::LabelKind::kCategorical) {
    std::vector<std::string> labels;
    for (const auto& t : tallies) {
      for (const auto& [text, n] : t.texts) labels.push_back(text);
    }
    classes = data::resolve_classes(labels);
  } else if (kind == data::LabelKind::kBinary) {
    classes = {"0", "1"};
  }
  if (init) {  // the same check the run makes once its workers have found the classes
    protocol::Finalize f;
    f.classes = classes;
    roles::adopt_initial(*init, f);
  }
  const auto parameters = parameter_count(config, plan.source, classes.size());
  const auto count = modes::count_steps(config, plan);
  const std::uint64_t steps_per_epoch = count.per_epoch;
  const std::uint64_t steps = count.total;

  nlohmann::ordered_json shards = nlohmann::ordered_json::array();
  for (std::size_t r = 0; r < plan.segments.size(); ++r) {
    const auto& seg = plan.segments[r];
    nlohmann::ordered_json shard = {
        {"rank", r},
        {"rows", plan.shard_rows[r]},
        {"first_row", seg.empty() ? 0 : seg.front().first_row},
        {"last_row", seg.empty() ? 0 : seg.back().first_row + seg.back().count - 1},
        {"segments", seg.size()}};
    if (!plan.rank_sources.empty()) shard["file"] = plan.rank_sources[r].file.string();
    if (plan.source.sparse) {
      shard["nonzeros"] = sparse[r].nonzeros;
      shard["memory_bytes"] = sparse[r].bytes;
    }
    if (!classes.empty()) shard["labels"] = tallies[r].by_class(classes, kind);
    if (plan.tensor > 1) {  // rank r is replica r / T, slice r % T (core/coordinator/tensor_plan.hpp)
      shard["replica"] = r / static_cast<std::size_t>(plan.tensor);
      shard["slice"] = r % static_cast<std::size_t>(plan.tensor);
      if (!plan.columns.empty()) {
        shard["feature_columns"] = {plan.columns[r].begin, plan.columns[r].end};
      }
    }
    shards.push_back(std::move(shard));
  }
  nlohmann::ordered_json j;
  j["valid"] = true;
  j["config"] = args.config_path;
  std::vector<std::string> files;
  // rank_sources lists each file once per tensor rank of its replica.
  for (std::size_t r = 0; r < plan.rank_sources.size(); r += static_cast<std::size_t>(plan.tensor)) {
    files.push_back(plan.rank_sources[r].file.string());
  }
  j["data"] = config.data.synthetic ? std::string("synthetic")
              : given_path == "-"  ? std::string("stdin")
              : spool || streamed  ? given_path.string()
              : files.empty()       ? config.data.path.string()
                                    : fmt::format("{}", fmt::join(files, ", "));
  j["rows"] = plan.source.rows;
  j["features"] = data::input_width(plan.source);
  if (plan.source.sparse) j["sparse"] = sparse_json(*plan.source.sparse, sparse);
  j["label"] = plan.source.label;
  if (!classes.empty()) j["classes"] = classes;
  j["train_rows"] = plan.train_rows;
  j["validation_rows"] = plan.validation_rows.size();
  j["model"] = config::name_of(config.model.type);
  if (!plan.source.categorical.empty()) {
    j["categorical"] = output::categorical_json(plan.source.categorical);
  }
  j["parameters"] = parameters;
  if (config.model.dtype != config::Dtype::kFloat64) {
    j["dtype"] = config::name_of(config.model.dtype);
  }
  if (init) j["init"] = init->path.string();
  j["mode"] = config::name_of(config.aggregation.mode);
  j["topology"] = config::name_of(config.aggregation.topology);
  j["servers"] = config.aggregation.servers;
  j["transport"] = config::name_of(config.transport.type);
  j["workers"] = config::worker_count(config);
  if (plan.tensor > 1) j["tensor"] = plan.tensor;
  j["strategy"] = config::name_of(config.shards.strategy);
  j["shards"] = shards;
  j["steps_per_epoch"] = steps_per_epoch;
  if (!classes.empty() && !plan.validation_rows.empty()) {
    j["validation_labels"] = tallies[ranks].by_class(classes, kind);
  }
  j["steps"] = steps;
  if (count.rounds > 0) j["rounds"] = count.rounds;
  j["output_dir"] = config.output.dir.string();
  j["warnings"] = plan.warnings;
  if (args.json) {
    print(output::json_text(j) + "\n");
    return 0;
  }
  std::string out = fmt::format(
      "{}: valid\n"
      "data:       {} ({} rows, {} features, label '{}'{})\n"
      "{}{}"
      "split:      {} training rows, {} validation rows\n"
      "model:      {}, {} parameters{}{}\n"
      "training:   {}; {} workers over {}, {} steps per epoch x {} epochs = {} steps{}\n"
      "shards:     {}\n",
      args.config_path, j["data"].get<std::string>(), plan.source.rows,
      j["features"].get<std::uint64_t>(), plan.source.label,
      classes.empty() ? "" : fmt::format(", {} classes", classes.size()),
      describe_categorical(plan.source.categorical),
      plan.source.sparse ? describe_sparse(j["sparse"]) : std::string(), plan.train_rows,
      plan.validation_rows.size(), config::name_of(config.model.type), parameters,
      config.model.dtype == config::Dtype::kFloat32 ? ", float32 products" : "",
      init ? fmt::format(", starting from {}", init->path.string()) : std::string(),
      config::describe_aggregation(config), config::worker_count(config),
      config::name_of(config.transport.type), steps_per_epoch, config.training.epochs, steps,
      count.rounds > 0 ? fmt::format(" in {} rounds", count.rounds) : std::string(),
      config::name_of(config.shards.strategy));
  for (const auto& s : shards) {
    std::string tensor;
    if (s.contains("slice")) {
      tensor = fmt::format(", replica {} slice {}", s["replica"].get<std::size_t>(),
                           s["slice"].get<std::size_t>());
      if (s.contains("feature_columns")) {
        const auto c = s["feature_columns"];
        tensor += fmt::format(" features {}..{}", c[0].get<std::int64_t>(),
                              c[1].get<std::int64_t>() - 1);
      }
    }
    if (s.contains("memory_bytes")) {
      tensor += fmt::format("; {} nonzeros, {} in memory", s["nonzeros"].get<std::uint64_t>(),
                            sparse_mib(s["memory_bytes"].get<std::uint64_t>()));
    }
    out += fmt::format("  rank {}: {} rows ({}rows {}..{}, {} segment{}{})\n",
                       s["rank"].get<std::size_t>(), s["rows"].get<std::uint64_t>(),
                       s.contains("file") ? s["file"].get<std::string>() + " " : "source ",
                       s["first_row"].get<std::uint64_t>(), s["last_row"].get<std::uint64_t>(),
                       s["segments"].get<std::size_t>(), s["segments"].get<std::size_t>() == 1 ? "" : "s",
                       tensor);
  }
  if (!classes.empty()) {
    out += label_table(classes, shards, j.value("validation_labels", nlohmann::ordered_json()));
  }
  for (const auto& w : plan.warnings) out += fmt::format("warning:    {}\n", w);
  out += fmt::format("output:     {}\n", config.output.dir.string());
  print(out);
  return 0;
}

}  // namespace

void add_validate(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "check a config and its data; print the plan");
  cmd->add_option("config", args->config_path, "the run's YAML config")->required();
  cmd->add_option("--set", args->sets, "override a config key")->type_name("KEY=VALUE");
  cmd->add_flag("--json", args->json, "print the plan as one JSON object");
  cmd->callback([&action, args] { action = [args] { return validate(*args); }; });
}

}  // namespace dt::cli
