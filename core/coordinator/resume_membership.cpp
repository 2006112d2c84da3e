// fault_tolerance.elastic across `run --resume`: what resume_membership.hpp says, and the
// CoordinatorSession's part of it (the membership a checkpoint keeps, and back).

#include "core/coordinator/resume_membership.hpp"

#include "core/coordinator/membership.hpp"
#include "core/coordinator/resume.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/tensor_plan.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>

namespace dt::roles {
namespace {

// The epoch a saved deal or re-plan (membership.dealt) gives each of its `ranks`: its
// `from_epochs`, one per rank (parameters mode: each its own local epoch), else `from_epoch`.
std::function<std::uint64_t(int)> saved_epochs(const nlohmann::json& d,
                                               const std::vector<int>& ranks,
                                               const std::string& where) {
  std::vector<std::uint64_t> epochs;
  if (d.contains("from_epochs")) {
    epochs = manifest_counts(d, "from_epochs", where);
  } else {
    epochs.assign(ranks.size(), manifest_count(d, "from_epoch", where));
  }
  if (epochs.size() != ranks.size()) {
    fail<DataError>("{}: the checkpoint's membership deals rows to {} ranks with {} epochs",
                    where, ranks.size(), epochs.size());
  }
  return [ranks, epochs](int rank) {
    const auto at = std::find(ranks.begin(), ranks.end(), rank) - ranks.begin();
    return epochs[static_cast<std::size_t>(at)];
  };
}

// The ranks of `key` in the saved membership `m`, each checked to be a rank of this run.
std::vector<int> saved_ranks(const nlohmann::json& m, const char* key, int ranks,
                             const std::string& where) {
  const auto& list = manifest_key(m, key, where);
  if (!list.is_array()) {
    fail<DataError>("{}: the checkpoint's membership.{} is not a list", where, key);
  }
  std::vector<int> out;
  for (const auto& r : list) {
    if (!r.is_number_unsigned() || r.get<std::uint64_t>() >= static_cast<std::uint64_t>(ranks)) {
      fail<DataError>("{}: the checkpoint's membership.{} holds {}, not a rank of this run's {} "
                      "workers", where, key, r.dump(), ranks);
    }
    out.push_back(r.get<int>());
  }
  return out;
}

// Whether --resume carries the membership over (leavers stay out, deals are replayed): every
// mode elastic runs in. The ring forms over the members at the checkpoint before its first step
// (RingReformer::form_over_members), the servers forget the departed ranks before they answer
// a push (ServerGroup::forget_departed), async's server 0 deals their rows again.
bool resumes_membership(const config::Config& c) {
  return c.parallelism.tensor <= 1;
}

// Why this config cannot resume a checkpoint of another worker count (nullopt: it can).
// Gradients over the star or the ring, with one server or sharded ones (the optimizer state is
// per key, not per worker; top-k residuals start at zero, with a warning: topk_state.hpp), and
// parameters mode (each slot's own state carried over or started afresh: parameters_resize.hpp)
// and async (the state lives in the servers; each worker's plan is made afresh from the next
// epoch: core/modes/async_resume.hpp).
std::optional<std::string> resize_refusal(const config::Config& c) {
  if (!c.fault_tolerance.elastic) return std::string("needs fault_tolerance.elastic");
  if (c.parallelism.tensor > 1) {
    return fmt::format("is available in aggregation.mode gradients, parameters and async, not "
                       "with tensor parallelism ({})", config::describe_aggregation(c));
  }
  return std::nullopt;
}

// The first step of the epoch after the one `step` is in (`step` itself at an epoch's end).
std::uint64_t next_epoch_start(std::uint64_t step, std::uint64_t steps_per_epoch) {
  const std::uint64_t s = std::max<std::uint64_t>(1, steps_per_epoch);
  return (step + s - 1) / s * s;
}

// The workers training at the checkpoint: its membership's alive ranks, else all of them.
std::uint64_t training_at(const nlohmann::json& manifest, std::uint64_t workers) {
  const auto it = manifest.find("membership");
  if (it == manifest.end() || !it->is_object() || !it->contains("alive") ||
      !(*it)["alive"].is_array()) {
    return workers;
  }
  return std::min<std::uint64_t>(workers, (*it)["alive"].size());
}

// The joins a checkpoint keeps (membership.joins): whether a join waits for its re-plan, and
// the slots used.
void restore_joins(CoordinatorSession& session, JoinState& joins, const nlohmann::json& saved,
                   const std::string& where) {
  const auto replan = saved.find("replan");
  const auto used = saved.find("used");
  if (!saved.is_object() || replan == saved.end() || !replan->is_boolean() ||
      used == saved.end() || !used->is_array()) {
    fail<DataError>("{}: the checkpoint's membership.joins is not {{replan, used}}", where);
  }
  joins.replan = replan->get<bool>();
  for (std::size_t r = 0; r < used->size() && r < joins.used.size(); ++r) {
    joins.used[r] = (*used)[r].is_boolean() && (*used)[r].get<bool>();
  }
  for (const int r : session.alive()) joins.used[static_cast<std::size_t>(r)] = true;
  // The re-plans themselves are in membership.dealt, dealt again in order.
}

}  // namespace

int resize_from(const nlohmann::json& m, const config::Config& config) {
  const auto it = m.find("workers");
  if (it == m.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() == 0 ||
      it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT32_MAX)) {
    return 0;  // check_resume_manifest says what is wrong with it
  }
  const std::uint64_t was = it->get<std::uint64_t>();
  const auto now = static_cast<std::uint64_t>(config::worker_count(config));
  const std::uint64_t training = training_at(m, was);
  const auto& elastic = config.fault_tolerance.elastic;
  // Below min_workers (the run failed waiting for joiners): every rank of the config again.
  const bool refill = elastic && was == now &&
                      training < static_cast<std::uint64_t>(elastic->min_workers);
  if (was == now && !refill) return 0;
  // (A run that lost every worker resumes as a resize of its whole count.)
  return static_cast<int>(training > 0 ? training : was);
}

