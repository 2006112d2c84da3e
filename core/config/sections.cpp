// One parse function per section of the config. A new section is one struct in config.hpp,
// its rows in schema.cpp, one function here and its lines in emit.cpp.

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <thread>

#include "core/config/internal.hpp"
#include "base/text.hpp"

namespace dt::config::detail {

std::filesystem::path resolve(const std::filesystem::path& base_dir, const std::string& path) {
  return std::filesystem::absolute(base_dir / path).lexically_normal();
}

namespace {

namespace fs = std::filesystem;

void check_name(const Section& root, const std::string& name) {
  const bool allowed = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
  if (!allowed) {
    root.fail("name", fmt::format("expected letters, digits, '-', '_' and '.' only (it names the "
                                  "output folder), got '{}'",
                                  name));
  }
  if (name.find_first_not_of('.') == std::string::npos) {
    root.fail("name", fmt::format("'{}' cannot name a folder; use letters or digits", name));
  }
}

std::vector<int> parse_hidden(const Section& s, std::vector<int> fallback) {
  if (!s.has("hidden")) return fallback;
  const YAML::Node list = s.node("hidden");
  if (!list.IsSequence() || list.size() == 0) {
    s.fail("hidden", fmt::format("expected a non-empty list of positive integers like [64, 32], "
                                 "got {}",
                                 describe(list)));
  }
  std::vector<int> widths;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("{}[{}]", s.path("hidden"), i);
    widths.push_back(to_int(s.reader().integer(list[i], path, 1, INT_MAX)));
  }
  return widths;
}

ModelConfig parse_model(const Section& s, const fs::path& base_dir) {
  ModelConfig m;
  m.type = s.choice("type", m.type, kModelTypes);
  if (m.type == ModelType::kMlp) {
    m.hidden = parse_hidden(s, m.hidden);
    m.activation = s.choice("activation", m.activation, kActivations);
    m.task = s.choice("task", m.task, kTasks);
  } else {
    for (const char* key : {"hidden", "activation"}) {
      if (s.has(key)) s.fail_not_applicable(key, "mlp", "model.type", name_of(m.type));
    }
    if (s.has("task")) {
      s.fail("task", fmt::format("{} fixes the task to {}; remove it (it applies to mlp only)",
                                 name_of(m.type), name_of(task_of(m))));
    }
  }
  m.dtype = s.choice("dtype", m.dtype, kDtypes);
  if (m.dtype == Dtype::kFloat32 && m.type != ModelType::kMlp) {
    s.fail("dtype", fmt::format("float32 applies to mlp only (its dense products), but "
                                "model.type is {}, which computes in float64; remove it or set "
                                "dtype: float64",
                                name_of(m.type)));
  }
  m.l2 = s.number("l2", m.l2, Range::kNonNegative);
  if (s.has("init")) {
    const std::string init = s.string("init", "");
    if (init.empty()) s.fail("init", "expected the path of a model.json written by a run");
    m.init = resolve(base_dir, init);
  }
  return m;
}

SyntheticConfig parse_synthetic(const Section& s) {
  SyntheticConfig c;
  if (!s.has("kind")) {
    s.fail_missing("kind", fmt::format("expected {}", text::join_or(names_of(kSyntheticKinds))));
  }
  c.kind = s.choice("kind", c.kind, kSyntheticKinds);
  c.rows = s.integer("rows", c.rows, 1, INT64_MAX);
  c.features = to_int(s.integer("features", c.features, 1));
  if (c.kind == SyntheticKind::kBlobs) {
    c.classes = to_int(s.integer("classes", c.classes, 2));
  } else if (s.has("classes")) {
    s.fail_not_applicable("classes", "kind blobs", "data.synthetic.kind", name_of(c.kind));
  }
  c.noise = s.number("noise", c.noise, Range::kNonNegative);
  return c;
}

// data.features / data.exclude: a list of column names or ranges (one string is a list of one).
std::vector<std::string> column_entries(const Section& s, std::string_view key) {
  std::vector<std::string> out;
  if (!s.has(key)) return out;
  const YAML::Node list = s.node(key);
  if (list.IsScalar()) return {s.string(key, "")};
  if (!list.IsSequence() || list.size() == 0) {
    s.fail(key, fmt::format("expected a list of column names or ranges like [id, x0:x9], got {}",
                            describe(list)));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    out.push_back(s.reader().string(list[i], fmt::format("{}[{}]", s.path(key), i)));
  }
  return out;
}

DataConfig parse_data(const Section& s, const fs::path& base_dir, bool from_files) {
  DataConfig d;
  const bool from_file = s.has("path");
  const bool generated = s.has("synthetic");
  if (from_file && generated) {
    s.fail("synthetic", "cannot be used together with data.path; set exactly one of them");
  }
  if (from_files && (from_file || generated)) {
    s.fail(from_file ? "path" : "synthetic",
           "cannot be used with shards.strategy files, where each worker reads its own file "
           "from shards.files; remove it");
  }
  if (!from_file && !generated && !from_files) {
    s.fail_here(
        "missing a data source; set data.path to a CSV file or data.synthetic to "
        "generate rows");
  }
  if (from_file) {
    const std::string path = s.string("path", "");
    d.path = path == "-" ? fs::path("-") : resolve(base_dir, path);  // "-": stdin (cli/ spools it)
  }
  if (s.has("label")) {
    if (generated)
      s.fail("label", "names a column of the data.path file; remove it with data.synthetic");
    d.label = s.string("label", "");
  }
  if (s.has("delimiter")) {
    if (generated) s.fail("delimiter", "applies to data.path only; remove it with data.synthetic");
    const std::string name = s.string("delimiter", "auto");
    const std::vector<std::string> names = {"auto", "comma", "tab", "semicolon", "pipe"};
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      s.fail("delimiter", fmt::format("expected auto, comma, tab, semicolon or pipe, got '{}'{}",
                                      name, text::suggestion_suffix(name, names)));
    }
    static constexpr char kSeparators[] = {0, ',', '\t', ';', '|'};
    d.delimiter = kSeparators[it - names.begin()];
  }
  d.features = column_entries(s, "features");
  d.exclude = column_entries(s, "exclude");
  d.categorical = categorical_entries(s);
  if (!d.categorical.empty() && (generated || from_files)) {
    s.fail("categorical", generated ? "applies to data.path only; remove it with data.synthetic"
                                    : "is not supported with shards.strategy files yet (the "
                                      "categories would differ per file); remove it");
  }
  d.normalize = s.choice("normalize", d.normalize, kNormalizations);
  d.missing = s.choice("missing", d.missing, kMissings);
  d.compression = s.choice("compression", d.compression, kCompressions);
  if (s.has("compression") && !from_file) {
    s.fail("compression", "applies to data.path only; remove it");
  }
  d.format = s.choice("format", d.format, kDataFormats);
  if (s.has("format") && !from_file) s.fail("format", "applies to data.path only; remove it");
  if (!d.categorical.empty() &&
      (d.format == DataFormat::kNpy || d.format == DataFormat::kNpz)) {
    s.fail("categorical", "applies to CSV data; a NumPy array holds only numbers");
  }
  if (s.has("labels")) {
    if (!from_file) s.fail("labels", "applies to data.path only; remove it");
    d.labels = resolve(base_dir, s.string("labels", ""));
  }
  if (s.has("arrays")) {
    if (!from_file) s.fail("arrays", "applies to an .npz data.path only; remove it");
    const Section a = s.section("arrays");
    d.array_x = a.string("x", d.array_x);
    d.array_y = a.string("y", d.array_y);
  }
  parse_libsvm_keys(s, d, from_file);
  parse_sparse_keys(s, d, from_file);
  d.validation_fraction = s.number("validation", d.validation_fraction, Range::kFraction);
  if (generated) d.synthetic = parse_synthetic(s.section("synthetic"));
  return d;
}

