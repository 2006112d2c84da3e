#include "base/error.hpp"

namespace dt {

Error::Error(std::string message)
    : std::runtime_error(message), message_(std::move(message)), full_(message_) {}

void Error::add_context(std::string context) {
  context_.push_back(std::move(context));
  full_.clear();
  for (auto it = context_.rbegin(); it != context_.rend(); ++it) {
    full_ += *it;
    full_ += ": ";
  }
  full_ += message_;
}

}  // namespace dt
