/* berth_helper_exit_n [N]: exits with status N (default 0). */
#include <stdlib.h>

int main(int argc, char** argv) { return argc > 1 ? atoi(argv[1]) : 0; }
