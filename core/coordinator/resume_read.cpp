#include "core/coordinator/resume_read.hpp"

#include "base/error.hpp"
#include "core/config/schema.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace dt::roles {
namespace {

constexpr const char* kCheckpointFormat = "disttrain-checkpoint";

// The log so far goes in every checkpoint, as columns of raw doubles: it grows with the run, and
// as JSON (every number through shortest round-trip printing) it cost the coordinator ~4 ms a
// checkpoint by a run's thousandth row, on the step path of every mode.
// "log.flags": 1 = a validation loss, 2 = a validation metric, 4 = a validation log-loss, 8 = a
// validation AUC; "log.workers": each row's count of worker losses, which "log.worker_loss"
// holds one row after the other. The log-loss and AUC columns came later: a checkpoint without
// them is read as rows without those values.
constexpr const char* kLogColumns[] = {"log.step", "log.epoch", "log.seconds", "log.train_loss",
                                       "log.validation_loss", "log.validation_metric",
                                       "log.flags", "log.workers"};
constexpr const char* kScoreColumns[] = {"log.validation_log_loss", "log.validation_auc"};

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
  const auto rows = manifest_count(in.manifest, "log_rows", where);
  std::vector<const std::vector<double>*> c;
  for (const char* name : kLogColumns) {
    c.push_back(&in.array(name));
    if (c.back()->size() != rows) {
      fail<DataError>("{}: the log column {} holds {} values for {} rows", where, name,
                      c.back()->size(), rows);
    }
  }
  std::vector<const std::vector<double>*> scores;
  for (const char* name : kScoreColumns) {
    scores.push_back(in.has(name) ? &in.array(name) : nullptr);
    if (scores.back() != nullptr && scores.back()->size() != rows) {
      fail<DataError>("{}: the log column {} holds {} values for {} rows", where, name,
                      scores.back()->size(), rows);
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
    if ((flags & 4) != 0 && scores[0] != nullptr) row.validation_log_loss = (*scores[0])[i];
    if ((flags & 8) != 0 && scores[1] != nullptr) row.validation_auc = (*scores[1])[i];
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
LogRow row_of(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) fail<DataError>("{}: a row of the manifest's log is not an object", where);
  LogRow row;
  row.step = manifest_count(j, "step", where);
  row.epoch = manifest_number(j, "epoch", where);
  row.seconds = manifest_number(j, "seconds", where);
  row.train_loss = manifest_number(j, "train_loss", where);
  row.worker_loss = manifest_numbers(j, "worker_loss", where);
  if (j.contains("validation_loss")) row.validation_loss = manifest_number(j, "validation_loss", where);
  if (j.contains("validation_metric")) {
    row.validation_metric = manifest_number(j, "validation_metric", where);
  }
  return row;
}

// What a key written only when set means when it is unset: its default, from the schema
// ("float64 (the default)"), or "unset" for a key without one.
std::string unset_value(const std::string& key) {
  for (const auto& k : config::schema::keys()) {
    if (k.path != key) continue;
    std::string value = k.default_yaml.empty() ? k.default_note : k.default_yaml;
    std::erase(value, '`');
    if (!value.empty()) return value + " (the default)";
  }
  return "unset";
}

std::vector<std::string> changed_keys(const nlohmann::json& saved, const nlohmann::json& now,
                                      const std::string& where, const char* section) {
  if (!saved.is_object()) fail<DataError>("{}: the manifest's {} is not an object", where, section);
  std::vector<std::string> out;
  for (const auto& [key, value] : now.items()) {
    const auto it = saved.find(key);
    if (it != saved.end() && !it->is_string()) {
      fail<DataError>("{}: the manifest's {}.{} is not a string", where, section, key);
    }
    const std::string before = it == saved.end() ? unset_value(key) : it->get<std::string>();
    if (before != value.get<std::string>()) {
      out.push_back(fmt::format("{} was {}, is now {}", key, before, value.get<std::string>()));
    }
  }
  // A key written only when set (aggregation.compression, model.dtype ...) that is now unset.
  for (const auto& [key, value] : saved.items()) {
    if (!now.contains(key) && value.is_string()) {
      out.push_back(
          fmt::format("{} was {}, is now {}", key, value.get<std::string>(), unset_value(key)));
    }
  }
  return out;
}

// A whole number >= 0: what a file's JSON parses to (unsigned), or a non-negative signed one of
// a manifest built in memory. Never a double (2.5, 1e300: a cast out of range is undefined).
bool is_count(const nlohmann::json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
}

[[noreturn]] void wrong_key(const std::string& where, const char* key, const char* what) {
  fail<DataError>("{}: the checkpoint's manifest is incomplete ({} is not {})", where, key, what);
}

}  // namespace

const nlohmann::json& manifest_key(const nlohmann::json& j, const char* key,
                                   const std::string& where) {
  const auto it = j.is_object() ? j.find(key) : j.end();
  if (!j.is_object() || it == j.end()) {
    fail<DataError>("{}: the checkpoint's manifest is incomplete (no {})", where, key);
  }
  return *it;
}

std::uint64_t manifest_count(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = manifest_key(j, key, where);
  if (!is_count(v)) wrong_key(where, key, "a non-negative integer");
  return v.get<std::uint64_t>();
}

std::vector<std::uint64_t> manifest_counts(const nlohmann::json& j, const char* key,
                                           const std::string& where) {
  const auto& v = manifest_key(j, key, where);
  if (!v.is_array()) wrong_key(where, key, "a list");
  std::vector<std::uint64_t> out;
  for (const auto& e : v) {
    if (!is_count(e)) wrong_key(where, key, "a list of non-negative integers");
    out.push_back(e.get<std::uint64_t>());
  }
  return out;
}

double manifest_number(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = manifest_key(j, key, where);
  if (!v.is_number()) wrong_key(where, key, "a number");
  return v.get<double>();
}

std::vector<double> manifest_numbers(const nlohmann::json& j, const char* key,
                                     const std::string& where) {
  const auto& v = manifest_key(j, key, where);
  if (!v.is_array()) wrong_key(where, key, "a list");
  std::vector<double> out;
  for (const auto& e : v) {
    if (!e.is_number()) wrong_key(where, key, "a list of numbers");
    out.push_back(e.get<double>());
  }
  return out;
}

std::vector<std::string> check_resume_manifest(const checkpoint::Checkpoint& ck,
                                               const std::string& where,
                                               const nlohmann::json& fixed_now,
                                               const nlohmann::json& soft_now) {
  const auto& m = ck.manifest;
  if (m.value("format", nlohmann::json()) != kCheckpointFormat) {
    fail<DataError>("{}: not a disttrain run checkpoint", where);
  }
  const auto fixed = changed_keys(manifest_key(m, "fixed", where), fixed_now, where, "fixed");
  if (!fixed.empty()) {
    fail<ConfigError>(
        "--resume: the config no longer fits the checkpoint {}: {}. Undo these changes to "
        "resume, or run without --resume (or with another output.dir) to start afresh",
        where, fmt::join(fixed, "; "));
  }
  std::vector<std::string> warnings;
  for (const auto& d : changed_keys(manifest_key(m, "soft", where), soft_now, where, "soft")) {
    warnings.push_back(fmt::format(
        "the config changed since the checkpoint: {}; the resumed run continues with the new "
        "value, so it will not match a run that never stopped", d));
  }
  return warnings;
}

RestoredRun read_restored(const checkpoint::Checkpoint& ck, const std::string& where) {
  const auto& m = ck.manifest;
  RestoredRun run;
  const auto& classes = manifest_key(m, "classes", where);
  if (!classes.is_array()) wrong_key(where, "classes", "a list");
  for (const auto& c : classes) {
    if (!c.is_string()) wrong_key(where, "classes", "a list of names");
    run.classes.push_back(c.get<std::string>());
  }
  run.parameters = ck.array("parameters");
  run.samples = manifest_count(m, "samples", where);
  run.logged_steps = manifest_count(m, "logged_steps", where);
  if (m.contains("log")) {
    const auto& rows = m.at("log");
    if (!rows.is_array()) wrong_key(where, "log", "a list");
    for (const auto& row : rows) run.log.push_back(row_of(row, where));
  } else {
    run.log = get_log(ck, where);
  }
  run.aggregation = manifest_key(m, "aggregation", where);
  run.window = manifest_key(m, "window", where);
  run.seconds = manifest_number(m, "seconds", where);
  return run;
}

void put_log(checkpoint::Checkpoint& out, const std::vector<LogRow>& log) {
  std::vector<std::vector<double>> c(std::size(kLogColumns));
  for (auto& column : c) column.reserve(log.size());
  std::vector<double> worker_loss;
  std::vector<std::vector<double>> scores(std::size(kScoreColumns));
  for (const auto& row : log) {
    c[0].push_back(static_cast<double>(row.step));  // exact: steps stay below 2^53
    c[1].push_back(row.epoch);
    c[2].push_back(row.seconds);
    c[3].push_back(row.train_loss);
    c[4].push_back(row.validation_loss.value_or(0.0));
    c[5].push_back(row.validation_metric.value_or(0.0));
    c[6].push_back((row.validation_loss ? 1.0 : 0.0) + (row.validation_metric ? 2.0 : 0.0) +
                   (row.validation_log_loss ? 4.0 : 0.0) + (row.validation_auc ? 8.0 : 0.0));
    scores[0].push_back(row.validation_log_loss.value_or(0.0));
    scores[1].push_back(row.validation_auc.value_or(0.0));
    c[7].push_back(static_cast<double>(row.worker_loss.size()));
    worker_loss.insert(worker_loss.end(), row.worker_loss.begin(), row.worker_loss.end());
  }
  for (std::size_t i = 0; i < c.size(); ++i) out.arrays[kLogColumns[i]] = std::move(c[i]);
  for (std::size_t i = 0; i < scores.size(); ++i) out.arrays[kScoreColumns[i]] = std::move(scores[i]);
  out.arrays["log.worker_loss"] = std::move(worker_loss);
  out.manifest["log_rows"] = log.size();
}

void put_optimizer(checkpoint::Checkpoint& out, const std::string& prefix,
                   const models::OptimizerState& state, const std::vector<std::uint32_t>* at) {
  // One array a slot whatever the state's layout (ftrl's interleaved records): the same bytes.
  out.manifest["optimizers"][prefix] = {{"steps", state.steps}, {"slots", state.slot_count()}};
  for (std::size_t i = 0; i < state.slot_count(); ++i) {
    const auto name = fmt::format("{}.slot{}", prefix, i);
    if (at == nullptr) {
      if (state.interleaved == 0) {
        checkpoint::put(out, name, state.slots[i]);
      } else {
        checkpoint::put(out, name, models::slot_values(state, i));
      }
      continue;
    }
    checkpoint::ArrayBuilder array(name, state.slot_size());
    array.add_at(state.slot_data(i), state.slot_size(), state.stride(), *at);
    array.finish(out);
  }
}

models::OptimizerState get_optimizer(const checkpoint::Checkpoint& in, const std::string& prefix) {
  const std::string& where = in.origin;
  const auto& meta = manifest_key(manifest_key(in.manifest, "optimizers", where), prefix.c_str(), where);
  models::OptimizerState state;
  state.steps = manifest_count(meta, "steps", where);
  const auto slots = manifest_count(meta, "slots", where);
  for (std::uint64_t i = 0; i < slots; ++i) {
    state.slots.push_back(in.array(fmt::format("{}.slot{}", prefix, i)));  // ends at a missing one
  }
  return state;
}

RoundsState read_rounds_state(const checkpoint::Checkpoint& ck) {
  const std::string& where = ck.origin;
  const auto& state = manifest_key(ck.manifest, "mode_state", where);
  return {manifest_count(state, "round", where), manifest_counts(state, "positions", where)};
}

std::vector<std::uint64_t> read_worker_steps(const checkpoint::Checkpoint& ck) {
  const std::string& where = ck.origin;
  return manifest_counts(manifest_key(ck.manifest, "mode_state", where), "worker_steps", where);
}

}  // namespace dt::roles
