"""A YOLO-style one-stage detector, written for the corpus (no detector
package is a dependency): the YOLOv8 layout as its paper and public
descriptions give it, at the "n" width (16-32-64-128-256 channels).

- backbone: stride-2 Conv-BN-SiLU stems and C2f blocks (a split, a chain of
  residual bottlenecks, a concatenation of every intermediate), then SPPF
  (three chained 5x5 max-pools, concatenated);
- neck: a feature pyramid up (nearest 2x Resize, Concat, C2f) and back down
  (stride-2 convolutions, Concat, C2f);
- head: per scale, a box branch (4 x 16 distribution bins) and a class
  branch (80 classes), flattened and concatenated over the three scales; the
  box distribution is decoded by a softmax over the bins and an expectation,
  the classes by a sigmoid: output [batch, 84, 8400] at 640x640.

Only torch is needed (the venv's python, through the corpus generator).
"""


def build(width=16, classes=80, bins=16):
    import torch
    from torch import nn

    class ConvBnSilu(nn.Module):
        def __init__(self, cin, cout, k=1, s=1):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(cout, eps=1e-3)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut):
            super().__init__()
            self.a, self.b, self.shortcut = ConvBnSilu(c, c, 3), ConvBnSilu(c, c, 3), shortcut

        def forward(self, x):
            y = self.b(self.a(x))
            return x + y if self.shortcut else y

    class C2f(nn.Module):
        def __init__(self, cin, cout, n, shortcut=True):
            super().__init__()
            self.c = cout // 2
            self.stem = ConvBnSilu(cin, 2 * self.c)
            self.blocks = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))
            self.out = ConvBnSilu((2 + n) * self.c, cout)

        def forward(self, x):
            parts = list(self.stem(x).split((self.c, self.c), dim=1))
            for block in self.blocks:
                parts.append(block(parts[-1]))
            return self.out(torch.cat(parts, dim=1))

    class Sppf(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.stem, self.out = ConvBnSilu(cin, cin // 2), ConvBnSilu(cin // 2 * 4, cout)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            y = [self.stem(x)]
            for _ in range(3):
                y.append(self.pool(y[-1]))
            return self.out(torch.cat(y, dim=1))

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            w = [width, 2 * width, 4 * width, 8 * width, 16 * width]
            self.stem = nn.Sequential(ConvBnSilu(3, w[0], 3, 2), ConvBnSilu(w[0], w[1], 3, 2),
                                      C2f(w[1], w[1], 1))
            self.p3 = nn.Sequential(ConvBnSilu(w[1], w[2], 3, 2), C2f(w[2], w[2], 2))
            self.p4 = nn.Sequential(ConvBnSilu(w[2], w[3], 3, 2), C2f(w[3], w[3], 2))
            self.p5 = nn.Sequential(ConvBnSilu(w[3], w[4], 3, 2), C2f(w[4], w[4], 1), Sppf(w[4], w[4]))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.top4 = C2f(w[4] + w[3], w[3], 1, False)
            self.top3 = C2f(w[3] + w[2], w[2], 1, False)
            self.down3, self.bottom4 = ConvBnSilu(w[2], w[2], 3, 2), C2f(w[2] + w[3], w[3], 1, False)
            self.down4, self.bottom5 = ConvBnSilu(w[3], w[3], 3, 2), C2f(w[3] + w[4], w[4], 1, False)
            box, cls = max(16, w[2] // 4), max(w[2], min(classes, 100))
            self.box = nn.ModuleList(
                nn.Sequential(ConvBnSilu(c, box, 3), ConvBnSilu(box, box, 3), nn.Conv2d(box, 4 * bins, 1))
                for c in (w[2], w[3], w[4]))
            self.cls = nn.ModuleList(
                nn.Sequential(ConvBnSilu(c, cls, 3), ConvBnSilu(cls, cls, 3), nn.Conv2d(cls, classes, 1))
                for c in (w[2], w[3], w[4]))
            self.register_buffer("bin_values", torch.arange(bins, dtype=torch.float32).view(1, bins, 1, 1))
            self.bins = bins

        def forward(self, pixel_values):
            x = self.stem(pixel_values)
            p3 = self.p3(x)
            p4 = self.p4(p3)
            p5 = self.p5(p4)
            t4 = self.top4(torch.cat([self.up(p5), p4], 1))
            t3 = self.top3(torch.cat([self.up(t4), p3], 1))
            b4 = self.bottom4(torch.cat([self.down3(t3), t4], 1))
            b5 = self.bottom5(torch.cat([self.down4(b4), p5], 1))
            outs = []
            for feature, box, cls in zip((t3, b4, b5), self.box, self.cls):
                outs.append(torch.cat([box(feature), cls(feature)], 1).flatten(2))
            y = torch.cat(outs, 2)  # [batch, 4 * bins + classes, anchors]
            n = y.shape[0]
            dist = y[:, : 4 * self.bins].reshape(n, 4, self.bins, -1).transpose(1, 2).softmax(1)
            boxes = (dist * self.bin_values).sum(1)  # the expectation over the bins
            return torch.cat([boxes, y[:, 4 * self.bins:].sigmoid()], 1)

    model = Detector().eval()
    return model, "bench/corpus/yolo_style.py (YOLOv8-n layout, written for the corpus)", \
        {"width": width, "classes": classes, "bins": bins}
