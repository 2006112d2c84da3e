// Parameters mode across `run --resume` with another worker count: see parameters_resize.hpp.

#include "core/modes/parameters_resize.hpp"

#include "core/coordinator/plan.hpp"
#include "core/coordinator/resume_membership.hpp"
#include "core/coordinator/resume_read.hpp"
#include "base/log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace dt::modes {
namespace {

// By slot: whether it trained at the checkpoint (its membership's alive ranks).
std::vector<bool> trained_at(const nlohmann::json& manifest, std::size_t slots) {
  std::vector<bool> out(slots, false);
  const auto m = manifest.find("membership");
  if (m != manifest.end() && m->is_object() && m->contains("alive") &&
      (*m)["alive"].is_array()) {
    for (const auto& r : (*m)["alive"]) {
      if (r.is_number_unsigned() && r.get<std::uint64_t>() < slots) {
        out[r.get<std::size_t>()] = true;
      }
    }
    return out;
  }
  const auto workers = manifest.value("workers", std::uint64_t{0});
  for (std::size_t k = 0; k < slots && k < workers; ++k) out[k] = true;
  return out;
}

// Whether the run of the checkpoint had been resized on an earlier --resume.
bool resized_before(const nlohmann::json& manifest) {
  const auto m = manifest.find("membership");
  if (m == manifest.end() || !m->is_object() || !m->contains("record")) return false;
  const auto& events = (*m)["record"].value("events", nlohmann::json::array());
  return std::any_of(events.begin(), events.end(), [](const nlohmann::json& e) {
    return e.is_object() && e.value("event", "") == "resize";
  });
}

std::uint64_t saved_count(const nlohmann::json& list, std::size_t k) {
  return k < list.size() && list[k].is_number_unsigned() ? list[k].get<std::uint64_t>() : 0;
}

}  // namespace

void RoundsResize::restore(roles::CoordinatorSession& session, const checkpoint::Checkpoint& from,
                           std::vector<std::uint64_t>& positions,
                           std::vector<std::optional<models::OptimizerState>>& optimizers) {
  const auto& m = from.manifest;
  const int was = roles::resize_from(m, session.config());
  if (was == 0 && !resized_before(m)) return;
  auto& summary = session.result().aggregation;
  const auto old_per = summary.value("local_steps_per_epoch", nlohmann::json::array());
  // The axis the checkpoint's rounds were on (a checkpoint without it: its largest shard's).
  const auto& state = roles::manifest_key(m, "mode_state", from.origin);
  if (state.contains("steps_per_epoch")) {
    axis_ = roles::manifest_count(state, "steps_per_epoch", from.origin);
  } else {
    for (std::size_t k = 0; k < old_per.size(); ++k) {
      axis_ = std::max(axis_, saved_count(old_per, k));
    }
  }
  axis_ = std::max<std::uint64_t>(1, axis_);
  if (was == 0) return;  // resized before: the slots' state is the checkpoint's, as it is
  pending_ = true;
  const auto slots = positions.size();
  const auto now = static_cast<std::size_t>(session.plan().starting_ranks());
  const auto trained = trained_at(m, slots);
  nlohmann::json per_epoch = nlohmann::json::array();
  for (std::size_t k = 0; k < slots; ++k) {
    const auto rows = session.plan().shard_rows[k];
    const std::uint64_t per =
        rows == 0 ? 0 : roles::local_steps_per_epoch(session.config().training, rows);
    per_epoch.push_back(per);
    if (k < now && trained[k]) {  // on at its next local epoch, of its new shard
      const auto old = std::max<std::uint64_t>(1, saved_count(old_per, k));
      positions[k] = (positions[k] + old - 1) / old * per;
      continue;
    }
    positions[k] = 0;
    optimizers[k].reset();
    if (k < now) fresh_.push_back(static_cast<int>(k));
  }
  summary["local_steps_per_epoch"] = std::move(per_epoch);
  auto& participation = summary["participation"];
  while (participation.size() < slots) participation.push_back(0);
}

void RoundsResize::note(roles::CoordinatorSession& session, std::uint64_t round,
                        const std::vector<std::uint64_t>& positions) {
  if (!pending_) return;
  pending_ = false;
  auto& events = session.result().membership["events"];
  if (events.empty() || events.back().value("event", "") != "resize") return;
  auto& event = events.back();
  const auto& per_epoch = session.result().aggregation["local_steps_per_epoch"];
  nlohmann::json to = nlohmann::json::array();
  std::uint64_t first = UINT64_MAX;
  for (const int rank : session.alive()) {
    const auto k = static_cast<std::size_t>(rank);
    const auto epoch = positions[k] / std::max<std::uint64_t>(1, saved_count(per_epoch, k));
    to.push_back({{"rank", rank}, {"rows", session.plan().shard_rows[k]}, {"from_epoch", epoch}});
    first = std::min(first, epoch);
  }
  event["from_epoch"] = first == UINT64_MAX ? 0 : first;
  event["skipped_steps"] = 0;
  event["from_round"] = round;
  event["to"] = std::move(to);
  const int workers = session.plan().starting_ranks();
  log::notice("--resume with {} workers ({} trained at the checkpoint's step): the rows are "
              "planned for {} afresh, from round {} (after step {}), each worker from its own "
              "next local epoch{}",
              workers, event["from_workers"].get<int>(), workers, round + 1,
              event["step"].get<std::uint64_t>(),
              fresh_.empty() ? std::string()
                             : fmt::format("; worker{} {} start{} afresh, as joiners do",
                                           fresh_.size() == 1 ? "" : "s", fmt::join(fresh_, ", "),
                                           fresh_.size() == 1 ? "s" : ""));
}

}  // namespace dt::modes
