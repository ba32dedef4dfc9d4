/* berth_helper_print_cwd: prints the working directory. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof buf) == NULL) {
    perror("getcwd");
    return 1;
  }
  printf("%s\n", buf);
  return 0;
}
