// config: every error names where (file:line:column or the --set override), the key path,
// what is wrong and what to do. The exact texts are pinned here.

#include <doctest/doctest.h>

#include "core/config/config.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

using namespace dt::config;

namespace {

// The message of the ConfigError that parsing `text` throws.
std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  return dt::test::message_of<dt::ConfigError>(
      [&] { (void)dt::test::parse_text(text, overrides); });
}

// `body` after a valid header: line 3 of the file is the first line of `body`.
std::string with_header(const std::string& body) {
  return "version: 1\ndata: {path: a.csv}\n" + body;
}

// A config text, the exact message parsing it throws, and the --set overrides parsed with it.
struct Case {
  std::string yaml;
  std::string expected;
  std::vector<std::string> sets = {};
};

void check_errors(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    CHECK(error_of(c.yaml, c.sets) == c.expected);
  }
}

}  // namespace

TEST_CASE("config errors: unknown keys, with a suggestion when one is close") {
  check_errors({
      {"version: 1\ntraning:\n  epochs: 5\n",
       "test.yaml:2:1: unknown key 'traning' (did you mean 'training'?)"},
      {with_header("training:\n  optimizer:\n    lr: 0.1\n    momentun: 0.9\n"),
       "test.yaml:6:5: unknown key 'training.optimizer.momentun' (did you mean "
       "'training.optimizer.momentum'?)"},
      {with_header("model:\n  colour: red\n"),
       "test.yaml:4:3: unknown key 'model.colour' (expected type, hidden, activation, task, "
       "dtype, l2 or init)"},
      {with_header("output: {log_every: {step: 5}}\n"),
       "test.yaml:3:22: unknown key 'output.log_every.step' (did you mean "
       "'output.log_every.steps'?)"},
      {with_header("seed: 1\nseed: 2\n"), "test.yaml:4:1: duplicate key 'seed' (keep only one)"},
  });
}

TEST_CASE("config errors: expect takes the known metric names") {
  check_errors({
      {with_header("expect:\n  acuracy: {min: 0.9}\n"),
       "test.yaml:4:3: unknown key 'expect.acuracy' (did you mean 'expect.accuracy'?)"},
      {with_header("expect:\n  speed: {min: 1}\n"),
       "test.yaml:4:3: unknown key 'expect.speed' (expected final_loss, mse, accuracy, log_loss, "
       "auc, validation_loss, validation_mse, validation_accuracy, validation_log_loss or "
       "validation_auc)"},
      {with_header("expect:\n  mse: {below: 1}\n"),
       "test.yaml:4:9: unknown key 'expect.mse.below' (expected min or max)"},
      {with_header("expect:\n  mse: {}\n"),
       "test.yaml:4:8: expect.mse: set min, max or both, e.g. {max: 0.5}"},
      {with_header("expect:\n  mse: 0.5\n"), "test.yaml:4:8: expect.mse: expected a map, got 0.5"},
      {with_header("expect:\n  mse: {min: 2, max: 1}\n"),
       "test.yaml:4:22: expect.mse.max: 1 is below expect.mse.min (2); no result can meet both"},
      {with_header("expect:\n  mse: {max: low}\n"),
       "test.yaml:4:14: expect.mse.max: expected a number, got 'low'"},
  });
}

