// Could a worker's shard be the .npy file's pages instead of a copy (docs/performance.md, "the
// no-copy question")? One thread reads a shuffled epoch of 100-feature rows (a linreg step's
// work: a dot product and an axpy a row, rows prefetched 8 ahead) from (a) the file mapped
// MAP_PRIVATE read-only (page-cache pages: 4 KiB, or 2 MiB where the filesystem holds large
// folios), (b) a copy in anonymous memory with MADV_HUGEPAGE (the shard as it is), and (c) the
// mapping with (x - shift) / scale applied to each row as it is read (a shard that is the file
// cannot be normalized in place). Prints the CPU time of mapping and of the copy (its fresh
// memory), what /proc/self/smaps says of each, and the best epoch of each of `reps`.
//
//   gcc -O3 -march=x86-64-v3 bench/mmap_rows.c -o mmap_rows
//   ./mmap_rows FILE.npy [reps 3] [hint: 0 none, 1 MADV_HUGEPAGE, 2 and MADV_COLLAPSE]
//
// FILE.npy: a (rows, 101) float64 array with a 128-byte header, as bench_all.py's NPY row makes.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double cpu(void) { struct rusage u; getrusage(RUSAGE_SELF, &u); return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec); }
enum { F = 100 };
static double w[F], g[F], shift[F], scale[F];
__attribute__((noinline)) static double epoch(const double* x, size_t stride, const uint32_t* order, size_t rows, int norm) {
  double loss = 0; double tmp[F];
  for (size_t i = 0; i < rows; ++i) {
    if (i + 8 < rows) { const char* p = (const char*)(x + (size_t)order[i + 8] * stride); for (int b = 0; b < F * 8; b += 64) __builtin_prefetch(p + b, 0, 1); }
    const double* r = x + (size_t)order[i] * stride;
    if (norm) { for (int j = 0; j < F; ++j) tmp[j] = (r[j] - shift[j]) / scale[j]; r = tmp; }
    double a[4] = {0, 0, 0, 0}; for (int j = 0; j < F; j += 4) for (int l = 0; l < 4; ++l) a[l] += r[j + l] * w[j + l]; double d = (a[0] + a[1]) + (a[2] + a[3]);
    double e = d - x[(size_t)order[i] * stride + (stride > F ? F : 0)];
    loss += e * e; for (int j = 0; j < F; ++j) g[j] += e * r[j];
  }
  return loss;
}
static void smaps(const void* p) {
  FILE* f = fopen("/proc/self/smaps", "r"); char line[256]; int in = 0; char want[32]; snprintf(want, sizeof want, "%lx-", (unsigned long)p);
  while (fgets(line, sizeof line, f)) {
    if (strchr(line, '-') && strncmp(line, want, strlen(want)) == 0) in = 1; else if (in && strchr(line, '-') && !strchr(line, ':')) in = 0;
    if (in && (strstr(line, "Rss") || strstr(line, "PmdMapped") || strstr(line, "AnonHuge"))) printf("    %s", line);
    if (in && strstr(line, "VmFlags")) break;
  }
  fclose(f);
}
int main(int argc, char** argv) {
  const char* path = argv[1]; int reps = argc > 2 ? atoi(argv[2]) : 3; int hint = argc > 3 ? atoi(argv[3]) : 0;
  int fd = open(path, O_RDONLY); struct stat st; fstat(fd, &st);
  size_t off = 128, cols = 101, rows = (st.st_size - off) / (cols * 8);
  for (int j = 0; j < F; ++j) { w[j] = 0.001 * j; shift[j] = 0.01 * j; scale[j] = 1.0 + 0.001 * j; }
  uint32_t* order = malloc(rows * 4); for (size_t i = 0; i < rows; ++i) order[i] = i;
  uint64_t s = 1; for (size_t i = rows - 1; i > 0; --i) { s = s * 6364136223846793005ULL + 1442695040888963407ULL; size_t k = (s >> 33) % (i + 1); uint32_t t = order[i]; order[i] = order[k]; order[k] = t; }
  // (a) the mapping
  double c0 = cpu(), t0 = now();
  char* m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (hint) { int a = madvise(m, st.st_size, MADV_HUGEPAGE); printf("MADV_HUGEPAGE on the mapping: %s\n", a ? strerror(errno) : "ok"); }
  if (hint > 1) { int a = madvise(m, st.st_size, MADV_COLLAPSE); printf("MADV_COLLAPSE on the mapping: %s\n", a ? strerror(errno) : "ok"); }
  madvise(m, st.st_size, MADV_POPULATE_READ);
  printf("map + populate: %.3f s wall, %.3f s cpu\n", now() - t0, cpu() - c0); smaps(m);
  const double* xm = (const double*)(m + off);
  // (b) the copy, 100 features + label a row in the shard's layout (x 100 wide, y apart)
  c0 = cpu(); t0 = now();
  size_t bytes = rows * (F + 1) * 8; double* xc = mmap(NULL, bytes + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  xc = (double*)(((uintptr_t)xc + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
  madvise(xc, bytes, MADV_HUGEPAGE);
  memcpy(xc, xm, bytes);
  printf("copy into fresh huge pages: %.3f s wall, %.3f s cpu\n", now() - t0, cpu() - c0); smaps(xc);
  double best[3] = {1e9, 1e9, 1e9}; double sink = 0;
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < 3; ++k) {
      double t = now();
      sink += k == 0 ? epoch(xm, cols, order, rows, 0) : k == 1 ? epoch(xc, cols, order, rows, 0) : epoch(xm, cols, order, rows, 1);
      t = now() - t; if (t < best[k]) best[k] = t;
    }
  }
  printf("shuffled epoch, best of %d: mapped file %.3f s, copy (huge pages) %.3f s, mapped + normalize on read %.3f s (%g)\n", reps, best[0], best[1], best[2], sink);
  return 0;
}
