#include "core/outputs/initial_model.hpp"

#include "base/error.hpp"
#include "base/log.hpp"
#include "core/config/names.hpp"
#include "core/outputs/run_output.hpp"
#include "core/outputs/sparse_model_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dt::output {
namespace {

std::string describe(const config::ModelConfig& m) {
  if (m.type != config::ModelType::kMlp) return config::name_of(m.type);
  return fmt::format("mlp (hidden [{}], {}, {})", fmt::join(m.hidden, ", "),
                     config::name_of(m.activation), config::name_of(m.task));
}

bool same_shape(const config::ModelConfig& a, const config::ModelConfig& b) {
  if (a.type != b.type) return false;
  if (a.type != config::ModelType::kMlp) return true;
  return a.hidden == b.hidden && a.activation == b.activation && a.task == b.task;
}

}  // namespace

roles::InitialModel read_initial_model(const config::Config& config,
                                       const data::SourceInfo& source) {
  const auto& path = config.model.init;
  SavedModel saved;
  try {
    saved = read_model(path);
  } catch (Error& e) {
    e.add_context("model.init");
    throw;
  }
  if (!same_shape(saved.spec.config, config.model)) {
    fail<DataError>("model.init {} is a {} model; this config trains a {}: set the config's "
                    "model to the saved one's, or remove model.init to train from scratch",
                    path.string(), describe(saved.spec.config), describe(config.model));
  }
  if (saved.sparse || source.sparse) {
    // A sparse model continues only on rows read into the same keys (sparse_model_file.hpp).
    const auto problem =
        !saved.sparse  ? std::optional<std::string>("the model is dense, this data sparse")
        : !source.sparse ? std::optional<std::string>("the model is sparse, this data dense")
                         : sparse_difference(*saved.sparse, *source.sparse);
    if (problem) {
      fail<DataError>("model.init {} does not read this data as its training did: {}. A sparse "
                      "model continues only on data whose rows become the same keys (data.hash, "
                      "data.sparse, data.index_base as when it was trained)",
                      path.string(), *problem);
    }
    // Sparse rows are never normalized: the run keeps its own (empty) normalization.
    return {path, dense_params(saved), data::Normalization{}, std::move(saved.classes)};
  }
  if (saved.features != source.features) {
    std::size_t i = 0;
    while (i < saved.features.size() && i < source.features.size() &&
           saved.features[i] == source.features[i]) {
      ++i;
    }
    const auto at = [](const std::vector<std::string>& v, std::size_t k) {
      return k < v.size() ? "'" + v[k] + "'" : std::string("nothing");
    };
    fail<DataError>("model.init {} was trained on {} features, this data has {}; the first "
                    "difference is feature {}: the model has {}, the data {}. A model continues "
                    "only on data with its feature columns, in its order",
                    path.string(), saved.features.size(), source.features.size(), i + 1,
                    at(saved.features, i), at(source.features, i));
  }
  if (saved.normalization.kind != config.data.normalize) {
    log::warn("model.init {} was trained with normalization '{}'; it is used (not data.normalize "
              "'{}'), so that its weights keep their meaning",
              path.string(), config::name_of(saved.normalization.kind),
              config::name_of(config.data.normalize));
  }
  return {path, std::move(saved.params), std::move(saved.normalization), std::move(saved.classes)};
}

}  // namespace dt::output