TEST_CASE("config errors: wrong types and out-of-range numbers") {
  check_errors({
      {"version: 1\nseed: abc\n",
       "test.yaml:2:7: seed: expected a non-negative integer, got 'abc'"},
      {"version: 1\nseed: -3\n", "test.yaml:2:7: seed: expected a non-negative integer, got -3"},
      {with_header("training:\n  optimizer:\n    lr: -1\n"),
       "test.yaml:5:9: training.optimizer.lr: expected a number greater than 0, got -1"},
      {with_header("training: {optimizer: {lr: fast}}\n"),
       "test.yaml:3:28: training.optimizer.lr: expected a number greater than 0, got 'fast'"},
      {with_header("training: {optimizer: {lr: .nan}}\n"),
       "test.yaml:3:28: training.optimizer.lr: expected a number greater than 0, got '.nan'"},
      {with_header("training: {optimizer: {lr: }}\n"),
       "test.yaml:3:28: training.optimizer.lr: expected a number greater than 0, got an empty "
       "value"},
      {with_header("training: {epochs: 0}\n"),
       "test.yaml:3:20: training.epochs: expected a positive integer, got 0"},
      {with_header("training: {epochs: 2.5}\n"),
       "test.yaml:3:20: training.epochs: expected a positive integer, got 2.5"},
      {with_header("training: {epochs: 99999999999}\n"),
       "test.yaml:3:20: training.epochs: expected a positive integer no larger than 2147483647, "
       "got 99999999999"},
      {with_header("training: {epochs: [5]}\n"),
       "test.yaml:3:20: training.epochs: expected a positive integer, got a list"},
      {with_header("training: {shuffle: yes}\n"),
       "test.yaml:3:21: training.shuffle: expected true or false, got 'yes'"},
      {with_header("training: {batch_size: all}\n"),
       "test.yaml:3:24: training.batch_size: expected a positive integer or full, got 'all'"},
      {with_header("training: {batch_size: 0}\n"),
       "test.yaml:3:24: training.batch_size: expected a positive integer or full, got 0"},
      {with_header("data2: 1\n"), "test.yaml:3:1: unknown key 'data2' (did you mean 'data'?)"},
      {"version: 1\ndata: {path: a.csv, validation: 1}\n",
       "test.yaml:2:33: data.validation: expected a number in [0, 1), got 1"},
      {"version: 1\ndata: {synthetic: {kind: blobs, classes: 1}}\n",
       "test.yaml:2:42: data.synthetic.classes: expected an integer >= 2, got 1"},
      {with_header("model: {l2: -0.1}\n"),
       "test.yaml:3:13: model.l2: expected a non-negative number, got -0.1"},
      {with_header("fault_tolerance: {heartbeat_ms: 5}\n"),
       "test.yaml:3:33: fault_tolerance.heartbeat_ms: expected an integer >= 10, got 5"},
      {with_header("name: [a]\n"), "test.yaml:3:7: name: expected a string, got a list"},
      {with_header("data: {path: ''}\n"), "test.yaml:3:1: duplicate key 'data' (keep only one)"},
      {"version: 1\ndata: {path: ''}\n",
       "test.yaml:2:14: data.path: expected a non-empty string, got ''"},
  });
}

TEST_CASE("config errors: sections of the wrong shape") {
  check_errors({
      {with_header("training: 5\n"), "test.yaml:3:11: training: expected a map, got 5"},
      {"version: 1\ndata: [a.csv]\n", "test.yaml:2:7: data: expected a map, got a list"},
      {"- version: 1\n", "test.yaml:1:1: expected a map of keys at the top level, got a list"},
      {with_header("model: {type: {name: mlp}}\n"),
       "test.yaml:3:15: model.type: expected linear_regression, logistic_regression, "
       "softmax_regression or mlp, got a map"},
      {with_header("model: {type: mlp, hidden: 64}\n"),
       "test.yaml:3:28: model.hidden: expected a non-empty list of positive integers like "
       "[64, 32], got 64"},
      {with_header("model: {type: mlp, hidden: []}\n"),
       "test.yaml:3:28: model.hidden: expected a non-empty list of positive integers like "
       "[64, 32], got an empty list"},
      {with_header("model:\n  type: mlp\n  hidden: [8, -1]\n"),
       "test.yaml:5:15: model.hidden[1]: expected a positive integer, got -1"},
  });
}

TEST_CASE("config errors: unknown and unavailable values") {
  check_errors({
      {with_header("model:\n  type: linear\n"),
       "test.yaml:4:9: model.type: unknown value 'linear' (expected linear_regression, "
       "logistic_regression, softmax_regression or mlp; did you mean 'linear_regression'?)"},
      {with_header("model: {type: tree}\n"),
       "test.yaml:3:15: model.type: unknown value 'tree' (expected linear_regression, "
       "logistic_regression, softmax_regression or mlp)"},
      {with_header("model: {type: mlp, activation: relux}\n"),
       "test.yaml:3:32: model.activation: unknown value 'relux' (expected relu, tanh or sigmoid; "
       "did you mean 'relu'?)"},
      {with_header("aggregation: {mode: federated}\n"),
       "test.yaml:3:21: aggregation.mode: unknown value 'federated' (expected gradients, "
       "parameters or async)"},
      {with_header("aggregation: {parameters: {merge: mean}}\n"),
       "test.yaml:3:27: aggregation.parameters: applies to parameters only, but aggregation.mode "
       "is gradients; remove it"},
      {with_header("transport: {type: udp}\n"),
       "test.yaml:3:19: transport.type: unknown value 'udp' (expected inproc, ipc or tcp)"},
  });
}

