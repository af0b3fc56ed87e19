/* tasks.c — the task list: every task evo knows, one line each. It is the tasks' layer (above the engine, which
 * names no task) and is linked into every evo binary; engine/core/task.c looks names up in it. The first is the task
 * of stores from before tasks had names (a candidate whose task is unknown is read as it). */
#include "task.h"

#include <stddef.h>

extern const evo_task evo_task_attention_fp8;
extern const evo_task evo_task_quantize_fp8;

const evo_task *const evo_tasks[] = {&evo_task_attention_fp8, &evo_task_quantize_fp8, NULL};
