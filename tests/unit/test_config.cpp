// config: defaults, every section and the to_yaml round trip.

#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "core/config/config.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

using namespace dt::config;

namespace {

using dt::test::kMinimal;
using dt::test::parse_text;

// Field by field, so a failure names the field (the structs have no operator==).
void check_equal(const Config& a, const Config& b) {
  CHECK(a.version == b.version);
  CHECK(a.name == b.name);
  CHECK(a.seed == b.seed);
  CHECK(a.model.type == b.model.type);
  CHECK(a.model.hidden == b.model.hidden);
  CHECK(a.model.activation == b.model.activation);
  CHECK(a.model.task == b.model.task);
  CHECK(a.model.l2 == b.model.l2);
  CHECK(a.data.path == b.data.path);
  CHECK(a.data.label == b.data.label);
  CHECK(a.data.normalize == b.data.normalize);
  CHECK(a.data.missing == b.data.missing);
  CHECK(a.data.validation_fraction == b.data.validation_fraction);
  CHECK(a.data.sparse == b.data.sparse);
  REQUIRE(a.data.hash.has_value() == b.data.hash.has_value());
  if (a.data.hash) {
    CHECK(a.data.hash->bits == b.data.hash->bits);
    CHECK(a.data.hash->columns == b.data.hash->columns);
    CHECK(a.data.hash->crosses == b.data.hash->crosses);
  }
  REQUIRE(a.data.synthetic.has_value() == b.data.synthetic.has_value());
  if (a.data.synthetic) {
    CHECK(a.data.synthetic->kind == b.data.synthetic->kind);
    CHECK(a.data.synthetic->rows == b.data.synthetic->rows);
    CHECK(a.data.synthetic->features == b.data.synthetic->features);
    CHECK(a.data.synthetic->classes == b.data.synthetic->classes);
    CHECK(a.data.synthetic->noise == b.data.synthetic->noise);
  }
  CHECK(a.shards.count == b.shards.count);
  CHECK(a.shards.strategy == b.shards.strategy);
  CHECK(a.aggregation.mode == b.aggregation.mode);
  CHECK(a.aggregation.topology == b.aggregation.topology);
  CHECK(a.aggregation.servers == b.aggregation.servers);
  CHECK(a.training.epochs == b.training.epochs);
  CHECK(a.training.batch_size == b.training.batch_size);
  CHECK(a.training.full_batch == b.training.full_batch);
  CHECK(a.training.optimizer.type == b.training.optimizer.type);
  CHECK(a.training.optimizer.lr == b.training.optimizer.lr);
  CHECK(a.training.optimizer.momentum == b.training.optimizer.momentum);
  CHECK(a.training.optimizer.beta1 == b.training.optimizer.beta1);
  CHECK(a.training.optimizer.beta2 == b.training.optimizer.beta2);
  CHECK(a.training.optimizer.epsilon == b.training.optimizer.epsilon);
  CHECK(a.training.shuffle == b.training.shuffle);
  CHECK(a.transport.type == b.transport.type);
  CHECK(a.transport.address == b.transport.address);
  CHECK(a.fault_tolerance.heartbeat_ms == b.fault_tolerance.heartbeat_ms);
  CHECK(a.fault_tolerance.worker_timeout_ms == b.fault_tolerance.worker_timeout_ms);
  CHECK(a.output.dir == b.output.dir);
  CHECK(a.output.log_every_steps == b.output.log_every_steps);
  REQUIRE(a.expect.size() == b.expect.size());
  for (const auto& [metric, bound] : a.expect) {
    REQUIRE(b.expect.count(metric) == 1);
    CHECK(bound.min == b.expect.at(metric).min);
    CHECK(bound.max == b.expect.at(metric).max);
  }
}

const char* const kFull = R"(version: 1
name: diabetes-mlp.v2
seed: 7
model:
  type: mlp
  hidden: [32, 16]
  activation: tanh
  task: binary
  l2: 0.001
data:
  path: ../data/diabetes.csv
  label: progression
  normalize: minmax
  validation: 0.2
shards:
  count: 4
  strategy: round_robin
aggregation:
  mode: gradients
  topology: star
  servers: 1
parallelism:
  tensor: 1
training:
  epochs: 5
  batch_size: 128
  optimizer: {type: adam, lr: 0.01, beta1: 0.8, beta2: 0.99, epsilon: 1e-6}
  shuffle: false
transport:
  type: tcp
  address: 127.0.0.2:5555
fault_tolerance:
  heartbeat_ms: 50
  worker_timeout_ms: 100
output:
  dir: out/{name}-run
  log_every: {steps: 5}
expect:
  accuracy: {min: 0.8}
  final_loss: {max: 0.5, min: 0}
)";