TEST_CASE("config errors: keys that conflict name both and what to use instead") {
  check_errors({
      {with_header("aggregation: {mode: async, topology: ring}\n"),
       "test.yaml:3:38: aggregation.topology: ring all-reduces gradients every step, so it needs "
       "aggregation.mode gradients, but the mode is async; use topology star with mode async"},
      {with_header("aggregation: {topology: ring, servers: 2}\n"),
       "test.yaml:3:40: aggregation.servers: 2 servers conflict with topology ring, which has no "
       "parameter server; use servers: 1 with ring, or topology star with servers"},
      {with_header("aggregation: {mode: parameters, servers: 3}\n"),
       "test.yaml:3:42: aggregation.servers: 3 servers conflict with mode parameters, whose merge "
       "needs every worker's whole model in one place; use servers: 1"},
      {with_header("aggregation: {mode: async}\nparallelism: {tensor: 2}\n"),
       "test.yaml:4:23: parallelism.tensor: tensor parallelism splits one model whose gradients "
       "are combined every step, so it needs aggregation.mode gradients, but the mode is async; "
       "use tensor: 1 with async"},
      {with_header("shards: {count: 1}\nparallelism: {tensor: 2}\n"
                   "fault_tolerance: {on_worker_failure: continue}\n"),
       "test.yaml:5:38: fault_tolerance.on_worker_failure: continue cannot work with "
       "parallelism.tensor > 1 and one model replica (shards.count 1): a lost worker's replica "
       "is dropped whole, since its other slices cannot compute without it, and no replica "
       "would be left; use restart (a replacement takes over the slice), or shards.count >= 2"},
      {with_header("aggregation: {topology: ring}\nparallelism: {tensor: 2}\n"),
       "test.yaml:4:23: parallelism.tensor: tensor parallelism is available with "
       "aggregation.topology star only, not ring; use topology star (or tensor: 1 with ring)"},
      {with_header("aggregation: {mode: parameters, parameters: {merge: best}}\n"),
       "test.yaml:3:53: aggregation.parameters.merge: best scores each worker's model on the "
       "validation rows, but data.validation is 0; set data.validation (e.g. 0.1) or use merge "
       "weighted_average"},
      {with_header("aggregation: {mode: parameters, parameters: {trim: 0.2}}\n"),
       "test.yaml:3:52: aggregation.parameters.trim: applies to trimmed_mean only, but "
       "aggregation.parameters.merge is weighted_average; remove it"},
      {with_header("aggregation:\n  mode: parameters\n  parameters:\n    merge: trimmed_mean\n"
                   "    trim: 0.5\n"),
       "test.yaml:7:11: aggregation.parameters.trim: expected a share in [0, 0.5) cut at each "
       "end, got 0.5; 0.5 or more would cut every value"},
      {with_header("aggregation:\n  mode: parameters\n  parameters:\n"
                   "    sync_every: {steps: 5, epochs: 1}\n"),
       "test.yaml:6:36: aggregation.parameters.sync_every.epochs: cannot be used together with "
       "sync_every.steps; set one of them"},
      {with_header("aggregation: {mode: parameters, parameters: {clients_per_round: 1.5}}\n"),
       "test.yaml:3:65: aggregation.parameters.clients_per_round: expected a share of the "
       "workers in (0, 1], got 1.5"},
      {with_header("shards: {strategy: by_label}\n"),
       "test.yaml:3:20: shards.strategy: by_label deals rows by class, but linear_regression is "
       "a regression model with no classes; use contiguous, round_robin or random"},
      {with_header("shards: {strategy: contiguous, alpha: 0.1}\n"),
       "test.yaml:3:39: shards.alpha: applies to dirichlet only, but shards.strategy is "
       "contiguous; remove it"},
      {"version: 1\ndata: {path: a.csv}\nshards: {strategy: files, files: [a.csv, b.csv]}\n",
       "test.yaml:2:14: data.path: cannot be used with shards.strategy files, where each worker "
       "reads its own file from shards.files; remove it"},
      {"version: 1\nshards: {strategy: files, files: [a.csv, b.csv], count: 3}\n",
       "test.yaml:2:57: shards.count: is 3 but shards.files lists 2 files; with strategy files "
       "each worker trains on one file: remove count or make them agree"},
      {"version: 1\nshards: {strategy: files, files: [a.csv, ./b.csv, b.csv]}\n",
       "test.yaml:2:51: shards.files[2]: /tmp/b.csv is listed twice (also as shards.files[1]); "
       "each worker trains on its own file, so list every file once"},
      {"version: 1\nshards: {strategy: files}\n",
       "test.yaml:2:9: missing required key 'shards.files' (strategy files needs one CSV per "
       "worker, e.g. files: [a.csv, b.csv])"},
  });
}

