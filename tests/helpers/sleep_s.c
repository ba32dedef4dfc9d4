/* berth_helper_sleep_s [SECONDS]: sleeps SECONDS (default 60; fractions allowed). */
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  double s = argc > 1 ? strtod(argv[1], NULL) : 60.0;
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0) {
  }
  return 0;
}
