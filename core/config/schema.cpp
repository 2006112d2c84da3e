#include "core/config/schema.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/config/config.hpp"
#include "core/config/enums.hpp"

namespace dt::config::schema {
namespace {

// "`a`, `b` or `c`": the enum values as the docs show them.
template <class E, std::size_t N>
std::string one_of(const std::array<E, N>& values) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += (i + 1 == N) ? " or " : ", ";
    out += fmt::format("`{}`", name_of(values[i]));
  }
  return out;
}

std::vector<Key> build_keys() {
  using detail::kActivations, detail::kAggregationModes, detail::kModelTypes, detail::kDtypes,
      detail::kNormalizations, detail::kOptimizerTypes, detail::kShardStrategies,
      detail::kSyntheticKinds, detail::kTasks, detail::kTopologies, detail::kTransportTypes,
      detail::kSecurityModes, detail::kMergeRules, detail::kOptimizerStates,
      detail::kFailurePolicies, detail::kFaultActions, detail::kCompressions, detail::kDataFormats,
      detail::kMissings, detail::kLrScheduleTypes, detail::kWireCompressions;
  return {
      // top level
      {"version", "integer", "", "required", "Schema version of this file; must be `1`."},
      {"name", "string", "run", "",
       "Names the run and its output folder; letters, digits, `-`, `_` and `.` only."},
      {"seed", "integer >= 0", "0", "",
       "Seeds everything random (data, sharding, initial weights): the same seed repeats a run."},
      // model
      {"model.type", one_of(kModelTypes), "linear_regression", "", "The model to train."},
      {"model.hidden", "list of integers >= 1", "[64]", "",
       "Hidden layer widths, from the input side (`mlp` only)."},
      {"model.activation", one_of(kActivations), "relu", "",
       "Activation of the hidden layers (`mlp` only)."},
      {"model.task", one_of(kTasks), "regression", "",
       "What the `mlp` predicts; the other types fix it (linear: regression, logistic: binary, "
       "softmax: multiclass)."},
      {"model.dtype", one_of(kDtypes), "float64", "",
       "`mlp` only: `float32` computes the layers' products in float32 (rows and weights "
       "converted per step); parameters, gradient sums, optimizer and model.json stay float64. "
       "Not with `parallelism.tensor` > 1. See docs/models.md."},
      {"model.l2", "number >= 0", "0", "", "L2 regularization strength."},
      {"model.init", "path", "", "none",
       "A `model.json` to start training from instead of the seed's initial weights (fine-tuning, "
       "a continued run with new data), relative to the config file's folder. Its type, layers "
       "and features must be the config's and the data's; its normalization is used (not "
       "recomputed); the optimizer starts fresh. See docs/outputs.md."},
      // data
      {"data.path", "path", "", "none",
       "CSV file with a header row, relative to the config file's folder: a regular file (a "
       "FIFO or a device such as /dev/stdin is refused), or `-` for stdin (`path: \"-\"` in "
       "YAML; `--set data.path=-`), which the run copies once to a private temporary folder "
       "and shards from there. Set this or `data.synthetic` (or neither with "
       "`shards.strategy: files`)."},
      {"data.label", "string", "", "the last column",
       "Name of the label column (with `data.path` only); for a NumPy array, `y`, `xJ` or the "
       "column's index `J` (from 0)."},
      {"data.delimiter", "`auto`, `comma`, `tab`, `semicolon` or `pipe`", "", "auto",
       "The field separator of `data.path` (and `shards.files`): `auto` uses tab for a `.tsv` "
       "file, else the one of comma, tab, semicolon and pipe that splits the header line into "
       "the most fields (the first data line into as many), comma when none does. A forced "
       "one that does not split the header, while another does, is refused naming that one. "
       "Quoting works as for commas; `predict` and `eval` detect their file's separator."},
      {"data.features", "list of strings", "", "every column but the label",
       "The feature columns: column names, or ranges `first:last` of two names (`x0:x9`) or of "
       "two 1-based column numbers (`2:11`), inclusive; a range may span the label, which is "
       "skipped. The model's features are these columns in file order; `predict` and `eval` "
       "find them by name in files that have more columns."},
      {"data.exclude", "list of strings", "", "none",
       "Columns to leave out (IDs, text), as names or ranges like `data.features`; applied "
       "after it."},
      {"data.categorical", "map of column: `one_hot`, `hash` or `{hash: N}`", "", "none",
       "Text columns (or numbers read as text) encoded as numeric features, CSV only. "
       "`one_hot`: one 0/1 feature per distinct value over all rows, named `column=value` and "
       "sorted bytewise (at most 1000 values; more exits 2 suggesting `hash`). `hash` (64 "
       "buckets) or `{hash: N}`: one feature per bucket, named `column#B`, B = FNV-1a 64 of "
       "the value's UTF-8 bytes mod N (docs/categorical.md). Encoded features replace their "
       "column in file order and are never normalized; an empty cell is an error. Stored in "
       "model.json and applied by `predict` and `eval` (a value unseen in training: all "
       "zeros)."},
      {"data.compression", one_of(kCompressions), "auto", "",
       "How `data.path` is compressed: `auto` tells gzip (`.gz`) and zstd (`.zst`) from the "
       "file's name and checks its first bytes (a name and content that disagree are refused); "
       "a compressed file is decompressed once to a private temporary folder and sharded from "
       "there (`data.path` only)."},
      {"data.format", one_of(kDataFormats), "auto", "",
       "The format of `data.path`: `auto` tells a NumPy `.npy` array and an `.npz` archive "
       "from the file's name and checks its first bytes (a name and content that disagree are "
       "refused); a LIBSVM file (`libsvm`: `label idx:val ...` lines) from its name (`.svm`, "
       "`.libsvm`, `.svmlight`) or its first line; any other name is CSV. An array's columns "
       "are named `x0`, `x1`, ... by position, and its label column (`data.label`, default "
       "the last) is named `y`. See docs/configs.md, \"Data\"."},
      {"data.labels", "path", "", "none",
       "A 1-D `.npy` of labels, one per row of the `.npy` `data.path` (which then holds only "
       "features), relative to the config file's folder."},
      {"data.arrays.x", "string", "x", "",
       "The features' array in an `.npz` `data.path` (`X` is taken when there is no `x`)."},
      {"data.arrays.y", "string", "y", "",
       "The labels' array in an `.npz` `data.path`; without it the label is a column of the "
       "features' array."},
      {"data.index_base", "`auto`, `0` or `1`", "auto", "",
       "How a LIBSVM `data.path` numbers its features: `1` (LIBSVM's and svmlight's own "
       "convention), `0`, or `auto`: 0-based when index 0 appears anywhere in the file, else "
       "1-based. Features are named by the file's indices, `f1`, `f2`, ... (or `f0`, `f1`, "
       "... when 0-based), so `predict` and `eval` match them by name. See docs/configs.md, "
       "\"Data\"."},
      {"data.feature_count", "integer >= 1", "", "the largest index in the file",
       "How many features a LIBSVM `data.path` has (`f1`..`fN`, or `f0`..`f{N-1}` when "
       "0-based): the model's width, when the training file does not use the last ones. An "
       "index past it is refused."},
      {"data.max_dense_gib", "number > 0", "8", "",
       "A LIBSVM file is loaded densely (rows x features x 8 bytes, over all workers) unless "
       "`data.sparse` says otherwise: past this many GiB (or 2^22 features) it is read sparse "
       "(`data.sparse: auto`) or refused before loading (`data.sparse: false`; raise this when "
       "the memory is there, or select fewer features with `data.features`)."},
      {"data.sparse", "`auto`, `true` or `false`", "auto", "",
       "Whether rows are kept sparse in memory (CSR: a key and a value per nonzero, never a "
       "dense matrix of the full width). `auto`: sparse with `data.hash`, and for a LIBSVM "
       "file whose dense matrix would pass `data.max_dense_gib`; `true`: a LIBSVM (or numeric "
       "CSV) file always sparse; `false`: dense as before (`data.hash` is then refused). "
       "Sparse rows are not normalized (centering would make them dense): `data.normalize` "
       "does not apply to them. See docs/sparse-data.md."},
      {"data.hash.bits", "integer 1 to 30", "", "required with `data.hash`",
       "Hashed features (CSV only): each `data.hash.columns` value becomes the key "
       "`fnv1a64(\"column=value\") >> (64 - bits)` with value 1, so keys are 0 .. 2^bits - 1; "
       "numeric feature columns follow as keys 2^bits, 2^bits + 1, ... (their values as read, "
       "zeros left out). At most 30 bits: 2^30 float64 weights are 8 GiB per output, and keys "
       "are 32-bit. See docs/sparse-data.md."},
      {"data.hash.columns", "list of strings", "", "required with `data.hash`",
       "The categorical columns hashed by `data.hash` (their cells are text; the label cannot "
       "be one). Two values of a row that fall in one key add their values. An empty cell "
       "follows `data.missing`: `error` refuses it, `zero` and `mean` give no key."},
      {"data.hash.crosses", "list of [column, column]", "", "none",
       "Pairs of columns whose two values make one more key per row: `fnv1a64(\"a=x\" 0x1F "
       "\"b=y\") >> (64 - bits)` (0x1F, the unit separator, between the two)."},
      {"data.normalize", one_of(kNormalizations), "standard", "",
       "Feature scaling; its statistics are computed over all shards and stored in the model."},
      {"data.missing", one_of(kMissings), "error", "",
       "What a missing feature value becomes: an empty cell, or one of `NA`, `N/A`, `n/a`, "
       "`NaN`, `nan`, `-NaN`, `-nan`, `NULL`, `null`, `None`, `<NA>`, `#N/A`, `#N/A N/A`, "
       "`#NA`, `-1.#IND`, `-1.#QNAN`, `1.#IND`, `1.#QNAN` (pandas' defaults) and `?` in a "
       "CSV, NaN in a NumPy array. `error` refuses it (naming the cell); `zero` reads it as 0; "
       "`mean` fills it with the column's mean over the present values of all training shards "
       "(the normalization statistics are over present values too, so a filled cell "
       "normalizes to 0). The fill values are stored in the model and applied by `predict`, "
       "`eval` and `export`. A missing label, and an infinity, are always errors. See "
       "docs/configs.md, \"Missing values\"."},
      {"data.validation", "number in [0, 1)", "0", "",
       "Fraction of the rows held out and evaluated every log step; `0` holds out none."},
      {"data.synthetic.kind", one_of(kSyntheticKinds), "", "required with `data.synthetic`",
       "Generated data instead of a file: `linear` (regression), `logistic` (binary labels), "
       "`blobs` (clusters, multiclass)."},
      {"data.synthetic.rows", "integer >= 1", "10000", "", "Rows to generate."},
      {"data.synthetic.features", "integer >= 1", "10", "", "Feature columns to generate."},
      {"data.synthetic.classes", "integer >= 2", "3", "", "Number of clusters (`blobs` only)."},
      {"data.synthetic.noise", "number >= 0", "0.1", "", "Noise level of the generated data."},
      // shards
      {"shards.count", "integer >= 1", "", "the number of cores",
       "Data-parallel workers (replicas), each training on its own shard of the rows. With "
       "`parallelism.tensor: T` the run has count × T workers. With `strategy: files` it must "
       "equal the number of files (and defaults to it)."},
      {"shards.strategy", one_of(kShardStrategies), "contiguous", "",
       "How rows are dealt to the shards: in blocks, in turn, by a seeded shuffle, by class "
       "(`by_label`: each worker sees only `labels_per_worker` classes), by seeded Dirichlet "
       "class proportions (`dirichlet`), or one CSV file per worker (`files`). The last three "
       "make non-IID shards for federated experiments."},
      {"shards.labels_per_worker", "integer >= 1", "2", "",
       "Classes each worker sees (`by_label` only)."},
      {"shards.alpha", "number > 0", "0.5", "",
       "Concentration of the Dirichlet class proportions (`dirichlet` only): small values give "
       "each worker few classes, large values near-uniform shards."},
      {"shards.files", "list of paths", "", "required with `strategy: files`",
       "One CSV file (or .npy array, its labels a column) per worker, relative to the config "
       "file's folder; all of one kind, with the same columns (`files` only)."},
      // aggregation
      {"aggregation.mode", one_of(kAggregationModes), "gradients", "",
       "`gradients`: the workers' gradients are averaged every step (synchronous SGD); "
       "`parameters`: workers train locally and their models are merged every `sync_every` "
       "(model averaging, FedAvg); `async`: each gradient is applied as it arrives "
       "(asynchronous parameter server)."},
      {"aggregation.topology", one_of(kTopologies), "star", "",
       "`star`: gradients go through parameter server(s); `ring`: the workers all-reduce among "
       "themselves (`gradients` only)."},
      {"aggregation.servers", "integer >= 1", "1", "",
       "Parameter-server shards: the parameter vector is split into this many key ranges, each "
       "held by its own server (`star` topology, `gradients` and `async` modes)."},
      {"aggregation.compression", one_of(kWireCompressions) + "; or `{topk: {ratio: R}}`", "",
       "`none`",
       "How the workers' gradients travel: `none` as float64; `fp16` or `bf16` in 16 bits a "
       "value (rounded to nearest even, one power-of-two scale a message so nothing overflows); "
       "the sum and the optimizer stay float64. `gradients` mode (star, servers, ring); in "
       "`parameters` mode the models travel as fp16 / bf16 deltas both ways. Or the "
       "map `{topk: {ratio: R}}`: each worker sends only the largest entries of its gradient "
       "(keys and float64 values) and keeps the rest for its next step (star and servers; not "
       "the ring). See docs/compression.md."},
      {"aggregation.compression.topk.ratio", "number in (0, 1]", "", "none (required)",
       "Top-k: each worker sends k = max(1, ceil(ratio x parameters)) entries of its gradient "
       "plus residual a step, those of largest magnitude (ties: the lower index); what it does "
       "not send is added to its next step's gradient (error feedback)."},
      {"aggregation.parameters.sync_every.steps", "integer >= 1", "", "none",
       "Merge after this many local steps (`parameters` only; set `steps` or `epochs`)."},
      {"aggregation.parameters.sync_every.epochs", "integer >= 1", "1", "",
       "Merge after this many local epochs (`parameters` only)."},
      {"aggregation.parameters.merge", one_of(kMergeRules), "weighted_average", "",
       "How the worker models are merged: averaged weighted by rows trained (FedAvg), plain "
       "average, coordinate-wise median, trimmed mean, the one with the lowest validation loss, "
       "or weighted by validation quality (`parameters` only; the last two need "
       "`data.validation`)."},
      {"aggregation.parameters.trim", "number in [0, 0.5)", "0.1", "",
       "Share of the workers' values cut at each end of every coordinate (`trimmed_mean` only)."},
      {"aggregation.parameters.clients_per_round", "number in (0, 1]", "1", "",
       "Share of the workers sampled (seeded) to train in each round, as FedAvg does "
       "(`parameters` only)."},
      {"aggregation.parameters.optimizer_state", one_of(kOptimizerStates), "reset", "",
       "What a worker's optimizer state (momentum, Adam moments) does after a merge: `reset` "
       "starts it afresh from the merged model, `keep` carries it on (`parameters` only)."},
      {"aggregation.async.max_staleness", "integer >= 0", "", "unbounded",
       "How many steps the fastest worker may run ahead of the slowest (stale-synchronous "
       "parallel); `0` is lock-step (`async` only)."},
      {"aggregation.async.staleness_lr", "`true` or `false`", "false", "",
       "Divide each update by 1 + its staleness (`async` only)."},
      // parallelism
      {"parallelism.tensor", "integer >= 1", "1", "",
       "Ranks each model is split over (tensor parallelism: by input feature for linear models, "
       "by hidden unit for `mlp`); `shards.count` replicas of T ranks each train together "
       "(`gradients` mode, `star` topology)."},
      // training
      {"training.epochs", "integer >= 1", "20", "", "Passes over the training rows."},
      {"training.batch_size", "integer >= 1 or `full`", "64", "",
       "Global batch per step, split across the workers; `full` uses every row in each step."},
      {"training.optimizer.type", one_of(kOptimizerTypes), "sgd", "",
       "The update rule; `adagrad` and `ftrl` are per-coordinate (see docs/optimizers.md)."},
      {"training.optimizer.lr", "number > 0", "0.05", "",
       "Learning rate (with `ftrl` the same as `alpha`: give one of the two)."},
      {"training.optimizer.momentum", "number in [0, 1)", "0", "",
       "Momentum (`sgd` and `rmsprop`); `0` is none."},
      {"training.optimizer.beta1", "number in [0, 1)", "0.9", "",
       "Decay of the first-moment estimate (`adam` and `adamw`)."},
      {"training.optimizer.beta2", "number in [0, 1)", "0.999", "",
       "Decay of the second-moment estimate (`adam` and `adamw`)."},
      {"training.optimizer.epsilon", "number > 0", "",
       "1e-8 (`adam`, `adamw`, `rmsprop`), 1e-10 (`adagrad`)",
       "Added to the denominator for stability (`adam`, `adamw`, `adagrad` and `rmsprop`)."},
      {"training.optimizer.weight_decay", "number >= 0", "0.01", "",
       "Decoupled weight decay, p -= lr * weight_decay * p before the Adam step, on every "
       "parameter (`adamw` only; PyTorch's AdamW)."},
      {"training.optimizer.centered", "`true` or `false`", "false", "",
       "Divide by the gradient's estimated variance instead of its second moment (`rmsprop` "
       "only)."},
      {"training.optimizer.initial_accumulator_value", "number >= 0", "0", "",
       "Starting value of each coordinate's sum of squared gradients (`adagrad` only)."},
      {"training.optimizer.alpha", "number > 0", "", "0.05 (`ftrl`), 0.99 (`rmsprop`)",
       "`ftrl`: FTRL-Proximal's learning rate, the paper's alpha (`lr` is the same key); "
       "`rmsprop`: the smoothing constant of the squared-gradient average, in [0, 1) "
       "(PyTorch's name)."},
      {"training.optimizer.beta", "number >= 0", "1", "",
       "FTRL-Proximal's beta: per-coordinate rate alpha / (beta + sqrt(n)) (`ftrl` only)."},
      {"training.optimizer.l1", "number >= 0", "0", "",
       "FTRL-Proximal's L1 strength (lambda_1): a weight whose z is within [-l1, l1] is "
       "exactly 0 (`ftrl` only)."},
      {"training.optimizer.l2", "number >= 0", "0", "",
       "FTRL-Proximal's L2 strength (lambda_2), in the proximal step, apart from `model.l2` "
       "(`ftrl` only)."},
      {"training.lr_schedule.type", one_of(kLrScheduleTypes), "constant", "",
       "How the learning rate changes over the optimizer's steps (see docs/optimizers.md for "
       "where each mode counts them): `step` multiplies it by `gamma` every `step_size` steps, "
       "`exponential` by `gamma` every step, `cosine` follows a half cosine to `min_lr`."},
      {"training.lr_schedule.step_size", "integer >= 1", "", "required (`step`)",
       "Steps between two decays (`step` only)."},
      {"training.lr_schedule.gamma", "number > 0", "", "0.1 (`step`), required (`exponential`)",
       "The decay factor (`step` and `exponential`)."},
      {"training.lr_schedule.min_lr", "number >= 0", "0", "",
       "The learning rate at the end of the cosine, at most `training.optimizer.lr` (`cosine` "
       "only)."},
      {"training.lr_schedule.t_max", "integer >= 1", "", "the run's steps after the warmup",
       "Steps of the half cosine; after them the rate stays at `min_lr` (`cosine` only)."},
      {"training.lr_schedule.warmup_steps", "integer >= 0", "0", "",
       "Steps of linear warmup before the schedule, from `warmup_start` x lr up to lr; the "
       "schedule counts its steps from the warmup's end."},
      {"training.lr_schedule.warmup_start", "number in [0, 1]", "0", "",
       "The warmup's first rate, a fraction of lr (with `warmup_steps` only)."},
      {"training.clip_norm", "number > 0", "", "none",
       "Clip the gradient the optimizer steps on (the mean over the batch, with `model.l2`'s "
       "term) to this global L2 norm over all parameters, as PyTorch's clip_grad_norm_ does; in "
       "`async` mode each push's gradient. With `aggregation.servers` > 1 the servers exchange "
       "their slices' partial norms (async: the worker sends its gradient's factor)."},
      {"training.shuffle", "`true` or `false`", "true", "",
       "Reshuffle each worker's rows every epoch (seeded)."},
      {"training.early_stopping.metric",
       "one of `val_loss`, `val_acc`, `val_auc`, `val_log_loss`, `val_mse`", "val_loss", "",
       "Stop training when this validation metric (measured at each log step, on the rows "
       "`data.validation` holds out) stops improving; the parameters of its best check are the "
       "ones written. `val_acc` and `val_log_loss`: classification; `val_auc`: binary; "
       "`val_mse`: regression. Needs `data.validation` > 0. In `async` mode a check's step counts "
       "the updates applied."},
      {"training.early_stopping.patience", "integer >= 1", "5", "",
       "Log steps in a row without improvement that end training."},
      {"training.early_stopping.min_delta", "number >= 0", "0", "",
       "How much better than the best so far a check must be to count as an improvement."},
      // transport
      {"transport.type", one_of(kTransportTypes), "ipc", "",
       "`inproc`: workers are threads of one process; `ipc`: local processes; `tcp`: "
       "processes over TCP."},
      {"transport.address", "host:port", "127.0.0.1:0", "",
       "Where the coordinator listens with `tcp`; port `0` picks a free port. Loopback "
       "(127.x.x.x, [::1]) unless `security` is `curve`."},
      {"transport.advertise", "host", "", "the bound host",
       "With `tcp`: the name or address other hosts connect to, when not the bound one "
       "(`address: 0.0.0.0:PORT`, NAT, several interfaces). For 0.0.0.0 without it: this "
       "host's address on its default route. Printed at start."},
      {"transport.remote_workers", "integer >= 0", "0", "",
       "Workers started by someone else (`disttrain worker --connect`, mpirun, srun): the last "
       "this many ranks join over `tcp` instead of being spawned by `run`."},
      {"transport.join_timeout_ms", "integer >= 1000", "60000", "",
       "How long the coordinator waits for every worker to join; the error names the ranks "
       "still missing."},
      {"transport.security", one_of(kSecurityModes), "none", "",
       "`curve`: every link (coordinator, servers, ring peers) encrypted with ZeroMQ CURVE and "
       "only authorized client keys admitted; needed to listen beyond loopback. Local workers "
       "get keys made for the run."},
      {"transport.keys.secret", "path", "", "none",
       "With `curve`: this process's key pair (`disttrain keygen PREFIX` writes PREFIX.key, "
       "mode 600). Else `DISTTRAIN_SECRET_KEY`; else a key made for the run."},
      {"transport.keys.authorized", "path", "", "none",
       "With `curve`: the public keys the coordinator admits, one per line (`.pub` files "
       "concatenated). Else `DISTTRAIN_AUTHORIZED_KEYS`."},
      {"transport.keys.server", "path", "", "none",
       "With `curve`, for workers started by a launcher: the coordinator's PREFIX.pub. Else "
       "`DISTTRAIN_SERVER_KEY`."},
      {"transport.max_message_bytes", "integer >= 1048576", "4294967296", "",
       "Largest message accepted; a larger one is dropped and its sender logged once."},
      // fault_tolerance
      {"fault_tolerance.heartbeat_ms", "integer >= 10", "200", "",
       "Milliseconds between heartbeats."},
      {"fault_tolerance.worker_timeout_ms", "integer >= 2 × `heartbeat_ms`", "3000", "",
       "A worker silent for this many milliseconds is declared lost."},
      {"fault_tolerance.on_worker_failure", one_of(kFailurePolicies), "abort", "",
       "`abort`: stop, checkpoint the last completed step, exit 3; `continue`: go on without "
       "the lost worker, its rows dealt to the survivors from the next epoch (with "
       "`parallelism.tensor` > 1 its whole model replica leaves, so `shards.count` must be at "
       "least 2); `restart`: a "
       "replacement takes the lost worker's rank and state."},
      {"fault_tolerance.max_restarts", "integer >= 0", "3", "",
       "`restart`: replacements allowed over the whole run; one more failure aborts."},
      {"fault_tolerance.checkpoint_every.steps", "integer >= 0", "100", "",
       "Write `checkpoint/` every this many steps (`0`: only when the run stops early)."},
      {"fault_tolerance.straggler_factor", "number >= 0", "2", "",
       "Warn when a worker's step time stays above this many times the median (`0`: never)."},
      {"fault_tolerance.elastic.min_workers", "integer >= 1", "1", "",
       "Elastic membership (docs/elastic.md): workers may leave during the run (SIGTERM to a "
       "worker: it finishes its step and exits 0; its rows are dealt to the others from the "
       "next epoch) and join it (`disttrain worker --connect ADDR --join`: admitted at the next "
       "step, dealt rows from the next epoch). Below this many workers the run waits "
       "`join_timeout_ms` for joiners, then fails (exit 3). Leaves in every mode (gradients over "
       "star, sharded servers or ring; parameters; async), joins in gradients mode (star, "
       "sharded servers or ring), in parameters mode (at a round boundary) and in async mode "
       "without `max_staleness`, on dense or sparse rows; worker processes (not `inproc`), "
       "`parallelism.tensor` 1."},
      {"fault_tolerance.elastic.max_workers", "integer >= `shards.count`", "", "`shards.count`",
       "The most workers the run may have at once; a joiner above it is refused (it exits 2)."},
      {"fault_tolerance.elastic.join_timeout_ms", "integer >= 0", "60000", "",
       "How long a run below `min_workers` (or at an `admit_at_steps` step) waits for joiners "
       "before it fails."},
      {"fault_tolerance.elastic.admit_at_steps", "list of integers >= 0, ascending", "[]", "",
       "Testing: joiners are admitted only after these steps (`loss.csv`'s numbering), one at "
       "each, and the run waits there for one; the same joins at the same steps give the same "
       "bits. Empty: a joiner is admitted at the first step boundary after it connects. In "
       "parameters mode each must be a round boundary: 0 or a step a round ends at."},
      // faults (a testing feature)
      {"faults.rank", "integer >= 0", "", "or `server`",
       "The worker rank the fault hits."},
      {"faults.server", "integer >= 0", "", "or `rank`",
       "The parameter server the fault hits (`aggregation.servers` > 1 or `async`; `kill` or "
       "`hang`); its steps are the server's updates."},
      {"faults.action", one_of(kFaultActions), "", "required",
       "`kill`: SIGKILL itself; `hang`: SIGSTOP itself; `slow`: sleep `ms` per step; `drop`: "
       "lose its messages to the coordinator; `delay`: hold each for `ms`; `leave`: SIGTERM itself "
       "(a planned leave; needs `fault_tolerance.elastic`)."},
      {"faults.at_step", "integer >= 0", "", "or `probability`",
       "The worker step it fires at (`slow`, `drop`, `delay`: every step from then on)."},
      {"faults.probability", "number in (0, 1]", "", "or `at_step`",
       "Fires at each step (`kill`, `hang`, `slow`) or message (`drop`, `delay`) with this "
       "probability."},
      {"faults.ms", "integer >= 0", "100", "",
       "`slow` and `delay`: milliseconds added."},
      {"faults.seed", "integer >= 0", "", "`seed`",
       "Seeds `probability`."},
      // output
      {"output.dir", "path", "", "`runs/{name}`",
       "Folder for the run's files, relative to the directory disttrain runs in (not the "
       "config's); `{name}` becomes `name`."},
      {"output.log_every.steps", "integer >= 1", "10", "",
       "Log progress (and evaluate the validation rows) every this many steps."},
      {"output.timeline", "`true`, `false` or a map", "", "`false`",
       "Write `timeline.json` (Chrome trace format, for Perfetto or chrome://tracing): the phases "
       "of every step on every worker, server and the coordinator. `true` keeps the last 1000 "
       "steps; `{steps: N}` the last N. `disttrain run --timeline` is `true`. See "
       "docs/outputs.md."},
      {"output.timeline.steps", "integer in [1, 1000000]", "", "`1000`",
       "The rolling window: only the last this many steps are kept (memory and file size stay "
       "bounded on a long run)."},
      {"output.plot.per_worker", "`true` or `false`", "false", "",
       "Also draw each worker's own training loss in `loss.svg` (thin lines under the merged "
       "curve), to spot a worker whose shard trains differently."},
      // expect
      {"expect.<metric>.min", "number", "", "none",
       "Fail the run (exit code 1) when the metric ends below this."},
      {"expect.<metric>.max", "number", "", "none",
       "Fail the run (exit code 1) when the metric ends above this."},
  };
}

