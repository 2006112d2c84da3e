#include "core/coordinator/resume.hpp"

#include "core/modes/mode.hpp"
#include "core/coordinator/session.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace dt::roles {
namespace {

constexpr const char* kFormat = "disttrain-checkpoint";

std::string optimizer_kind(const config::OptimizerConfig& o) {
  if (o.type == config::OptimizerType::kAdam) return "adam";
  return o.momentum > 0.0 ? "sgd with momentum" : "sgd";
}

// Keys whose change makes the checkpoint unusable: the shapes of the state it holds, or who
// holds which part of it.
nlohmann::json fixed_keys(const config::Config& c, const Plan& plan) {
  nlohmann::json j = nlohmann::json::object();
  j["model.type"] = config::name_of(c.model.type);
  if (c.model.type == config::ModelType::kMlp) {
    j["model.hidden"] = fmt::format("[{}]", fmt::join(c.model.hidden, ", "));
    j["model.activation"] = config::name_of(c.model.activation);
    j["model.task"] = config::name_of(c.model.task);
  }
  j["features"] = fmt::format("{}", fmt::join(plan.source.features, ", "));
  j["training rows"] = std::to_string(plan.train_rows);
  j["workers"] = std::to_string(config::worker_count(c));
  j["shards.count"] = std::to_string(c.shards.count);
  j["shards.strategy"] = config::name_of(c.shards.strategy);
  j["aggregation.mode"] = config::name_of(c.aggregation.mode);
  j["aggregation.topology"] = config::name_of(c.aggregation.topology);
  j["aggregation.servers"] = std::to_string(c.aggregation.servers);
  j["parallelism.tensor"] = std::to_string(c.parallelism.tensor);
  j["training.optimizer.type"] = optimizer_kind(c.training.optimizer);
  if (c.aggregation.mode == config::AggregationMode::kParameters) {
    j["aggregation.parameters.optimizer_state"] =
        config::name_of(c.aggregation.parameters.optimizer_state);
  }
  return j;
}

// Keys that leave the checkpoint loadable but make the continued run differ from one that
// never stopped (training.epochs is not one: a resumed run may train longer).
nlohmann::json soft_keys(const config::Config& c) {
  const auto num = [](double v) { return text::format_double(v); };
  const auto& o = c.training.optimizer;
  const auto& p = c.aggregation.parameters;
  nlohmann::json j = nlohmann::json::object();
  j["seed"] = std::to_string(c.seed);
  j["training.batch_size"] = c.training.full_batch ? "full" : std::to_string(c.training.batch_size);
  j["training.shuffle"] = c.training.shuffle ? "true" : "false";
  j["training.optimizer.lr"] = num(o.lr);
  j["training.optimizer.momentum"] = num(o.momentum);
  j["training.optimizer.beta1"] = num(o.beta1);
  j["training.optimizer.beta2"] = num(o.beta2);
  j["training.optimizer.epsilon"] = num(o.epsilon);
  j["model.l2"] = num(c.model.l2);
  j["data.normalize"] = config::name_of(c.data.normalize);
  j["data.validation"] = num(c.data.validation_fraction);
  j["output.log_every.steps"] = std::to_string(c.output.log_every_steps);
  j["shards.alpha"] = num(c.shards.alpha);
  j["shards.labels_per_worker"] = std::to_string(c.shards.labels_per_worker);
  if (c.aggregation.mode == config::AggregationMode::kParameters) {
    j["aggregation.parameters.sync_every"] =
        p.sync_every_steps > 0 ? fmt::format("steps {}", p.sync_every_steps)
                               : fmt::format("epochs {}", p.sync_every_epochs);
    j["aggregation.parameters.merge"] = config::name_of(p.merge);
    j["aggregation.parameters.trim"] = num(p.trim);
    j["aggregation.parameters.clients_per_round"] = num(p.clients_per_round);
  }
  return j;
}

std::vector<std::string> differences(const nlohmann::json& saved, const nlohmann::json& now) {
  std::vector<std::string> out;
  for (const auto& [key, value] : now.items()) {
    const auto it = saved.find(key);
    const std::string before = it == saved.end() ? "(absent)" : it->get<std::string>();
    if (before != value.get<std::string>()) {
      out.push_back(fmt::format("{} was {}, is now {}", key, before, value.get<std::string>()));
    }
  }
  return out;
}

// The log so far goes in every checkpoint, as columns of raw doubles: it grows with the run, and
// as JSON (every number through shortest round-trip printing) it cost the coordinator ~4 ms a
// checkpoint by a run's thousandth row, on the step path of every mode.
// "log.flags": 1 = a validation loss, 2 = a validation metric; "log.workers": each row's count
// of worker losses, which "log.worker_loss" holds one row after the other.
constexpr const char* kLogColumns[] = {"log.step", "log.epoch", "log.seconds", "log.train_loss",
                                       "log.validation_loss", "log.validation_metric",
                                       "log.flags", "log.workers"};

void put_log(checkpoint::Checkpoint& out, const std::vector<LogRow>& log) {
  std::vector<std::vector<double>> c(std::size(kLogColumns));
  for (auto& column : c) column.reserve(log.size());
  std::vector<double> worker_loss;
  for (const auto& row : log) {
    c[0].push_back(static_cast<double>(row.step));  // exact: steps stay below 2^53
    c[1].push_back(row.epoch);
    c[2].push_back(row.seconds);
    c[3].push_back(row.train_loss);
    c[4].push_back(row.validation_loss.value_or(0.0));
    c[5].push_back(row.validation_metric.value_or(0.0));
    c[6].push_back((row.validation_loss ? 1.0 : 0.0) + (row.validation_metric ? 2.0 : 0.0));
    c[7].push_back(static_cast<double>(row.worker_loss.size()));
    worker_loss.insert(worker_loss.end(), row.worker_loss.begin(), row.worker_loss.end());
  }
  for (std::size_t i = 0; i < c.size(); ++i) out.arrays[kLogColumns[i]] = std::move(c[i]);
  out.arrays["log.worker_loss"] = std::move(worker_loss);
  out.manifest["log_rows"] = log.size();
}

// A whole number the log keeps as a double (a step, the flags, a worker count). Anything else
// is a damaged or hand-made checkpoint, and converting NaN or 1e300 to an integer is undefined
// behaviour.
std::uint64_t whole(double value, const std::string& where, const char* column) {
  if (!(value >= 0 && value <= 9007199254740992.0 && value == std::floor(value))) {
    fail<DataError>("{}: the log column {} holds {}, not a whole number", where, column, value);
  }
  return static_cast<std::uint64_t>(value);
}

// DataError naming the checkpoint when the columns disagree (a damaged file whose checksum
// still matched is not expected, but nothing is read past an array).
std::vector<LogRow> get_log(const checkpoint::Checkpoint& in, const std::string& where) {
  const auto rows = in.manifest.at("log_rows").get<std::size_t>();
  std::vector<const std::vector<double>*> c;
  for (const char* name : kLogColumns) {
    c.push_back(&in.array(name));
    if (c.back()->size() != rows) {
      fail<DataError>("{}: the log column {} holds {} values for {} rows", where, name,
                      c.back()->size(), rows);
    }
  }
  const auto& worker_loss = in.array("log.worker_loss");
  std::vector<LogRow> log(rows);
  std::size_t at = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    LogRow& row = log[i];
    row.step = whole((*c[0])[i], where, kLogColumns[0]);
    row.epoch = (*c[1])[i];
    row.seconds = (*c[2])[i];
    row.train_loss = (*c[3])[i];
    const auto flags = whole((*c[6])[i], where, kLogColumns[6]);
    if ((flags & 1) != 0) row.validation_loss = (*c[4])[i];
    if ((flags & 2) != 0) row.validation_metric = (*c[5])[i];
    const auto n = whole((*c[7])[i], where, kLogColumns[7]);
    if (n > worker_loss.size() - at) {
      fail<DataError>("{}: the log's worker losses end before row {}", where, i + 1);
    }
    row.worker_loss.assign(worker_loss.begin() + static_cast<std::ptrdiff_t>(at),
                           worker_loss.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return log;
}

// A checkpoint of an earlier build keeps its log as JSON rows.
LogRow row_of(const nlohmann::json& j) {
  LogRow row;
  row.step = j.at("step").get<std::uint64_t>();
  row.epoch = j.at("epoch").get<double>();
  row.seconds = j.at("seconds").get<double>();
  row.train_loss = j.at("train_loss").get<double>();
  row.worker_loss = j.at("worker_loss").get<std::vector<double>>();
  if (j.contains("validation_loss")) row.validation_loss = j["validation_loss"].get<double>();
  if (j.contains("validation_metric")) row.validation_metric = j["validation_metric"].get<double>();
  return row;
}

}  // namespace

std::filesystem::path checkpoint_dir(const std::filesystem::path& run_dir) {
  return run_dir / "checkpoint";
}

void put_optimizer(checkpoint::Checkpoint& out, const std::string& prefix,
                   const models::OptimizerState& state) {
  out.manifest["optimizers"][prefix] = {{"steps", state.steps}, {"slots", state.slots.size()}};
  for (std::size_t i = 0; i < state.slots.size(); ++i) {
    out.arrays[fmt::format("{}.slot{}", prefix, i)] = state.slots[i];
  }
}

models::OptimizerState get_optimizer(const checkpoint::Checkpoint& in, const std::string& prefix) {
  const auto& meta = in.manifest.at("optimizers").at(prefix);
  models::OptimizerState state;
  state.steps = meta.at("steps").get<std::uint64_t>();
  const auto slots = meta.at("slots").get<std::size_t>();
  for (std::size_t i = 0; i < slots; ++i) {
    state.slots.push_back(in.array(fmt::format("{}.slot{}", prefix, i)));
  }
  return state;
}

ResumePoint find_resume_point(const std::filesystem::path& run_dir, const config::Config& config,
                              const Plan& plan) {
  const auto dir = checkpoint_dir(run_dir);
  std::vector<std::string> rejected;
  auto found = checkpoint::load_latest(dir, &rejected);
  if (!found) {
    if (rejected.empty()) {
      fail<UsageError>("--resume: no checkpoint in {}; a run writes one every "
                       "fault_tolerance.checkpoint_every.steps steps and when it is stopped "
                       "early. Run without --resume to start from the beginning",
                       dir.string());
    }
    fail<UsageError>("--resume: no usable checkpoint in {}: {}", dir.string(),
                     fmt::join(rejected, "; "));
  }
  ResumePoint point{std::move(found->checkpoint), std::move(found->path), {}};
  for (const auto& s : found->skipped) {
    point.warnings.push_back(fmt::format("skipped a damaged checkpoint, using the one before "
                                         "it: {}", s));
  }
  const auto& m = point.checkpoint.manifest;
  const std::string where = point.path.string();
  try {
    if (m.value("format", "") != kFormat) {
      fail<DataError>("{}: not a disttrain run checkpoint", where);
    }
    const auto fixed = differences(m.at("fixed"), fixed_keys(config, plan));
    if (!fixed.empty()) {
      fail<ConfigError>(
          "--resume: the config no longer fits the checkpoint {}: {}. Undo these changes to "
          "resume, or run without --resume (or with another output.dir) to start afresh",
          where, fmt::join(fixed, "; "));
    }
    for (const auto& d : differences(m.at("soft"), soft_keys(config))) {
      point.warnings.push_back(fmt::format(
          "the config changed since the checkpoint: {}; the resumed run continues with the new "
          "value, so it will not match a run that never stopped", d));
    }
  } catch (const nlohmann::json::exception& e) {
    fail<DataError>("{}: the checkpoint's manifest is incomplete ({})", where, e.what());
  }
  return point;
}

Checkpointer::Checkpointer(const config::Config& config, const Plan& plan,
                           std::filesystem::path run_dir)
    : config_(config), plan_(plan), dir_(checkpoint_dir(run_dir)) {}

std::uint64_t Checkpointer::first_step() const {
  return resume_ ? resume_->checkpoint.step() : 0;
}

bool Checkpointer::due(std::uint64_t step) const noexcept {
  const auto every = static_cast<std::uint64_t>(config_.fault_tolerance.checkpoint_every_steps);
  if (every == 0 || step == 0) return false;
  const std::uint64_t base = std::max(last_saved_, first_step());
  return step / every > base / every;
}

checkpoint::Checkpoint Checkpointer::common(CoordinatorSession& session, std::uint64_t step) const {
  checkpoint::Checkpoint out;
  const auto& result = session.result();
  auto& m = out.manifest;
  m["format"] = kFormat;
  m["step"] = step;
  m["total_steps"] = session.schedule().total_steps();
  m["epoch"] = session.schedule().epoch_of(step);
  m["seconds"] = session.schedule().elapsed_seconds();
  m["mode"] = config::describe_aggregation(config_);
  m["workers"] = session.ranks();
  m["fixed"] = fixed_keys(config_, plan_);
  m["soft"] = soft_keys(config_);
  m["classes"] = result.classes;
  m["samples"] = result.samples;
  m["logged_steps"] = result.steps;
  put_log(out, result.log);
  m["window"] = session.loss_window().to_json();
  m["aggregation"] = result.aggregation;
  return out;
}

void Checkpointer::save(CoordinatorSession& session, std::uint64_t step) {
  if (mode_ == nullptr) return;
  auto out = common(session, step);
  try {
    if (!mode_->save_state(session, step, out)) return;
  } catch (const Error& e) {
    log::warn("could not save the checkpoint of step {}: {}", step, e.what());
    session.result().warnings.push_back(
        fmt::format("could not save the checkpoint of step {}: {}", step, e.what()));
    return;
  }
  if (!writer_) writer_ = std::make_unique<CheckpointWriter>(dir_);
  writer_->submit(std::move(out));
  last_saved_ = step;
  note(session, writer_->take_outcomes(false));
}

void Checkpointer::flush(CoordinatorSession& session) {
  if (writer_) note(session, writer_->take_outcomes(true));
}

void Checkpointer::note(CoordinatorSession& session,
                        const std::vector<CheckpointWriter::Outcome>& outcomes) {
  for (const auto& o : outcomes) {
    if (!o.error) {
      last_written_ = std::max(last_written_, o.step);
      written_ = true;
      log::info("checkpoint of step {} written to {}", o.step, o.path.string());
    } else if (o.replaced) {
      log::debug("checkpoint of step {} skipped: {}", o.step, *o.error);
    } else {
      log::warn("could not write the checkpoint of step {}: {}", o.step, *o.error);
      session.result().warnings.push_back(
          fmt::format("could not write the checkpoint of step {}: {}", o.step, *o.error));
    }
  }
}

void Checkpointer::save_on_stop(CoordinatorSession& session) noexcept {
  try {
    flush(session);  // the periodic ones first: the stop's is the newest
    const std::uint64_t step = session.completed_step();
    if (mode_ == nullptr || step == 0 || step <= std::max(last_written_, first_step())) return;
    auto out = common(session, step);
    if (!mode_->save_state(session, step, out)) {
      log::warn("the {} mode cannot save step {} after the stop; the last checkpoint (step {}) "
                "stands", config::describe_aggregation(config_), step,
                std::max(last_written_, first_step()));
      return;
    }
    const auto path = checkpoint::write(dir_, out);
    last_written_ = step;
    written_ = true;
    log::info("checkpoint of step {} written to {}", step, path.string());
  } catch (const std::exception& e) {
    log::error("could not write the checkpoint after the stop: {}", e.what());
  }
}

std::uint64_t Checkpointer::planned_steps(const CoordinatorSession& session) const {
  if (config_.aggregation.mode != config::AggregationMode::kAsync) {
    return session.schedule().total_steps();
  }
  // Async counts updates: every worker's local steps, which async.cpp makes the schedule's total
  // only once it starts (after this check).
  std::uint64_t total = 0;
  for (const std::uint64_t rows : plan_.shard_rows) {
    total += local_steps_per_epoch(config_.training, rows) *
             static_cast<std::uint64_t>(config_.training.epochs);
  }
  return total;
}

void Checkpointer::restore(CoordinatorSession& session) {
  if (!resume_ || mode_ == nullptr) return;
  const auto& ck = resume_->checkpoint;
  const auto& m = ck.manifest;
  const std::uint64_t step = ck.step();
  const std::string where = resume_->path.string();
  // A checkpoint of the last step (the run was stopped while it wrote its outputs) resumes to
  // no step at all: the outputs are written from it.
  const std::uint64_t total = planned_steps(session);
  if (step > total) {
    fail<ConfigError>("--resume: the checkpoint {} is at step {} and this config trains {} steps "
                      "in all; raise training.epochs to train as far",
                      where, step, total);
  }
  // Past the checksum the manifest is what a run wrote, unless it was edited by hand: a key
  // removed or of another type is refused by name, not left to end the run as "internal error".
  try {
    auto& result = session.result();
    const auto classes = m.at("classes").get<std::vector<std::string>>();
    if (classes != result.classes) {
      fail<ConfigError>("--resume: the classes of the data ({}) differ from the checkpoint's ({}); "
                        "resume with the data the run started with",
                        fmt::join(result.classes, ", "), fmt::join(classes, ", "));
    }
    const auto& params = ck.array("parameters");
    if (params.size() != session.params().size()) {
      fail<ConfigError>("--resume: the checkpoint {} holds {} parameters, the model has {}", where,
                        params.size(), session.params().size());
    }
    session.params() = params;
    result.samples = m.at("samples").get<std::uint64_t>();
    result.steps = m.at("logged_steps").get<std::uint64_t>();
    result.log.clear();
    if (m.contains("log")) {
      for (const auto& row : m.at("log")) result.log.push_back(row_of(row));
    } else {
      result.log = get_log(ck, where);
    }
    result.aggregation = m.at("aggregation");
    session.restore_log_window(m.at("window"), step, m.at("seconds").get<double>());
    mode_->restore_state(session, ck);
  } catch (const nlohmann::json::exception& e) {
    fail<DataError>("{}: the checkpoint's manifest is incomplete ({})", where, e.what());
  }
  last_written_ = last_saved_ = step;
  log::info("resuming from {} (step {} of {})", where, step, session.schedule().total_steps());
}

}  // namespace dt::roles
