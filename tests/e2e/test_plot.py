"""loss.svg: parsed as XML, its ticks are round numbers (1, 2 or 5 times a power of ten, and
multiples of their step), it has grid lines, labelled axes, a loss panel and a validation-metric
panel, and each curve has as many points as loss.csv has rows for it (the last row's partial
window drawn apart); a log y axis when the loss spans more than kLogRatio (50); the same run
gives the same bytes. Then headless Chromium renders it and the screenshot has the curves' colours
in both panels.

Then the long-log, early-stopping and learning-rate cases: a run logged at every step for 20,000
steps makes a curve thinned to the plot's pixel columns that still passes through every planted
spike; early stopping's best step and stop are vertical lines at their steps in every panel,
named in the legend, the curves ending at the stop; a schedule's rates are drawn in a
learning-rate panel at the bottom, each point at the lr column's value; each case's Chromium
screenshot has its new colour where it belongs."""

import csv
import math
import random
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib

import harness as h

SVG = "{http://www.w3.org/2000/svg}"
TRAIN_BLUE = (0x1f, 0x77, 0xb4)
METRIC_GREEN = (0x2c, 0xa0, 0x2c)
BEST_RED = (0xd6, 0x27, 0x28)
LR_BROWN = (0x8c, 0x56, 0x4b)


def write_data(tmp, kind):
    rng = random.Random(3)
    lines = ["x0,x1,x2,y"]
    for _ in range(600):
        x = [rng.gauss(0, 1) for _ in range(3)]
        if kind == "binary":
            y = int(x[0] - 0.5 * x[1] + 0.3 * rng.gauss(0, 1) > 0)
        else:
            y = 30 + 20 * x[0] - 10 * x[1] + 5 * x[2] + 0.1 * rng.gauss(0, 1)
        lines.append(",".join(f"{v:.6f}" for v in x) + f",{y}")
    path = tmp / f"{kind}.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def train(tmp, kind, model, out, extra_output="", normalize="standard", lr=0.1):
    # 450 training rows in global batches of 32: 15 steps an epoch, 3 epochs = 45 steps;
    # log_every 10 leaves a last window of 5 steps (rows at 10, 20, 30, 40, 45).
    cfg = h.write_config(tmp, f"""
version: 1
name: plot-{kind}
seed: 1
model: {{type: {model}}}
data: {{path: {write_data(tmp, kind)}, label: y, validation: 0.25, normalize: {normalize}}}
shards: {{count: 2}}
training:
  epochs: 3
  batch_size: 32
  optimizer: {{type: sgd, lr: {lr}}}
output: {{dir: {tmp}/{out}, log_every: {{steps: 10}}{extra_output}}}
""", name=f"{out}.yaml")
    r = h.run("run", cfg, "-q")
    assert r.code == 0, r
    with open(tmp / out / "loss.csv") as f:
        rows = list(csv.DictReader(f))
    return tmp / out, rows


def is_round(value):
    """1, 2 or 5 times a power of ten (or 0)."""
    if value == 0:
        return True
    mantissa = abs(value) / 10 ** math.floor(math.log10(abs(value)) + 1e-9)
    return any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5, 10))


def check_ticks(labels, log):
    values = [float(t) for t in labels]
    assert len(values) >= 3, labels
    assert values == sorted(values), labels
    if log:
        assert all(v > 0 and is_round(v) for v in values), labels
        return
    step = values[1] - values[0]
    assert is_round(step), (step, labels)
    for v in values:
        assert abs(v / step - round(v / step)) < 1e-6, (v, step, labels)
    for a, b in zip(values, values[1:]):
        assert abs((b - a) - step) < 1e-9 * max(1, abs(step)), labels


def points(group, series):
    found = [e for e in group.iter() if e.get("data-series") == series]
    if not found:
        return 0
    assert len(found) == 1, series
    e = found[0]
    return 1 if e.tag == SVG + "circle" else len(e.get("points").split())


def texts(group, cls):
    return [e.text for e in group.iter(SVG + "text") if e.get("class") == cls]


