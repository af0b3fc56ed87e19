/* test_asserts.c — the engine's stated invariants are checked in every build (EVO_ASSERT, evo.h: never compiled
 * out, so the sanitizer build has them too): a broken one stops evo at once with SIGABRT and says which condition
 * failed where. Each case runs in a child process with a caller that breaks the invariant on purpose; the control
 * case keeps it and the child exits normally.
 */
#include "candidate.h"
#include "check.h"
#include "compile.h"
#include "evo.h"
#include "task.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn in a child with its stderr into buf; returns the child's wait status. */
static int in_child(void (*fn)(void), char *buf, size_t n)
{
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        fn();
        _exit(0);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < n && (r = read(fd[0], buf + len, n - 1 - len)) > 0) len += (size_t)r;
    buf[len] = '\0';
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static const char good_key[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* A candidate key extends a compile key: 64 lowercase hex digits (jit/candidate.c). */
static void bad_compile_key(void)
{
    char key[65], bad[65];
    memcpy(bad, good_key, sizeof bad);
    bad[3] = 'X'; /* not a hex digit */
    evo_candidate_key(evo_tasks[0], NULL, NULL, bad, key);
}

static void good_compile_key(void)
{
    char key[65];
    const evo_task *t = evo_tasks[0];
    if (t->launch_knobs && t->launch_knobs[0]) return; /* would read the genome; the key check ran already */
    evo_candidate_key(t, NULL, NULL, good_key, key);
    if (strcmp(key, good_key) != 0) _exit(3);
}

int main(void)
{
    char out[2048];
    int st = in_child(bad_compile_key, out, sizeof out);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
    CHECK_CONTAINS(out, "evo: internal error: assertion 'evo_compile_key_valid(compile_key)' failed at ");
    CHECK_CONTAINS(out, "candidate.c:");

    st = in_child(good_compile_key, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_STR(out, "");

    CHECK(evo_compile_key_valid(good_key));
    CHECK(!evo_compile_key_valid("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
    CHECK(!evo_compile_key_valid("0123456789abcdef"));
    return check_result();
}
