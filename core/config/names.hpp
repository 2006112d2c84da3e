#pragma once
// The value sets of the config (model types, modes, policies, ...) and the names they have in
// YAML, messages, model.json and summaries (names.cpp). enums.hpp lists every value of each.

namespace dt::config {

enum class ModelType { kLinearRegression, kLogisticRegression, kSoftmaxRegression, kMlp };
enum class Activation { kRelu, kTanh, kSigmoid };
enum class Task { kRegression, kBinary, kMulticlass };
// model.dtype: the precision of the MLP's dense products (parameters stay float64).
enum class Dtype { kFloat64, kFloat32 };
enum class Normalize { kNone, kStandard, kMinmax };
enum class Missing { kError, kMean, kZero };
enum class Compression { kAuto, kNone, kGzip, kZstd };
enum class DataFormat { kAuto, kCsv, kNpy, kNpz, kLibsvm };
enum class SyntheticKind { kLinear, kLogistic, kBlobs };
enum class ShardStrategy { kContiguous, kRoundRobin, kRandom, kByLabel, kDirichlet, kFiles };
enum class AggregationMode { kGradients, kParameters, kAsync };
enum class Topology { kStar, kRing };
// aggregation.compression: how gradients travel (transports/half_codec.hpp).
enum class WireCompression { kNone, kFp16, kBf16, kTopk };  // kTopk: the map {topk: {ratio}}
enum class MergeRule { kWeightedAverage, kAverage, kMedian, kTrimmedMean, kBest, kValidationWeighted };
enum class OptimizerState { kReset, kKeep };
enum class OptimizerType { kSgd, kAdam, kAdagrad, kFtrl, kAdamw, kRmsprop };
enum class LrScheduleType { kConstant, kStep, kExponential, kCosine };
enum class TransportType { kInproc, kIpc, kTcp };
enum class SecurityMode { kNone, kCurve };
enum class FailurePolicy { kAbort, kContinue, kRestart };
enum class FaultAction { kKill, kHang, kSlow, kDrop, kDelay, kLeave };

// Names used in messages, model.json and summaries ("linear_regression", "relu", ...).
[[nodiscard]] const char* name_of(ModelType v);
[[nodiscard]] const char* name_of(Activation v);
[[nodiscard]] const char* name_of(Task v);
[[nodiscard]] const char* name_of(Dtype v);
[[nodiscard]] const char* name_of(Normalize v);
[[nodiscard]] const char* name_of(Missing v);
[[nodiscard]] const char* name_of(Compression v);
[[nodiscard]] const char* name_of(DataFormat v);
[[nodiscard]] const char* name_of(SyntheticKind v);
// data.delimiter: "comma", "tab", "semicolon", "pipe" for ',', '\t', ';', '|'; "auto" for 0.
[[nodiscard]] const char* delimiter_name(char delimiter) noexcept;
[[nodiscard]] const char* name_of(ShardStrategy v);
[[nodiscard]] const char* name_of(AggregationMode v);
[[nodiscard]] const char* name_of(Topology v);
[[nodiscard]] const char* name_of(WireCompression v);
[[nodiscard]] const char* name_of(MergeRule v);
[[nodiscard]] const char* name_of(OptimizerState v);
[[nodiscard]] const char* name_of(OptimizerType v);
[[nodiscard]] const char* name_of(LrScheduleType v);
[[nodiscard]] const char* name_of(TransportType v);
[[nodiscard]] const char* name_of(SecurityMode v);
[[nodiscard]] const char* name_of(FailurePolicy v);
[[nodiscard]] const char* name_of(FaultAction v);

}  // namespace dt::config