def test_classification_svg_structure(tmp):
    """Both panels, round ticks, grid, axis names, a legend, and the curves' point counts."""
    run_dir, rows = train(tmp, "binary", "logistic_regression", "run",
                          ", plot: {per_worker: true}")
    assert [int(r["step"]) for r in rows] == [10, 20, 30, 40, 45], rows
    text = (run_dir / "loss.svg").read_text()
    root = ET.fromstring(text)  # valid XML, or this raises
    assert root.tag == SVG + "svg"
    assert "plot-binary" in text  # the title
    panels = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("id")}
    assert set(panels) == {"loss-panel", "metric-panel"}, panels
    loss, metric = panels["loss-panel"], panels["metric-panel"]
    for panel in (loss, metric):
        check_ticks(texts(panel, "ytick"), log=False)
        grid = [e for e in panel.iter(SVG + "line") if "grid" in (e.get("class") or "")]
        assert len(grid) >= len(texts(panel, "ytick")) + 3, len(grid)
        assert panel.find(f"{SVG}g[@class='legend']") is not None
    assert texts(loss, "ylabel") == ["loss"]
    assert texts(metric, "ylabel") == ["accuracy, AUC"]
    assert texts(metric, "xlabel") == ["step"] and texts(loss, "xlabel") == []
    xticks = texts(metric, "xtick")
    check_ticks(xticks, log=False)
    assert float(xticks[0]) == 0 and float(xticks[-1]) >= 45, xticks
    # The last row (steps 41-45: 5 of 10) is drawn apart; the validation loss at every row.
    n = len(rows)
    assert points(loss, "train_loss") == n - 1
    assert points(loss, "train_loss_partial") == 1
    assert "train loss, last 5 steps only" in text
    assert points(loss, "validation_loss") == sum(1 for r in rows if r["validation_loss"]) == n
    assert points(metric, "validation_accuracy") == n
    assert points(metric, "validation_auc") == sum(1 for r in rows if r["validation_auc"]) == n
    for w in (0, 1):
        assert points(loss, f"worker_{w}_loss") == n - 1
    # Deterministic: the same config again gives the same bytes.
    again, _ = train(tmp, "binary", "logistic_regression", "again",
                     ", plot: {per_worker: true}")
    assert (again / "loss.svg").read_text() == text.replace(f"{tmp}/run", f"{tmp}/again")


def test_regression_log_scale_and_mse_panel(tmp):
    """A loss falling from ~1000 to ~1: the loss axis is logarithmic (powers of ten), the metric
    panel is MSE; without plot.per_worker no worker curve."""
    run_dir, rows = train(tmp, "linear", "linear_regression", "run", lr=0.1)
    losses = [float(r[c]) for r in rows for c in ("train_loss", "validation_loss")]
    assert min(losses) > 0 and max(losses) / min(losses) > 50, losses
    root = ET.parse(run_dir / "loss.svg").getroot()
    panels = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("id")}
    loss, metric = panels["loss-panel"], panels["metric-panel"]
    assert texts(loss, "ylabel") == ["loss (log scale)"]
    check_ticks(texts(loss, "ytick"), log=True)
    assert texts(metric, "ylabel")[0].startswith("MSE")
    assert points(metric, "validation_mse") == len(rows)
    assert not [e for e in root.iter() if (e.get("data-series") or "").startswith("worker_")]


def read_png(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG, non-interlaced."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    out, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, out


def count_near(pixels, y0, y1, colour, tolerance=40):
    return sum(1 for row in pixels[y0:y1] for p in row
               if sum(abs(a - b) for a, b in zip(p, colour)) <= tolerance)


def screenshot(tmp, svg_path):
    """Headless Chromium's PNG of the SVG: (root, panels by id, pixels), or None without chromium."""
    chromium = shutil.which("chromium")
    if not chromium:
        print("skip the screenshot: no chromium (Debian: apt-get install chromium; "
              "or scripts/setup --test)")
        return None
    root = ET.parse(svg_path).getroot()
    width, height = int(float(root.get("width"))), int(float(root.get("height")))
    panels = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("id")}
    png = tmp / (svg_path.parent.name + "-shot.png")
    p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--force-device-scale-factor=1",
                        f"--window-size={width},{height}", f"--screenshot={png}",
                        svg_path.as_uri()],
                       capture_output=True, text=True, timeout=90, cwd=tmp)
    assert p.returncode == 0 and png.exists(), p.stderr
    w, hgt, pixels = read_png(png)
    assert (w, hgt) == (width, height), (w, hgt)
    white = sum(1 for row in pixels for px in row if px == (255, 255, 255))
    assert white < w * hgt * 0.98, "the screenshot is blank"
    return root, panels, pixels


def extent(panel):
    """The rows of the panel's frame (its last rect outside the legend), inside the border."""
    frame = [r for r in panel.findall(SVG + "rect")][-1]
    top = float(frame.get("y"))
    return int(top) + 1, int(top + float(frame.get("height"))) - 1


