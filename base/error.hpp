#pragma once
// The dt::Error family. Errors carry a chain of context, outermost first, built as they cross
// layers ("training failed" <- "step 3: gather gradients" <- "recv from rank 2: timeout after
// 3000 ms"). Only cli/ turns them into an exit code and one message.
//
// base/: what every layer uses and that knows nothing of training: errors (this file), logging,
// files written atomically, temporary folders (swept once their owner is gone), text, hosts and
// addresses, signals, memory advice, resource use, seeded random draws, the floating-point mode
// (subnormals flushed), the BLAS kernels, and the kill points tests crash processes at.
// May use: nothing of the project (the C++ library and fmt only).

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace dt {

enum class ExitCode : int {
  kOk = 0,
  kExpectNotMet = 1,
  kBadInput = 2,        // bad usage, config or data: nothing started
  kTrainingFailed = 3,  // diverged, workers lost, peer protocol error
  kInterrupted = 130,
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message);

  // Adds an outer layer of context; catch by reference, add, then `throw;` keeps the type.
  void add_context(std::string context);
  [[nodiscard]] const char* what() const noexcept override { return full_.c_str(); }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  [[nodiscard]] virtual ExitCode exit_code() const noexcept { return ExitCode::kTrainingFailed; }
  [[nodiscard]] virtual const char* kind() const noexcept { return "error"; }

 private:
  std::string message_;
  std::vector<std::string> context_;  // outermost last
  std::string full_;
};

#define DT_DECLARE_ERROR(Name, Base, code, kind_name)                                         \
  class Name : public Base {                                                                  \
   public:                                                                                    \
    using Base::Base;                                                                         \
    [[nodiscard]] ExitCode exit_code() const noexcept override { return ExitCode::code; }     \
    [[nodiscard]] const char* kind() const noexcept override { return kind_name; }            \
  }

DT_DECLARE_ERROR(UsageError, Error, kBadInput, "usage error");
DT_DECLARE_ERROR(ConfigError, Error, kBadInput, "config error");
DT_DECLARE_ERROR(DataError, Error, kBadInput, "data error");
DT_DECLARE_ERROR(TransportError, Error, kTrainingFailed, "transport error");
DT_DECLARE_ERROR(TimeoutError, TransportError, kTrainingFailed, "timeout");
DT_DECLARE_ERROR(ProtocolError, TransportError, kTrainingFailed, "protocol error");
DT_DECLARE_ERROR(TrainingError, Error, kTrainingFailed, "training failed");
DT_DECLARE_ERROR(InterruptedError, Error, kInterrupted, "interrupted");
DT_DECLARE_ERROR(IoError, Error, kTrainingFailed, "i/o error");

#undef DT_DECLARE_ERROR

// Throws E with a fmt-formatted message: dt::fail<DataError>("{}:{}: ...", file, line).
template <class E, class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw E(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace dt
