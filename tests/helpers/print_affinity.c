/* berth_helper_print_affinity: prints the CPUs this process may run on as a list
 * ("0-3,8"), from sched_getaffinity. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>

int main(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    perror("sched_getaffinity");
    return 1;
  }
  int first = 1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int end = c;
    while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set)) ++end;
    printf(first ? "%d" : ",%d", c);
    if (end > c) printf("-%d", end);
    first = 0;
    c = end;
  }
  printf("\n");
  return 0;
}
