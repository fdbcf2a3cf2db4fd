/* What fresh anonymous memory costs on this machine (BENCHMARKS.md, "Key filters built without
 * data-dependent branches"): 100 MB faulted in by MADV_POPULATE_WRITE, written after, by one
 * write per 4 KiB page, unmapped; then the same with transparent huge pages (MADV_HUGEPAGE).
 * Usage: cc -O2 -o /tmp/page_cost tools/page_cost.c && /tmp/page_cost */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  size_t n = 100 << 20, huge = 2 << 20, pages = n / 4096;
  for (int r = 0; r < 4; r++) {
    char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double t = now();
    madvise(p, n, MADV_POPULATE_WRITE);
    double a = now() - t;
    t = now();
    memset(p, 1, n);
    double b = now() - t;
    munmap(p, n);
    char *q = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    t = now();
    for (size_t i = 0; i < n; i += 4096) q[i] = 1;
    double c = now() - t;
    t = now();
    munmap(q, n);
    double d = now() - t;
    printf("4 KiB pages: populate %.1f ms (%.2f us/page), memset after %.1f ms, "
           "touch-fault %.1f ms (%.2f us/page), munmap %.1f ms\n",
           a * 1e3, a * 1e6 / pages, b * 1e3, c * 1e3, c * 1e6 / pages, d * 1e3);
  }
  for (int r = 0; r < 4; r++) {
    char *p0 = mmap(0, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *p = (char *)(((uintptr_t)p0 + huge - 1) & ~((uintptr_t)huge - 1));
    madvise(p, n, MADV_HUGEPAGE);
    double t = now();
    madvise(p, n, MADV_POPULATE_WRITE);
    double a = now() - t;
    munmap(p0, n + huge);
    printf("huge pages: populate %.1f ms\n", a * 1e3);
  }
  return 0;
}