TEST_CASE("config errors: the required keys and the data source") {
  check_errors({
      {"", "test.yaml: missing required key 'version' (add 'version: 1' at the top)"},
      {"name: x\n", "test.yaml:1:1: missing required key 'version' (add 'version: 1' at the top)"},
      {"version: 2\n",
       "test.yaml:1:10: version: expected 1 (the schema version this disttrain reads), got 2"},
      {"version: 1\nname: x\n",
       "test.yaml:1:1: data: missing a data source; set data.path to a CSV file or "
       "data.synthetic to generate rows"},
      {"version: 1\ndata:\n  normalize: none\n",
       "test.yaml:3:3: data: missing a data source; set data.path to a CSV file or "
       "data.synthetic to generate rows"},
      {"version: 1\ndata:\n  path: a.csv\n  synthetic: {kind: linear}\n",
       "test.yaml:4:14: data.synthetic: cannot be used together with data.path; set exactly one "
       "of them"},
      {"version: 1\ndata:\n  synthetic: {rows: 10}\n",
       "test.yaml:3:14: missing required key 'data.synthetic.kind' (expected linear, logistic or "
       "blobs)"},
  });
}

TEST_CASE("config errors: keys that do not apply to the chosen type") {
  check_errors({
      {with_header("model:\n  type: linear_regression\n  hidden: [8]\n"),
       "test.yaml:5:11: model.hidden: applies to mlp only, but model.type is linear_regression; "
       "remove it"},
      {with_header("model: {activation: tanh}\n"),
       "test.yaml:3:21: model.activation: applies to mlp only, but model.type is "
       "linear_regression; remove it"},
      {with_header("model: {type: logistic_regression, task: binary}\n"),
       "test.yaml:3:42: model.task: logistic_regression fixes the task to binary; remove it (it "
       "applies to mlp only)"},
      {"version: 1\ndata: {synthetic: {kind: linear, classes: 3}}\n",
       "test.yaml:2:43: data.synthetic.classes: applies to kind blobs only, but "
       "data.synthetic.kind is linear; remove it"},
      {"version: 1\ndata: {synthetic: {kind: linear}, label: y}\n",
       "test.yaml:2:42: data.label: names a column of the data.path file; remove it with "
       "data.synthetic"},
      {with_header("training: {optimizer: {type: adam, momentum: 0.9}}\n"),
       "test.yaml:3:46: training.optimizer.momentum: applies to sgd and rmsprop only, but "
       "training.optimizer.type is adam; remove it"},
      {with_header("training: {optimizer: {beta1: 0.9}}\n"),
       "test.yaml:3:31: training.optimizer.beta1: applies to adam and adamw only, but "
       "training.optimizer.type is sgd; remove it"},
  });
}