std::vector<SectionDoc> build_sections() {
  return {
      {"", "Identity of the run."},
      {"model", "What is trained."},
      {"data", "Where the rows come from: exactly one of `data.path` and `data.synthetic`."},
      {"shards", "How the rows are split among the data-parallel workers."},
      {"aggregation", "How the workers combine their work."},
      {"parallelism", "Splitting one model over several workers."},
      {"training", "The optimization loop."},
      {"transport", "How the coordinator and the workers talk."},
      {"fault_tolerance", "Detecting lost workers, what to do about them, and checkpoints."},
      {"faults", "A testing feature: failures injected into workers so that CI can exercise "
                 "recovery. A list of maps (`--fault` on the command line adds one), e.g. "
                 "`faults: [{rank: 2, at_step: 40, action: kill}]`. Not for production runs."},
      {"output", "Where the run leaves its files."},
      {"expect", "A regression gate for CI: bounds on final metrics. `<metric>` is one of " +
                     [] {
                       std::string names;
                       for (const auto& m : metrics())
                         names += (names.empty() ? "`" : ", `") + m + "`";
                       return names;
                     }() +
                     "; each needs `min`, `max` or both, e.g. `final_loss: {max: 3000}`."},
  };
}

}  // namespace

const std::vector<Key>& keys() {
  static const std::vector<Key> table = build_keys();
  return table;
}

const std::vector<SectionDoc>& sections() {
  static const std::vector<SectionDoc> table = build_sections();
  return table;
}

const std::vector<std::string>& metrics() {
  static const std::vector<std::string> names{"final_loss",
                                              "mse",
                                              "accuracy",
                                              "log_loss",
                                              "auc",
                                              "validation_loss",
                                              "validation_mse",
                                              "validation_accuracy",
                                              "validation_log_loss",
                                              "validation_auc"};
  return names;
}

}  // namespace dt::config::schema
