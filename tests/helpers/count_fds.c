/* berth_helper_count_fds [-v]: prints how many descriptors are open, from
 * /proc/self/fd, not counting the one used to read it; -v also lists them. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) {
    perror("/proc/self/fd");
    return 1;
  }
  int self = dirfd(d);
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd == self) continue;
    ++n;
    if (verbose) fprintf(stderr, "%d\n", fd);
  }
  closedir(d);
  printf("%d\n", n);
  return 0;
}