def test_chromium_screenshot(tmp):
    """Chromium draws the SVG: the training curve's blue in the loss panel, the accuracy's
    green in the metric panel, and neither colour where the other panel is."""
    run_dir, _ = train(tmp, "binary", "logistic_regression", "run")
    shot = screenshot(tmp, run_dir / "loss.svg")
    if shot is None:
        return
    _, panels, pixels = shot
    loss_y, metric_y = extent(panels["loss-panel"]), extent(panels["metric-panel"])
    assert count_near(pixels, *loss_y, TRAIN_BLUE) > 100
    assert count_near(pixels, *metric_y, METRIC_GREEN) > 100
    assert count_near(pixels, *metric_y, TRAIN_BLUE) == 0
    assert count_near(pixels, *loss_y, METRIC_GREEN) == 0


def x_scale(root):
    """step -> pixel, from the x tick labels under the lowest panel (each at its step's x)."""
    ticks = [(float(e.get("x")), float(e.text)) for e in root.iter(SVG + "text")
             if e.get("class") == "xtick"]
    (x0, v0), (x1, v1) = ticks[0], ticks[-1]
    return lambda step: x0 + (x1 - x0) * (step - v0) / (v1 - v0)


def y_scale(panel):
    """value -> pixel in this panel, from its y tick labels (each 4 px under its grid line)."""
    ticks = [(float(e.get("y")) - 4, float(e.text)) for e in panel.iter(SVG + "text")
             if e.get("class") == "ytick"]
    log = "(log scale)" in texts(panel, "ylabel")[0]
    f = math.log10 if log else (lambda v: v)
    (y0, v0), (y1, v1) = ticks[0], ticks[-1]
    return lambda v: y0 + (y1 - y0) * (f(v) - f(v0)) / (f(v1) - f(v0))


def polyline(panel, series):
    found = [e for e in panel.iter(SVG + "polyline") if e.get("data-series") == series]
    assert len(found) == 1, series
    return [tuple(map(float, p.split(","))) for p in found[0].get("points").split()]


def near(points, x, y, tolerance=0.3):
    return any(abs(px - x) <= tolerance and abs(py - y) <= tolerance for px, py in points)


def count_near_columns(pixels, y0, y1, x0, x1, colour, tolerance=40):
    return sum(1 for row in pixels[y0:y1] for p in row[x0:x1]
               if sum(abs(a - b) for a, b in zip(p, colour)) <= tolerance)


