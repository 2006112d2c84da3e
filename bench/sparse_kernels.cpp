// The sparse kernels' speed (core/models/sparse_batch.hpp, sparse_model.hpp): rows per second of
// one worker's step on click-log-like rows (39 hashed categorical fields, one key each) at
// widths 2^18 and 2^24: compact the batch, gather its parameters, loss and gradient of logistic
// regression, and (shown apart, it is the lead's to place) the gradient added back into a
// full-size vector. Built only when asked (bench/README.md):
//
//   cmake --build --preset release --target bench_sparse_kernels
//   build/release/bench/bench_sparse_kernels [--batches 400] [--batch 1000] [--out FILE]
//       [--bits 18,24] [--ones no|yes|both] [--thp no|yes|both] [--in-order yes|no]
//
// Each width runs with the rows picked in a shuffled order (an epoch's, the figure that counts)
// and in order (rows next to each other in memory: what compaction costs without fetching rows
// from all over the shard), and with the full vectors on transparent huge pages (madvise) or
// not (a wide model's keys are a TLB miss each on 4 KB pages). Prints a table and writes JSON
// (bench/results/sparse_kernels.json by default).

#include "core/models/sparse_batch.hpp"
#include "core/models/sparse_model.hpp"
#include "base/random.hpp"
#include "base/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sys/mman.h>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// This thread's CPU time in ns: the figures on a shared machine count only the time the bench
// ran (other processes' time slices are left out; their pressure on the caches is not).
double cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

constexpr int kFields = 39;
constexpr std::size_t kPoolRows = 200'000;

struct Rows {
  std::vector<std::uint64_t> row_start{0};
  std::vector<std::uint32_t> keys;
  std::vector<double> values;
  std::vector<double> y;
};

// Field f has 10^(1 + 6 f / 38) values (10 to 10^7), drawn log-uniformly (few values are
// frequent, most are rare, as in click logs); each (field, value) hashed into the width. A row's
// keys ascending (collisions kept: a repeated key).
Rows click_rows(std::uint64_t width, std::uint64_t seed) {
  Rows r;
  r.keys.reserve(kPoolRows * kFields);
  std::vector<std::uint32_t> row(kFields);
  for (std::uint64_t i = 0; i < kPoolRows; ++i) {
    for (int f = 0; f < kFields; ++f) {
      const double cardinality = std::pow(10.0, 1.0 + 6.0 * f / (kFields - 1));
      const double u = dt::random::uniform(seed, 1, i, static_cast<std::uint64_t>(f));
      const auto value = static_cast<std::uint64_t>(std::pow(cardinality, u));
      row[static_cast<std::size_t>(f)] =
          static_cast<std::uint32_t>(dt::random::hash(seed, 2, static_cast<std::uint64_t>(f), value) % width);
    }
    std::sort(row.begin(), row.end());
    r.keys.insert(r.keys.end(), row.begin(), row.end());
    r.values.insert(r.values.end(), kFields, 1.0);
    r.row_start.push_back(r.keys.size());
    r.y.push_back(dt::random::uniform(seed, 3, i) < 0.25 ? 1.0 : 0.0);
  }
  return r;
}

