/* berth_helper_spawn_grandchild: forks a grandchild that ignores SIGTERM and sleeps,
 * prints the grandchild's pid, then ignores SIGTERM and sleeps itself. Both stay in
 * the process group they were started in, so only a signal to the group (and SIGKILL
 * in the end) is rid of them. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  signal(SIGTERM, SIG_IGN); /* before the fork: the grandchild can never miss it */
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    for (;;) pause();
  }
  printf("%d\n", (int)pid);
  fflush(stdout);
  for (;;) pause();
}
