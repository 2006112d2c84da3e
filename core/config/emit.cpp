// to_yaml: the resolved config, every applicable key written out in schema-table order, so a
// worker or a later reader needs no defaults of its own. Keys that do not apply (model.hidden
// for a linear model, momentum for adam) are left out: parse() rejects them.

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "core/config/config.hpp"
#include "base/text.hpp"

namespace dt::config {
namespace {

class Writer {
 public:
  Writer() { out_ << YAML::BeginMap; }

  void begin(const char* section) { out_ << YAML::Key << section << YAML::Value << YAML::BeginMap; }
  void end() { out_ << YAML::EndMap; }

  void put(const char* key, const std::string& value) {
    out_ << YAML::Key << key << YAML::Value << value;
  }
  void put(const char* key, const char* value) { put(key, std::string(value)); }
  void put(const char* key, std::int64_t value) { put(key, std::to_string(value)); }
  void put(const char* key, std::uint64_t value) { put(key, std::to_string(value)); }
  void put(const char* key, int value) { put(key, std::to_string(value)); }
  void put(const char* key, bool value) { put(key, value ? "true" : "false"); }
  // The shortest text that reads back to the same double, so the round trip is exact.
  void put(const char* key, double value) { put(key, text::format_double(value)); }

  void put(const char* key, const std::vector<int>& values) {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const int v : values) out_ << v;
    out_ << YAML::EndSeq;
  }

  void put(const char* key, const std::vector<std::string>& values) {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& v : values) out_ << v;
    out_ << YAML::EndSeq;
  }

  void put(const char* key, const std::vector<std::filesystem::path>& paths) {
    out_ << YAML::Key << key << YAML::Value << YAML::BeginSeq;
    for (const auto& p : paths) out_ << p.string();
    out_ << YAML::EndSeq;
  }

  // data.hash.crosses: [[a, b], [c, d]]
  void put(const char* key, const std::vector<std::pair<std::string, std::string>>& pairs) {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& [a, b] : pairs) out_ << YAML::Flow << YAML::BeginSeq << a << b << YAML::EndSeq;
    out_ << YAML::EndSeq;
  }

  // data.categorical: {color: one_hot, city: {hash: 64}}
  void put(const char* key, const std::vector<CategoricalColumn>& columns) {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& c : columns) {
      out_ << YAML::Key << c.column << YAML::Value;
      if (c.buckets == 0) {
        out_ << "one_hot";
      } else {
        out_ << YAML::Flow << YAML::BeginMap << YAML::Key << "hash" << YAML::Value
             << std::to_string(c.buckets) << YAML::EndMap;
      }
    }
    out_ << YAML::EndMap;
  }

  void put(const std::string& metric, const Bound& bound) {
    out_ << YAML::Key << metric << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (bound.min) out_ << YAML::Key << "min" << YAML::Value << text::format_double(*bound.min);
    if (bound.max) out_ << YAML::Key << "max" << YAML::Value << text::format_double(*bound.max);
    out_ << YAML::EndMap;
  }

  void put(const char* key, const std::vector<FaultConfig>& faults) {
    out_ << YAML::Key << key << YAML::Value << YAML::BeginSeq;
    for (const auto& f : faults) {
      out_ << YAML::Flow << YAML::BeginMap;
      if (f.server >= 0) {
        out_ << YAML::Key << "server" << YAML::Value << f.server;
      } else {
        out_ << YAML::Key << "rank" << YAML::Value << f.rank;
      }
      out_ << YAML::Key << "action" << YAML::Value << name_of(f.action);
      if (f.at_step) {
        out_ << YAML::Key << "at_step" << YAML::Value << *f.at_step;
      } else {
        out_ << YAML::Key << "probability" << YAML::Value << text::format_double(f.probability);
      }
      out_ << YAML::Key << "ms" << YAML::Value << f.ms;
      out_ << YAML::Key << "seed" << YAML::Value << f.seed;
      out_ << YAML::EndMap;
    }
    out_ << YAML::EndSeq;
  }

  [[nodiscard]] std::string finish() {
    out_ << YAML::EndMap;
    return std::string(out_.c_str()) + "\n";
  }

 private:
  YAML::Emitter out_;
};

