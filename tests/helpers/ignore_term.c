/* berth_helper_ignore_term: ignores SIGTERM, prints "ready", and sleeps until killed. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  signal(SIGTERM, SIG_IGN);
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}