const char* const kSynthetic = R"(version: 1
seed: 3
model: {type: softmax_regression}
data:
  normalize: none
  synthetic: {kind: blobs, rows: 500, features: 4, classes: 5, noise: 0.5}
training:
  batch_size: full
  optimizer: {type: sgd, lr: 0.5, momentum: 0.9}
)";

}  // namespace

TEST_CASE("config: a minimal file gets every default") {
  const Config c = parse_text(kMinimal);
  CHECK(c.version == 1);
  CHECK(c.name == "run");
  CHECK(c.seed == 0);
  CHECK(c.model.type == ModelType::kLinearRegression);
  CHECK(c.model.l2 == 0.0);
  CHECK(task_of(c.model) == Task::kRegression);
  CHECK(c.data.path == "/tmp/data.csv");
  CHECK_FALSE(c.data.label.has_value());
  CHECK(c.data.normalize == Normalize::kStandard);
  CHECK(c.data.validation_fraction == 0.0);
  CHECK_FALSE(c.data.synthetic.has_value());
  CHECK(c.shards.count == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  CHECK(c.shards.strategy == ShardStrategy::kContiguous);
  CHECK(c.aggregation.mode == AggregationMode::kGradients);
  CHECK(c.aggregation.topology == Topology::kStar);
  CHECK(c.aggregation.servers == 1);
  CHECK(c.training.epochs == 20);
  CHECK(c.training.batch_size == 64);
  CHECK_FALSE(c.training.full_batch);
  CHECK(c.training.optimizer.type == OptimizerType::kSgd);
  CHECK(c.training.optimizer.lr == 0.05);
  CHECK(c.training.optimizer.momentum == 0.0);
  CHECK(c.training.shuffle);
  CHECK(c.transport.type == TransportType::kIpc);
  CHECK(c.transport.address == "127.0.0.1:0");
  CHECK(c.fault_tolerance.heartbeat_ms == 200);
  CHECK(c.fault_tolerance.worker_timeout_ms == 3000);
  CHECK(c.output.dir == std::filesystem::current_path() / "runs" / "run");
  CHECK(c.output.log_every_steps == 10);
  CHECK(c.expect.empty());
  CHECK(c.source.empty());
}

TEST_CASE("config: every section of a full file") {
  const Config c = parse(kFull, "full.yaml", "/tmp/cfg");
  CHECK(c.name == "diabetes-mlp.v2");
  CHECK(c.seed == 7);
  CHECK(c.model.type == ModelType::kMlp);
  CHECK(c.model.hidden == std::vector<int>{32, 16});
  CHECK(c.model.activation == Activation::kTanh);
  CHECK(c.model.task == Task::kBinary);
  CHECK(task_of(c.model) == Task::kBinary);
  CHECK(c.model.l2 == 0.001);
  CHECK(c.data.path == "/tmp/data/diabetes.csv");  // relative to the file's folder, normalized
  CHECK(c.data.label == "progression");
  CHECK(c.data.normalize == Normalize::kMinmax);
  CHECK(c.data.validation_fraction == 0.2);
  CHECK(c.shards.count == 4);
  CHECK(c.shards.strategy == ShardStrategy::kRoundRobin);
  CHECK(c.training.epochs == 5);
  CHECK(c.training.batch_size == 128);
  CHECK(c.training.optimizer.type == OptimizerType::kAdam);
  CHECK(c.training.optimizer.lr == 0.01);
  CHECK(c.training.optimizer.beta1 == 0.8);
  CHECK(c.training.optimizer.beta2 == 0.99);
  CHECK(c.training.optimizer.epsilon == 1e-6);
  CHECK_FALSE(c.training.shuffle);
  CHECK(c.transport.type == TransportType::kTcp);
  CHECK(c.transport.address == "127.0.0.2:5555");
  CHECK(c.fault_tolerance.heartbeat_ms == 50);
  CHECK(c.fault_tolerance.worker_timeout_ms == 100);
  // output.dir is relative to the working directory, not to the config.
  CHECK(c.output.dir == (std::filesystem::current_path() / "out" / "diabetes-mlp.v2-run").lexically_normal());
  CHECK(c.output.log_every_steps == 5);
  REQUIRE(c.expect.size() == 2);
  CHECK(c.expect.at("accuracy").min == 0.8);
  CHECK_FALSE(c.expect.at("accuracy").max.has_value());
  CHECK(c.expect.at("final_loss").min == 0.0);
  CHECK(c.expect.at("final_loss").max == 0.5);
}

TEST_CASE("config: synthetic data, full batch and momentum") {
  const Config c = parse_text(kSynthetic);
  CHECK(c.data.path.empty());
  REQUIRE(c.data.synthetic.has_value());
  CHECK(c.data.synthetic->kind == SyntheticKind::kBlobs);
  CHECK(c.data.synthetic->rows == 500);
  CHECK(c.data.synthetic->features == 4);
  CHECK(c.data.synthetic->classes == 5);
  CHECK(c.data.synthetic->noise == 0.5);
  CHECK(c.data.normalize == Normalize::kNone);
  CHECK(task_of(c.model) == Task::kMulticlass);
  CHECK(c.training.full_batch);
  CHECK(c.training.optimizer.momentum == 0.9);

  const Config defaults = parse_text("version: 1\ndata: {synthetic: {kind: linear}}\n");
  REQUIRE(defaults.data.synthetic.has_value());
  CHECK(defaults.data.synthetic->rows == 10000);
  CHECK(defaults.data.synthetic->features == 10);
  CHECK(defaults.data.synthetic->noise == 0.1);
}

TEST_CASE("config: empty sections read as empty, other values are accepted as documented") {
  const Config c = parse_text(
      "version: 1\nname: '123'\nmodel:\ndata: {path: /abs/x.csv}\nexpect:\ntraining:\n"
      "  shuffle: true\ntransport: {address: '[::1]:65535'}\nfault_tolerance: {heartbeat_ms: 10, "
      "worker_timeout_ms: 20}\n");
  CHECK(c.name == "123");
  CHECK(c.model.type == ModelType::kLinearRegression);
  CHECK(c.data.path == "/abs/x.csv");
  CHECK(c.transport.address == "[::1]:65535");
  CHECK(c.expect.empty());
}

TEST_CASE("config: name_of spells every value as the YAML does, task_of follows the type") {
  CHECK(std::string(name_of(ModelType::kLinearRegression)) == "linear_regression");
  CHECK(std::string(name_of(ModelType::kLogisticRegression)) == "logistic_regression");
  CHECK(std::string(name_of(ModelType::kSoftmaxRegression)) == "softmax_regression");
  CHECK(std::string(name_of(ModelType::kMlp)) == "mlp");
  CHECK(std::string(name_of(Activation::kRelu)) == "relu");
  CHECK(std::string(name_of(Activation::kTanh)) == "tanh");
  CHECK(std::string(name_of(Activation::kSigmoid)) == "sigmoid");
  CHECK(std::string(name_of(Task::kRegression)) == "regression");
  CHECK(std::string(name_of(Task::kBinary)) == "binary");
  CHECK(std::string(name_of(Task::kMulticlass)) == "multiclass");
  CHECK(std::string(name_of(Normalize::kNone)) == "none");
  CHECK(std::string(name_of(Normalize::kStandard)) == "standard");
  CHECK(std::string(name_of(Normalize::kMinmax)) == "minmax");
  CHECK(std::string(name_of(SyntheticKind::kLinear)) == "linear");
  CHECK(std::string(name_of(SyntheticKind::kLogistic)) == "logistic");
  CHECK(std::string(name_of(SyntheticKind::kBlobs)) == "blobs");
  CHECK(std::string(name_of(ShardStrategy::kContiguous)) == "contiguous");
  CHECK(std::string(name_of(ShardStrategy::kRoundRobin)) == "round_robin");
  CHECK(std::string(name_of(ShardStrategy::kRandom)) == "random");
  CHECK(std::string(name_of(AggregationMode::kGradients)) == "gradients");
  CHECK(std::string(name_of(Topology::kStar)) == "star");
  CHECK(std::string(name_of(OptimizerType::kSgd)) == "sgd");
  CHECK(std::string(name_of(OptimizerType::kAdam)) == "adam");
  CHECK(std::string(name_of(OptimizerType::kAdagrad)) == "adagrad");
  CHECK(std::string(name_of(OptimizerType::kFtrl)) == "ftrl");
  CHECK(std::string(name_of(TransportType::kInproc)) == "inproc");
  CHECK(std::string(name_of(TransportType::kIpc)) == "ipc");
  CHECK(std::string(name_of(TransportType::kTcp)) == "tcp");

  ModelConfig m;
  m.task = Task::kMulticlass;  // ignored by the fixed-task types
  m.type = ModelType::kLinearRegression;
  CHECK(task_of(m) == Task::kRegression);
  m.type = ModelType::kLogisticRegression;
  CHECK(task_of(m) == Task::kBinary);
  m.type = ModelType::kSoftmaxRegression;
  CHECK(task_of(m) == Task::kMulticlass);
  m.type = ModelType::kMlp;
  m.task = Task::kBinary;
  CHECK(task_of(m) == Task::kBinary);
}

TEST_CASE("config: to_yaml writes every default and reads back to an equal config") {
  constexpr const char* kHashed =
      "version: 1\ndata: {path: c.csv, sparse: true, hash: {bits: 22, columns: [C1, C2], "
      "crosses: [[C1, C2]]}}\n";
  for (const char* text : {kMinimal, kFull, kSynthetic, kHashed}) {
    CAPTURE(text);
    const Config original = parse(text, "a.yaml", "/tmp/cfg");
    const std::string yaml = to_yaml(original);
    // Paths are absolute, so reading it from another folder changes nothing.
    const Config again = parse(yaml, "resolved.yaml", "/somewhere/else");
    check_equal(original, again);
    CHECK(to_yaml(again) == yaml);
  }
}

TEST_CASE("config: to_yaml text of a small config") {
  const Config c = parse_text(
      "version: 1\nname: demo\ndata: {path: d.csv}\nshards: {count: 2}\n"
      "training: {optimizer: {lr: 1e-3}}\noutput: {dir: /tmp/runs/demo}\n"
      "expect: {final_loss: {max: 3000}}\n");
  CHECK(to_yaml(c) == R"(version: 1
name: demo
seed: 0
model:
  type: linear_regression
  l2: 0
data:
  path: /tmp/d.csv
  normalize: standard
  missing: error
  compression: auto
  format: auto
  sparse: auto
  validation: 0
shards:
  count: 2
  strategy: contiguous
aggregation:
  mode: gradients
  topology: star
  servers: 1
parallelism:
  tensor: 1
training:
  epochs: 20
  batch_size: 64
  optimizer:
    type: sgd
    lr: 0.001
    momentum: 0
  shuffle: true
transport:
  type: ipc
  address: 127.0.0.1:0
  remote_workers: 0
  join_timeout_ms: 60000
  security: none
  max_message_bytes: 4294967296
fault_tolerance:
  heartbeat_ms: 200
  worker_timeout_ms: 3000
  on_worker_failure: abort
  max_restarts: 3
  checkpoint_every:
    steps: 100
  straggler_factor: 2
output:
  dir: /tmp/runs/demo
  log_every:
    steps: 10
  plot:
    per_worker: false
expect:
  final_loss: {max: 3000}
)");
}

TEST_CASE("config: to_yaml quotes strings that YAML would read as something else") {
  Config c = parse_text(kMinimal);
  c.data.label = "null";
  c.data.path = "/tmp/a dir/x: y.csv";
  const Config again = parse(to_yaml(c), "resolved.yaml", "/");
  CHECK(again.data.label == "null");
  CHECK(again.data.path == "/tmp/a dir/x: y.csv");
}