void write_model(Writer& w, const ModelConfig& m) {
  w.begin("model");
  w.put("type", name_of(m.type));
  if (m.type == ModelType::kMlp) {
    w.put("hidden", m.hidden);
    w.put("activation", name_of(m.activation));
    w.put("task", name_of(m.task));
    w.put("dtype", name_of(m.dtype));
  }
  w.put("l2", m.l2);
  if (!m.init.empty()) w.put("init", m.init.string());
  w.end();
}

void write_data(Writer& w, const DataConfig& d) {
  w.begin("data");
  if (!d.synthetic && !d.path.empty()) w.put("path", d.path.string());
  if (d.label) w.put("label", *d.label);
  if (d.delimiter != 0) w.put("delimiter", delimiter_name(d.delimiter));
  if (!d.features.empty()) w.put("features", d.features);
  if (!d.exclude.empty()) w.put("exclude", d.exclude);
  if (!d.categorical.empty()) w.put("categorical", d.categorical);
  w.put("normalize", name_of(d.normalize));
  w.put("missing", name_of(d.missing));
  if (!d.synthetic && !d.path.empty()) {
    w.put("compression", name_of(d.compression));
    w.put("format", name_of(d.format));
    if (!d.labels.empty()) w.put("labels", d.labels.string());
    if (d.format == DataFormat::kNpz || d.array_x != "x" || d.array_y != "y") {
      w.begin("arrays");
      w.put("x", d.array_x);
      w.put("y", d.array_y);
      w.end();
    }
  }
  if (d.format == DataFormat::kLibsvm || d.index_base >= 0 || d.feature_count > 0 ||
      d.max_dense_gib != 8.0) {
    w.put("index_base", d.index_base < 0 ? std::string("auto") : std::to_string(d.index_base));
    if (d.feature_count > 0) w.put("feature_count", d.feature_count);
    w.put("max_dense_gib", d.max_dense_gib);
  }
  if (!d.synthetic && !d.path.empty()) {
    w.put("sparse", d.sparse == SparseChoice::kAuto ? "auto"
                    : d.sparse == SparseChoice::kOn ? "true"
                                                    : "false");
  }
  if (d.hash) {
    w.begin("hash");
    w.put("bits", d.hash->bits);
    w.put("columns", d.hash->columns);
    if (!d.hash->crosses.empty()) w.put("crosses", d.hash->crosses);
    w.end();
  }
  w.put("validation", d.validation_fraction);
  if (d.synthetic) {
    const SyntheticConfig& s = *d.synthetic;
    w.begin("synthetic");
    w.put("kind", name_of(s.kind));
    w.put("rows", s.rows);
    w.put("features", s.features);
    if (s.kind == SyntheticKind::kBlobs) w.put("classes", s.classes);
    w.put("noise", s.noise);
    w.end();
  }
  w.end();
}

void write_shards(Writer& w, const ShardsConfig& s) {
  w.begin("shards");
  w.put("count", s.count);
  w.put("strategy", name_of(s.strategy));
  if (s.strategy == ShardStrategy::kByLabel) w.put("labels_per_worker", s.labels_per_worker);
  if (s.strategy == ShardStrategy::kDirichlet) w.put("alpha", s.alpha);
  if (s.strategy == ShardStrategy::kFiles) w.put("files", s.files);
  w.end();
}