std::optional<std::string> plan_resume_membership(ResumePoint& point,
                                                  const config::Config& config, const Plan& plan,
                                                  nlohmann::json& fixed) {
  const auto& m = point.checkpoint.manifest;
  point.start_step = point.checkpoint.step();
  const int from = resize_from(m, config);
  if (from == 0) return std::nullopt;
  if (auto refusal = resize_refusal(config)) return refusal;
  point.from_workers = from;
  const auto saved = m.value("fixed", nlohmann::json::object());
  if (saved.is_object()) {  // else check_resume_manifest says what is wrong
    for (const char* key : {"workers", "shards.count"}) {
      if (saved.contains(key)) fixed[key] = saved[key];
    }
  }
  // Parameters mode goes on from the checkpoint's round: each slot from its own next local
  // epoch (parameters_resize.hpp), nothing skipped on the log's axis. Async counts updates on
  // from the checkpoint's; the epoch it skips to is its own (async_resume.hpp).
  if (config.aggregation.mode != config::AggregationMode::kParameters &&
      config.aggregation.mode != config::AggregationMode::kAsync) {
    point.start_step = next_epoch_start(point.checkpoint.step(), plan.steps_per_epoch);
  }
  return std::nullopt;
}

std::vector<bool> departed_at_resume(const Checkpointer* checkpointer,
                                     const config::Config& config, int ranks, int slots) {
  if (checkpointer == nullptr || !config.fault_tolerance.elastic) return {};
  const auto* point = checkpointer->resume();
  if (point == nullptr || point->from_workers != 0) return {};
  const auto& m = point->checkpoint.manifest;
  if (!m.contains("membership")) return {};
  if (!resumes_membership(config)) return {};
  const auto alive = saved_ranks(m["membership"], "alive", slots, point->path.string());
  // Up to the highest slot alive: a joiner's slot is started again (a local worker).
  int size = ranks;
  for (const int r : alive) size = std::max(size, r + 1);
  std::vector<bool> departed(static_cast<std::size_t>(size), true);
  for (const int r : alive) departed[static_cast<std::size_t>(r)] = false;
  std::vector<int> gone;
  std::vector<int> joined;
  for (int r = 0; r < size; ++r) {
    const bool d = departed[static_cast<std::size_t>(r)];
    if (r < ranks && d) gone.push_back(r);
    if (r >= ranks && !d) joined.push_back(r);
  }
  if (gone.empty() && joined.empty()) return {};
  if (!gone.empty()) {
    log::notice("--resume: worker{} {} had left the run at the checkpoint's step and {} not "
                "started again", gone.size() == 1 ? "" : "s", fmt::join(gone, ", "),
                gone.size() == 1 ? "is" : "are");
  }
  if (!joined.empty()) {
    log::notice("--resume: the slot{} of worker{} {}, which joined the run before the "
                "checkpoint, {} refilled by a worker this coordinator starts", 
                joined.size() == 1 ? "" : "s", joined.size() == 1 ? "" : "s",
                fmt::join(joined, ", "), joined.size() == 1 ? "is" : "are");
  }
  return departed;
}

