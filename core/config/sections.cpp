// One parse function per section of the config. A new section is one struct in config.hpp,
// its rows in schema.cpp, one function here and its lines in emit.cpp.

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <thread>

#include "core/config/internal.hpp"
#include "core/util/text.hpp"

namespace dt::config::detail {
namespace {

namespace fs = std::filesystem;

fs::path resolve(const fs::path& base_dir, const std::string& path) {
  return fs::absolute(base_dir / path).lexically_normal();
}

int to_int(std::int64_t v) { return static_cast<int>(v); }  // callers bound v to INT_MAX

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

ModelConfig parse_model(const Section& s) {
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
  m.l2 = s.number("l2", m.l2, Range::kNonNegative);
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

DataConfig parse_data(const Section& s, const fs::path& base_dir) {
  DataConfig d;
  const bool from_file = s.has("path");
  const bool generated = s.has("synthetic");
  if (from_file && generated) {
    s.fail("synthetic", "cannot be used together with data.path; set exactly one of them");
  }
  if (!from_file && !generated) {
    s.fail_here(
        "missing a data source; set data.path to a CSV file or data.synthetic to "
        "generate rows");
  }
  if (from_file) d.path = resolve(base_dir, s.string("path", ""));
  if (s.has("label")) {
    if (generated)
      s.fail("label", "names a column of the data.path file; remove it with data.synthetic");
    d.label = s.string("label", "");
  }
  d.normalize = s.choice("normalize", d.normalize, kNormalizations);
  d.validation_fraction = s.number("validation", d.validation_fraction, Range::kFraction);
  if (generated) d.synthetic = parse_synthetic(s.section("synthetic"));
  return d;
}

ShardsConfig parse_shards(const Section& s) {
  ShardsConfig c;
  // hardware_concurrency() may report 0 when it cannot tell; one worker still trains.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  c.count = to_int(s.integer("count", cores, 1));
  c.strategy = s.choice("strategy", c.strategy, kShardStrategies, kLaterShardStrategies);
  return c;
}

AggregationConfig parse_aggregation(const Section& s) {
  AggregationConfig c;
  c.mode = s.choice("mode", c.mode, kAggregationModes, kLaterAggregationModes);
  c.topology = s.choice("topology", c.topology, kTopologies, kLaterTopologies);
  c.servers = to_int(s.integer("servers", c.servers, 1));
  if (c.servers != 1) {
    s.fail("servers",
           fmt::format("{} servers are not available in this version; use 1", c.servers));
  }
  return c;
}

OptimizerConfig parse_optimizer(const Section& s) {
  OptimizerConfig c;
  c.type = s.choice("type", c.type, kOptimizerTypes);
  c.lr = s.number("lr", c.lr, Range::kPositive);
  const char* type = name_of(c.type);
  if (c.type == OptimizerType::kSgd) {
    for (const char* key : {"beta1", "beta2", "epsilon"}) {
      if (s.has(key)) s.fail_not_applicable(key, "adam", "training.optimizer.type", type);
    }
    c.momentum = s.number("momentum", c.momentum, Range::kFraction);
  } else {
    if (s.has("momentum"))
      s.fail_not_applicable("momentum", "sgd", "training.optimizer.type", type);
    c.beta1 = s.number("beta1", c.beta1, Range::kFraction);
    c.beta2 = s.number("beta2", c.beta2, Range::kFraction);
    c.epsilon = s.number("epsilon", c.epsilon, Range::kPositive);
  }
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
  c.shuffle = s.boolean("shuffle", c.shuffle);
  return c;
}

bool valid_address(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  const bool digits = !port.empty() && port.find_first_not_of("0123456789") == std::string::npos;
  const auto number = digits ? parse_integer(port) : std::nullopt;
  if (!number || *number > 65535) return false;
  if (host.find_first_of(" \t") != std::string::npos) return false;
  // An IPv6 host has colons of its own and must be bracketed: [::1]:5555.
  const bool bracketed = host.front() == '[' && host.back() == ']' && host.size() > 2;
  return bracketed || host.find_first_of(":[]") == std::string::npos;
}

// Loopback only: 127.0.0.0/8 or [::1]. A training port open to the network would take
// gradients from anyone until authentication (transport.security) exists.
bool loopback_host(const std::string& address) {
  const std::string host = address.substr(0, address.rfind(':'));
  return host.starts_with("127.") || host == "[::1]";
}

TransportConfig parse_transport(const Section& s) {
  TransportConfig c;
  c.type = s.choice("type", c.type, kTransportTypes);
  c.address = s.string("address", c.address);
  if (!valid_address(c.address)) {
    s.fail("address", fmt::format("expected host:port with a port from 0 to 65535, got {}",
                                  describe(s.node("address"))));
  }
  if (!loopback_host(c.address)) {
    s.fail("address", fmt::format("{} is not a loopback address; this version listens on "
                                  "127.0.0.1 or [::1] only, because it has no authentication for "
                                  "connections from other machines yet; use 127.0.0.1:PORT",
                                  describe(s.node("address"))));
  }
  return c;
}

FaultToleranceConfig parse_fault_tolerance(const Section& s) {
  FaultToleranceConfig c;
  c.heartbeat_ms = to_int(s.integer("heartbeat_ms", c.heartbeat_ms, 10));
  c.worker_timeout_ms = to_int(s.integer("worker_timeout_ms", c.worker_timeout_ms, 1));
  // A timeout under two heartbeats would declare a worker lost after one late heartbeat.
  const std::int64_t least = 2 * static_cast<std::int64_t>(c.heartbeat_ms);
  if (c.worker_timeout_ms < least) {
    if (s.has("worker_timeout_ms")) {
      s.fail("worker_timeout_ms",
             fmt::format("expected an integer >= {} (twice fault_tolerance.heartbeat_ms), got {}",
                         least, c.worker_timeout_ms));
    }
    s.fail("heartbeat_ms",
           fmt::format("needs fault_tolerance.worker_timeout_ms >= {} (twice the heartbeat), but "
                       "it is {} (the default); set fault_tolerance.worker_timeout_ms",
                       least, c.worker_timeout_ms));
  }
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
  c.model = parse_model(root.section("model"));
  c.data = parse_data(root.section("data"), base_dir);
  c.shards = parse_shards(root.section("shards"));
  c.aggregation = parse_aggregation(root.section("aggregation"));
  c.training = parse_training(root.section("training"));
  c.transport = parse_transport(root.section("transport"));
  c.fault_tolerance = parse_fault_tolerance(root.section("fault_tolerance"));
  c.output = parse_output(root.section("output"), base_dir, c.name);
  c.expect = parse_expect(root.section("expect"));
  return c;
}

}  // namespace dt::config::detail
