#pragma once
// What dt::log writes to file descriptor 2, captured in a temporary file while a StderrCapture
// lives. The log is written by a thread of its own (base/log.hpp): the capture waits for what was
// logged before it starts, and for what was logged while it lived, before it lets go of fd 2.

#include "base/log.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <string>

namespace dt::test {

class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()) {
    REQUIRE(file_ != nullptr);
    REQUIRE(dt::log::flush());
    saved_ = ::dup(STDERR_FILENO);
    ::dup2(::fileno(file_), STDERR_FILENO);
  }
  ~StderrCapture() {
    restore();
    std::fclose(file_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string finish() {
    restore();
    std::string out;
    std::rewind(file_);
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, file_)) > 0) out.append(buffer, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    (void)dt::log::flush();
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_ = -1;
};

inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace dt::test
