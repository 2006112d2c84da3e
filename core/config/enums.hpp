#pragma once
// Every value of each config enum, in the order the docs and messages list them. The YAML
// spelling of a value is its name_of(); parsing, to_yaml and docs/config.md all go through
// these arrays, so adding a value is one line here and one case in names.cpp.

#include <array>
#include <string>
#include <vector>

#include "core/config/config.hpp"

namespace dt::config::detail {

inline constexpr std::array kModelTypes{ModelType::kLinearRegression,
                                        ModelType::kLogisticRegression,
                                        ModelType::kSoftmaxRegression, ModelType::kMlp};
inline constexpr std::array kActivations{Activation::kRelu, Activation::kTanh,
                                         Activation::kSigmoid};
inline constexpr std::array kTasks{Task::kRegression, Task::kBinary, Task::kMulticlass};
inline constexpr std::array kDtypes{Dtype::kFloat64, Dtype::kFloat32};
inline constexpr std::array kNormalizations{Normalize::kNone, Normalize::kStandard,
                                            Normalize::kMinmax};
inline constexpr std::array kMissings{Missing::kError, Missing::kMean, Missing::kZero};
inline constexpr std::array kCompressions{Compression::kAuto, Compression::kNone,
                                          Compression::kGzip, Compression::kZstd};
inline constexpr std::array kDataFormats{DataFormat::kAuto, DataFormat::kCsv, DataFormat::kNpy,
                                         DataFormat::kNpz, DataFormat::kLibsvm};
inline constexpr std::array kSyntheticKinds{SyntheticKind::kLinear, SyntheticKind::kLogistic,
                                            SyntheticKind::kBlobs};
inline constexpr std::array kShardStrategies{
    ShardStrategy::kContiguous, ShardStrategy::kRoundRobin, ShardStrategy::kRandom,
    ShardStrategy::kByLabel,    ShardStrategy::kDirichlet,  ShardStrategy::kFiles};
inline constexpr std::array kAggregationModes{AggregationMode::kGradients,
                                              AggregationMode::kParameters, AggregationMode::kAsync};
inline constexpr std::array kTopologies{Topology::kStar, Topology::kRing};
inline constexpr std::array kWireCompressions{WireCompression::kNone, WireCompression::kFp16,
                                              WireCompression::kBf16};
inline constexpr std::array kMergeRules{MergeRule::kWeightedAverage, MergeRule::kAverage,
                                        MergeRule::kMedian,          MergeRule::kTrimmedMean,
                                        MergeRule::kBest,            MergeRule::kValidationWeighted};
inline constexpr std::array kOptimizerStates{OptimizerState::kReset, OptimizerState::kKeep};
inline constexpr std::array kOptimizerTypes{OptimizerType::kSgd, OptimizerType::kAdam,
                                             OptimizerType::kAdagrad, OptimizerType::kFtrl,
                                             OptimizerType::kAdamw, OptimizerType::kRmsprop};
inline constexpr std::array kLrScheduleTypes{LrScheduleType::kConstant, LrScheduleType::kStep,
                                              LrScheduleType::kExponential,
                                              LrScheduleType::kCosine};
inline constexpr std::array kTransportTypes{TransportType::kInproc, TransportType::kIpc,
                                            TransportType::kTcp};
inline constexpr std::array kSecurityModes{SecurityMode::kNone, SecurityMode::kCurve};
inline constexpr std::array kFailurePolicies{FailurePolicy::kAbort, FailurePolicy::kContinue,
                                             FailurePolicy::kRestart};
inline constexpr std::array kFaultActions{FaultAction::kKill, FaultAction::kHang,
                                          FaultAction::kSlow, FaultAction::kDrop,
                                          FaultAction::kDelay, FaultAction::kLeave};

template <class E, std::size_t N>
[[nodiscard]] std::vector<std::string> names_of(const std::array<E, N>& values) {
  std::vector<std::string> out;
  out.reserve(N);
  for (const E v : values) out.emplace_back(name_of(v));
  return out;
}

}  // namespace dt::config::detail