TEST_CASE("config errors: name, address and timeouts") {
  check_errors({
      {with_header("name: my run\n"),
       "test.yaml:3:7: name: expected letters, digits, '-', '_' and '.' only (it names the output "
       "folder), got 'my run'"},
      {with_header("name: ..\n"),
       "test.yaml:3:7: name: '..' cannot name a folder; use letters or digits"},
      {with_header("transport: {address: localhost}\n"),
       "test.yaml:3:22: transport.address: expected host:port with a port from 0 to 65535, got "
       "'localhost'"},
      {with_header("transport: {address: 'h:65536'}\n"),
       "test.yaml:3:22: transport.address: expected host:port with a port from 0 to 65535, got "
       "'h:65536'"},
      {with_header("transport: {address: '::1:80'}\n"),
       "test.yaml:3:22: transport.address: expected host:port with a port from 0 to 65535, got "
       "'::1:80'"},
      {with_header("transport: {address: '0.0.0.0:5555'}\n"),
       "test.yaml:3:22: transport.address: '0.0.0.0:5555' is not a loopback address, and "
       "listening where other machines can connect needs authentication: set "
       "transport.security: curve, make key pairs with `disttrain keygen coordinator` and "
       "`disttrain keygen worker`, and give transport.keys: {secret: coordinator.key, "
       "authorized: worker.pub} (see docs/security.md); or listen on 127.0.0.1:PORT"},
      {with_header("transport: {type: tcp, advertise: '10.0.0.5:29500'}\n"),
       "test.yaml:3:35: transport.advertise: expected a host name or address without a port "
       "(every listener advertises its own port; an IPv6 address goes in brackets: [fd00::5]), "
       "got '10.0.0.5:29500'"},
      {with_header("transport: {type: tcp, advertise: 0.0.0.0}\n"),
       "test.yaml:3:35: transport.advertise: 0.0.0.0 means every interface, which no other host "
       "can connect to; give this host's name or address as the others reach it"},
      {with_header("transport: {advertise: node7}\n"),
       "test.yaml:3:24: transport.advertise: is the address other hosts connect to over tcp, but "
       "transport.type is ipc; set transport.type: tcp, or remove transport.advertise"},
      {with_header("transport: {keys: {secret: a.key}}\n"),
       "test.yaml:3:19: transport.keys: key files are used with transport.security: curve; set "
       "it, or remove transport.keys"},
      {with_header("transport: {type: inproc, security: curve}\n"),
       "test.yaml:3:37: transport.security: curve protects links between processes, and with "
       "transport.type inproc the workers are threads of one process; use type ipc or tcp, or "
       "security: none"},
      {with_header("transport: {security: tls}\n"),
       "test.yaml:3:23: transport.security: unknown value 'tls' (expected none or curve)"},
      {with_header("transport: {max_message_bytes: 1000}\n"),
       "test.yaml:3:32: transport.max_message_bytes: expected an integer >= 1048576, got 1000"},
      {with_header("transport: {remote_workers: 2}\n"),
       "test.yaml:3:29: transport.remote_workers: is 2, but workers on other hosts join over tcp "
       "and transport.type is ipc; set transport.type: tcp (or `disttrain run --listen "
       "HOST:PORT`)"},
      {with_header("transport: {type: tcp, remote_workers: 9}\n"),
       "test.yaml:3:40: transport.remote_workers: is 9, but the run has only 2 workers "
       "(shards.count x parallelism.tensor); use at most 2"},
      {with_header("transport: {join_timeout_ms: 10}\n"),
       "test.yaml:3:30: transport.join_timeout_ms: expected an integer >= 1000, got 10"},
      {with_header("fault_tolerance: {heartbeat_ms: 100, worker_timeout_ms: 150}\n"),
       "test.yaml:3:57: fault_tolerance.worker_timeout_ms: expected an integer >= 200 (twice "
       "fault_tolerance.heartbeat_ms), got 150"},
      {with_header("fault_tolerance: {heartbeat_ms: 2000}\n"),
       "test.yaml:3:33: fault_tolerance.heartbeat_ms: needs fault_tolerance.worker_timeout_ms >= "
       "4000 (twice the heartbeat), but it is 3000 (the default); set "
       "fault_tolerance.worker_timeout_ms"},
  });
}

TEST_CASE("config errors: invalid YAML names its position") {
  check_errors({
      {"version: 1\ndata: [a, b\nname: x\n",
       "test.yaml:3:5: invalid YAML: end of sequence flow not found"},
      {"version: 1\nmodel:\n  type: mlp\n l2: 2\n",
       "test.yaml:4:2: invalid YAML: end of map not found"},
      {"version: 1\nname: a: b\n", "test.yaml:2:8: invalid YAML: illegal map value"},
  });
}