void write_aggregation(Writer& w, const AggregationConfig& a) {
  w.begin("aggregation");
  w.put("mode", name_of(a.mode));
  w.put("topology", name_of(a.topology));
  w.put("servers", a.servers);
  // Only when set: configs without it emit (and hash) as before.
  if (a.compression == WireCompression::kTopk) {
    w.begin("compression");
    w.begin("topk");
    w.put("ratio", a.topk_ratio);
    w.end();
    w.end();
  } else if (a.compression != WireCompression::kNone) {
    w.put("compression", name_of(a.compression));
  }
  if (a.mode == AggregationMode::kParameters) {
    const ParametersConfig& p = a.parameters;
    w.begin("parameters");
    w.begin("sync_every");
    if (p.sync_every_steps > 0) {
      w.put("steps", p.sync_every_steps);
    } else {
      w.put("epochs", p.sync_every_epochs);
    }
    w.end();
    w.put("merge", name_of(p.merge));
    if (p.merge == MergeRule::kTrimmedMean) w.put("trim", p.trim);
    w.put("clients_per_round", p.clients_per_round);
    w.put("optimizer_state", name_of(p.optimizer_state));
    w.end();
  }
  if (a.mode == AggregationMode::kAsync) {
    w.begin("async");
    if (a.async.max_staleness) w.put("max_staleness", *a.async.max_staleness);
    w.put("staleness_lr", a.async.staleness_lr);
    w.end();
  }
  w.end();
}

// training.lr_schedule and training.clip_norm, only when set: a config without them emits
// what it did before they existed.
void write_training_controls(Writer& w, const OptimizerConfig& o) {
  const LrScheduleConfig& l = o.schedule;
  if (l.type != LrScheduleType::kConstant || l.warmup_steps > 0) {
    w.begin("lr_schedule");
    w.put("type", name_of(l.type));
    if (l.type == LrScheduleType::kStep) w.put("step_size", l.step_size);
    if (l.type == LrScheduleType::kStep || l.type == LrScheduleType::kExponential) {
      w.put("gamma", l.gamma);
    }
    if (l.type == LrScheduleType::kCosine) {
      w.put("min_lr", l.min_lr);
      if (l.t_max > 0) w.put("t_max", l.t_max);
    }
    w.put("warmup_steps", l.warmup_steps);
    w.put("warmup_start", l.warmup_start);
    w.end();
  }
  if (o.clip_norm > 0.0) w.put("clip_norm", o.clip_norm);
}

void write_training(Writer& w, const TrainingConfig& t) {
  w.begin("training");
  w.put("epochs", t.epochs);
  if (t.full_batch) {
    w.put("batch_size", "full");
  } else {
    w.put("batch_size", t.batch_size);
  }
  const OptimizerConfig& o = t.optimizer;
  w.begin("optimizer");
  w.put("type", name_of(o.type));
  switch (o.type) {
    case OptimizerType::kSgd:
      w.put("lr", o.lr);
      w.put("momentum", o.momentum);
      break;
    case OptimizerType::kAdam:
      w.put("lr", o.lr);
      w.put("beta1", o.beta1);
      w.put("beta2", o.beta2);
      w.put("epsilon", o.epsilon);
      break;
    case OptimizerType::kAdagrad:
      w.put("lr", o.lr);
      w.put("epsilon", o.epsilon);
      w.put("initial_accumulator_value", o.initial_accumulator_value);
      break;
    case OptimizerType::kFtrl:
      w.put("alpha", o.lr);
      w.put("beta", o.beta);
      w.put("l1", o.l1);
      w.put("l2", o.l2);
      break;
    case OptimizerType::kAdamw:
      w.put("lr", o.lr);
      w.put("beta1", o.beta1);
      w.put("beta2", o.beta2);
      w.put("epsilon", o.epsilon);
      w.put("weight_decay", o.weight_decay);
      break;
    case OptimizerType::kRmsprop:
      w.put("lr", o.lr);
      w.put("alpha", o.rms_alpha);
      w.put("epsilon", o.epsilon);
      w.put("momentum", o.momentum);
      w.put("centered", o.centered);
      break;
  }
  w.end();
  write_training_controls(w, o);
  w.put("shuffle", t.shuffle);
  if (t.early_stopping) {  // only when set: configs without it emit (and hash) as before
    w.begin("early_stopping");
    w.put("metric", t.early_stopping->metric);
    w.put("patience", t.early_stopping->patience);
    w.put("min_delta", t.early_stopping->min_delta);
    w.end();
  }
  w.end();
}

}  // namespace

