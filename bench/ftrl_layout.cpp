// FTRL's lazy step at a wide model's random keys, with its (z, n) state interleaved (one 16-byte
// record a key: the optimizer of core/models/optim_adaptive.cpp) beside the layout before it
// (z and n as two vectors: the loop below, the same arithmetic), in the same process, reps
// taken by turns. Both must end on the same bits (checked). Built only when asked:
//
//   cmake --build --preset release --target bench_ftrl_layout
//   build/release/bench/bench_ftrl_layout [--bits 18,22,24] [--keys 35000] [--steps 200]
//       [--reps 3]
//
// Keys: `--keys` distinct keys a step drawn uniformly over the width, ascending (what a star's
// coordinator steps for two workers' batches of 1000 click-log rows: about 35,000). Prints the
// CPU ns a key (this thread's CPU time) of each layout, the medians over the reps.

#include "core/models/optim.hpp"
#include "base/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

namespace {

double cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

struct Constants {
  double alpha, beta, l1, l2;
};

// The step before the records: weight, z and n from three vectors, fetched 32 keys ahead.
void step_separate(const std::vector<std::uint64_t>& keys, const std::vector<double>& g,
                   std::vector<double>& w, std::vector<double>& z, std::vector<double>& n,
                   const Constants& c) {
  constexpr std::size_t kAhead = 32;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) {
      const auto a = keys[i + kAhead];
      __builtin_prefetch(w.data() + a, 1, 1);
      __builtin_prefetch(z.data() + a, 1, 1);
      __builtin_prefetch(n.data() + a, 1, 1);
    }
    const auto k = keys[i];
    const double gk = g[i];
    if (gk == 0.0) continue;
    double& zk = z[k];
    double& nk = n[k];
    if (nk == 0.0 && w[k] != 0.0) {
      zk = -w[k] * (c.beta / c.alpha + c.l2) - std::copysign(c.l1, w[k]);
    }
    const double n_new = nk + gk * gk;
    const double sigma = (std::sqrt(n_new) - std::sqrt(nk)) / c.alpha;
    zk += gk - sigma * w[k];
    nk = n_new;
    w[k] = std::abs(zk) <= c.l1
               ? 0.0
               : -(zk - std::copysign(c.l1, zk)) / ((c.beta + std::sqrt(nk)) / c.alpha + c.l2);
  }
}

std::vector<int> parse_bits(const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at < text.size()) {
    out.push_back(std::stoi(text.substr(at)));
    const auto comma = text.find(',', at);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> bits{18, 22, 24};
  std::size_t keys_a_step = 35'000, steps = 200, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--bits") bits = parse_bits(argv[i + 1]);
    if (flag == "--keys") keys_a_step = std::stoul(argv[i + 1]);
    if (flag == "--steps") steps = std::stoul(argv[i + 1]);
    if (flag == "--reps") reps = std::stoul(argv[i + 1]);
  }
  dt::config::OptimizerConfig config;
  config.type = dt::config::OptimizerType::kFtrl;
  config.lr = 0.05;
  config.beta = 1.0;
  config.l1 = 0.5;
  config.l2 = 0.1;
  const Constants c{config.lr, config.beta, config.l1, config.l2};
  fmt::print("{:>5} {:>16} {:>16} {:>8}\n", "bits", "separate ns/key", "records ns/key",
             "ratio");
  for (const int b : bits) {
    const std::size_t width = std::size_t{1} << b;
    std::mt19937_64 draw(42);
    std::uniform_int_distribution<std::uint64_t> key(0, width - 1);
    std::normal_distribution<double> grad(0.0, 0.3);
    std::vector<std::vector<std::uint64_t>> step_keys(steps);
    std::vector<std::vector<double>> step_grads(steps);
    for (std::size_t s = 0; s < steps; ++s) {
      auto& k = step_keys[s];
      for (std::size_t i = 0; i < keys_a_step; ++i) k.push_back(key(draw));
      std::sort(k.begin(), k.end());
      k.erase(std::unique(k.begin(), k.end()), k.end());
      for (std::size_t i = 0; i < k.size(); ++i) step_grads[s].push_back(grad(draw));
    }
    std::vector<double> before, after;
    bool same = true;
    for (std::size_t r = 0; r < reps; ++r) {
      std::vector<double> w1, z, n, w2;
      dt::memory::assign_huge(w1, width, 0.0);
      dt::memory::assign_huge(z, width, 0.0);
      dt::memory::assign_huge(n, width, 0.0);
      dt::memory::assign_huge(w2, width, 0.0);
      auto records = dt::models::make_optimizer(config, width);
      double keys_total = 0, t_sep = 0, t_rec = 0;
      for (std::size_t s = 0; s < steps; ++s) {  // by turns: the same load on both
        keys_total += static_cast<double>(step_keys[s].size());
        double t0 = cpu_ns();
        step_separate(step_keys[s], step_grads[s], w1, z, n, c);
        double t1 = cpu_ns();
        records->step_indices(step_keys[s], step_grads[s], 1.0, w2);
        double t2 = cpu_ns();
        t_sep += t1 - t0;
        t_rec += t2 - t1;
      }
      before.push_back(t_sep / keys_total);
      after.push_back(t_rec / keys_total);
      same = same && std::memcmp(w1.data(), w2.data(), width * sizeof(double)) == 0 &&
             dt::models::slot_values(records->state(), 0) == z &&
             dt::models::slot_values(records->state(), 1) == n;
    }
    const double a = median(before), r = median(after);
    fmt::print("{:>5} {:>16.1f} {:>16.1f} {:>8.2f}{}\n", b, a, r, r / a,
               same ? "" : "  DIFFERENT BITS");
    if (!same) return 1;
  }
  return 0;
}