ShardsConfig parse_shards(const Section& s, const fs::path& base_dir) {
  ShardsConfig c;
  c.strategy = s.choice("strategy", c.strategy, kShardStrategies);
  const char* strategy = name_of(c.strategy);
  if (c.strategy == ShardStrategy::kByLabel) {
    c.labels_per_worker = to_int(s.integer("labels_per_worker", c.labels_per_worker, 1));
  } else if (s.has("labels_per_worker")) {
    s.fail_not_applicable("labels_per_worker", "by_label", "shards.strategy", strategy);
  }
  if (c.strategy == ShardStrategy::kDirichlet) {
    c.alpha = s.number("alpha", c.alpha, Range::kPositive);
  } else if (s.has("alpha")) {
    s.fail_not_applicable("alpha", "dirichlet", "shards.strategy", strategy);
  }
  if (c.strategy == ShardStrategy::kFiles) {
    if (!s.has("files")) {
      s.fail_missing("files", "strategy files needs one CSV per worker, e.g. files: [a.csv, b.csv]");
    }
    const YAML::Node list = s.node("files");
    if (!list.IsSequence() || list.size() == 0) {
      s.fail("files", fmt::format("expected a non-empty list of CSV paths like [a.csv, b.csv], "
                                  "got {}",
                                  describe(list)));
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string path = fmt::format("{}[{}]", s.path("files"), i);
      auto file = resolve(base_dir, s.reader().string(list[i], path));
      const auto same = std::find(c.files.begin(), c.files.end(), file);
      if (same != c.files.end()) {
        s.reader().fail(list[i], path,
                        fmt::format("{} is listed twice (also as {}[{}]); each worker trains on "
                                    "its own file, so list every file once",
                                    file.string(), s.path("files"), same - c.files.begin()));
      }
      c.files.push_back(std::move(file));
    }
  } else if (s.has("files")) {
    s.fail_not_applicable("files", "files", "shards.strategy", strategy);
  }
  if (c.strategy == ShardStrategy::kFiles) {
    const int files = static_cast<int>(c.files.size());
    c.count = to_int(s.integer("count", files, 1));
    if (c.count != files) {
      s.fail("count", fmt::format("is {} but shards.files lists {} files; with strategy files "
                                  "each worker trains on one file: remove count or make them agree",
                                  c.count, files));
    }
    return c;
  }
  // hardware_concurrency() may report 0 when it cannot tell; one worker still trains.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  c.count = to_int(s.integer("count", cores, 1));
  return c;
}

