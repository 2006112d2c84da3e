// The hot path allocates nothing once warmed up: loss_and_gradient, evaluate, the regularization
// gradient and the optimizer steps. Counted with AddressSanitizer's malloc hook, so this runs in
// the sanitizer build (the debug-asan preset) and is skipped elsewhere. Eigen allocates with
// std::malloc, not operator new, so counting operator new would not see it.

#include "core/models/model.hpp"
#include "core/models/optim.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <dlfcn.h>
#include <execinfo.h>

#include <cstddef>
#include <cstring>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*,
                                                                             std::size_t),
                                                         void (*free_hook)(const volatile void*));

namespace {
// Per thread, so that threads other tests leave behind (ZeroMQ I/O threads) are not counted.
thread_local bool t_counting = false;
thread_local bool t_in_hook = false;
thread_local long t_allocations = 0;

// Whether the allocation comes from inside OpenBLAS: some of its kernels take a scratch buffer
// per call (dgemm_small_kernel_nn_COOPERLAKE mallocs 1 KB, seen on an AVX-512 EPYC). That is
// the BLAS's choice for the CPU it found, not an allocation of our step path, which is what this
// test holds to zero.
bool from_blas() {
  void* frames[16];
  const int n = ::backtrace(frames, 16);
  for (int i = 0; i < n; ++i) {
    Dl_info info{};
    if (::dladdr(frames[i], &info) != 0 && info.dli_fname != nullptr &&
        std::strstr(info.dli_fname, "openblas") != nullptr) {
      return true;
    }
  }
  return false;
}

void on_malloc(const volatile void*, std::size_t) {
  if (!t_counting || t_in_hook) return;
  t_in_hook = true;  // backtrace and dladdr may allocate the first time
  if (!from_blas()) ++t_allocations;
  t_in_hook = false;
}
void on_free(const volatile void*) {}

// Allocations made while running f.
template <class F>
long allocations_in(F&& f) {
  static const bool installed =
      __sanitizer_install_malloc_and_free_hooks(&on_malloc, &on_free) != 0;
  REQUIRE(installed);
  (void)from_blas();  // loads what backtrace needs before counting starts
  t_allocations = 0;
  t_counting = true;
  f();
  t_counting = false;
  return t_allocations;
}
}  // namespace
#define DT_MODELS_COUNT_ALLOCATIONS 1
#endif

#if defined(DT_MODELS_COUNT_ALLOCATIONS)

namespace {

using dt::config::Activation;
using dt::config::ModelType;
using dt::config::Task;
using dt::models::RowMatrix;

// With an l2 term, so that the regularization gradient is on the path.
dt::models::ModelSpec l2_spec(ModelType type, int inputs, int classes, std::vector<int> hidden,
                              Activation activation, Task task) {
  return dt::test::spec_of(type, inputs, classes, std::move(hidden), activation, task, 0.01);
}

// model.dtype float32: its converted rows, weights and head are scratch too.
dt::models::ModelSpec float32(dt::models::ModelSpec spec) {
  spec.config.dtype = dt::config::Dtype::kFloat32;
  return spec;
}

}  // namespace

TEST_CASE("models: the training hot path allocates nothing once warmed up") {
  // The counter itself works: a vector's buffer is one allocation.
  std::vector<double> probe;
  CHECK(allocations_in([&] { probe.resize(100); }) == 1);

  constexpr int kInputs = 20;
  constexpr int kClasses = 4;
  const std::vector<dt::models::ModelSpec> specs{
      l2_spec(ModelType::kLinearRegression, kInputs, 0, {}, Activation::kRelu, Task::kRegression),
      l2_spec(ModelType::kLogisticRegression, kInputs, 0, {}, Activation::kRelu, Task::kBinary),
      l2_spec(ModelType::kSoftmaxRegression, kInputs, kClasses, {}, Activation::kRelu,
              Task::kMulticlass),
      l2_spec(ModelType::kMlp, kInputs, kClasses, {64, 32}, Activation::kRelu, Task::kMulticlass),
      l2_spec(ModelType::kMlp, kInputs, 0, {64}, Activation::kTanh, Task::kRegression),
      l2_spec(ModelType::kMlp, kInputs, 0, {16, 8}, Activation::kSigmoid, Task::kBinary),
      float32(l2_spec(ModelType::kMlp, kInputs, kClasses, {64, 32}, Activation::kRelu,
                      Task::kMulticlass)),
      float32(l2_spec(ModelType::kMlp, kInputs, 0, {16}, Activation::kTanh, Task::kRegression)),
  };
  for (const auto& spec : specs) {
    CAPTURE(static_cast<int>(spec.config.type));
    CAPTURE(spec.config.hidden.size());
    auto model = dt::models::make_model(spec);
    std::vector<double> params(model->parameter_count());
    model->init(params, 1);
    std::vector<double> grad(params.size(), 0.0);
    for (const Eigen::Index rows : {64, 256}) {
      CAPTURE(rows);
      const RowMatrix x = dt::test::random_features(rows, kInputs, 5);
      Eigen::VectorXd y(rows);
      for (Eigen::Index i = 0; i < rows; ++i) {
        y(i) = static_cast<double>(i % (spec.classes > 0 ? spec.classes : 2));
      }
      (void)model->loss_and_gradient(params, x, y, grad);  // warm up: sizes the scratch
      const long n = allocations_in([&] {
        (void)model->loss_and_gradient(params, x, y, grad);
        (void)model->evaluate(params, x, y);
        // A smaller batch reuses the buffers.
        (void)model->loss_and_gradient(params, x.topRows(rows / 2 + 1), y.head(rows / 2 + 1), grad);
        model->add_regularization_gradient(params, grad);
        (void)model->regularization(params);
      });
      CHECK(n == 0);
    }
  }
}

TEST_CASE("optim: steps allocate nothing") {
  for (const auto type : {dt::config::OptimizerType::kSgd, dt::config::OptimizerType::kAdam,
                          dt::config::OptimizerType::kAdagrad, dt::config::OptimizerType::kFtrl,
                          dt::config::OptimizerType::kAdamw, dt::config::OptimizerType::kRmsprop}) {
    dt::config::OptimizerConfig config;
    config.type = type;
    config.momentum = 0.9;
    config.centered = true;
    auto opt = dt::models::make_optimizer(config, 1000);
    // The same rule under a cosine schedule with warmup and clip_norm.
    config.schedule.type = dt::config::LrScheduleType::kCosine;
    config.schedule.warmup_steps = 1;
    config.clip_norm = 1.0;
    auto controlled = dt::models::make_optimizer(config, 1000, 10);
    std::vector<double> p(1000, 1.0);
    const std::vector<double> g(1000, 0.5);
    const std::vector<std::uint64_t> keys{3, 10, 999};
    const std::vector<double> values{0.5, -0.25, 1.0};
    CHECK(allocations_in([&] {
            opt->step(p, g);
            opt->step(p, g);
            opt->step_indices(keys, values, 0.5, p);
            controlled->step(p, g);
            controlled->step(p, g);
            controlled->step_indices(keys, values, 0.5, p);
          }) == 0);
  }
}

#else
TEST_CASE("models: the training hot path allocates nothing once warmed up" * doctest::skip()) {}
#endif