void CoordinatorSession::set_departed(const std::vector<bool>& departed) {
  for (std::size_t r = 0; r < departed.size(); ++r) {
    const int rank = static_cast<int>(r);
    if (!departed[r] && !alive_flag_[r]) {  // a joiner's slot, started again
      alive_flag_[r] = true;
      alive_.insert(std::upper_bound(alive_.begin(), alive_.end(), rank), rank);
    }
    if (!departed[r] || !alive_flag_[r]) continue;
    alive_flag_[r] = false;
    std::erase(alive_, rank);
    heartbeat_.forget(rank);
  }
}

nlohmann::json CoordinatorSession::membership_state() const {
  return {{"record", result_.membership},
          {"alive", alive_},
          {"dealt", dealt_},
          {"undealt", lost_unassigned_},
          {"joins", {{"replan", joins_.replan}, {"used", joins_.used}}}};
}

void CoordinatorSession::restore_membership(const nlohmann::json& saved, int from_workers,
                                            std::uint64_t step, std::uint64_t start_step,
                                            const std::string& where) {
  // Not elastic now, or a mode that starts every rank again (resumes_membership): afresh.
  if (result_.membership.is_null() || !resumes_membership(config_)) return;
  if (saved.is_object()) {
    const auto& record = manifest_key(saved, "record", where);
    if (!record.is_object()) {
      fail<DataError>("{}: the checkpoint's membership.record is not an object", where);
    }
    result_.membership["workers"] = manifest_count(record, "workers", where);
    result_.membership["events"] = manifest_key(record, "events", where);
    (void)manifest_counts(record, "rows_per_epoch", where);  // checked: counted on from here
    result_.membership["rows_per_epoch"] = record["rows_per_epoch"];
  }
  const std::uint64_t per_epoch = std::max<std::uint64_t>(1, plan_.steps_per_epoch);
  if (from_workers != 0) {
    // A new plan: the old one's departed ranks and deals mean nothing in it.
    result_.membership["events"].push_back({{"event", "resize"},
                                            {"step", step},
                                            {"from_workers", from_workers},
                                            {"workers", plan_.starting_ranks()},
                                            {"from_epoch", start_step / per_epoch},
                                            {"skipped_steps", start_step - step}});
    // (Parameters mode: its own message and the event's details, parameters_resize.cpp.)
    if (config_.aggregation.mode == config::AggregationMode::kParameters) return;
    log::notice("--resume with {} workers ({} trained at the checkpoint's step): the rows are "
                "planned for {} afresh, from step {} (the first of epoch {}){}",
                plan_.starting_ranks(), from_workers, plan_.starting_ranks(), start_step + 1,
                start_step / per_epoch + 1,
                start_step > step ? fmt::format("; steps {} to {}, the rest of the interrupted "
                                                "epoch, are skipped", step + 1, start_step)
                                  : std::string());
    return;
  }
  if (!saved.is_object()) return;
  const auto& dealt = manifest_key(saved, "dealt", where);
  if (!dealt.is_array()) {
    fail<DataError>("{}: the checkpoint's membership.dealt is not a list", where);
  }
  for (const auto& d : dealt) {
    if (d.contains("replan")) {  // replan_rows: every row among the members then
      const auto members = saved_ranks(d, "to", ranks(), where);
      for (const auto& t : deal_every_row(*this, members, saved_epochs(d, members, where))) {
        result_.workers[t["rank"].get<std::size_t>()].rows = t["rows"].get<std::uint64_t>();
      }
      joins_.replanned = true;
      dealt_.push_back(d);
      continue;
    }
    const auto lost = manifest_count(d, "rank", where);
    const auto starting = static_cast<std::uint64_t>(plan_.starting_ranks());
    if (lost >= starting || is_alive(static_cast<int>(lost))) {
      fail<DataError>("{}: the checkpoint's membership deals the rows of rank {}, not a departed "
                      "rank of this run's {} workers", where, lost, plan_.starting_ranks());
    }
    const auto to = saved_ranks(d, "to", ranks(), where);
    if (!d.contains("from_epochs")) {
      deal_rows(static_cast<int>(lost), manifest_count(d, "from_epoch", where), to);
      continue;
    }
    // Parameters mode (deal_left_rows): each taker from its own local epoch.
    (void)roles::deal_rows(*this, static_cast<int>(lost), to, saved_epochs(d, to, where));
    dealt_.push_back(d);
  }
  for (const int r : saved_ranks(saved, "undealt", ranks(), where)) {
    if (!is_alive(r)) lost_unassigned_.push_back(r);  // dealt at the next epoch, as before
  }
  if (saved.contains("joins")) restore_joins(*this, joins_, saved["joins"], where);
}

}  // namespace dt::roles
