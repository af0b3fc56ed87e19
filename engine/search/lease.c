/* lease.c — the lease of a run in progress (see lease.h): who this process is, and the heartbeat thread that
 * renews the lease on a connection of its own.
 */
#include "lease.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct evo_lease {
    evo_lease_holder me;
    int64_t run_id;
    double lease_s;
    evo_store *st; /* the heartbeat's own connection to the run's database */
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;       /* under mu */
    atomic_int lost; /* set by the heartbeat; why holds its message */
    char why[1024];
};

void evo_lease_holder_self(evo_lease_holder *me)
{
    memset(me, 0, sizeof *me);
    if (gethostname(me->host, sizeof me->host - 1) != 0) snprintf(me->host, sizeof me->host, "?");
    char *boot = NULL;
    if (evo_read_file("/proc/sys/kernel/random/boot_id", &boot, NULL, NULL) == EVO_OK)
        snprintf(me->boot_id, sizeof me->boot_id, "%.*s", (int)strcspn(boot, "\n"), boot);
    free(boot);
    me->pid = (int64_t)getpid();
    char *stat = NULL;
    if (evo_read_file("/proc/self/stat", &stat, NULL, NULL) == EVO_OK) {
        const char *p = strrchr(stat, ')');
        long long start = 0;
        if (p && sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld",
                        &start) == 1)
            me->pid_start = start;
    }
    free(stat);
    /* the token tells two claims apart, even of one pid: the kernel's randomness, else the clock and pid */
    unsigned char r[16] = {0};
    const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    const bool got = fd >= 0 && read(fd, r, sizeof r) == (ssize_t)sizeof r;
    if (fd >= 0) close(fd);
    if (!got) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)me->pid << 44);
        for (int i = 0; i < 16; i++) r[i] = (unsigned char)(x >> (8 * (i % 8))) ^ (unsigned char)i;
    }
    for (int i = 0; i < 16; i++) snprintf(me->token + 2 * i, 3, "%02x", r[i]);
}

evo_status evo_lease_seconds(double *lease_s, evo_err *err)
{
    *lease_s = EVO_LEASE_DEFAULT_S;
    const char *v = getenv("EVO_LEASE_S");
    if (!v || !*v) return EVO_OK;
    char *end;
    errno = 0;
    const double x = strtod(v, &end);
    if (end == v || *end || errno || !(x >= 0.3 && x <= 86400))
        return evo_fail(err, EVO_E_USAGE, "EVO_LEASE_S takes seconds from 0.3 to 86400, not '%s'", evo_show(v).s);
    *lease_s = x;
    return EVO_OK;
}

/* Renews every lease_s / 3 until told to stop; a lease found to be another's ends it. A renewal that fails for
 * another reason (the database busy past its timeout) is tried again at the next beat. */
static void *heartbeat(void *arg)
{
    evo_lease *l = arg;
    evo_err err = {0};
    const double beat = l->lease_s / 3;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        const double t = until.tv_sec + until.tv_nsec * 1e-9 + beat;
        until.tv_sec = (time_t)t;
        until.tv_nsec = (long)((t - floor(t)) * 1e9);
        pthread_cond_timedwait(&l->cv, &l->mu, &until);
        if (l->stop) break;
        pthread_mutex_unlock(&l->mu);
        const evo_status s = evo_store_lease_renew(l->st, l->run_id, &l->me, l->lease_s, &err);
        pthread_mutex_lock(&l->mu);
        if (s == EVO_E_NOTFOUND) {
            snprintf(l->why, sizeof l->why, "%s", err.msg);
            atomic_store(&l->lost, 1);
            break;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

evo_status evo_lease_acquire(evo_store *st, int64_t run_id, double lease_s, evo_lease **out, evo_lease_rec *prev,
                             const char **took, evo_err *err)
{
    *out = NULL;
    evo_lease *l = evo_xcalloc(1, sizeof *l);
    evo_lease_holder_self(&l->me);
    l->run_id = run_id;
    l->lease_s = lease_s;
    evo_status s = evo_store_lease_take(st, run_id, &l->me, lease_s, prev, took, err);
    if (s != EVO_OK) {
        free(l);
        return s;
    }
    s = evo_store_reopen(st, &l->st, err); /* made here, used by the heartbeat alone */
    if (s != EVO_OK) {
        evo_store_lease_release(st, run_id, &l->me, NULL);
        free(l);
        return s;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca; /* beats by the monotonic clock: a wall clock set back does not stall them */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&l->lost, 0);
    const int e = pthread_create(&l->thread, NULL, heartbeat, l);
    if (e != 0) {
        evo_store_lease_release(st, run_id, &l->me, NULL);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        evo_store_close(l->st);
        free(l);
        return evo_fail(err, EVO_E_INTERNAL, "cannot start the lease's heartbeat: %s", strerror(e));
    }
    l->running = true;
    *out = l;
    return EVO_OK;
}

const evo_lease_holder *evo_lease_me(const evo_lease *l) { return &l->me; }

bool evo_lease_lost(evo_lease *l, char *why, size_t n)
{
    if (!l || !atomic_load(&l->lost)) return false;
    if (why && n) {
        pthread_mutex_lock(&l->mu);
        snprintf(why, n, "%s", l->why);
        pthread_mutex_unlock(&l->mu);
    }
    return true;
}

void evo_lease_release(evo_lease *l, evo_store *st)
{
    if (!l) return;
    if (l->running) {
        pthread_mutex_lock(&l->mu);
        l->stop = true;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
    }
    if (st && !atomic_load(&l->lost)) evo_store_lease_release(st, l->run_id, &l->me, NULL);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    evo_store_close(l->st);
    free(l);
}
