#pragma once
// The run configuration (schema version 1, DESIGN.md section 3) as validated plain structs.
// Every key, its type, default and documentation live in one table (config/schema.cpp) that
// drives the parser, the did-you-mean suggestions and docs/config.md, so they cannot drift.
// A new section is one new struct here and one parse function there.
//
// core/config/: the config schema, its parser, overrides, the resolved-config writer and the
// reference of docs/config.md.
// May use: base/.

#include "core/config/data_config.hpp"
#include "core/config/fault_config.hpp"
#include "core/config/names.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dt::config {

struct ModelConfig {
  ModelType type = ModelType::kLinearRegression;
  std::vector<int> hidden{64};              // mlp only
  Activation activation = Activation::kRelu;  // mlp only
  Task task = Task::kRegression;            // mlp only; fixed by the type for the others
  Dtype dtype = Dtype::kFloat64;  // float32: the mlp's products only (core/models/mlp.cpp)
  double l2 = 0.0;
  // model.init: a model.json to start from (resolved against the config file's folder); empty:
  // start from the seed's initial weights.
  std::filesystem::path init;
};

struct ShardsConfig {
  // Data-parallel replicas D (absent in the file: the number of cores, or the number of files
  // with strategy files); always >= 1 after parsing. Workers = count * parallelism.tensor.
  int count = 0;
  ShardStrategy strategy = ShardStrategy::kContiguous;
  int labels_per_worker = 2;                 // by_label only
  double alpha = 0.5;                        // dirichlet only
  std::vector<std::filesystem::path> files;  // files only; absolute
};

// aggregation.parameters: model averaging (FedAvg, local SGD).
struct ParametersConfig {
  std::int64_t sync_every_steps = 0;  // sync_every: {steps: K}; 0 when given in epochs
  int sync_every_epochs = 1;          // sync_every: {epochs: E}; used when sync_every_steps == 0
  MergeRule merge = MergeRule::kWeightedAverage;
  double trim = 0.1;               // trimmed_mean: share cut at each end, [0, 0.5)
  double clients_per_round = 1.0;  // (0, 1]
  OptimizerState optimizer_state = OptimizerState::kReset;
};

// aggregation.async: asynchronous SGD with an optional staleness bound.
struct AsyncConfig {
  std::optional<int> max_staleness;  // absent = unbounded; 0 = lock-step
  bool staleness_lr = false;         // divide the step by (1 + staleness)
};

struct AggregationConfig {
  AggregationMode mode = AggregationMode::kGradients;
  Topology topology = Topology::kStar;
  int servers = 1;
  WireCompression compression = WireCompression::kNone;  // sections_compression.cpp
  double topk_ratio = 0.0;  // compression kTopk: the share of entries sent, (0, 1]
  ParametersConfig parameters;
  AsyncConfig async;
};

struct ParallelismConfig {
  int tensor = 1;  // ranks each model is split over
};

// training.lr_schedule: the learning rate as a pure function of the optimizer's step count
// (core/models/lr_schedule.hpp; docs/optimizers.md has the formulas).
struct LrScheduleConfig {
  LrScheduleType type = LrScheduleType::kConstant;
  std::uint64_t step_size = 0;    // step: decay every this many steps
  double gamma = 0.1;             // step, exponential: the factor
  double min_lr = 0.0;            // cosine: the lr reached at t_max
  std::uint64_t t_max = 0;        // cosine: steps of the half cosine; 0: the run's, after warmup
  std::uint64_t warmup_steps = 0; // linear warmup from warmup_start * lr to lr
  double warmup_start = 0.0;
};

struct OptimizerConfig {
  OptimizerType type = OptimizerType::kSgd;
  double lr = 0.05;       // ftrl: alpha (the file may name it either way)
  double momentum = 0.0;  // sgd only
  double beta1 = 0.9;     // adam only
  double beta2 = 0.999;   // adam only
  double epsilon = 1e-8;  // adam; adagrad (whose default, when the file has none, is 1e-10)
  double initial_accumulator_value = 0.0;  // adagrad only
  double beta = 1.0;                       // ftrl only: the paper's beta
  double l1 = 0.0;                         // ftrl only: the paper's lambda_1
  double l2 = 0.0;                         // ftrl only: the paper's lambda_2
  double weight_decay = 0.01;              // adamw only: decoupled decay
  double rms_alpha = 0.99;                 // rmsprop only: the file's `alpha`
  bool centered = false;                   // rmsprop only
  // Read from training.lr_schedule and training.clip_norm (not training.optimizer) but kept
  // here: every place that makes an optimizer (coordinator, replicas, servers) gets them.
  LrScheduleConfig schedule;
  double clip_norm = 0.0;  // 0: off; else the global L2 norm the gradient is clipped to
};
// Adagrad's epsilon when the file gives none (PyTorch's default).
inline constexpr double kAdagradEpsilon = 1e-10;

// training.early_stopping (sections_early_stopping.cpp): training stops once `metric`, measured
// on the validation split at each log step, has not improved by more than min_delta for
// `patience` checks in a row; the parameters of the best check are the ones written.
struct EarlyStoppingConfig {
  std::string metric = "val_loss";  // val_loss, val_acc, val_auc, val_log_loss, val_mse
  int patience = 5;
  double min_delta = 0.0;
};