std::string to_yaml(const Config& c) {
  Writer w;
  w.put("version", c.version);
  w.put("name", c.name);
  w.put("seed", static_cast<std::uint64_t>(c.seed));
  write_model(w, c.model);
  write_data(w, c.data);

  write_shards(w, c.shards);
  write_aggregation(w, c.aggregation);

  w.begin("parallelism");
  w.put("tensor", c.parallelism.tensor);
  w.end();

  write_training(w, c.training);

  w.begin("transport");
  w.put("type", name_of(c.transport.type));
  w.put("address", c.transport.address);
  if (!c.transport.advertise.empty()) w.put("advertise", c.transport.advertise);
  w.put("remote_workers", c.transport.remote_workers);
  w.put("join_timeout_ms", c.transport.join_timeout_ms);
  w.put("security", name_of(c.transport.security));
  const auto& t = c.transport;
  if (!t.secret_key.empty() || !t.authorized_keys.empty() || !t.server_key.empty()) {
    w.begin("keys");
    if (!t.secret_key.empty()) w.put("secret", t.secret_key.string());
    if (!t.authorized_keys.empty()) w.put("authorized", t.authorized_keys.string());
    if (!t.server_key.empty()) w.put("server", t.server_key.string());
    w.end();
  }
  w.put("max_message_bytes", c.transport.max_message_bytes);
  w.end();

  w.begin("fault_tolerance");
  w.put("heartbeat_ms", c.fault_tolerance.heartbeat_ms);
  w.put("worker_timeout_ms", c.fault_tolerance.worker_timeout_ms);
  w.put("on_worker_failure", name_of(c.fault_tolerance.on_worker_failure));
  w.put("max_restarts", c.fault_tolerance.max_restarts);
  w.begin("checkpoint_every");
  w.put("steps", c.fault_tolerance.checkpoint_every_steps);
  w.end();
  w.put("straggler_factor", c.fault_tolerance.straggler_factor);
  if (const auto& e = c.fault_tolerance.elastic) {  // only when set: other configs hash as before
    w.begin("elastic");
    w.put("min_workers", e->min_workers);
    w.put("max_workers", e->max_workers);
    w.put("join_timeout_ms", e->join_timeout_ms);
    w.put("admit_at_steps", e->admit_at_steps);
    w.end();
  }
  w.end();

  if (!c.faults.empty()) w.put("faults", c.faults);

  w.begin("output");
  w.put("dir", c.output.dir.string());
  w.begin("log_every");
  w.put("steps", c.output.log_every_steps);
  w.end();
  // output.timeline only when on (configs without it emit as before): `true` for the default
  // window, else the window's steps.
  if (c.output.timeline_steps == kTimelineDefaultSteps) {
    w.put("timeline", true);
  } else if (c.output.timeline_steps > 0) {
    w.begin("timeline");
    w.put("steps", c.output.timeline_steps);
    w.end();
  }
  w.begin("plot");
  w.put("per_worker", c.output.plot_per_worker);
  w.end();
  w.end();

  if (!c.expect.empty()) {
    w.begin("expect");
    for (const auto& [metric, bound] : c.expect) w.put(metric, bound);
    w.end();
  }
  return w.finish();
}

std::string config_hash(const Config& config) {
  // What the ranks must agree on is what they train. Where each process listens or what it
  // is told to connect to, its key files, where the coordinator writes, and the folders the
  // data files are in (each host has its own copy or mount; workers read the coordinator's
  // paths or their own `--data` copy, checked against it) differ from host to host and are
  // left out.
  Config same = config;
  same.transport.address.clear();
  same.transport.advertise.clear();
  same.transport.remote_workers = 0;
  same.transport.join_timeout_ms = 0;
  same.transport.secret_key.clear();
  same.transport.authorized_keys.clear();
  same.transport.server_key.clear();
  same.output.dir.clear();
  same.output.timeline_steps = 0;  // recorded or not, the ranks train the same
  same.data.path = same.data.path.filename();
  for (auto& file : same.shards.files) file = file.filename();
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : to_yaml(same)) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace dt::config
