"""Writes pt2e_xnnpack_block.onnx, pt2e_x86_block.onnx and
pt2e_block_float.onnx: a small residual block (Conv-BatchNorm-ReLU,
Conv-BatchNorm, the skip's 1x1 Conv added, ReLU, global average pool,
Linear) quantized with PyTorch's PT2E flow (torchao's XNNPACK quantizer,
symmetric, int8 activations and per-channel int8 weights; and its
X86InductorQuantizer with its defaults, uint8 activations, which quantizes
the sum rather than the convolutions before it; 4 seeded calibration
inputs) and exported by the dynamo exporter at opset 21, beside the float
module's export. Run once with the
generator's environment (bench/corpus/README.md):

    build/pt2e-venv/bin/python tests/data/exports/pt2e_block.py
"""
import os
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.relu1 = torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.skip = torch.nn.Conv2d(3, 16, 1)
        self.relu2 = torch.nn.ReLU()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        y = self.relu2(y + self.skip(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


def export(module, x, name):
    program = torch.onnx.export(module, (x,), dynamo=True, opset_version=21, input_names=["x"],
                                output_names=["y"], verbose=False)
    program.save(os.path.join(HERE, name), external_data=False)


def main():
    warnings.filterwarnings("ignore")
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as x86
    from torchao.testing.pt2e._xnnpack_quantizer import (XNNPACKQuantizer,
                                                          get_symmetric_quantization_config)
    torch.manual_seed(7)
    block = Block().eval()
    with torch.no_grad():  # running statistics that are not the identity
        for bn in (block.bn1, block.bn2):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 16, 16)
    quantizers = {
        "xnnpack": XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True)),
        "x86": x86.X86InductorQuantizer().set_global(x86.get_default_x86_inductor_quantization_config())}
    with torch.no_grad():
        export(block, x, "pt2e_block_float.onnx")
        for name, quantizer in quantizers.items():
            torch.manual_seed(8)
            prepared = prepare_pt2e(torch.export.export(block, (x,)).module(), quantizer)
            for _ in range(4):
                prepared(torch.randn(1, 3, 16, 16))
            export(convert_pt2e(prepared), x, f"pt2e_{name}_block.onnx")


if __name__ == "__main__":
    main()
