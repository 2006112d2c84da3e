#include "core/coordinator/warm_start.hpp"

#include "base/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dt::roles {

void adopt_initial(const InitialModel& init, protocol::Finalize& finalize) {
  if (finalize.classes != init.classes) {
    fail<DataError>("model.init {} was trained on the classes [{}], this data has [{}]: a model "
                    "continues only on data with its classes (the same labels, all of them "
                    "present); train from scratch (remove model.init) for another class set",
                    init.path.string(), fmt::join(init.classes, ", "),
                    fmt::join(finalize.classes, ", "));
  }
  // data.missing: the model's own fill values when it has them (it was trained with them),
  // else this run's (from its data), so a missing cell is never left NaN.
  auto fill = std::move(finalize.normalization.fill);
  const auto missing = finalize.normalization.missing;
  finalize.normalization = init.normalization;
  if (finalize.normalization.fill.empty() && missing != config::Missing::kError) {
    finalize.normalization.missing = missing;
    finalize.normalization.fill = std::move(fill);
  }
}

void initial_parameters(const InitialModel& init, std::vector<double>& params) {
  if (init.params.size() != params.size()) {
    fail<TrainingError>("internal error: model.init {} has {} parameters, the model {}",
                        init.path.string(), init.params.size(), params.size());
  }
  params = init.params;
}

}  // namespace dt::roles
