"""loss.svg: parsed as XML, its ticks are round numbers (1, 2 or 5 times a power of ten, and
multiples of their step), it has grid lines, labelled axes, a loss panel and a validation-metric
panel, and each curve has as many points as loss.csv has rows for it (the last row's partial
window drawn apart); a log y axis when the loss spans more than kLogRatio (50); the same run
gives the same bytes. Then headless Chromium renders it and the screenshot has the curves' colours
in both panels."""

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


def test_chromium_screenshot(tmp):
    """Chromium draws the SVG: the training curve's blue in the loss panel, the accuracy's
    green in the metric panel, and neither colour where the other panel is."""
    chromium = shutil.which("chromium")
    if not chromium:
        print("skip test_chromium_screenshot: no chromium (Debian: apt-get install chromium; "
              "or scripts/setup --test)")
        return
    run_dir, _ = train(tmp, "binary", "logistic_regression", "run")
    root = ET.parse(run_dir / "loss.svg").getroot()
    width, height = int(float(root.get("width"))), int(float(root.get("height")))
    panels = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("id")}

    def extent(panel):  # the panel's frame: its last rect outside the legend
        frame = [r for r in panel.findall(SVG + "rect")][-1]
        top = float(frame.get("y"))
        return int(top) + 1, int(top + float(frame.get("height"))) - 1

    png = tmp / "shot.png"
    p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--force-device-scale-factor=1",
                        f"--window-size={width},{height}", f"--screenshot={png}",
                        (run_dir / "loss.svg").as_uri()],
                       capture_output=True, text=True, timeout=90, cwd=tmp)
    assert p.returncode == 0 and png.exists(), p.stderr
    w, hgt, pixels = read_png(png)
    assert (w, hgt) == (width, height), (w, hgt)
    white = sum(1 for row in pixels for px in row if px == (255, 255, 255))
    assert white < w * hgt * 0.98, "the screenshot is blank"
    loss_y, metric_y = extent(panels["loss-panel"]), extent(panels["metric-panel"])
    assert count_near(pixels, *loss_y, TRAIN_BLUE) > 100
    assert count_near(pixels, *metric_y, METRIC_GREEN) > 100
    assert count_near(pixels, *metric_y, TRAIN_BLUE) == 0
    assert count_near(pixels, *loss_y, METRIC_GREEN) == 0


if __name__ == "__main__":
    h.main([test_classification_svg_structure, test_regression_log_scale_and_mse_panel,
            test_chromium_screenshot])