ParametersConfig parse_parameters(const Section& s) {
  ParametersConfig c;
  if (s.has("sync_every")) {
    const Section every = s.section("sync_every");
    const bool steps = every.has("steps");
    const bool epochs = every.has("epochs");
    if (steps && epochs) {
      every.fail("epochs", "cannot be used together with sync_every.steps; set one of them");
    }
    if (!steps && !epochs) every.fail_here("set steps or epochs, e.g. {steps: 50} or {epochs: 1}");
    if (steps) c.sync_every_steps = every.integer("steps", 1, 1, INT64_MAX);
    if (epochs) c.sync_every_epochs = to_int(every.integer("epochs", 1, 1));
  }
  c.merge = s.choice("merge", c.merge, kMergeRules);
  if (c.merge == MergeRule::kTrimmedMean) {
    c.trim = s.number("trim", c.trim, Range::kNonNegative);
    if (c.trim >= 0.5) {
      s.fail("trim", fmt::format("expected a share in [0, 0.5) cut at each end, got {}; 0.5 or "
                                 "more would cut every value",
                                 text::format_double(c.trim)));
    }
  } else if (s.has("trim")) {
    s.fail_not_applicable("trim", "trimmed_mean", "aggregation.parameters.merge", name_of(c.merge));
  }
  c.clients_per_round = s.number("clients_per_round", c.clients_per_round, Range::kPositive);
  if (c.clients_per_round > 1.0) {
    s.fail("clients_per_round",
           fmt::format("expected a share of the workers in (0, 1], got {}",
                       text::format_double(c.clients_per_round)));
  }
  c.optimizer_state = s.choice("optimizer_state", c.optimizer_state, kOptimizerStates);
  return c;
}

AsyncConfig parse_async(const Section& s) {
  AsyncConfig c;
  if (s.has("max_staleness")) c.max_staleness = to_int(s.integer("max_staleness", 0, 0));
  c.staleness_lr = s.boolean("staleness_lr", c.staleness_lr);
  return c;
}