def spiky_data(tmp):
    # 2,000 rows split by x0 + x1 > 0 with a margin, and one row far on the 1 side labelled 0:
    # with shuffle off the batch that holds it comes once an epoch, its loss many times the
    # others' (a spike of one row in loss.csv), and its gradient is bounded (logistic loss).
    rng = random.Random(5)
    lines = ["x0,x1,y"]
    for i in range(2000):
        if i == 777:
            lines.append("4.0,4.0,0")
            continue
        x0, x1 = rng.gauss(0, 1), rng.gauss(0, 1)
        y = int(x0 + x1 > 0)
        shift = 0.5 if y else -0.5
        lines.append(f"{x0 + shift:.6f},{x1 + shift:.6f},{y}")
    path = tmp / "spiky.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_long_log_thinned_keeps_spikes(tmp):
    """log_every 1 over 20,000 steps: loss.svg stays small, its training curve has at most 4
    points a pixel column (not one a row), and passes through every planted spike; Chromium
    draws the spikes."""
    cfg = h.write_config(tmp, f"""
version: 1
name: long-log
seed: 1
model: {{type: logistic_regression}}
data: {{path: {spiky_data(tmp)}, label: y}}
shards: {{count: 2}}
training:
  epochs: 40
  batch_size: 4
  shuffle: false
  optimizer: {{type: sgd, lr: 0.05}}
output: {{dir: {tmp}/run, log_every: {{steps: 1}}}}
""")
    r = h.run("run", cfg, "-q")
    assert r.code == 0, r
    with open(tmp / "run" / "loss.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 20000, len(rows)
    svg = tmp / "run" / "loss.svg"
    assert svg.stat().st_size < 300_000, svg.stat().st_size
    root = ET.parse(svg).getroot()
    loss = [g for g in root.iter(SVG + "g") if g.get("id") == "loss-panel"][0]
    points = polyline(loss, "train_loss")
    assert 700 <= len(points) <= 4 * 701, len(points)
    xs, ys = x_scale(root), y_scale(loss)
    losses = [float(r["train_loss"]) for r in rows]
    median = sorted(losses)[len(losses) // 2]
    # The planted spikes: rows far above the median and the highest within 50 steps (so the
    # highest of their pixel column, about 29 steps wide).
    spikes = [i for i, v in enumerate(losses)
              if v > 5 * median and v == max(losses[max(0, i - 50):i + 51])]
    assert len(spikes) >= 30, (len(spikes), median)
    for i in spikes:
        assert near(points, xs(int(rows[i]["step"])), ys(losses[i])), (rows[i], points[:5])
    low = losses.index(min(losses))
    assert near(points, xs(int(rows[low]["step"])), ys(losses[low]))
    shot = screenshot(tmp, svg)
    if shot is None:
        return
    _, _, pixels = shot
    # Each spike's tip is blue on screen (within 2 px of where it should be).
    for i in spikes:
        x, y = round(xs(int(rows[i]["step"]))), round(ys(losses[i]))
        assert count_near_columns(pixels, y - 2, y + 3, x - 2, x + 3, TRAIN_BLUE, 120) > 0, i


def test_early_stopping_and_lr_panel(tmp):
    """A run made to overfit, with early stopping and a warmup + cosine schedule: the best step
    and the stop are vertical lines at their steps in the loss, metric and learning-rate panels,
    named in the legend; the curves end at the stop; the rates are drawn at loss.csv's lr values;
    Chromium shows the best step's red line and the rate's brown curve where they belong."""
    from test_early_stopping import config, overfit_data
    cfg = config(tmp, overfit_data(tmp), patience=4)
    text = cfg.read_text().replace(
        "  early_stopping:",
        "  lr_schedule: {type: cosine, min_lr: 0.002, warmup_steps: 20, warmup_start: 0.1}\n"
        "  early_stopping:")
    cfg.write_text(text)
    r = h.run("run", cfg, "--json", "-q")
    assert r.code == 0, r
    es = r.json()["early_stopping"]
    best, stop = es["best_step"], es["stopped_at"]
    assert stop is not None and best < stop, es
    run_dir = tmp / "run"
    with open(run_dir / "loss.csv") as f:
        rows = list(csv.DictReader(f))
    assert int(rows[-1]["step"]) == stop
    svg = run_dir / "loss.svg"
    root = ET.parse(svg).getroot()
    panels = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("id")}
    assert list(panels) == ["loss-panel", "metric-panel", "lr-panel"], panels
    xs = x_scale(root)
    for panel in panels.values():
        marks = {e.get("data-marker"): e for e in panel.iter(SVG + "line")
                 if e.get("class") == "marker"}
        assert set(marks) == {"best_step", "stopped_at"}, marks
        assert int(marks["best_step"].get("data-step")) == best
        assert int(marks["stopped_at"].get("data-step")) == stop
        for name, step in (("best_step", best), ("stopped_at", stop)):
            assert abs(float(marks[name].get("x1")) - xs(step)) <= 0.2, (name, step)
    legend = " | ".join(e.text for e in panels["loss-panel"].iter(SVG + "text"))
    assert f"best val_loss at step {best} (the model written)" in legend, legend
    assert f"early stop at step {stop}" in legend, legend
    train = polyline(panels["loss-panel"], "train_loss")
    assert abs(train[-1][0] - xs(stop)) <= 0.2, (train[-1], stop)
    # The learning rate: linear, one point a row, each at its lr value.
    lr = panels["lr-panel"]
    assert texts(lr, "ylabel") == ["learning rate"]
    assert texts(lr, "xlabel") == ["step"] and texts(panels["metric-panel"], "xlabel") == []
    check_ticks(texts(lr, "ytick"), log=False)
    points, ys = polyline(lr, "lr"), y_scale(lr)
    assert len(points) == len(rows)
    for (px, py), row in zip(points, rows):
        assert abs(px - xs(int(row["step"]))) <= 0.2 and abs(py - ys(float(row["lr"]))) <= 0.2
    # The warmup rises, the cosine falls.
    rates = [float(row["lr"]) for row in rows]
    assert rates[0] < rates[3] and rates[-1] < max(rates), rates
    shot = screenshot(tmp, svg)
    if shot is None:
        return
    _, _, pixels = shot
    x = round(xs(best))
    for name in ("loss-panel", "metric-panel", "lr-panel"):
        y0, y1 = extent(panels[name])
        assert count_near_columns(pixels, y0, y1, x - 2, x + 3, BEST_RED) > 20, name
    lr_y, loss_y = extent(lr), extent(panels["loss-panel"])
    assert count_near(pixels, *lr_y, LR_BROWN) > 100
    assert count_near(pixels, *loss_y, LR_BROWN) == 0


if __name__ == "__main__":
    h.main([test_classification_svg_structure, test_regression_log_scale_and_mse_panel,
            test_chromium_screenshot, test_long_log_thinned_keeps_spikes,
            test_early_stopping_and_lr_panel])
