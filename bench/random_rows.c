// The memory limit of a shuffled epoch: how fast can one process per core read fixed-size rows
// (100 float64 = 800 bytes, a linreg row) in a random order, every byte of each row once, with
// nothing else to do? The rows of a shuffled batch lie anywhere in the shard, so this is the
// bandwidth training's shuffled epochs can reach at best; bench_all.py sets it beside STREAM.
//
// Each thread owns a buffer of --rows rows (on transparent huge pages when the kernel has them,
// as a worker's shard is), fills it (not timed), and sums its rows in a shuffled order of its own,
// asking for the rows --ahead places ahead of the one being summed (every cache line of it;
// hint 1: into L2, hint 3: into L1), for every pair (ahead, hint) listed; and once in order.
// All threads start each pass together; a pass's time is the slowest thread's. The best of
// --reps passes of each setting is printed, one JSON line a setting, and the best setting last.
//
//   gcc -O3 -pthread random_rows.c -o random_rows
//   ./random_rows [--threads 2] [--rows 500000] [--features 100] [--reps 5]

#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { kMaxThreads = 64 };
static const int kAhead[] = {0, 4, 8, 16, 32};
static const int kHints[] = {1, 3};

typedef struct {
  size_t rows, features;
  double* x;
  uint32_t* order;
  int ahead, hint, in_order;
  double sum;
} Job;

static pthread_barrier_t start_line, finish_line;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fetch_row(const double* row, size_t bytes, int hint) {
  const char* p = (const char*)row;
  for (size_t b = 0; b < bytes; b += 64) {
    if (hint == 3) __builtin_prefetch(p + b, 0, 3);
    else __builtin_prefetch(p + b, 0, 1);
  }
}

static double pass(const Job* j) {
  const size_t f = j->features;
  double acc[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < j->rows; ++i) {
    const size_t r = j->in_order ? i : j->order[i];
    if (!j->in_order && j->ahead > 0 && i + (size_t)j->ahead < j->rows) {
      fetch_row(j->x + (size_t)j->order[i + (size_t)j->ahead] * f, f * sizeof(double), j->hint);
    }
    const double* row = j->x + r * f;
    size_t k = 0;
    for (; k + 4 <= f; k += 4) {
      acc[0] += row[k];
      acc[1] += row[k + 1];
      acc[2] += row[k + 2];
      acc[3] += row[k + 3];
    }
    for (; k < f; ++k) acc[0] += row[k];
  }
  return acc[0] + acc[1] + acc[2] + acc[3];
}

static void* worker(void* arg) {
  Job* j = arg;
  pthread_barrier_wait(&start_line);
  j->sum += pass(j);
  pthread_barrier_wait(&finish_line);
  return NULL;
}

static uint64_t next_random(uint64_t* s) {  // splitmix64
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void prepare(Job* j, uint64_t seed) {
  const size_t bytes = j->rows * j->features * sizeof(double);
  const size_t huge = (size_t)2 << 20;
  char* raw = mmap(NULL, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    perror("random_rows: mmap");
    exit(1);
  }
  j->x = (double*)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
  madvise(j->x, bytes, MADV_HUGEPAGE);  // a no-op where there are none
  for (size_t i = 0; i < j->rows * j->features; ++i) j->x[i] = (double)(i % 97) * 0.01;
  j->order = malloc(j->rows * sizeof(uint32_t));
  if (j->order == NULL) {
    perror("random_rows: malloc");
    exit(1);
  }
  for (size_t i = 0; i < j->rows; ++i) j->order[i] = (uint32_t)i;
  for (size_t i = j->rows; i > 1; --i) {  // Fisher-Yates
    const size_t k = (size_t)(next_random(&seed) % i);
    const uint32_t t = j->order[i - 1];
    j->order[i - 1] = j->order[k];
    j->order[k] = t;
  }
}

static double timed(Job* jobs, int threads) {
  pthread_t ids[kMaxThreads];
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, worker, &jobs[t]);
  pthread_barrier_wait(&start_line);
  const double t0 = now();
  pthread_barrier_wait(&finish_line);
  const double seconds = now() - t0;
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  return seconds;
}

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  size_t rows = 500000, features = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rows")) rows = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--features")) features = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "random_rows: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 1 || threads > kMaxThreads || rows < 2 || rows > UINT32_MAX || features < 1 ||
      reps < 1) {
    fprintf(stderr, "random_rows: --threads 1..%d, --rows 2..2^32, --features and --reps >= 1\n",
            kMaxThreads);
    return 2;
  }
  pthread_barrier_init(&start_line, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&finish_line, NULL, (unsigned)threads + 1);
  Job jobs[kMaxThreads];
  for (int t = 0; t < threads; ++t) {
    jobs[t] = (Job){.rows = rows, .features = features};
    prepare(&jobs[t], 0x5eed + (uint64_t)t);
  }
  const double bytes = (double)threads * (double)rows * (double)features * sizeof(double);
  const size_t n_ahead = sizeof kAhead / sizeof kAhead[0], n_hints = sizeof kHints / sizeof kHints[0];
  double best_gbs = 0;
  int best_ahead = 0, best_hint = 0;
  for (size_t s = 0; s <= n_ahead * n_hints; ++s) {  // the last setting: in order
    const int in_order = s == n_ahead * n_hints;
    const int ahead = in_order ? 0 : kAhead[s / n_hints];
    const int hint = in_order ? 0 : kHints[s % n_hints];
    if (!in_order && ahead == 0 && hint != kHints[0]) continue;  // no prefetch: one hint is enough
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
      for (int t = 0; t < threads; ++t) {
        jobs[t].ahead = ahead;
        jobs[t].hint = hint;
        jobs[t].in_order = in_order;
      }
      const double seconds = timed(jobs, threads);
      if (seconds < best) best = seconds;
    }
    const double gbs = bytes / best / 1e9;
    printf("{\"bench\": \"random_rows\", \"threads\": %d, \"order\": \"%s\", \"ahead\": %d, "
           "\"hint\": %d, \"row_bytes\": %zu, \"ns_per_row\": %.1f, \"gbs\": %.3f}\n",
           threads, in_order ? "sequential" : "random", ahead, hint, features * sizeof(double),
           best / (double)rows * 1e9, gbs);
    if (!in_order && gbs > best_gbs) {
      best_gbs = gbs;
      best_ahead = ahead;
      best_hint = hint;
    }
  }
  double check = 0;
  for (int t = 0; t < threads; ++t) check += jobs[t].sum;
  printf("{\"bench\": \"random_rows_best\", \"threads\": %d, \"ahead\": %d, \"hint\": %d, "
         "\"gbs\": %.3f, \"checksum\": %g}\n",
         threads, best_ahead, best_hint, best_gbs, check);
  return 0;
}
