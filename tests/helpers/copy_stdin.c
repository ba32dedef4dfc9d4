/* berth_helper_copy_stdin [N]: writes N bytes ('.') to stdout before it reads anything,
 * then copies stdin to stdout, and says on stderr how many bytes it read. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int write_all(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(1, p, n);
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int main(int argc, char** argv) {
  static char buf[65536];
  long first = argc > 1 ? atol(argv[1]) : 0;
  for (size_t i = 0; i < sizeof buf; ++i) buf[i] = '.';
  while (first > 0) {
    size_t n = first < (long)sizeof buf ? (size_t)first : sizeof buf;
    if (write_all(buf, n) != 0) return 1;
    first -= (long)n;
  }
  long total = 0;
  ssize_t r;
  while ((r = read(0, buf, sizeof buf)) > 0) {
    if (write_all(buf, (size_t)r) != 0) return 1;
    total += r;
  }
  fprintf(stderr, "read %ld bytes\n", total);
  return 0;
}