AggregationConfig parse_aggregation(const Section& s) {
  AggregationConfig c;
  c.mode = s.choice("mode", c.mode, kAggregationModes);
  c.topology = s.choice("topology", c.topology, kTopologies);
  c.servers = to_int(s.integer("servers", c.servers, 1));
  c.compression = parse_compression(s, c.topk_ratio);
  const char* mode = name_of(c.mode);
  if (c.mode == AggregationMode::kParameters) {
    c.parameters = parse_parameters(s.section("parameters"));
  } else if (s.has("parameters")) {
    s.fail_not_applicable("parameters", "parameters", "aggregation.mode", mode);
  }
  if (c.mode == AggregationMode::kAsync) {
    c.async = parse_async(s.section("async"));
  } else if (s.has("async")) {
    s.fail_not_applicable("async", "async", "aggregation.mode", mode);
  }
  if (c.topology == Topology::kRing && c.mode != AggregationMode::kGradients) {
    s.fail("topology", fmt::format("ring all-reduces gradients every step, so it needs "
                                   "aggregation.mode gradients, but the mode is {}; use topology "
                                   "star with mode {}",
                                   mode, mode));
  }
  if (c.servers > 1 && c.topology == Topology::kRing) {
    s.fail("servers", fmt::format("{} servers conflict with topology ring, which has no parameter "
                                  "server; use servers: 1 with ring, or topology star with servers",
                                  c.servers));
  }
  if (c.servers > 1 && c.mode == AggregationMode::kParameters) {
    s.fail("servers", fmt::format("{} servers conflict with mode parameters, whose merge needs "
                                  "every worker's whole model in one place; use servers: 1",
                                  c.servers));
  }
  return c;
}

ParallelismConfig parse_parallelism(const Section& s) {
  ParallelismConfig c;
  c.tensor = to_int(s.integer("tensor", c.tensor, 1));
  return c;
}

TrainingConfig parse_training(const Section& s) {
  TrainingConfig c;
  c.epochs = to_int(s.integer("epochs", c.epochs, 1));
  if (s.has("batch_size")) {
    const YAML::Node node = s.node("batch_size");
    if (node.IsScalar() && node.Scalar() == "full") {
      c.full_batch = true;
      c.batch_size = 0;  // no row count yet: consumers read full_batch
    } else {
      const auto size = node.IsScalar() ? parse_integer(node.Scalar()) : std::nullopt;
      if (!size || *size < 1) {
        s.fail("batch_size",
               fmt::format("expected a positive integer or full, got {}", describe(node)));
      }
      c.batch_size = *size;
    }
  }
  c.optimizer = parse_optimizer(s.section("optimizer"));
  parse_training_controls(s, c.optimizer);
  c.shuffle = s.boolean("shuffle", c.shuffle);
  if (s.has("early_stopping")) c.early_stopping = parse_early_stopping(s.section("early_stopping"));
  return c;
}

OutputConfig parse_output(const Section& s, const fs::path& base_dir, const std::string& name) {
  OutputConfig c;
  std::string dir = s.string("dir", "runs/{name}");
  for (auto at = dir.find("{name}"); at != std::string::npos; at = dir.find("{name}", at)) {
    dir.replace(at, 6, name);
    at += name.size();
  }
  // Relative to where disttrain runs, not to the config: `disttrain run configs/x.yaml` writes
  // runs/x/ beside the user, as every training tool does (DESIGN.md said config-relative).
  (void)base_dir;
  c.dir = fs::absolute(dir).lexically_normal();
  c.log_every_steps = s.section("log_every").integer("steps", c.log_every_steps, 1, INT64_MAX);
  c.timeline_steps = parse_timeline(s);
  c.plot_per_worker = s.section("plot").boolean("per_worker", c.plot_per_worker);
  return c;
}

std::map<std::string, Bound> parse_expect(const Section& s) {
  std::map<std::string, Bound> bounds;
  for (const std::string& metric : s.keys()) {  // names were checked against the schema
    const Section entry = s.section(metric);
    Bound bound;
    if (entry.has("min")) bound.min = entry.number("min", 0, Range::kAny);
    if (entry.has("max")) bound.max = entry.number("max", 0, Range::kAny);
    if (!bound.min && !bound.max) s.fail(metric, "set min, max or both, e.g. {max: 0.5}");
    if (bound.min && bound.max && *bound.min > *bound.max) {
      entry.fail("max", fmt::format("{} is below {} ({}); no result can meet both",
                                    text::format_double(*bound.max), entry.path("min"),
                                    text::format_double(*bound.min)));
    }
    bounds[metric] = bound;
  }
  return bounds;
}