// Asks for transparent huge pages over v's whole 2 MB pages (the kernel's "madvise" mode).
void huge_pages(std::vector<double>& v) {
  constexpr std::uintptr_t kHuge = 2 << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(v.data()) + kHuge - 1) & ~(kHuge - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(v.data() + v.size()) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

struct Figures {
  int bits = 0;
  bool shuffled = true;
  bool huge = false;
  bool ones = false;  // the view says every value is 1.0 (compaction fetches keys alone)
  double compact_ns = 0, gather_ns = 0, step_ns = 0, scatter_ns = 0;  // per row
  double keys_per_batch = 0;
  double rows_per_second = 0;  // compact + gather + loss_and_gradient, CPU time
  double wall_rows_per_second = 0;  // the same four phases and the scatter, wall time
};

double ns_since(double t) { return cpu_ns() - t; }

Figures measure(const Rows& rows, int bits, bool shuffled, bool huge, bool ones,
                std::size_t batches, std::size_t batch_rows) {
  const std::uint64_t width = std::uint64_t{1} << bits;
  const dt::models::CsrView view{width, rows.row_start, rows.keys, rows.values, ones};
  dt::models::ModelSpec spec;
  spec.config.type = dt::config::ModelType::kLogisticRegression;
  spec.config.task = dt::config::Task::kBinary;
  spec.inputs = static_cast<int>(width);
  auto model = dt::models::make_sparse_model(spec);
  std::vector<double> full(model->parameter_count());
  std::vector<double> full_grad(full.size());
  if (huge) {
    huge_pages(full);
    huge_pages(full_grad);
  }
  std::fill(full_grad.begin(), full_grad.end(), 0.0);
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = 0.01 * dt::random::normal(9, 0, i);

  dt::models::SparseBatch batch;
  std::vector<double> local;
  std::vector<double> grad;
  std::vector<double> y(batch_rows);
  std::vector<std::uint64_t> order(kPoolRows);
  for (std::size_t i = 0; i < kPoolRows; ++i) order[i] = i;
  dt::random::Generator gen(11, 0);
  if (shuffled) dt::random::shuffle(std::span<std::uint64_t>(order), gen);

  Figures fig;
  fig.bits = bits;
  fig.shuffled = shuffled;
  fig.huge = huge;
  fig.ones = ones;
  double sink = 0.0;
  const std::size_t warm = 20;
  Clock::time_point wall_start;
  for (std::size_t b = 0; b < batches + warm; ++b) {
    if (b == warm) wall_start = Clock::now();
    const std::size_t first = (b * batch_rows) % (kPoolRows - batch_rows);
    const std::span<const std::uint64_t> pick(order.data() + first, batch_rows);
    for (std::size_t i = 0; i < batch_rows; ++i) y[i] = rows.y[pick[i]];
    double t = cpu_ns();
    dt::models::compact(view, pick, batch);
    const double compact_ns = ns_since(t);
    t = cpu_ns();
    dt::models::gather_params(full, batch, 1, local);
    grad.assign(local.size(), 0.0);
    const double gather_ns = ns_since(t);
    t = cpu_ns();
    sink += model->loss_and_gradient(local, batch, y, grad).loss_sum;
    const double step_ns = ns_since(t);
    t = cpu_ns();
    dt::models::add_gradient(grad, batch, 1, full_grad);
    const double scatter_ns = ns_since(t);
    if (b < warm) continue;
    fig.compact_ns += compact_ns;
    fig.gather_ns += gather_ns;
    fig.step_ns += step_ns;
    fig.scatter_ns += scatter_ns;
    fig.keys_per_batch += static_cast<double>(batch.keys.size());
  }
  const double rows_total = static_cast<double>(batches * batch_rows);
  fig.wall_rows_per_second =
      rows_total / std::chrono::duration<double>(Clock::now() - wall_start).count();
  fig.compact_ns /= rows_total;
  fig.gather_ns /= rows_total;
  fig.step_ns /= rows_total;
  fig.scatter_ns /= rows_total;
  fig.keys_per_batch /= static_cast<double>(batches);
  fig.rows_per_second = 1e9 / (fig.compact_ns + fig.gather_ns + fig.step_ns);
  if (sink == 12345.678) std::puts("");  // keeps the loss alive
  return fig;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t batches = 400;
  std::size_t batch_rows = 1000;
  std::string out = "bench/results/sparse_kernels.json";
  std::vector<int> widths{18, 24};
  std::vector<bool> ones_modes{false, true};
  std::vector<bool> orders{true, false};
  std::vector<bool> thp{false, true};
  const auto pick_modes = [](const std::string& v) {
    return v == "both" ? std::vector<bool>{false, true} : std::vector<bool>{v == "yes"};
  };
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--batches") batches = std::strtoull(argv[i + 1], nullptr, 10);
    else if (arg == "--bits") {  // a comma-separated list, e.g. 18,22,24
      widths.clear();
      const std::string list = argv[i + 1];
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        widths.push_back(std::atoi(list.substr(at, comma - at).c_str()));  // 0 when not a number
        at = comma + 1;
      }
    }
    else if (arg == "--ones") ones_modes = pick_modes(argv[i + 1]);  // yes, no or both
    else if (arg == "--thp") thp = pick_modes(argv[i + 1]);
    else if (arg == "--in-order") orders = argv[i + 1] == std::string("no") ? std::vector<bool>{true} : orders;
    else if (arg == "--batch") batch_rows = std::strtoull(argv[i + 1], nullptr, 10);
    else if (arg == "--out") out = argv[i + 1];
    else {
      fmt::print(stderr, "bench_sparse_kernels: unknown option {}\n", arg);
      return 2;
    }
  }
  if (widths.empty() || std::any_of(widths.begin(), widths.end(), [](int b) { return b < 10 || b > 30; })) {
    fmt::print(stderr, "bench_sparse_kernels: --bits takes widths 10 to 30, e.g. 18,22,24\n");
    return 2;
  }
  if (batches == 0 || batch_rows == 0 || batch_rows >= kPoolRows) {
    fmt::print(stderr, "bench_sparse_kernels: --batches >= 1 and 1 <= --batch < {}\n", kPoolRows);
    return 2;
  }
  std::vector<Figures> all;
  fmt::print("logistic regression, {} fields a row, batches of {} rows, {} batches a width\n",
             kFields, batch_rows, batches);
  fmt::print("{:>6} {:>9} {:>5} {:>5} {:>10} {:>11} {:>10} {:>8} {:>11} {:>10} {:>12}\n", "width",
             "rows", "THP", "ones", "keys/batch", "compact ns", "gather ns", "step ns", "scatter ns",
             "rows/s", "wall rows/s");
  for (const int bits : widths) {
    Rows rows = click_rows(std::uint64_t{1} << bits, 7);
    {  // on huge pages, as a shard's rows (hashed_csv.cpp): a shuffled batch's rows are random
      Rows copy;
      dt::memory::copy_huge(copy.keys, rows.keys);
      dt::memory::copy_huge(copy.row_start, rows.row_start);
      dt::memory::copy_huge(copy.values, rows.values);
      rows.keys.swap(copy.keys);
      rows.row_start.swap(copy.row_start);
      rows.values.swap(copy.values);
    }
    for (const bool shuffled : orders) {
      for (const bool huge : thp) {
        for (const bool ones : ones_modes) {  // by turns, so that load drifts hit both alike
          const Figures f = measure(rows, bits, shuffled, huge, ones, batches, batch_rows);
          all.push_back(f);
          fmt::print(
              "{:>6} {:>9} {:>5} {:>5} {:>10.0f} {:>11.1f} {:>10.1f} {:>8.1f} {:>11.1f} {:>10.0f} "
              "{:>12.0f}\n",
              fmt::format("2^{}", bits), shuffled ? "shuffled" : "in order", huge ? "yes" : "no",
              ones ? "yes" : "no", f.keys_per_batch, f.compact_ns, f.gather_ns, f.step_ns,
              f.scatter_ns, f.rows_per_second, f.wall_rows_per_second);
        }
      }
    }
  }
  // The first run (narrowest width, first order/THP/ones mode) over the widest's first.
  const auto first_of = [&](int bits) {
    return *std::find_if(all.begin(), all.end(), [&](const Figures& f) { return f.bits == bits; });
  };
  const double ratio = first_of(widths.front()).rows_per_second /
                       first_of(widths.back()).rows_per_second;
  fmt::print("first mode: rows/s at 2^{} / at 2^{} = {:.2f}. ns: CPU time per row; rows/s: "
             "compact + gather + step in CPU time; wall rows/s: every phase, wall clock\n",
             widths.front(), widths.back(), ratio);
  std::ofstream file(out);
  file << "{\n  \"batch_rows\": " << batch_rows << ",\n  \"batches\": " << batches
       << ",\n  \"fields\": " << kFields << ",\n  \"runs\": [\n";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& f = all[i];
    file << fmt::format(
        "    {{\"bits\": {}, \"shuffled\": {}, \"huge_pages\": {}, \"ones\": {}, \"keys_per_batch\": {:.1f}, \"compact_ns_per_row\": {:.2f}, "
        "\"gather_ns_per_row\": {:.2f}, \"step_ns_per_row\": {:.2f}, "
        "\"scatter_ns_per_row\": {:.2f}, \"rows_per_second\": {:.0f}, "
        "\"wall_rows_per_second\": {:.0f}}}{}\n",
        f.bits, f.shuffled, f.huge, f.ones, f.keys_per_batch, f.compact_ns, f.gather_ns, f.step_ns, f.scatter_ns,
        f.rows_per_second, f.wall_rows_per_second, i + 1 < all.size() ? "," : "");
  }
  file << "  ],\n  \"ratio_narrowest_over_widest_first_mode\": " << fmt::format("{:.3f}", ratio) << "\n}\n";
  if (!file) {
    fmt::print(stderr, "bench_sparse_kernels: cannot write {}\n", out);
    return 1;
  }
  fmt::print("wrote {}\n", out);
  return 0;
}
