/* comm.h — the messages of an --islands job: MPI point-to-point and two collectives, or nothing at all when evo
 * was built without MPI (CMake's FindMPI found none, or -DEVO_MPI=OFF).
 *
 * Only the MPI standard is used (MPI-3: Init, Comm_rank/size, Comm_split_type, Get_processor_name, Isend, Irecv,
 * Iallgather, Testall, Abort, Finalize), so Open MPI and MPICH both serve. A rank that waits does not spin: it tests
 * its requests every millisecond, so the ranks waiting for a slow island leave the cores to it (and to its
 * compiles). Errors come back as EVO_E_COMM with MPI's own
 * string (the communicator's handler is MPI_ERRORS_RETURN); a rank that dies ends the whole job, which is MPI's
 * rule and the one evo relies on: nothing here waits on a timer.
 *
 * Call order: evo_comm_open once per process (MPI_Init), then any calls from the thread that opened it, then
 * evo_comm_close (MPI_Finalize) or evo_comm_abort. Every collective must be entered by every rank in the same order;
 * a point-to-point pair (send/recv, post/take) likewise. Messages are bytes: the ranks of one job run one build of
 * evo on machines of one byte order (a struct handed to evo_comm_allgather is sent as it lies in memory).
 *
 * Built without MPI: evo_comm_built() is false and evo_comm_open fails with EVO_E_USAGE ("evo was built without
 * MPI ..."), which is what `evo run --islands` reports.
 */
#ifndef EVO_COMM_H
#define EVO_COMM_H

#include "evo.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct evo_comm evo_comm;

bool evo_comm_built(void);
/* "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line), or "none". */
const char *evo_comm_library(void);

evo_status evo_comm_open(evo_comm **out, evo_err *err);
void evo_comm_close(evo_comm *c);           /* MPI_Finalize; NULL is fine */
void evo_comm_abort(evo_comm *c, int code); /* MPI_Abort: ends every rank of the job; does not return */

int evo_comm_rank(const evo_comm *c);
int evo_comm_size(const evo_comm *c);
int evo_comm_local_rank(const evo_comm *c); /* among the ranks on this host (MPI_COMM_TYPE_SHARED) */
int evo_comm_local_size(const evo_comm *c);
const char *evo_comm_host(const evo_comm *c); /* MPI_Get_processor_name */

/* Every rank gives n bytes; all[r * n ...] receives rank r's (all holds size * n bytes). */
evo_status evo_comm_allgather(evo_comm *c, const void *mine, size_t n, void *all, evo_err *err);

/* ---- started now, finished later (the islands' pipelined messages) ---- */
typedef struct evo_comm_req evo_comm_req;
/* Starts an allgather: every rank's n bytes sent straight to every other (not MPI_Iallgather, whose ranks forward
 * each other's parts and so need each other's MPI calls to progress); mine is copied, all must stay until
 * evo_comm_wait returns. */
evo_status evo_comm_allgather_start(evo_comm *c, const void *mine, size_t n, void *all, evo_comm_req **req,
                                    evo_err *err);
/* Starts sending buf[0..n) (copied) to rank `to`; `to` takes it with evo_comm_take, messages from one rank in the
 * order they were posted. Finish it with evo_comm_wait (it completes once `to` took it, or earlier). */
evo_status evo_comm_post(evo_comm *c, int to, const void *buf, size_t n, evo_comm_req **req, evo_err *err);
/* Waits for a started request and frees it; NULL is fine. */
evo_status evo_comm_wait(evo_comm *c, evo_comm_req *req, evo_err *err);
/* The next message rank `from` posted to this rank, waited for; *in is malloc'd (NUL-terminated for convenience),
 * *in_n its length. */
evo_status evo_comm_take(evo_comm *c, int from, char **in, size_t *in_n, evo_err *err);
/* A file of any size from one rank to another, in chunks of at most EVO_COMM_CHUNK bytes: send_file reads path,
 * recv_file writes a new file at path (refused when it exists). */
#define EVO_COMM_CHUNK (16u << 20)
evo_status evo_comm_send_file(evo_comm *c, int to, const char *path, evo_err *err);
evo_status evo_comm_recv_file(evo_comm *c, int from, const char *path, size_t *bytes, evo_err *err);

#endif
