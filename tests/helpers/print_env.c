/* berth_helper_print_env [NAME]: prints NAME's value (exit 1 if unset), or with no
 * argument every variable, one NAME=VALUE a line, in environ's order. */
#include <stdio.h>
#include <stdlib.h>

extern char** environ;

int main(int argc, char** argv) {
  if (argc > 1) {
    const char* v = getenv(argv[1]);
    if (v == NULL) return 1;
    printf("%s\n", v);
    return 0;
  }
  for (char** e = environ; *e != NULL; ++e) printf("%s\n", *e);
  return 0;
}
