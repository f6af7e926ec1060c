/* The C API of libpinbench_mpi.so, the one piece of pinbench that links libmpi. pinbench dlopen()s
 * it under mpirun or srun, so the executable itself runs where no MPI is installed.
 *
 * One symbol, pinbench_mpi_get_api(PINBENCH_MPI_API_VERSION), gives the table below (NULL for a
 * version it does not speak). Every op is MPI's non-blocking call polled with MPI_Test until it
 * completes or `timeout_s` passes, and returns PINBENCH_MPI_OK, PINBENCH_MPI_TIMEOUT (the request
 * is left pending: the launch cannot go on) or PINBENCH_MPI_FAILED; last_error() says why. Counts
 * are in elements of `type`, as in MPI. Calls come from one thread (MPI_THREAD_FUNNELED). */
#ifndef PINBENCH_MPI_H
#define PINBENCH_MPI_H

#ifdef __cplusplus
extern "C" {
#endif

#define PINBENCH_MPI_API_VERSION 1

enum pinbench_mpi_status { PINBENCH_MPI_OK = 0, PINBENCH_MPI_TIMEOUT = 1, PINBENCH_MPI_FAILED = 2 };
enum pinbench_mpi_type {
  PINBENCH_MPI_BYTE = 0,
  PINBENCH_MPI_F32 = 1,
  PINBENCH_MPI_F64 = 2,
  PINBENCH_MPI_I32 = 3
};

struct pinbench_mpi_api {
  int version;
  /* MPI_Init_thread (FUNNELED) unless MPI is initialised already; errors then return. */
  int (*init)(int* rank, int* size);
  int (*barrier)(double timeout_s);
  /* Each rank's `count` elements, in rank order; recv holds counts[i] at displs[i]. */
  int (*allgatherv)(const void* send, int count, void* recv, const int* counts, const int* displs,
                    int type, double timeout_s);
  int (*allgather)(const void* send, void* recv, int count, int type, double timeout_s);
  /* send == recv sums in place. */
  int (*allreduce_sum)(const void* send, void* recv, int count, int type, double timeout_s);
  /* `count` is the block each rank receives (send holds size * count). */
  int (*reduce_scatter_block_sum)(const void* send, void* recv, int count, int type,
                                  double timeout_s);
  int (*bcast)(void* data, int count, int type, int root, double timeout_s);
  int (*sendrecv)(const void* send, void* recv, int count, int type, int peer, double timeout_s);
  /* MPI_Abort(MPI_COMM_WORLD, code): ends every rank. */
  void (*abort)(int code);
  int (*finalize)(void);
  const char* (*last_error)(void);
};

const struct pinbench_mpi_api* pinbench_mpi_get_api(int version);
typedef const struct pinbench_mpi_api* (*pinbench_mpi_get_api_fn)(int version);

#ifdef __cplusplus
}
#endif

#endif
