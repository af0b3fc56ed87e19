#!/usr/bin/env python3
"""torch_export.py — writes the PyTorch module for an exported attention kernel and an exported quantizer: the
two .cu files copied into DIR and DIR/NAME.py rendered from templates/torch_op.py (what `evo export --torch` writes).

  python3 tools/torch_export.py ATTENTION.cu QUANTIZE.cu -o DIR [--name evo_fp8]
  then: PYTHONPATH=DIR python3 -c "import evo_fp8"      (torch.ops.evo.attention_fp8, quantize_fp8, ...)
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import outpath  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "tasks", "attention_fp8", "torch_op.py")
PLACEHOLDER = re.compile(r"@[A-Z_]+@")


class ExportError(Exception):
    pass


def _define(text, name, path):
    m = re.search(rf'^#define {name} "([^"]*)"', text, re.M)
    if not m:
        raise ExportError(f"{path}: no #define {name}: not a file written by evo export")
    return m.group(1)


def attention_facts(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    fmt = re.search(r"^#define EVO_EXPORT_FORMAT (EVO_FORMAT_E4M3|EVO_FORMAT_U8SIM)\s*$", text, re.M)
    dims = sorted({int(d) for d in re.findall(r"^template __global__ void evo_attn_fwd<(\d+),", text, re.M)})
    if not fmt or not dims or "evo_attention_forward(" not in text:
        raise ExportError(f"{path}: not an attention kernel written by evo export (no EVO_EXPORT_FORMAT or variants)")
    return {"GENOME": _define(text, "EVO_EXPORT_GENOME", path), "ARCH": _define(text, "EVO_EXPORT_ARCH", path),
            "ATTN_FORMAT": "e4m3" if fmt.group(1) == "EVO_FORMAT_E4M3" else "u8sim",
            "ATTN_HEAD_DIMS": ",".join(map(str, dims))}


def quantize_facts(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    rows = re.findall(r"^\s*\{(\d+), ([01]), ([01]), evo_quant<", text, re.M)
    if not rows or "evo_quantize_forward(" not in text:
        raise ExportError(f"{path}: not a quantizer written by evo export (no qvariant rows)")
    variants = ",".join(f"{d}:{'bf16' if bf == '1' else 'fp16'}:{rot}" for d, bf, rot in rows)
    return {"QUANT_GENOME": _define(text, "EVO_EXPORT_GENOME", path),
            "QUANT_ARCH": _define(text, "EVO_EXPORT_ARCH", path), "QUANT_VARIANTS": variants}


def render(values, template=TEMPLATE):
    """The template with every @NAME@ replaced by values[NAME]; ExportError when one is missing."""
    text = open(template, encoding="utf-8").read()
    missing = sorted({p[1:-1] for p in PLACEHOLDER.findall(text)} - set(values))
    if missing:
        raise ExportError(f"{template}: no value for {', '.join('@' + m + '@' for m in missing)}")
    return PLACEHOLDER.sub(lambda m: str(values[m.group(0)[1:-1]]), text)


def write_module(attention_cu, quantize_cu, out_dir, name="evo_fp8"):
    """Copies the two files into out_dir and writes out_dir/name.py; returns its path."""
    a, q = attention_facts(attention_cu), quantize_facts(quantize_cu)
    if a["ARCH"] != q["QUANT_ARCH"]:
        raise ExportError(f"{attention_cu} is for {a['ARCH']}, {quantize_cu} for {q['QUANT_ARCH']}: export both for "
                          "one arch")
    if os.path.islink(out_dir) or (os.path.exists(out_dir) and not os.path.isdir(out_dir)):
        raise ExportError(f"-o {out_dir}: is {'a symbolic link' if os.path.islink(out_dir) else 'not a directory'}")
    names = [os.path.basename(attention_cu), os.path.basename(quantize_cu)]
    values = {**a, **q, "MODULE": name, "ATTENTION_CU": names[0], "QUANTIZE_CU": names[1]}
    text = render(values)
    path = os.path.join(out_dir, name + ".py")
    os.makedirs(out_dir, exist_ok=True)
    copies = []
    for src in (attention_cu, quantize_cu):  # everything checked before the first write
        dst = os.path.join(out_dir, os.path.basename(src))
        if not (os.path.exists(dst) and os.path.samefile(src, dst)):
            outpath.check(dst, "-o")
            copies.append((src, dst))
    outpath.check(path, "-o")
    for src, dst in copies:
        with open(src, "rb") as f:
            outpath.write(dst, f.read(), "-o")
    outpath.write(path, text, "-o")
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description="Write the PyTorch module for an exported attention kernel + quantizer.")
    p.add_argument("attention_cu")
    p.add_argument("quantize_cu")
    p.add_argument("-o", "--out", required=True, help="directory for the module and the two .cu files")
    p.add_argument("--name", default="evo_fp8", help="module name (default evo_fp8)")
    a = p.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z_]\w*", a.name):
        p.error(f"--name: '{a.name}' is not a Python module name")
    try:
        path = write_module(a.attention_cu, a.quantize_cu, a.out, a.name)
    except (OSError, ExportError, outpath.OutputError) as e:
        print(f"torch_export: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
