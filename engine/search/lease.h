/* lease.h — a run in progress belongs to one process: the lease of store.h, taken when the run starts or resumes,
 * renewed by a heartbeat, given up when the run ends.
 *
 * Contract:
 * - evo_lease_acquire takes the run's lease (store.h: evo_store_lease_take; a live lease of another holder is
 *   EVO_E_USAGE naming it) and starts the heartbeat: a thread with a database connection of its own that renews the
 *   lease every lease_s / 3 seconds, whatever the run loop is doing (compiling, waiting on workers, sanitizing). A
 *   lease not renewed for lease_s seconds expires: a process that was killed, or whose host went away, gives the run
 *   up after that long without anyone having to see it.
 * - The run loop stores each result with evo_store_lease_check in the same transaction, so a run that was taken over
 *   stores nothing more; evo_lease_lost says whether the heartbeat found the lease gone (and why).
 * - evo_lease_release stops the heartbeat and gives the lease up (not when it was lost: it is another's then).
 * - Environment: EVO_LEASE_S, the lease's length in seconds (default EVO_LEASE_DEFAULT_S; 0.3 to 86400).
 * - Threads: the heartbeat is the only thread evo starts; it touches nothing but its own connection and the flag
 *   evo_lease_lost reads, and never NVRTC (compile.h forks children while it runs).
 */
#ifndef EVO_LEASE_H
#define EVO_LEASE_H

#include "evo.h"
#include "store.h"

#include <stdbool.h>
#include <stdint.h>

#define EVO_LEASE_DEFAULT_S 30.0

typedef struct evo_lease evo_lease;

/* This process as a lease holder: host, boot, pid and its start time, a fresh random token. */
void evo_lease_holder_self(evo_lease_holder *me);
/* EVO_LEASE_S, or the default; EVO_E_USAGE for a value that is not a number of seconds in range. */
evo_status evo_lease_seconds(double *lease_s, evo_err *err);

/* Takes run_id's lease in st (a read-write store) and starts the heartbeat on a second connection to its file
 * (evo_store_reopen). *took (may be NULL) says how it was granted ("new", "mine", "expired", "holder gone") and *prev
 * the lease it replaced. */
evo_status evo_lease_acquire(evo_store *st, int64_t run_id, double lease_s, evo_lease **out, evo_lease_rec *prev,
                             const char **took, evo_err *err);
const evo_lease_holder *evo_lease_me(const evo_lease *l);
/* True once the heartbeat found the lease held by another process; why (may be NULL) gets its message. */
bool evo_lease_lost(evo_lease *l, char *why, size_t n);
/* Stops the heartbeat and, unless it was lost, deletes the lease from st. NULL is fine. */
void evo_lease_release(evo_lease *l, evo_store *st);

#endif
