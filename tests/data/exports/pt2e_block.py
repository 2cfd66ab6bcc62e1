"""Writes pt2e_xnnpack_block.onnx and pt2e_block_float.onnx: a small
residual block (Conv-BatchNorm-ReLU, Conv-BatchNorm, the skip added, ReLU,
global average pool, Linear) quantized with PyTorch's PT2E flow (torchao's
XNNPACK quantizer, symmetric, int8 activations and per-channel int8
weights; 4 seeded calibration inputs) and exported by the dynamo exporter
at opset 21, beside the float module's export. Run once with the
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
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.relu1 = torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.skip = torch.nn.Conv2d(3, 8, 1)
        self.relu2 = torch.nn.ReLU()
        self.fc = torch.nn.Linear(8, 4)

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
    from torchao.testing.pt2e._xnnpack_quantizer import (XNNPACKQuantizer,
                                                          get_symmetric_quantization_config)
    torch.manual_seed(7)
    block = Block().eval()
    with torch.no_grad():  # running statistics that are not the identity
        for bn in (block.bn1, block.bn2):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 16, 16)
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    with torch.no_grad():
        export(block, x, "pt2e_block_float.onnx")
        prepared = prepare_pt2e(torch.export.export(block, (x,)).module(), quantizer)
        for _ in range(4):
            prepared(torch.randn(1, 3, 16, 16))
        export(convert_pt2e(prepared), x, "pt2e_xnnpack_block.onnx")


if __name__ == "__main__":
    main()
