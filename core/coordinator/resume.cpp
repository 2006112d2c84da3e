#include "core/coordinator/resume.hpp"

#include "core/modes/mode.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/resume_membership.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace dt::roles {
namespace {


// The rule and the slots its state has (sgd and rmsprop have more with momentum, rmsprop with
// centered).
std::string optimizer_kind(const config::OptimizerConfig& o) {
  if (o.type == config::OptimizerType::kRmsprop) {
    return fmt::format("{}rmsprop{}", o.centered ? "centered " : "",
                       o.momentum > 0.0 ? " with momentum" : "");
  }
  if (o.type != config::OptimizerType::kSgd) return config::name_of(o.type);
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
  // Only with these optimizers, so that a checkpoint of an older build, which lacks the keys,
  // resumes without a warning.
  if (o.type == config::OptimizerType::kAdagrad) {
    j["training.optimizer.initial_accumulator_value"] = num(o.initial_accumulator_value);
  }
  if (o.type == config::OptimizerType::kFtrl) {
    j["training.optimizer.beta"] = num(o.beta);
    j["training.optimizer.l1"] = num(o.l1);
    j["training.optimizer.l2"] = num(o.l2);
  }
  if (o.type == config::OptimizerType::kAdamw) {
    j["training.optimizer.weight_decay"] = num(o.weight_decay);
  }
  if (o.type == config::OptimizerType::kRmsprop) j["training.optimizer.alpha"] = num(o.rms_alpha);
  // Only when set, as above: a schedule or clipping changed on resume gives other steps.
  const auto& l = o.schedule;
  if (l.type != config::LrScheduleType::kConstant || l.warmup_steps > 0) {
    j["training.lr_schedule"] =
        fmt::format("{} step_size {} gamma {} min_lr {} t_max {} warmup_steps {} warmup_start {}",
                    config::name_of(l.type), l.step_size, num(l.gamma), num(l.min_lr), l.t_max,
                    l.warmup_steps, num(l.warmup_start));
  }
  if (o.clip_norm > 0.0) j["training.clip_norm"] = num(o.clip_norm);
  // Only when set, as above: rounded gradients give other steps; fp16 and bf16 keep no state.
  if (c.aggregation.compression != config::WireCompression::kNone) {
    j["aggregation.compression"] = config::name_of(c.aggregation.compression);
    if (c.aggregation.compression == config::WireCompression::kTopk) {
      j["aggregation.compression"] = fmt::format("topk {}", num(c.aggregation.topk_ratio));
    }
  }
  // Only when float32, as above: the state is float64 either way, but the steps differ.
  if (c.model.dtype != config::Dtype::kFloat64) j["model.dtype"] = config::name_of(c.model.dtype);
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

}  // namespace

std::filesystem::path checkpoint_dir(const std::filesystem::path& run_dir) {
  return run_dir / "checkpoint";
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
  const std::string where = point.path.string();
  auto fixed = fixed_keys(config, plan);
  // Another worker count (elastic): a new plan from the next epoch (resume_membership.hpp).
  const auto refusal = plan_resume_membership(point, config, plan, fixed);
  try {
    const auto warnings = check_resume_manifest(point.checkpoint, where, fixed, soft_keys(config));
    point.warnings.insert(point.warnings.end(), warnings.begin(), warnings.end());
  } catch (ConfigError& e) {
    if (!refusal) throw;
    fail<ConfigError>("{}. Resuming with another worker count {} (docs/elastic.md)", e.what(),
                      *refusal);
  }
  return point;
}

Checkpointer::Checkpointer(const config::Config& config, const Plan& plan,
                           std::filesystem::path run_dir)
    : config_(config), plan_(plan), dir_(checkpoint_dir(run_dir)) {}

std::uint64_t Checkpointer::first_step() const {
  return resume_ ? std::max(resume_->start_step, resume_->checkpoint.step()) : 0;
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
  m["format"] = "disttrain-checkpoint";  // resume_read.cpp checks it
  m["step"] = step;
  m["total_steps"] = session.schedule().total_steps();
  m["epoch"] = session.schedule().epoch_of(step);
  m["seconds"] = session.schedule().elapsed_seconds();
  m["mode"] = config::describe_aggregation(config_);
  m["workers"] = config::worker_count(config_);  // the starting count (not the join slots)
  m["fixed"] = fixed_keys(config_, plan_);
  m["soft"] = soft_keys(config_);
  m["classes"] = result.classes;
  m["samples"] = result.samples;
  m["logged_steps"] = result.steps;
  put_log(out, result.log);
  m["window"] = session.loss_window().to_json();
  m["aggregation"] = result.aggregation;
  // fault_tolerance.elastic: who is in the run, and the deals of departed ranks' rows.
  if (!result.membership.is_null()) m["membership"] = session.membership_state();
  // training.early_stopping's best check so far (early_stop.hpp); absent without it, and
  // a checkpoint without it resumes with no check made.
  if (session.evaluation().early_stop().enabled()) {
    m["early_stopping"] = session.evaluation().early_stop().state();
    out.arrays["early_stopping.best_parameters"] = session.evaluation().early_stop().best_params();
  }
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
    auto run = read_restored(ck, where);
    if (run.classes != result.classes) {
      fail<ConfigError>("--resume: the classes of the data ({}) differ from the checkpoint's ({}); "
                        "resume with the data the run started with",
                        fmt::join(result.classes, ", "), fmt::join(run.classes, ", "));
    }
    if (run.parameters.size() != session.params().size()) {
      fail<ConfigError>("--resume: the checkpoint {} holds {} parameters, the model has {}", where,
                        run.parameters.size(), session.params().size());
    }
    session.params() = std::move(run.parameters);
    result.samples = run.samples;
    // Another worker count starts at the next epoch (resume_membership.hpp): log rows stay on
    // their cadence from there.
    result.steps = resume_->from_workers != 0 ? first_step() : run.logged_steps;
    result.log = std::move(run.log);
    result.aggregation = std::move(run.aggregation);
    session.restore_log_window(run.window, first_step(), run.seconds, where);
    if (ck.manifest.contains("early_stopping")) {
      session.evaluation().early_stop().restore(
          ck.manifest["early_stopping"],
          ck.has("early_stopping.best_parameters") ? ck.array("early_stopping.best_parameters")
                                                   : std::vector<double>(),
          session.params().size(), where);
    }
    mode_->restore_state(session, ck);
    session.restore_membership(ck.manifest.value("membership", nlohmann::json()),
                               resume_->from_workers, step, first_step(), where);
  } catch (const nlohmann::json::exception& e) {
    // A backstop: every read above is checked (resume_read.hpp).
    fail<DataError>("{}: the checkpoint's manifest is incomplete ({})", where, e.what());
  }
  last_written_ = last_saved_ = step;
  log::info("resuming from {} (step {} of {})", where, step, session.schedule().total_steps());
}

}  // namespace dt::roles
