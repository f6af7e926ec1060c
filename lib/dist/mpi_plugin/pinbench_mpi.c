/* libpinbench_mpi.so: pinbench's collectives on the MPI library of the launch (see pinbench_mpi.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "pinbench_mpi.h"

#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static char last_error_text[512];

static const char* last_error(void) {
  return last_error_text;
}

static void set_error(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(last_error_text, sizeof last_error_text, format, args);
  va_end(args);
}

static int failed(int code, const char* what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    snprintf(text, sizeof text, "code %d", code);
  set_error("%s failed: %s", what, text);
  return PINBENCH_MPI_FAILED;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static MPI_Datatype datatype(int type) {
  switch (type) {
    case PINBENCH_MPI_F32:
      return MPI_FLOAT;
    case PINBENCH_MPI_F64:
      return MPI_DOUBLE;
    case PINBENCH_MPI_I32:
      return MPI_INT32_T;
    default:
      return MPI_BYTE;
  }
}

/* Polls the requests until they complete or the deadline passes. It spins first (host
 * collectives are measured), then yields, then naps, so a long wait does not steal a core from
 * a rank sharing it. */
static int wait_for(MPI_Request* requests, int n, double timeout_s, const char* what) {
  const double start = now_s();
  for (long polls = 0;; ++polls) {
    int done = 0;
    int rc = MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return failed(rc, what);
    if (done) return PINBENCH_MPI_OK;
    double waited = now_s() - start;
    if (waited > timeout_s) {
      set_error("no answer within %g s in %s", timeout_s, what);
      return PINBENCH_MPI_TIMEOUT;
    }
    if (waited > 1.0) {
      struct timespec nap = {0, 200000};
      nanosleep(&nap, NULL);
    } else if (polls > 1000) {
      sched_yield();
    }
  }
}

static int init(int* rank, int* size) {
  int initialized = 0;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    set_error("MPI was finalised already: pinbench connects once per process");
    return PINBENCH_MPI_FAILED;
  }
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return failed(rc, "MPI_Init_thread");
  }
  /* Errors come back as codes, so that pinbench can name them, rather than abort the job. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return PINBENCH_MPI_OK;
}

static int barrier(double timeout_s) {
  MPI_Request request;
  int rc = MPI_Ibarrier(MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return failed(rc, "MPI_Ibarrier");
  return wait_for(&request, 1, timeout_s, "MPI_Ibarrier");
}

static int allgatherv(const void* send, int count, void* recv, const int* counts, const int* displs,
                      int type, double timeout_s) {
  MPI_Request request;
  MPI_Datatype t = datatype(type);
  int rc = MPI_Iallgatherv(send, count, t, recv, counts, displs, t, MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return failed(rc, "MPI_Iallgatherv");
  return wait_for(&request, 1, timeout_s, "MPI_Iallgatherv");
}

static int allgather(const void* send, void* recv, int count, int type, double timeout_s) {
  MPI_Request request;
  MPI_Datatype t = datatype(type);
  int rc = MPI_Iallgather(send, count, t, recv, count, t, MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return failed(rc, "MPI_Iallgather");
  return wait_for(&request, 1, timeout_s, "MPI_Iallgather");
}

static int allreduce_sum(const void* send, void* recv, int count, int type, double timeout_s) {
  MPI_Request request;
  const void* source = send == recv ? MPI_IN_PLACE : send;
  int rc = MPI_Iallreduce(source, recv, count, datatype(type), MPI_SUM, MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return failed(rc, "MPI_Iallreduce");
  return wait_for(&request, 1, timeout_s, "MPI_Iallreduce");
}

static int reduce_scatter_block_sum(const void* send, void* recv, int count, int type,
                                    double timeout_s) {
  MPI_Request request;
  int rc = MPI_Ireduce_scatter_block(send, recv, count, datatype(type), MPI_SUM, MPI_COMM_WORLD,
                                     &request);
  if (rc != MPI_SUCCESS) return failed(rc, "MPI_Ireduce_scatter_block");
  return wait_for(&request, 1, timeout_s, "MPI_Ireduce_scatter_block");
}

static int bcast(void* data, int count, int type, int root, double timeout_s) {
  MPI_Request request;
  int rc = MPI_Ibcast(data, count, datatype(type), root, MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return failed(rc, "MPI_Ibcast");
  return wait_for(&request, 1, timeout_s, "MPI_Ibcast");
}

static int sendrecv(const void* send, void* recv, int count, int type, int peer, double timeout_s) {
  enum { tag = 7001 };
  MPI_Request requests[2];
  MPI_Datatype t = datatype(type);
  int rc = MPI_Irecv(recv, count, t, peer, tag, MPI_COMM_WORLD, &requests[0]);
  if (rc != MPI_SUCCESS) return failed(rc, "MPI_Irecv");
  rc = MPI_Isend(send, count, t, peer, tag, MPI_COMM_WORLD, &requests[1]);
  if (rc != MPI_SUCCESS) return failed(rc, "MPI_Isend");
  return wait_for(requests, 2, timeout_s, "MPI_Isend/MPI_Irecv");
}

static void abort_all(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
}

static int finalize(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return PINBENCH_MPI_OK;
  int rc = MPI_Finalize();
  return rc == MPI_SUCCESS ? PINBENCH_MPI_OK : failed(rc, "MPI_Finalize");
}

static const struct pinbench_mpi_api api = {
    PINBENCH_MPI_API_VERSION, init,  barrier,  allgatherv, allgather, allreduce_sum,
    reduce_scatter_block_sum, bcast, sendrecv, abort_all,  finalize,  last_error};

__attribute__((visibility("default"))) const struct pinbench_mpi_api* pinbench_mpi_get_api(
    int version) {
  return version == PINBENCH_MPI_API_VERSION ? &api : NULL;
}
