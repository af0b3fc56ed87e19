/* sanitize.c — one candidate under one compute-sanitizer tool, in a worker of its own (see sanitize.h). */
#include "sanitize.h"

#include "paths.h"
#include "util.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const evo_sanitize_tool_names[] = {"memcheck", "racecheck", "initcheck", "synccheck", NULL};

evo_status evo_sanitize_parse_tools(const char *list, const char **tools, int *n, evo_err *err)
{
    *n = 0;
    const char *p = list ? list : "";
    if (!*p)
        return evo_fail(err, EVO_E_USAGE,
                        "--sanitize: no tool named (the tools: memcheck, racecheck, "
                        "initcheck, synccheck)");
    while (*p) {
        const size_t len = strcspn(p, ",");
        const char *found = NULL;
        for (int i = 0; evo_sanitize_tool_names[i]; i++)
            if (strlen(evo_sanitize_tool_names[i]) == len && !strncmp(p, evo_sanitize_tool_names[i], len))
                found = evo_sanitize_tool_names[i];
        if (!found)
            return evo_fail(err, EVO_E_USAGE,
                            "--sanitize: unknown tool '%.*s' (the tools: memcheck, racecheck, initcheck, synccheck)",
                            (int)len, p);
        bool dup = false;
        for (int i = 0; i < *n; i++) dup |= tools[i] == found;
        if (!dup) {
            if (*n == EVO_SANITIZE_MAX_TOOLS)
                return evo_fail(err, EVO_E_USAGE, "--sanitize: more than %d tools", EVO_SANITIZE_MAX_TOOLS);
            tools[(*n)++] = found;
        }
        p += len;
        if (*p == ',') {
            p++;
            if (!*p) return evo_fail(err, EVO_E_USAGE, "--sanitize: '%s' ends with a comma", list);
        }
    }
    return EVO_OK;
}

/* The largest N of the lines "... ERROR SUMMARY: N error(s)" that end there, or -1. (With more errors than the
 * print limit a second line follows, "ERROR SUMMARY: 44 errors were not printed...", which is not the count.) */
static long summary_count(const char *text)
{
    static const char key[] = "ERROR SUMMARY: ";
    long v = -1;
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
        char *end;
        errno = 0;
        long x = strtol(p + sizeof key - 1, &end, 10);
        if (end == p + sizeof key - 1 || errno || x < 0) continue;
        if (strncmp(end, " error", 6) != 0) continue;
        end += 6 + (end[6] == 's');
        while (*end == ' ' || *end == '\r') end++;
        if ((*end == '\n' || *end == '\0') && x > v) v = x;
    }
    return v;
}

int evo_sanitize_count_errors(const char *report, char *first, size_t first_len)
{
    if (first && first_len) first[0] = '\0';
    if (!report) return -1;
    long errors = summary_count(report);
    /* "RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)" */
    for (const char *p = strstr(report, "RACECHECK SUMMARY:"); p; p = strstr(p + 1, "RACECHECK SUMMARY:")) {
        const char *open = strchr(p, '(');
        const char *eol = strchr(p, '\n');
        if (open && (!eol || open < eol)) {
            long x = strtol(open + 1, NULL, 10);
            if (x > errors) errors = x;
        }
    }
    /* The first error: a "========= " line that is neither a detail (indented), the banner nor a summary. */
    for (const char *p = report; first && first_len && *p && !first[0];) {
        const char *eol = strchr(p, '\n');
        const size_t len = eol ? (size_t)(eol - p) : strlen(p);
        static const char prefix[] = "========= ";
        if (len > sizeof prefix - 1 && !strncmp(p, prefix, sizeof prefix - 1)) {
            const char *t = p + sizeof prefix - 1;
            const size_t tl = len - (sizeof prefix - 1);
            if (*t != ' ' && *t != '\t' && !memmem(t, tl, "COMPUTE-SANITIZER", 17) && !memmem(t, tl, "SUMMARY", 7) &&
                !memmem(t, tl, "Target application returned", 27))
                snprintf(first, first_len, "%.*s", (int)tl, t);
        }
        p += len + (eol ? 1 : 0);
    }
    return errors > 1000000000 ? 1000000000 : (int)errors;
}

