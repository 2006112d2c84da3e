#pragma once
// Helpers the unit tests share: errors as text, temporary CSV files, config parsing, model specs
// and seeded random batches, and the transport kinds every transport test runs over.
//
// Header-only. The per-module binaries (unit_config, unit_data, unit_models, unit_transport in
// tests/CMakeLists.txt) link one module each, so nothing here may need another module at link
// time: inline functions that a file does not call are never emitted. unit_config and
// unit_transport do not have Eigen on their include path, hence the one __has_include below.

#include "core/config/config.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/random.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#if __has_include(<Eigen/Dense>)
#include "core/models/model.hpp"
#define DT_TEST_HAVE_EIGEN 1
#endif

namespace dt::test {

// ---- errors

// The what() of the E that f throws, or a marker that fails any comparison with a message.
template <class E, class F>
[[nodiscard]] std::string message_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e.what();
  }
  return "<nothing thrown>";
}

template <class F>
[[nodiscard]] std::string data_error(F&& f) {
  return message_of<DataError>(std::forward<F>(f));
}

// ---- numbers

// |a - b| <= tol * max(1, |a|, |b|): relative for large values, absolute near zero.
[[nodiscard]] inline bool close(double a, double b, double tol) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}

// ---- files

// A file with the given content in a private temporary directory, removed with it.
struct CsvFile {
  files::TempDir dir{"dt-test-csv"};
  std::filesystem::path path;

  explicit CsvFile(const std::string& content, const std::string& name = "data.csv")
      : path(dir.path() / name) {
    files::write_atomic(path, content);
  }
  // The path followed by `rest`: how DataError messages start (":3:1: ...").
  [[nodiscard]] std::string at(const std::string& rest) const { return path.string() + rest; }
};

// ---- config

inline constexpr const char* kMinimal = "version: 1\ndata:\n  path: data.csv\n";

// Parses `text` as the file test.yaml in /tmp.
[[nodiscard]] inline config::Config parse_text(
    const std::string& text, const std::vector<config::Override>& overrides = {}) {
  return config::parse(text, "test.yaml", "/tmp", overrides);
}

// ---- models

#if defined(DT_TEST_HAVE_EIGEN)

inline constexpr std::uint64_t kTestStream = 1000;  // test data never shares a stream with the code

[[nodiscard]] inline models::ModelSpec spec_of(
    config::ModelType type, int inputs, int classes = 0, std::vector<int> hidden = {},
    config::Activation activation = config::Activation::kRelu,
    config::Task task = config::Task::kRegression, double l2 = 0.0) {
  models::ModelSpec spec;
  spec.config.type = type;
  spec.config.hidden = std::move(hidden);
  spec.config.activation = activation;
  spec.config.task = task;
  spec.config.l2 = l2;
  spec.inputs = inputs;
  spec.classes = classes;
  return spec;
}

// Standard normal features, a pure function of (seed, row, column).
[[nodiscard]] inline models::RowMatrix random_features(Eigen::Index rows, Eigen::Index inputs,
                                                       std::uint64_t seed) {
  models::RowMatrix x(rows, inputs);
  for (Eigen::Index i = 0; i < rows; ++i) {
    for (Eigen::Index j = 0; j < inputs; ++j) {
      x(i, j) = random::normal(seed, kTestStream, static_cast<std::uint64_t>(i),
                               static_cast<std::uint64_t>(j));
    }
  }
  return x;
}

struct Batch {
  models::RowMatrix x;
  Eigen::VectorXd y;
};

// random_features and labels of the task's kind: values in [-2, 2), 0/1, or classes [0, classes).
[[nodiscard]] inline Batch random_batch(Eigen::Index rows, Eigen::Index inputs, config::Task task,
                                        int classes, std::uint64_t seed) {
  Batch b{random_features(rows, inputs, seed), Eigen::VectorXd(rows)};
  for (Eigen::Index i = 0; i < rows; ++i) {
    const double u = random::uniform(seed, kTestStream + 1, static_cast<std::uint64_t>(i));
    switch (task) {
      case config::Task::kRegression:
        b.y(i) = 4.0 * u - 2.0;
        break;
      case config::Task::kBinary:
        b.y(i) = u < 0.5 ? 0.0 : 1.0;
        break;
      case config::Task::kMulticlass:
        b.y(i) = std::floor(u * classes);
        break;
    }
  }
  return b;
}

// n normal values times `scale`.
[[nodiscard]] inline std::vector<double> random_params(std::size_t n, std::uint64_t seed,
                                                       double scale) {
  std::vector<double> p(n);
  for (std::size_t k = 0; k < n; ++k) p[k] = scale * random::normal(seed, kTestStream + 2, k);
  return p;
}

#endif  // DT_TEST_HAVE_EIGEN

// ---- transports

// The kinds a TEST_CASE_TEMPLATE runs over (gloo-style: every test over every transport).
struct Inproc {
  static constexpr auto kKind = transport::TransportOptions::Kind::kInproc;
};
struct Ipc {
  static constexpr auto kKind = transport::TransportOptions::Kind::kIpc;
};
struct Tcp {
  static constexpr auto kKind = transport::TransportOptions::Kind::kTcp;
};

// Generous for a sanitizer build on a loaded machine; a pass takes milliseconds.
inline constexpr std::chrono::seconds kPatience{2};

// Options for kind K; tcp binds 127.0.0.1 on any free port.
template <class K>
[[nodiscard]] transport::TransportOptions options_for(std::uint64_t job_id) {
  transport::TransportOptions options;
  options.kind = K::kKind;
  options.job_id = job_id;
  options.tcp_address = "127.0.0.1:0";
  return options;
}

template <class K>
[[nodiscard]] std::unique_ptr<transport::Transport> make_transport(std::uint64_t job_id) {
  return transport::make_zmq_transport(options_for<K>(job_id));
}

// `size` bytes of a pattern that differs with `seed`: a frame whose every byte is checkable.
[[nodiscard]] inline wire::Bytes pattern(std::size_t size, unsigned seed) {
  wire::Bytes out(size);
  for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>((i * 31 + seed) & 0xFF);
  return out;
}

[[nodiscard]] inline wire::Message make_message(std::uint64_t job_id, std::uint16_t type,
                                                std::uint32_t rank, std::uint64_t step,
                                                std::vector<wire::Bytes> payload) {
  wire::Message m;
  m.header.type = type;
  m.header.job_id = job_id;
  m.header.rank = rank;
  m.header.step = step;
  m.payload = std::move(payload);
  return m;
}

}  // namespace dt::test

// Test names read "<Ipc>", not "<dt::test::Ipc>".
TYPE_TO_STRING_AS("Inproc", dt::test::Inproc);
TYPE_TO_STRING_AS("Ipc", dt::test::Ipc);
TYPE_TO_STRING_AS("Tcp", dt::test::Tcp);

#define DT_ALL_TRANSPORTS dt::test::Inproc, dt::test::Ipc, dt::test::Tcp
