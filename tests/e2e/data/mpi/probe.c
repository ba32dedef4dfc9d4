/* probe: one MPI program for berth's wire-up tests, compiled at test time with both
 * Open MPI's and MPICH's mpicc. What it does is chosen by its arguments:
 *
 *   probe hello            rank, size, app number, an allreduce of the ranks, a ring
 *                          pass; prints "rank R of N app A sum S ring T" and finalizes
 *   probe abort R CODE     rank R calls MPI_Abort(MPI_COMM_WORLD, CODE); the others wait
 *                          in a barrier
 *   probe kill R           rank R raises SIGKILL after MPI_Init; the others wait
 *   probe nofinalize R     rank R exits 0 after MPI_Init without MPI_Finalize; the others
 *                          wait in a barrier
 *   probe spawn            rank 0 calls MPI_Comm_spawn and prints what it returned
 *
 * The marker in argv (any extra word) lets a test find leftover processes. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int arg_int(int argc, char** argv, int i) { return i < argc ? atoi(argv[i]) : 0; }

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "hello";
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, app = -1, flag = 0;
  int* attr = NULL;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &attr, &flag);
  if (flag) app = *attr;

  if (strcmp(mode, "hello") == 0) {
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* A token goes round the ring once, each rank adding its rank. */
    int token = 0;
    if (size > 1) {
      int next = (rank + 1) % size, prev = (rank + size - 1) % size;
      if (rank == 0) {
        MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token += rank;
        MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
      }
      MPI_Bcast(&token, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    printf("rank %d of %d app %d sum %d ring %d\n", rank, size, app, sum, token);
    fflush(stdout);
  } else if (strcmp(mode, "abort") == 0) {
    if (rank == arg_int(argc, argv, 2)) MPI_Abort(MPI_COMM_WORLD, arg_int(argc, argv, 3));
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "kill") == 0) {
    if (rank == arg_int(argc, argv, 2)) raise(SIGKILL);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "nofinalize") == 0) {
    if (rank == arg_int(argc, argv, 2)) _exit(0);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "spawn") == 0) {
    if (rank == 0) {
      MPI_Comm child;
      int errcode = 0;
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
      MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
      int rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &child,
                              &errcode);
      printf("spawn returned %s\n", rc == MPI_SUCCESS ? "success" : "an error");
      fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