TEST_CASE("config errors: errors in --set values name the override") {
  const std::string minimal = "version: 1\ndata: {path: a.csv}\ntraining: {epochs: 5}\n";
  check_errors({
      {minimal,
       "--set traning.epochs=5: unknown key 'traning' (did you mean 'training'?)",
       {"traning.epochs=5"}},
      {minimal,
       "--set training.optimizer.lrr=0.1: unknown key 'training.optimizer.lrr' (did you mean "
       "'training.optimizer.lr'?)",
       {"training.optimizer.lrr=0.1"}},
      {minimal,
       "--set expect.acuracy.min=1: unknown key 'expect.acuracy' (did you mean 'expect.accuracy'?)",
       {"expect.acuracy.min=1"}},
      {minimal,
       "--set seed.x=1: 'seed' is a value, not a section; use --set seed=<value>",
       {"seed.x=1"}},
      {minimal,
       "--set training..epochs=1: expected a key path like training.optimizer.lr",
       {"training..epochs=1"}},
      {minimal,
       "--set training.optimizer.lr=abc: training.optimizer.lr: expected a number greater than 0, "
       "got 'abc'",
       {"training.optimizer.lr=abc"}},
      {minimal,
       "--set training.epochs=0: training.epochs: expected a positive integer, got 0",
       {"training.epochs=0"}},
      {minimal,
       "--set training={epochs: 5, shufle: true}: unknown key 'training.shufle' (did you mean "
       "'training.shuffle'?)",
       {"training={epochs: 5, shufle: true}"}},
      {minimal,
       "--set model.hidden=[32,: invalid YAML: end of sequence flow not found",
       {"model.hidden=[32,"}},
      {"version: 1\n",
       "--set data.synthetic.rows=5: missing required key 'data.synthetic.kind' (expected linear, "
       "logistic or blobs)",
       {"data.synthetic.rows=5"}},
      {"version: 1\ndata: {path: a.csv}\ntraining: 5\n",
       "test.yaml:3:11: training: expected a map, got 5",
       {"training.epochs=3"}},
      // A later override of a parent replaces what an earlier one wrote below it.
      {minimal,
       "--set training={epochs: -2}: training.epochs: expected a positive integer, got -2",
       {"training.epochs=0", "training={epochs: -2}"}},
      // The file keeps its positions next to overrides.
      {minimal + "seed: x\n",
       "test.yaml:4:7: seed: expected a non-negative integer, got 'x'",
       {"training.epochs=3"}},
  });
}

TEST_CASE("config errors: fault tolerance and injected faults") {
  check_errors({
      {with_header("fault_tolerance: {on_worker_failure: retry}\n"),
       "test.yaml:3:38: fault_tolerance.on_worker_failure: unknown value 'retry' (expected "
       "abort, continue or restart)"},
      {with_header("fault_tolerance: {straggler_factor: 0.5}\n"),
       "test.yaml:3:37: fault_tolerance.straggler_factor: expected 0 (never warn) or a factor "
       "above 1, got 0.5; at 0.5 every worker would be a straggler of itself"},
      {with_header("faults: {rank: 1}\n"),
       "test.yaml:3:9: faults: expected a list of faults like [{rank: 2, at_step: 40, action: "
       "kill}], got a map"},
      {with_header("shards: {count: 2}\nfaults:\n  - {rank: 1, at_step: 3, action: kill}\n"
                   "  - {rank: 1, action: explode, at_step: 2}\n"),
       "test.yaml:6:23: faults[1].action: unknown value 'explode' (expected kill, hang, slow, "
       "drop, delay or leave)"},
      {with_header("shards: {count: 2}\nfaults: [{rank: 1, action: kill}]\n"),
       "test.yaml:4:10: faults[0]: say when: at_step: N (a worker step) or probability: p (each "
       "step)"},
      {with_header("shards: {count: 2}\nfaults: [{rank: 1, action: kill, at_step: 1, "
                   "probability: 0.5}]\n"),
       "test.yaml:4:10: faults[0]: set at_step or probability, not both"},
      {with_header("shards: {count: 2}\nfaults: [{rank: 1, action: drop, probability: 1.5}]\n"),
       "test.yaml:4:47: faults[0].probability: expected a probability in (0, 1], got 1.5"},
      {with_header("shards: {count: 2}\nfaults: [{rank: 2, action: kill, at_step: 1}]\n"),
       "test.yaml:4:17: faults[0].rank: is 2 but the run has 2 workers (ranks 0 to 1); pick one "
       "of them"},
      {with_header("shards: {count: 2}\nfaults: [{rank: 1, action: kill, at_stop: 1}]\n"),
       "test.yaml:4:34: unknown key 'faults[0].at_stop' (did you mean 'faults[0].at_step'?)"},
      {with_header("shards: {count: 2}\ntransport: {type: inproc}\n"
                   "faults: [{rank: 1, action: kill, at_step: 1}]\n"),
       "test.yaml:5:28: faults[0].action: faults are injected into worker processes, but "
       "transport.type inproc runs the workers as threads of one process; use transport.type "
       "ipc"},
  });
}