/* The path of this evo binary, for the sanitizer to start (it cannot be /proc/self/exe: that would be the
 * sanitizer itself). */
static evo_status self_path(char *buf, size_t n, evo_err *err)
{
    ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    if (len <= 0) return evo_fail(err, EVO_E_IO, "cannot find this evo binary (/proc/self/exe): %s", strerror(errno));
    buf[len] = '\0';
    return EVO_OK;
}

/* evo_worker_call that gives up when *interrupt is set (Ctrl-C during a long instrumented run). */
static evo_status call(evo_worker *w, const char *line, double timeout_s, volatile sig_atomic_t *interrupt,
                       char **reply, evo_err *err)
{
    if (!interrupt) return evo_worker_call(w, line, timeout_s, reply, err);
    *reply = NULL;
    evo_status s = evo_worker_send(w, line, timeout_s, err);
    while (s == EVO_OK && !*reply) {
        if (*interrupt) {
            evo_worker_kill(w);
            return evo_fail(err, EVO_E_INTERRUPTED, "interrupted while the sanitizer ran");
        }
        struct pollfd p = {.fd = evo_worker_fd(w), .events = POLLIN};
        if (poll(&p, 1, 200) != 0 || evo_now() >= evo_worker_deadline(w)) s = evo_worker_receive(w, reply, err);
    }
    return s;
}

/* The "reason" of a reply's detail, or the detail itself. */
static void reason_of(const char *detail, char *buf, size_t n)
{
    cJSON *d = cJSON_Parse(detail ? detail : "{}");
    const cJSON *r = cJSON_GetObjectItem(d, "reason");
    snprintf(buf, n, "%s", cJSON_IsString(r) ? r->valuestring : detail ? detail : "");
    cJSON_Delete(d);
}

/* out->why, cut at its size (a report's lines can be long). */
static void __attribute__((format(printf, 2, 3))) set_why(evo_sanitize_result *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof out->why, fmt, ap);
    va_end(ap);
}

