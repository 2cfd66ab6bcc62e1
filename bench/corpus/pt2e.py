"""A corpus model quantized with PyTorch's PT2E flow and exported by the
dynamo exporter, beside its float export: the quantized inputs `pt2e-x86`
and `pt2e-xnnpack` of bench/corpus/quantized.py, which runs this script.

PT2E quantizes the PyTorch module, not an ONNX file, so this runs in the
generator's environment (torch, torchvision, timm, transformers and torchao;
bench/corpus/README.md):

    build/pt2e-venv/bin/python bench/corpus/pt2e.py --model timm-resnet18 \\
        --quantizer x86 --out DIR          # writes DIR/float.onnx, DIR/input.onnx

The module is built as generate.py builds it (specs.py: its config, seeded
random weights) and its BatchNorm statistics are measured on 4 seeded
inputs (from initialization they are the identity, and through MobileNetV3
or EfficientNet the activations shrink to 1e-10, below the smallest scale
PT2E's observers give, so that the quantized model computes zeros; measured
they keep each layer's output near unit variance as in a trained network),
then
  - float.onnx: the float module, exported by the dynamo exporter at opset 21;
  - input.onnx: torch.export, torchao's prepare_pt2e with the quantizer,
    8 seeded calibration inputs, convert_pt2e, then the same export: the
    quantize/dequantize operators it leaves become QuantizeLinear and
    DequantizeLinear, the products stay float between them.
The quantizers, as their authors configure them for a CPU:
  - x86: torchao's X86InductorQuantizer with its default configuration
    (uint8 activations per tensor, int8 weights per output channel);
  - xnnpack: the symmetric configuration of torchao's XNNPACK quantizer
    (int8 activations, int8 weights per channel, symmetric), which torchao
    keeps in its testing package since the quantizer itself moved to
    ExecuTorch.
Shapes are static (the spec's dims: batch 1, sequence 128), as PT2E exports
them.
"""
import argparse
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from generate import example_inputs  # noqa: E402
from specs import SEED, SPEC_BY_NAME  # noqa: E402

CALIBRATION_INPUTS = 8


def inputs(spec, seed):
    return example_inputs(spec, spec.dims, seed)


def measure_batch_norms(module, spec):
    """Each BatchNorm's running mean and variance set to those of its input
    over 4 seeded inputs (a cumulative average: momentum None)."""
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    module.train()
    with torch.no_grad():
        for i in range(4):
            module(*inputs(spec, 200 + i))
    module.eval()


def quantizer(name):
    if name == "x86":
        from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as x86
        q = x86.X86InductorQuantizer()
        q.set_global(x86.get_default_x86_inductor_quantization_config())
        return q
    from torchao.testing.pt2e._xnnpack_quantizer import (XNNPACKQuantizer,
                                                          get_symmetric_quantization_config)
    q = XNNPACKQuantizer()
    q.set_global(get_symmetric_quantization_config(is_per_channel=True))
    return q


def export(spec, module, args, path):
    program = torch.onnx.export(module, args, dynamo=True, opset_version=21,
                                input_names=[i.name for i in spec.inputs],
                                output_names=spec.outputs, verbose=False)
    program.save(path, external_data=False)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=sorted(SPEC_BY_NAME))
    p.add_argument("--quantizer", required=True, choices=["x86", "xnnpack"])
    p.add_argument("--out", required=True, help="folder for float.onnx and input.onnx")
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    spec = SPEC_BY_NAME[args.model]
    module, _, _ = spec.build()
    measure_batch_norms(module, spec)
    module.eval()
    os.makedirs(args.out, exist_ok=True)
    example = inputs(spec, SEED)
    with torch.no_grad():
        export(spec, module, example, os.path.join(args.out, "float.onnx"))
        prepared = prepare_pt2e(torch.export.export(module, example).module(), quantizer(args.quantizer))
        for i in range(CALIBRATION_INPUTS):
            prepared(*inputs(spec, 100 + i))
        export(spec, convert_pt2e(prepared), example, os.path.join(args.out, "input.onnx"))


if __name__ == "__main__":
    main()
