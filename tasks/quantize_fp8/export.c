/* export.c — the quantize_fp8 task's standalone .cu (evo_task.export_body, see engine/export.h): a header with the
 * launcher's signature and the provenance, evo_quantize_abi.h and the template inlined, the genome's knobs and
 * explicit instantiations of its kernels per problem class, then tasks/quantize_fp8/export_harness.cu. */
#include "quantize.h"

#include "export.h"
#include "templates.h"

evo_status evo_qz_export_body(const evo_export_ctx *x, evo_str *o, evo_err *err)
{
    (void)x, (void)o;
    return evo_fail(err, EVO_E_USAGE, "quantize_fp8: export is not ready");
}
