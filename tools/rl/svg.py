"""Two small SVG charts: a learning curve and grouped bars."""

from xml.sax.saxutils import escape

COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1"]


def _frame(width, height, title, body):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="12">\n'
            f'<rect width="{width}" height="{height}" fill="white"/>\n'
            f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="14">{escape(title)}</text>\n'
            + body + "</svg>\n")


def line_chart(series, title, x_label, y_label, width=640, height=360):
    """series: {name: [(x, y), ...]}."""
    left, right, top, bottom = 60, 20, 30, 50
    xs = [x for pts in series.values() for x, _ in pts]
    ys = [y for pts in series.values() for _, y in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(0.0, min(ys)), max(ys) if max(ys) > 0 else 1.0
    px = lambda x: left + (x - x0) / (x1 - x0) * (width - left - right)
    py = lambda y: height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom)
    body = [f'<line x1="{left}" y1="{py(y0)}" x2="{width - right}" y2="{py(y0)}" stroke="black"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>',
            f'<text x="{width / 2}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>',
            f'<text x="15" y="{height / 2}" text-anchor="middle" '
            f'transform="rotate(-90 15 {height / 2})">{escape(y_label)}</text>']
    for k in range(5):
        y = y0 + (y1 - y0) * k / 4
        body.append(f'<text x="{left - 5}" y="{py(y) + 4}" text-anchor="end">{y:.3g}</text>')
    for i, (name, pts) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        body.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        body.append(f'<text x="{left + 10}" y="{top + 15 * (i + 1)}" fill="{color}">{escape(name)}</text>')
    return _frame(width, height, title, "\n".join(body) + "\n")


def bar_chart(groups, series, values, title, y_label, width=720, height=380):
    """values[group][series] -> number; one cluster of bars per group."""
    left, right, top, bottom = 60, 20, 40, 60
    top_value = max([v for g in groups for v in values[g].values()] + [1e-9])
    slot = (width - left - right) / max(len(groups), 1)
    bar = slot * 0.8 / max(len(series), 1)
    py = lambda y: height - bottom - y / top_value * (height - top - bottom)
    body = [f'<line x1="{left}" y1="{py(0)}" x2="{width - right}" y2="{py(0)}" stroke="black"/>',
            f'<text x="15" y="{height / 2}" text-anchor="middle" '
            f'transform="rotate(-90 15 {height / 2})">{escape(y_label)}</text>']
    for gi, g in enumerate(groups):
        x = left + gi * slot + slot * 0.1
        for si, s in enumerate(series):
            v = values[g].get(s, 0.0)
            body.append(f'<rect x="{x + si * bar:.1f}" y="{py(v):.1f}" width="{bar - 1:.1f}" '
                        f'height="{py(0) - py(v):.1f}" fill="{COLORS[si % len(COLORS)]}"/>')
        body.append(f'<text x="{x + slot * 0.4:.1f}" y="{height - bottom + 15}" '
                    f'text-anchor="middle">{escape(g)}</text>')
    for si, s in enumerate(series):
        body.append(f'<text x="{left + 10 + 110 * si}" y="{top - 8}" '
                    f'fill="{COLORS[si % len(COLORS)]}">{escape(s)}</text>')
    return _frame(width, height, title, "\n".join(body) + "\n")
