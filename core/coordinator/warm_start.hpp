#pragma once
// model.init: the trained model a run starts from (fine-tuning, a continued run with new
// data). cli/ reads and checks the file (core/outputs/, which reads model.json); the coordinator
// takes its parameters as the initial ones, its normalization instead of computing one, and
// checks its classes against the data's once the workers have found them.

#include "core/data/dataset.hpp"
#include "core/protocol/protocol.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace dt::roles {

struct InitialModel {
  std::filesystem::path path;  // for messages
  std::vector<double> params;
  data::Normalization normalization;
  std::vector<std::string> classes;  // classification; empty for regression
};

// The run's finalize message made from the initial model: its normalization replaces the one
// computed from the data; DataError when the data's classes are not the model's.
void adopt_initial(const InitialModel& init, protocol::Finalize& finalize);
// The initial parameters, checked against the model's size (InitialModel comes checked: a
// mismatch here is a bug, reported as one).
void initial_parameters(const InitialModel& init, std::vector<double>& params);

}  // namespace dt::roles