TEST_CASE("config errors: parameter-server faults") {
  const std::string servers = "shards: {count: 2}\naggregation: {servers: 2}\n";
  check_errors({
      {with_header(servers + "faults: [{server: 2, action: kill, at_step: 1}]\n"),
       "test.yaml:5:19: faults[0].server: is 2 but the run has 2 parameter server(s) (0 to 1); "
       "pick one of them"},
      {with_header("shards: {count: 2}\nfaults: [{server: 0, action: kill, at_step: 1}]\n"),
       "test.yaml:4:19: faults[0].server: this run has no parameter server threads: server "
       "faults need aggregation.servers > 1 (gradients, star) or aggregation.mode async"},
      {with_header(servers + "faults: [{server: 1, rank: 0, action: kill, at_step: 1}]\n"),
       "test.yaml:5:10: faults[0]: set rank (a worker's fault) or server (a parameter "
       "server's), not both"},
      {with_header(servers + "faults: [{server: 1, action: drop, at_step: 1}]\n"),
       "test.yaml:5:30: faults[0].action: a parameter server's fault is kill or hang, got drop"},
      {with_header(servers + "faults: [{action: kill, at_step: 1}]\n"),
       "test.yaml:5:10: missing required key 'faults[0].rank' (the worker rank the fault hits, "
       "e.g. rank: 1; or server: k for a parameter server)"},
  });
  // Servers are threads of the coordinator: any transport will do, and async has them too.
  const auto c = dt::test::parse_text(
      with_header("shards: {count: 2}\naggregation: {mode: async}\ntransport: {type: inproc}\n"
                  "faults: [{server: 0, action: hang, at_step: 9}]\n"));
  REQUIRE(c.faults.size() == 1);
  CHECK(c.faults[0].server == 0);
  CHECK(c.faults[0].rank == -1);  // no worker's
  const auto again = parse(to_yaml(c), "again", "/tmp");  // workers read them back
  REQUIRE(again.faults.size() == 1);
  CHECK(again.faults[0].server == 0);
  CHECK(again.faults[0].action == FaultAction::kHang);
}

TEST_CASE("config: continue and restart are accepted with parameter servers, sharded or async") {
  for (const char* aggregation : {"{servers: 2}", "{mode: async}", "{mode: async, servers: 3}"}) {
    for (const char* policy : {"continue", "restart"}) {
      CAPTURE(aggregation);
      CAPTURE(policy);
      const auto c = dt::test::parse_text(with_header(
          fmt::format("aggregation: {}\nfault_tolerance: {{on_worker_failure: {}}}\n",
                      aggregation, policy)));
      CHECK(name_of(c.fault_tolerance.on_worker_failure) == std::string(policy));
    }
  }
}

TEST_CASE("config: --fault appends to faults, in both spellings, and its errors name it") {
  const auto c = dt::test::parse_text(
      with_header("shards: {count: 3}\nfaults: [{rank: 0, at_step: 5, action: hang}]\n"),
      {parse_fault_override("rank=2,at_step=40,action=kill"),
       parse_fault_override("{rank: 1, probability: 0.25, action: delay, ms: 30}")});
  REQUIRE(c.faults.size() == 3);
  CHECK(c.faults[0].action == FaultAction::kHang);
  CHECK(c.faults[1].rank == 2);
  CHECK(c.faults[1].at_step == 40u);
  CHECK(c.faults[1].seed == c.seed);
  CHECK(c.faults[2].action == FaultAction::kDelay);
  CHECK(c.faults[2].probability == 0.25);
  CHECK(c.faults[2].ms == 30);
  CHECK(parse(to_yaml(c), "again", "/tmp").faults.size() == 3);  // workers read them back
  const std::string error = dt::test::message_of<dt::ConfigError>([&] {
    (void)dt::test::parse_text(with_header("shards: {count: 3}\n"),
                               {parse_fault_override("rank=1,at_step=2,action=boom")});
  });
  CHECK(error == "--fault {rank: 1, at_step: 2, action: boom}: faults[0].action: unknown value "
                 "'boom' (expected kill, hang, slow, drop, delay or leave)");
  CHECK_THROWS_AS((void)parse_fault_override("rank:2"), dt::UsageError);
}