evo_status evo_sanitize_request(const evo_sanitize_job *job, const evo_eval_request *req, evo_sanitize_result *out,
                                evo_err *err)
{
    memset(out, 0, sizeof *out);
    out->tool = job->tool;
    out->errors = -1;
    out->verdict = EVO_V_CRASHED;
    const double timeout = job->timeout_s > 0 ? job->timeout_s : EVO_SANITIZE_TIMEOUT_S;
    char exe[4096], log[4200], gpu[16];
    evo_status s = self_path(exe, sizeof exe, err);
    if (s != EVO_OK) return s;
    snprintf(out->report, sizeof out->report, "%s/sanitize-%s-%s.txt", job->dir, job->label, job->tool);
    snprintf(log, sizeof log, "%s/sanitize-%s-%s.log", job->dir, job->label, job->tool);
    snprintf(gpu, sizeof gpu, "%d", job->gpu);
    unlink(out->report);
    char filter[96];
    snprintf(filter, sizeof filter, "kns=%s", job->kernel_prefix ? job->kernel_prefix : "");
    const char *argv[24] = {
        "--tool",        job->tool, "--log-file", out->report, "--print-limit", "20", "--report-api-errors", "no",
        "--kernel-name", filter,    exe,          "worker",    "--gpu",         gpu,  "--sanitize"};
    int k = 15;
    if (job->config_path) argv[k++] = "--config", argv[k++] = job->config_path;
    if (job->fake) argv[k++] = "--fake", argv[k++] = job->fake;
    char name[128];
    snprintf(name, sizeof name, "%s worker gpu %d", job->tool, job->gpu);
    const evo_worker_spec spec = {.exe = job->sanitizer, .argv = argv, .log_path = log, .name = name};
    evo_worker *w = NULL;
    s = evo_worker_start(&spec, &w, err);
    char *line = NULL, *reply = NULL;
    if (s == EVO_OK) {
        line = evo_proto_encode_hello_request(1);
        s = call(w, line, timeout, job->interrupt, &reply, err);
        free(line);
        evo_hello_reply h;
        if (s == EVO_OK) s = evo_proto_decode_hello_reply(reply, &h, err);
        free(reply);
        reply = NULL;
        if (s != EVO_OK) {
            evo_worker_stop(w);
            return s == EVO_E_INTERRUPTED
                       ? s
                       : evo_failv_prefix(err, s, "%s: the worker did not start under %s", job->tool, job->sanitizer);
        }
    } else {
        return s;
    }
    evo_eval_request r = *req;
    r.id = 2;
    r.check = true;
    r.time = false;
    r.is_baseline = false;
    r.n_best = 0;
    line = evo_proto_encode_eval_request(&r);
    evo_err call_err = {0};
    evo_status cs = call(w, line, timeout, job->interrupt, &reply, &call_err);
    free(line);
    if (cs == EVO_E_INTERRUPTED) {
        evo_worker_stop(w);
        return evo_fail(err, cs, "%s", call_err.msg);
    }
    if (cs == EVO_OK) {
        evo_eval_reply rep;
        cs = evo_proto_decode_eval_reply(reply, &rep, &call_err);
        if (cs == EVO_OK) {
            out->verdict = rep.r.verdict;
            if (rep.r.verdict != EVO_V_OK) {
                char reason[400];
                reason_of(rep.r.detail, reason, sizeof reason);
                set_why(out, "%s under the sanitizer: %s", evo_verdict_name(rep.r.verdict), reason);
            }
            evo_eval_reply_free(&rep);
        }
    }
    free(reply);
    if (cs != EVO_OK) {
        out->verdict = cs == EVO_E_TIMEOUT ? EVO_V_TIMEOUT : EVO_V_CRASHED;
        set_why(out, "%s%s", cs == EVO_E_TIMEOUT ? "did not finish under the sanitizer: " : "", call_err.msg);
    }
    /* The summary is written as the sanitized process ends. */
    evo_worker_stop_within(w, 60);

    char *text = NULL;
    char first[400];
    if (evo_read_file(out->report, &text, NULL, NULL) == EVO_OK)
        out->errors = evo_sanitize_count_errors(text, first, sizeof first);
    else
        first[0] = '\0';
    free(text);
    out->clean = out->verdict == EVO_V_OK && out->errors == 0;
    if (out->errors > 0) {
        char count[32];
        snprintf(count, sizeof count, "%d error%s", out->errors, out->errors == 1 ? "" : "s");
        if (out->why[0]) { /* keep the verdict's reason after the sanitizer's finding */
            char rest[sizeof out->why];
            snprintf(rest, sizeof rest, "%s", out->why);
            set_why(out, "%s: %s; %s", count, first, rest);
        } else {
            set_why(out, "%s: %s", count, first);
        }
    } else if (out->errors < 0 && !out->why[0]) {
        set_why(out, "the sanitizer wrote no summary to %s", out->report);
    }
    return EVO_OK;
}

evo_status evo_sanitize_find(const char *given, char **path, evo_err *err)
{
    return evo_path_find_tool("compute-sanitizer", given, path, err);
}

void evo_sanitize_summary(const evo_sanitize_result *r, int n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++) {
        int k = r[i].clean ? snprintf(buf + at, len - at, "%s%s clean", i ? "; " : "", r[i].tool)
                           : snprintf(buf + at, len - at, "%s%s: %s", i ? "; " : "", r[i].tool, r[i].why);
        if (k < 0) break;
        at += (size_t)k;
    }
}
