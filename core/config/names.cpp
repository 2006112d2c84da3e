#include "core/config/config.hpp"

#include <fmt/format.h>

// The YAML spellings. Each switch covers every enumerator without a default, so -Wswitch
// (an error under -Werror) flags a value added to config.hpp but not named here.

namespace dt::config {

const char* name_of(ModelType v) {
  switch (v) {
    case ModelType::kLinearRegression:
      return "linear_regression";
    case ModelType::kLogisticRegression:
      return "logistic_regression";
    case ModelType::kSoftmaxRegression:
      return "softmax_regression";
    case ModelType::kMlp:
      return "mlp";
  }
  return "?";
}

const char* name_of(Activation v) {
  switch (v) {
    case Activation::kRelu:
      return "relu";
    case Activation::kTanh:
      return "tanh";
    case Activation::kSigmoid:
      return "sigmoid";
  }
  return "?";
}

const char* name_of(Task v) {
  switch (v) {
    case Task::kRegression:
      return "regression";
    case Task::kBinary:
      return "binary";
    case Task::kMulticlass:
      return "multiclass";
  }
  return "?";
}

const char* name_of(Dtype v) {
  switch (v) {
    case Dtype::kFloat64:
      return "float64";
    case Dtype::kFloat32:
      return "float32";
  }
  return "?";
}

const char* name_of(Normalize v) {
  switch (v) {
    case Normalize::kNone:
      return "none";
    case Normalize::kStandard:
      return "standard";
    case Normalize::kMinmax:
      return "minmax";
  }
  return "?";
}

const char* name_of(Missing v) {
  switch (v) {
    case Missing::kError:
      return "error";
    case Missing::kMean:
      return "mean";
    case Missing::kZero:
      return "zero";
  }
  return "?";
}

const char* name_of(Compression v) {
  switch (v) {
    case Compression::kAuto:
      return "auto";
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
  }
  return "?";
}

const char* name_of(DataFormat v) {
  switch (v) {
    case DataFormat::kAuto:
      return "auto";
    case DataFormat::kCsv:
      return "csv";
    case DataFormat::kNpy:
      return "npy";
    case DataFormat::kNpz:
      return "npz";
    case DataFormat::kLibsvm:
      return "libsvm";
  }
  return "?";
}

const char* name_of(SyntheticKind v) {
  switch (v) {
    case SyntheticKind::kLinear:
      return "linear";
    case SyntheticKind::kLogistic:
      return "logistic";
    case SyntheticKind::kBlobs:
      return "blobs";
  }
  return "?";
}

const char* name_of(ShardStrategy v) {
  switch (v) {
    case ShardStrategy::kContiguous:
      return "contiguous";
    case ShardStrategy::kRoundRobin:
      return "round_robin";
    case ShardStrategy::kRandom:
      return "random";
    case ShardStrategy::kByLabel:
      return "by_label";
    case ShardStrategy::kDirichlet:
      return "dirichlet";
    case ShardStrategy::kFiles:
      return "files";
  }
  return "?";
}

const char* name_of(AggregationMode v) {
  switch (v) {
    case AggregationMode::kGradients:
      return "gradients";
    case AggregationMode::kParameters:
      return "parameters";
    case AggregationMode::kAsync:
      return "async";
  }
  return "?";
}

const char* name_of(WireCompression v) {
  switch (v) {
    case WireCompression::kNone:
      return "none";
    case WireCompression::kFp16:
      return "fp16";
    case WireCompression::kBf16:
      return "bf16";
    case WireCompression::kTopk:
      return "topk";
  }
  return "?";
}

const char* name_of(Topology v) {
  switch (v) {
    case Topology::kStar:
      return "star";
    case Topology::kRing:
      return "ring";
  }
  return "?";
}

const char* name_of(MergeRule v) {
  switch (v) {
    case MergeRule::kWeightedAverage:
      return "weighted_average";
    case MergeRule::kAverage:
      return "average";
    case MergeRule::kMedian:
      return "median";
    case MergeRule::kTrimmedMean:
      return "trimmed_mean";
    case MergeRule::kBest:
      return "best";
    case MergeRule::kValidationWeighted:
      return "validation_weighted";
  }
  return "?";
}

const char* name_of(OptimizerState v) {
  switch (v) {
    case OptimizerState::kReset:
      return "reset";
    case OptimizerState::kKeep:
      return "keep";
  }
  return "?";
}

const char* name_of(OptimizerType v) {
  switch (v) {
    case OptimizerType::kSgd:
      return "sgd";
    case OptimizerType::kAdam:
      return "adam";
    case OptimizerType::kAdagrad:
      return "adagrad";
    case OptimizerType::kFtrl:
      return "ftrl";
    case OptimizerType::kAdamw:
      return "adamw";
    case OptimizerType::kRmsprop:
      return "rmsprop";
  }
  return "?";
}

const char* name_of(LrScheduleType v) {
  switch (v) {
    case LrScheduleType::kConstant:
      return "constant";
    case LrScheduleType::kStep:
      return "step";
    case LrScheduleType::kExponential:
      return "exponential";
    case LrScheduleType::kCosine:
      return "cosine";
  }
  return "?";
}

const char* name_of(SecurityMode v) {
  switch (v) {
    case SecurityMode::kNone:
      return "none";
    case SecurityMode::kCurve:
      return "curve";
  }
  return "?";
}

const char* name_of(TransportType v) {
  switch (v) {
    case TransportType::kInproc:
      return "inproc";
    case TransportType::kIpc:
      return "ipc";
    case TransportType::kTcp:
      return "tcp";
  }
  return "?";
}

const char* name_of(FailurePolicy v) {
  switch (v) {
    case FailurePolicy::kAbort:
      return "abort";
    case FailurePolicy::kContinue:
      return "continue";
    case FailurePolicy::kRestart:
      return "restart";
  }
  return "?";
}

const char* name_of(FaultAction v) {
  switch (v) {
    case FaultAction::kKill:
      return "kill";
    case FaultAction::kHang:
      return "hang";
    case FaultAction::kSlow:
      return "slow";
    case FaultAction::kDrop:
      return "drop";
    case FaultAction::kDelay:
      return "delay";
    case FaultAction::kLeave:
      return "leave";
  }
  return "?";
}

std::string describe_aggregation(const Config& config) {
  const AggregationConfig& a = config.aggregation;
  std::string out = name_of(a.mode);
  if (a.topology != Topology::kStar) out += fmt::format(", {}", name_of(a.topology));
  if (a.servers > 1) out += fmt::format(", {} servers", a.servers);
  if (a.compression != WireCompression::kNone) {
    out += a.compression == WireCompression::kTopk
               ? fmt::format(", topk {} compression", a.topk_ratio)
               : fmt::format(", {} compression", name_of(a.compression));
  }
  if (a.mode == AggregationMode::kParameters) {
    out += fmt::format(", merge {}", name_of(a.parameters.merge));
  }
  if (a.mode == AggregationMode::kAsync && a.async.max_staleness) {
    out += fmt::format(", max_staleness {}", *a.async.max_staleness);
  }
  if (config.parallelism.tensor > 1) out += fmt::format(", tensor {}", config.parallelism.tensor);
  return out;
}

int worker_count(const Config& config) { return config.shards.count * config.parallelism.tensor; }

Task task_of(const ModelConfig& model) {
  switch (model.type) {
    case ModelType::kLinearRegression:
      return Task::kRegression;
    case ModelType::kLogisticRegression:
      return Task::kBinary;
    case ModelType::kSoftmaxRegression:
      return Task::kMulticlass;
    case ModelType::kMlp:
      return model.task;
  }
  return model.task;
}

const char* delimiter_name(char delimiter) noexcept {
  switch (delimiter) {
    case ',': return "comma";
    case '\t': return "tab";
    case ';': return "semicolon";
    case '|': return "pipe";
    default: return "auto";
  }
}

}  // namespace dt::config