struct TrainingConfig {
  int epochs = 20;
  std::int64_t batch_size = 64;  // global batch per step; "full" in the file = every row
  bool full_batch = false;
  OptimizerConfig optimizer;
  bool shuffle = true;
  std::optional<EarlyStoppingConfig> early_stopping;  // absent: train every step
};

struct TransportConfig {
  TransportType type = TransportType::kIpc;
  std::string address = "127.0.0.1:0";  // tcp only: host:port, port 0 picks a free port
  // tcp: the host other processes are told to connect to, when not the bound one (a listener
  // on 0.0.0.0, a name other hosts use). Empty: the bound host; for 0.0.0.0 the address of
  // this host's default route, found when the run starts.
  std::string advertise;
  // Workers started by someone else (`disttrain worker --connect`, a launcher): the last
  // remote_workers ranks join over tcp instead of being spawned; 0: every worker is local.
  int remote_workers = 0;
  int join_timeout_ms = 60000;  // how long the coordinator waits for every worker to join
  // curve: every link encrypted and authenticated (transports/security.hpp). Key files are
  // absolute paths, empty when not given; their content is read and checked when a run starts
  // (config::load_security), not here: workers parse this config on hosts without those files.
  SecurityMode security = SecurityMode::kNone;
  std::filesystem::path secret_key;       // keys.secret: this process's PREFIX.key
  std::filesystem::path authorized_keys;  // keys.authorized: the client keys the coordinator admits
  std::filesystem::path server_key;       // keys.server: the coordinator's PREFIX.pub (workers)
  std::uint64_t max_message_bytes = std::uint64_t{1} << 32;  // larger messages are dropped
};

struct OutputConfig {
  std::filesystem::path dir;  // "{name}" substituted, resolved against the working directory
  std::int64_t log_every_steps = 10;
  // output.timeline: timeline.json keeps the spans of this many last steps; 0: no timeline.
  std::uint64_t timeline_steps = 0;
  bool plot_per_worker = false;  // output.plot.per_worker: each worker's loss in loss.svg
};
inline constexpr std::uint64_t kTimelineDefaultSteps = 1000;  // output.timeline: true

struct Bound {
  std::optional<double> min;
  std::optional<double> max;
};

struct Config {
  int version = 1;
  std::string name = "run";
  std::uint64_t seed = 0;
  ModelConfig model;
  DataConfig data;
  ShardsConfig shards;
  AggregationConfig aggregation;
  ParallelismConfig parallelism;
  TrainingConfig training;
  TransportConfig transport;
  FaultToleranceConfig fault_tolerance;
  std::vector<FaultConfig> faults;
  OutputConfig output;
  // metric name -> bound: final_loss, mse, accuracy, log_loss, auc, validation_loss,
  // validation_accuracy, validation_mse, validation_log_loss, validation_auc
  std::map<std::string, Bound> expect;

  std::filesystem::path source;  // the config file this came from ("" when built from text)
};

// One `--set key.path=value` override, applied to the YAML tree before validation.
struct Override {
  std::string key_path;
  std::string value;
};

// Loads, applies overrides and validates. Throws ConfigError naming file:line:column, the key
// path, what is wrong and what to do.
[[nodiscard]] Config load(const std::filesystem::path& path,
                          const std::vector<Override>& overrides = {});
// The same from YAML text; `origin` names it in messages and relative paths resolve against
// `base_dir`.
[[nodiscard]] Config parse(const std::string& yaml_text, const std::string& origin,
                           const std::filesystem::path& base_dir,
                           const std::vector<Override>& overrides = {});
// "key.path=value" -> Override; UsageError when there is no '='.
[[nodiscard]] Override parse_override(const std::string& text);
// `--fault rank=2,at_step=40,action=kill` (or the YAML map text): an Override that appends one
// entry to `faults`.
inline constexpr const char* kFaultOverride = "faults[]";
[[nodiscard]] Override parse_fault_override(const std::string& text);

// The config with every default filled in, as YAML that `parse` reads back to an equal Config
// (paths absolute). Workers receive this text; runs write it as config.resolved.yaml.
[[nodiscard]] std::string to_yaml(const Config& config);
// 16 hex digits identifying the resolved config (FNV-1a over to_yaml): ranks that a launcher
// started with one command line compare it when they join.
[[nodiscard]] std::string config_hash(const Config& config);

// docs/config.md: every key with its type, default and meaning, generated from the schema table.
[[nodiscard]] std::string reference_markdown();

// "gradients", "gradients, ring", "async, 2 servers, max_staleness 2", "gradients, tensor 2",
// "parameters, merge median": the mode with whatever else decides how the workers combine.
[[nodiscard]] std::string describe_aggregation(const Config& config);

// Worker processes of a run: shards.count * parallelism.tensor.
[[nodiscard]] int worker_count(const Config& config);

// fault_tolerance.elastic: whether workers may join a running job of this config (so
// max_workers may exceed the start): gradients mode over the star (one or more servers) or the
// ring, parameters mode, async without max_staleness; data parallelism only; dense or sparse
// rows alike. The one rule for validate and the coordinator. docs/elastic.md.
[[nodiscard]] bool admits_joiners(const Config& config);
// Where joins work, for messages: "gradients mode (star, sharded servers, ring), ...".
[[nodiscard]] const char* joinable_modes();

// The task a model type implies (mlp: its `task` key).
[[nodiscard]] Task task_of(const ModelConfig& model);

}  // namespace dt::config
