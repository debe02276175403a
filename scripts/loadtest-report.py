#!/usr/bin/env python3
"""Draws scripts/loadtest.sh's status split per second as an SVG, next to what the
search budget predicts for the same seconds (standard library only).

usage: loadtest-report.py TIMELINE OUT.svg PER_MINUTE PER_HOUR

TIMELINE holds, per phase, a line `PHASE <title>|<clients>|<first unix second>` and
then `LOADSEC <unix second> <200> <429> <503> <500> <other>` lines (what
scripts/loadtest.lua prints). For each second the left bar is what the server
answered (200, 503 and 500 are admitted searches, 429 refused ones), the right bar
what the budget predicts for as many answers: searches are dealt round-robin over
the phase's clients in the order they were answered, and each client is admitted
while its minute and hour windows (aligned to the Unix epoch, SPEC §5) have room.
"""

import sys
from xml.sax.saxutils import escape

COLOURS = {
    "200": "#2e7d32",
    "503": "#ef6c00",
    "500": "#c62828",
    "429": "#9e9e9e",
    "other": "#6a1b9a",
    "admitted": "#a5d6a7",
    "refused": "#e0e0e0",
}


def read(path):
    """[(title, clients, [(second, {status: n})])] per phase."""
    phases = []
    with open(path, encoding="utf-8") as timeline:
        for line in timeline:
            fields = line.split()
            if not fields:
                continue
            if fields[0] == "PHASE":
                title, clients, _first = line.split(" ", 1)[1].rstrip("\n").split("|")
                phases.append((title, int(clients), []))
            elif fields[0] == "LOADSEC" and phases:
                second, s200, s429, s503, s500, other = map(int, fields[1:7])
                counts = {"200": s200, "429": s429, "503": s503, "500": s500, "other": other}
                phases[-1][2].append((second, counts))
    for _, _, seconds in phases:
        seconds.sort()
    return phases


def predict(seconds, clients, per_minute, per_hour):
    """Predicted (admitted, refused) per second for the answers of each second."""
    spent = {}  # (client, window kind, window start) -> count
    n = 0
    out = []
    for second, counts in seconds:
        admitted = refused = 0
        for _ in range(sum(counts.values())):
            client = n % clients
            n += 1
            minute = (client, "m", second // 60)
            hour = (client, "h", second // 3600)
            if spent.get(minute, 0) < per_minute and spent.get(hour, 0) < per_hour:
                spent[minute] = spent.get(minute, 0) + 1
                spent[hour] = spent.get(hour, 0) + 1
                admitted += 1
            else:
                refused += 1
        out.append((admitted, refused))
    return out


def draw(phases, per_minute, per_hour):
    bar, gap, left, top, height = 7, 5, 56, 40, 160
    panels = []
    width = left + 20
    for title, clients, seconds in phases:
        span = (seconds[-1][0] - seconds[0][0] + 1) if seconds else 1
        width = max(width, left + span * (2 * bar + gap) + 20)
    y = top
    for title, clients, seconds in phases:
        if not seconds:
            continue
        start = seconds[0][0]
        predicted = dict(zip([s for s, _ in seconds], predict(seconds, clients, per_minute, per_hour)))
        peak = max(max(sum(c.values()) for _, c in seconds), 1)
        scale = height / peak
        observed_total = {k: sum(c[k] for _, c in seconds) for k in ("200", "503", "500", "429", "other")}
        admitted_total = sum(a for a, _ in predicted.values())
        refused_total = sum(r for _, r in predicted.values())
        parts = [
            f'<text x="{left}" y="{y - 14}" font-size="13" font-weight="bold">{escape(title)}: '
            f'{clients} client(s), {per_minute}/minute, {per_hour}/hour</text>',
            f'<text x="{left}" y="{y - 2}" font-size="11">seen: 200 {observed_total["200"]}, '
            f'503 {observed_total["503"]}, 500 {observed_total["500"]}, 429 {observed_total["429"]}, '
            f'other {observed_total["other"]} | predicted: admitted {admitted_total}, 429 {refused_total}</text>',
            f'<line x1="{left}" y1="{y + height}" x2="{width - 10}" y2="{y + height}" stroke="#333"/>',
            f'<text x="{left - 6}" y="{y + 8}" font-size="10" text-anchor="end">{peak}</text>',
            f'<text x="{left - 6}" y="{y + height}" font-size="10" text-anchor="end">0</text>',
            f'<text x="12" y="{y + height / 2}" font-size="10" transform="rotate(-90 12 {y + height / 2})" '
            f'text-anchor="middle">answers per second</text>',
        ]
        for second, counts in seconds:
            x = left + (second - start) * (2 * bar + gap) + 2
            base = y + height
            for key in ("200", "503", "500", "other", "429"):
                h = counts[key] * scale
                if h:
                    base -= h
                    parts.append(f'<rect x="{x}" y="{base:.1f}" width="{bar}" height="{h:.1f}" '
                                 f'fill="{COLOURS[key]}"><title>{second}: {key} x{counts[key]}</title></rect>')
            admitted, refused = predicted[second]
            base = y + height
            for key, n in (("admitted", admitted), ("refused", refused)):
                h = n * scale
                if h:
                    base -= h
                    parts.append(f'<rect x="{x + bar}" y="{base:.1f}" width="{bar}" height="{h:.1f}" '
                                 f'fill="{COLOURS[key]}"><title>{second}: predicted {key} x{n}</title></rect>')
            if (second - start) % 10 == 0:
                parts.append(f'<text x="{x}" y="{y + height + 12}" font-size="10">+{second - start}s</text>')
        panels.append("\n".join(parts))
        y += height + 70
    legend_y = y - 40
    legend = []
    x = left
    for key, label in (("200", "200"), ("503", "503 busy"), ("500", "500"), ("429", "429"),
                       ("other", "other"), ("admitted", "predicted admitted"), ("refused", "predicted 429")):
        legend.append(f'<rect x="{x}" y="{legend_y}" width="10" height="10" fill="{COLOURS[key]}"/>'
                      f'<text x="{x + 14}" y="{legend_y + 9}" font-size="11">{label}</text>')
        x += 14 + 8 * len(label) + 10
    total_height = legend_y + 24
    width = max(width, x + 10)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_height}" '
            f'viewBox="0 0 {width} {total_height}" font-family="sans-serif">\n'
            f'<rect width="100%" height="100%" fill="white"/>\n'
            + "\n".join(panels) + "\n" + "\n".join(legend) + "\n"
            f'<text x="{left}" y="{total_height - 2}" font-size="10" fill="#555">Per second: left bar '
            f'seen, right bar what the budget predicts for as many answers.</text>\n</svg>\n')


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    timeline, out, per_minute, per_hour = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    phases = read(timeline)
    if not any(seconds for _, _, seconds in phases):
        sys.exit("loadtest-report: no answers to draw")
    with open(out, "w", encoding="utf-8") as svg:
        svg.write(draw(phases, per_minute, per_hour))


if __name__ == "__main__":
    main()
