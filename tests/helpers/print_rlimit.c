/* berth_helper_print_rlimit nofile|core|stack|nproc: prints "SOFT HARD" of that limit
 * ("inf" for RLIM_INFINITY). */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static void put(rlim_t v) {
  if (v == RLIM_INFINITY) {
    printf("inf");
  } else {
    printf("%llu", (unsigned long long)v);
  }
}

int main(int argc, char** argv) {
  static const struct {
    const char* name;
    int resource;
  } kLimits[] = {{"nofile", RLIMIT_NOFILE},
                 {"core", RLIMIT_CORE},
                 {"stack", RLIMIT_STACK},
                 {"nproc", RLIMIT_NPROC}};
  if (argc < 2) {
    fprintf(stderr, "usage: print_rlimit nofile|core|stack|nproc\n");
    return 2;
  }
  for (size_t i = 0; i < sizeof kLimits / sizeof kLimits[0]; ++i) {
    if (strcmp(argv[1], kLimits[i].name) != 0) continue;
    struct rlimit rl;
    if (getrlimit(kLimits[i].resource, &rl) != 0) {
      perror("getrlimit");
      return 1;
    }
    put(rl.rlim_cur);
    printf(" ");
    put(rl.rlim_max);
    printf("\n");
    return 0;
  }
  fprintf(stderr, "print_rlimit: unknown limit '%s'\n", argv[1]);
  return 2;
}