// Keys that are each valid but make no sense together. Each message names both keys and what
// to use instead.
void check_combinations(const Section& root, const Config& c) {
  check_fault_tolerance(root, c);
  check_transport(root, c);
  check_optimizer(root, c);
  const Section shards = root.section("shards");
  const Section aggregation = root.section("aggregation");
  const Section parallelism = root.section("parallelism");
  const auto task = task_of(c.model);
  if ((c.shards.strategy == ShardStrategy::kByLabel ||
       c.shards.strategy == ShardStrategy::kDirichlet) &&
      task == Task::kRegression) {
    shards.fail("strategy", fmt::format("{} deals rows by class, but {} is a regression model "
                                        "with no classes; use contiguous, round_robin or random",
                                        name_of(c.shards.strategy), name_of(c.model.type)));
  }
  if (c.shards.strategy == ShardStrategy::kByLabel && task == Task::kBinary &&
      c.shards.labels_per_worker > 2) {
    shards.fail("labels_per_worker",
                fmt::format("is {} but a binary model has only 2 classes; use 1 or 2",
                            c.shards.labels_per_worker));
  }
  if (c.parallelism.tensor > 1) {
    if (c.aggregation.mode != AggregationMode::kGradients) {
      parallelism.fail("tensor", fmt::format("tensor parallelism splits one model whose "
                                             "gradients are combined every step, so it needs "
                                             "aggregation.mode gradients, but the mode is {}; "
                                             "use tensor: 1 with {}",
                                             name_of(c.aggregation.mode),
                                             name_of(c.aggregation.mode)));
    }
    if (c.aggregation.topology == Topology::kRing) {
      parallelism.fail("tensor", "tensor parallelism is available with aggregation.topology "
                                 "star only, not ring; use topology star (or tensor: 1 with ring)");
    }
    if (c.aggregation.servers > 1) {
      parallelism.fail("tensor", fmt::format("tensor parallelism works with one parameter "
                                             "server, but aggregation.servers is {}; use "
                                             "servers: 1 (or tensor: 1 with sharded servers)",
                                             c.aggregation.servers));
    }
    if (c.model.dtype == Dtype::kFloat32) {
      root.section("model").fail("dtype", "float32 is not available with parallelism.tensor > 1 "
                                          "(the tensor-parallel slices compute in float64); "
                                          "use dtype: float64 or tensor: 1");
    }
  }
  const auto merge = c.aggregation.parameters.merge;
  if (c.aggregation.mode == AggregationMode::kParameters &&
      (merge == MergeRule::kBest || merge == MergeRule::kValidationWeighted) &&
      c.data.validation_fraction <= 0) {
    aggregation.section("parameters")
        .fail("merge", fmt::format("{} scores each worker's model on the validation rows, but "
                                   "data.validation is 0; set data.validation (e.g. 0.1) or use "
                                   "merge weighted_average",
                                   name_of(merge)));
  }
}

}  // namespace

Config build(const Section& root, const fs::path& base_dir) {
  Config c;
  if (!root.has("version")) root.fail_missing("version", "add 'version: 1' at the top");
  const YAML::Node version = root.node("version");
  if (!version.IsScalar() || parse_integer(version.Scalar()) != 1) {
    root.fail("version", fmt::format("expected 1 (the schema version this disttrain reads), got {}",
                                     describe(version)));
  }
  c.name = root.string("name", c.name);
  check_name(root, c.name);
  c.seed = static_cast<std::uint64_t>(root.integer("seed", 0, 0, INT64_MAX));
  c.model = parse_model(root.section("model"), base_dir);
  c.shards = parse_shards(root.section("shards"), base_dir);
  c.data = parse_data(root.section("data"), base_dir,
                      c.shards.strategy == ShardStrategy::kFiles);
  c.aggregation = parse_aggregation(root.section("aggregation"));
  c.parallelism = parse_parallelism(root.section("parallelism"));
  c.training = parse_training(root.section("training"));
  c.transport = parse_transport(root.section("transport"), base_dir);
  c.fault_tolerance = parse_fault_tolerance(root.section("fault_tolerance"));
  c.faults = parse_faults(root, c.seed);
  if (auto& e = c.fault_tolerance.elastic; e && e->max_workers == 0) {
    e->max_workers = worker_count(c);  // elastic.max_workers' default: the starting count
  }
  c.output = parse_output(root.section("output"), base_dir, c.name);
  c.expect = parse_expect(root.section("expect"));
  check_combinations(root, c);
  check_early_stopping(root, c);
  check_compression(root, c);
  return c;
}

}  // namespace dt::config::detail
