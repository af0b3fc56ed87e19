/* protocol.h — the messages between evo and its GPU worker processes (see worker.h for the pipes they travel on).
 *
 * Wire format: one JSON object per line (newline-delimited; strings are escaped, so a line never holds a raw
 * newline). Every message has "op" and "id". The parent picks the id; a reply repeats its request's op and id.
 *   hello    -> device facts (and the protocol version both sides speak; a mismatch is an error)
 *   eval     -> gate one compiled candidate: verdict, evidence, per-shape results
 *   shutdown -> the worker replies and exits
 *   error    (reply only) the worker could not serve the request: "code" (evo_status), "status", "message";
 *            id -1 when the request itself could not be read.
 * JSON has no NaN or infinity: such doubles travel as the strings "NaN", "Infinity", "-Infinity" (null is read as
 * NaN), so every double decodes to what was encoded. Keys a side does not know are ignored.
 *
 * Validation: a line that is not a JSON object, a missing or mistyped field, a value out of range, a string longer
 * than its buffer, or an op other than expected is EVO_E_WORKER with a message naming the field
 * ("eval reply: field 'shapes[2].median_us': expected a number"). Decoding an "error" reply returns the status it
 * carries (EVO_E_WORKER when it carries none that evo knows) with the worker's message.
 *
 * Ownership: records are plain values with fixed-size buffers, except evo_eval_reply.detail (malloc'd; release
 * with evo_eval_reply_free). Encoders return a malloc'd line without the trailing newline (caller frees).
 * Everything here is thread-safe (cJSON keeps only a last-parse-error pointer, which evo never reads).
 */
#ifndef EVO_PROTOCOL_H
#define EVO_PROTOCOL_H

#include "config.h"
#include "evo.h"
#include "result.h"
#include "task.h"

#include <stdbool.h>
#include <stdint.h>

#define EVO_PROTOCOL_VERSION 3 /* 3: the hello reply says what the worker's start cost (cases, prepare_s) */
#define EVO_PROTO_PATH_MAX 4096
#define EVO_PROTO_SYMBOL_MAX 512
#define EVO_PROTO_OP_MAX 32
#define EVO_PROTO_ID_MAX ((int64_t)1 << 53) /* ids are exact in a JSON number up to here */
#define EVO_PROTO_MAX_RETIME 100

/* ---- eval ---- */

typedef struct {
    int64_t id;
    char cubin_path[EVO_PROTO_PATH_MAX]; /* the compile cache entry holding the cubin */
    char program[64];                    /* program name, for messages */
    /* The kernels of the cubin: name_expr holds each one's lowered (mangled) name from NVRTC, or the extern "C"
     * name; threads 0: the geometry is read from the module (task_gpu.h); attr: the task's variant attributes. */
    evo_variant variants[EVO_MAX_VARIANTS];
    int n_variants;                 /* 1..EVO_MAX_VARIANTS */
    bool check;                     /* run the correctness gate */
    bool time;                      /* run the timing gate */
    bool is_baseline;               /* the baseline genome: timed for speedups, never aborted early */
    double best_us[EVO_MAX_SHAPES]; /* current best time per timed shape, config order; 0 = none yet */
    int n_best;
    char fault_injection[64]; /* "" = none; tests tell a worker to misbehave (see worker.h) */
    int retime;               /* > 0: after the gates, time the candidate and the baseline again
                                            this many rounds; detail.retime holds each round (evo check --retime) */
} evo_eval_request;

/* The reply to an eval request: the result itself (core/result.h; r.detail holds the evidence: failing case
 * {shape, causal, seed, dist}, max_abs, rel_l2, frac_over, nonfinite, first_bad_index, launch error text...;
 * r.gpu travels as "device"; the fitness does not travel: the evaluator computes it). */
typedef struct {
    int64_t id;
    evo_result r;
    bool paired; /* r.shapes[].baseline_us (and its interval) were measured interleaved with the candidate
                           (timing.interleave): keep them instead of the generation's baseline */
} evo_eval_reply;

char *evo_proto_encode_eval_request(const evo_eval_request *r);
evo_status evo_proto_decode_eval_request(const char *line, evo_eval_request *out, evo_err *err);
/* Fails (EVO_E_INTERNAL) only when detail is not the text of a JSON object. */
evo_status evo_proto_encode_eval_reply(const evo_eval_reply *r, char **line, evo_err *err);
/* On success out->detail is malloc'd and never NULL (canonical, unformatted JSON). */
evo_status evo_proto_decode_eval_reply(const char *line, evo_eval_reply *out, evo_err *err);
void evo_eval_reply_free(evo_eval_reply *r); /* frees detail; the record may be reused */

/* ---- hello ---- */

typedef struct {
    int64_t id;
    int protocol; /* EVO_PROTOCOL_VERSION of the worker */
    int gpu;      /* the ordinal the worker serves */
    int pid;
    char device[128]; /* "NVIDIA H100 80GB HBM3" */
    char arch[16];    /* "sm_90" */
    int cc_major, cc_minor;
    int sm_count;
    int driver_version; /* cuDriverGetVersion, e.g. 13000 */
    int l2_bytes;
    int smem_optin; /* max dynamic shared memory per block after opt-in, bytes */
    int regs_per_block;
    int regs_per_thread;
    int max_threads_per_block;
    int cases;        /* the gate's cases the worker prepared (inputs, references, budgets) before replying */
    double prepare_s; /* the seconds that took */
} evo_hello_reply;

char *evo_proto_encode_hello_request(int64_t id);
/* Checks the sender's protocol version against ours. */
evo_status evo_proto_decode_hello_request(const char *line, int64_t *id, evo_err *err);
char *evo_proto_encode_hello_reply(const evo_hello_reply *h);
evo_status evo_proto_decode_hello_reply(const char *line, evo_hello_reply *out, evo_err *err);
/* The limits the resource gate and can_implement check against. */
void evo_hello_to_limits(const evo_hello_reply *h, evo_device_limits *out);

/* ---- shutdown (request and reply alike), error replies, the envelope ---- */

char *evo_proto_encode_shutdown(int64_t id);
evo_status evo_proto_decode_shutdown(const char *line, int64_t *id, evo_err *err);
/* message may be NULL. s must not be EVO_OK. */
char *evo_proto_encode_error(int64_t id, evo_status s, const char *message);
/* Reads op and id of any message. An "error" message is returned as such (*op = "error"), not as a failure. */
evo_status evo_proto_peek(const char *line, char op[EVO_PROTO_OP_MAX], int64_t *id, evo_err *err);
/* A reply after which the worker ends (its handler asked to exit) says so with "exiting": true, so the parent
 * reaps it at once instead of sending it the next request. mark returns a new malloc'd line (line is freed). */
char *evo_proto_mark_exiting(char *line);
bool evo_proto_is_exiting(const char *line);
/* When line is an "error" message: returns the status it carries and fills err with "worker: <message>";
 * otherwise returns EVO_OK and leaves err alone. A line that is not a message is EVO_E_WORKER. */
evo_status evo_proto_check_error(const char *line, evo_err *err);

#endif
