// disttrain validate config.yaml: checks the config and every row of the data, and prints the
// plan a run would follow. Exit 0 when valid, 2 otherwise; nothing is written.

#include "cli/commands.hpp"
#include "core/config/config.hpp"
#include "core/models/model.hpp"
#include "core/roles/coordinator.hpp"
#include "core/run_output.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dt::cli {
namespace {

struct ValidateArgs {
  std::string config_path;
  std::vector<std::string> sets;
  bool json = false;
};

int validate(const ValidateArgs& args) {
  std::vector<config::Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(config::parse_override(s));
  const auto config = config::load(args.config_path, overrides);
  const auto plan = roles::make_plan(config);
  const auto task = config::task_of(config.model);
  const auto kind = data::label_kind(task);

  // Load every shard as the workers would, and the held-out rows as the coordinator would, so
  // that every cell is checked.
  std::vector<std::string> labels;
  // The T ranks of a tensor-parallel group share one shard: load it once.
  std::vector<std::vector<data::Segment>> all_segments;
  for (std::size_t r = 0; r < plan.segments.size(); r += static_cast<std::size_t>(plan.tensor)) {
    all_segments.push_back(plan.segments[r]);
  }
  all_segments.push_back(data::to_segments(plan.validation_rows, plan.source.csv));
  for (const auto& segments : all_segments) {
    const auto shard = data::load_shard(config, plan.source, segments, kind);
    if (kind == data::LabelKind::kCategorical) {
      const auto d = data::distinct_labels(shard);
      labels.insert(labels.end(), d.begin(), d.end());
    }
  }
  std::vector<std::string> classes;
  if (kind == data::LabelKind::kCategorical) classes = data::resolve_classes(labels);
  const auto model = models::make_model(
      {config.model, static_cast<int>(plan.source.features.size()), static_cast<int>(classes.size())});
  const std::uint64_t steps = plan.steps_per_epoch * static_cast<std::uint64_t>(config.training.epochs);

  nlohmann::ordered_json shards = nlohmann::ordered_json::array();
  for (std::size_t r = 0; r < plan.segments.size(); ++r) {
    const auto& seg = plan.segments[r];
    shards.push_back({{"rank", r},
                      {"rows", plan.shard_rows[r]},
                      {"first_row", seg.empty() ? 0 : seg.front().first_row},
                      {"last_row", seg.empty() ? 0 : seg.back().first_row + seg.back().count - 1},
                      {"segments", seg.size()}});
    if (plan.tensor > 1) {  // rank r is replica r / T, slice r % T (core/roles/tensor_plan.hpp)
      shards.back()["replica"] = r / static_cast<std::size_t>(plan.tensor);
      shards.back()["slice"] = r % static_cast<std::size_t>(plan.tensor);
      if (!plan.columns.empty()) {
        shards.back()["feature_columns"] = {plan.columns[r].begin, plan.columns[r].end};
      }
    }
  }
  nlohmann::ordered_json j;
  j["valid"] = true;
  j["config"] = args.config_path;
  j["data"] = config.data.synthetic ? std::string("synthetic") : config.data.path.string();
  j["rows"] = plan.source.rows;
  j["features"] = plan.source.features.size();
  j["label"] = plan.source.label;
  if (!classes.empty()) j["classes"] = classes;
  j["train_rows"] = plan.train_rows;
  j["validation_rows"] = plan.validation_rows.size();
  j["model"] = config::name_of(config.model.type);
  j["parameters"] = model->parameter_count();
  j["mode"] = config::name_of(config.aggregation.mode);
  j["transport"] = config::name_of(config.transport.type);
  j["workers"] = config::worker_count(config);
  if (plan.tensor > 1) j["tensor"] = plan.tensor;
  j["strategy"] = config::name_of(config.shards.strategy);
  j["shards"] = shards;
  j["steps_per_epoch"] = plan.steps_per_epoch;
  j["steps"] = steps;
  j["output_dir"] = config.output.dir.string();
  if (args.json) {
    print(output::json_text(j) + "\n");
    return 0;
  }
  std::string out = fmt::format(
      "{}: valid\n"
      "data:       {} ({} rows, {} features, label '{}'{})\n"
      "split:      {} training rows, {} validation rows\n"
      "model:      {}, {} parameters\n"
      "training:   {} mode, {} workers over {}, {} steps per epoch x {} epochs = {} steps\n"
      "shards:     {}\n",
      args.config_path, j["data"].get<std::string>(), plan.source.rows,
      plan.source.features.size(), plan.source.label,
      classes.empty() ? "" : fmt::format(", {} classes", classes.size()), plan.train_rows,
      plan.validation_rows.size(), config::name_of(config.model.type), model->parameter_count(),
      config::name_of(config.aggregation.mode), config::worker_count(config),
      config::name_of(config.transport.type), plan.steps_per_epoch, config.training.epochs, steps,
      config::name_of(config.shards.strategy));
  for (const auto& s : shards) {
    std::string tensor;
    if (s.contains("slice")) {
      tensor = fmt::format(", replica {} slice {}", s["replica"].get<std::size_t>(),
                           s["slice"].get<std::size_t>());
      if (s.contains("feature_columns")) {
        const auto c = s["feature_columns"];
        tensor += fmt::format(" features {}..{}", c[0].get<std::int64_t>(),
                              c[1].get<std::int64_t>() - 1);
      }
    }
    out += fmt::format("  rank {}: {} rows (source rows {}..{}, {} segment{}{})\n",
                       s["rank"].get<std::size_t>(), s["rows"].get<std::uint64_t>(),
                       s["first_row"].get<std::uint64_t>(), s["last_row"].get<std::uint64_t>(),
                       s["segments"].get<std::size_t>(), s["segments"].get<std::size_t>() == 1 ? "" : "s",
                       tensor);
  }
  out += fmt::format("output:     {}\n", config.output.dir.string());
  print(out);
  return 0;
}

}  // namespace

void add_validate(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "check a config and its data; print the plan");
  cmd->add_option("config", args->config_path, "the run's YAML config")->required();
  cmd->add_option("--set", args->sets, "override a config key")->type_name("KEY=VALUE");
  cmd->add_flag("--json", args->json, "print the plan as one JSON object");
  cmd->callback([&action, args] { action = [args] { return validate(*args); }; });
}

}  // namespace dt::cli
