#!/usr/bin/env bash
# Regenerates the sample datasets in data/ with `disttrain gen` (deterministic: same bytes on
# every machine). Usage: scripts/make_data.sh [path/to/disttrain]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/disttrain}
"$bin" gen linear   --rows 2000 --features 8 --noise 0.5 --seed 1 > data/linear.csv
"$bin" gen logistic --rows 2000 --features 5 --noise 0   --seed 2 > data/logistic.csv
"$bin" gen blobs    --rows 1500 --features 4 --classes 3 --noise 1.0 --seed 3 > data/blobs.csv
"$bin" gen clicks   --rows 1000 --seed 1 > data/clicks.csv  # configs/clicks.yaml (data.hash)
# configs/numpy.yaml's arrays: blobs.csv's features (float64) and classes (int64) as .npy files
# (numpy.save writes the same bytes on every machine). Debian's python3 has numpy.
/usr/bin/python3 - <<'PY'
import numpy as np
table = np.loadtxt("data/blobs.csv", delimiter=",", skiprows=1)
np.save("data/blobs_x.npy", np.ascontiguousarray(table[:, :-1]))
np.save("data/blobs_y.npy", table[:, -1].astype("<i8"))
PY
/usr/bin/python3 - <<'PY'
# data/shop.csv (configs/categorical.yaml): a text ID, two categorical columns (color: 4 values,
# one-hot; city: 40 values, hashed), two numbers, and a 0/1 label that depends on all of them.
# A fixed linear congruential generator, so the bytes are the same on every machine.
state = 12345
def uniform():
    global state
    state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
    return (state >> 11) / 2**53
colors = {"red": 1.5, "green": -1.0, "blue": 0.5, "black": -2.0}
cities = ["city%02d" % i for i in range(40)]
with open("data/shop.csv", "w") as out:
    out.write("id,color,price,city,age,bought\n")
    for i in range(1200):
        color = list(colors)[int(uniform() * 4)]
        city = cities[int(uniform() * 40)]
        price = round(uniform() * 100, 2)
        age = int(18 + uniform() * 60)
        score = colors[color] - 0.03 * (price - 50) + (0.8 if int(city[4:]) % 3 == 0 else -0.4) \
            + 0.02 * (age - 45) + (uniform() - 0.5) * 1.5
        out.write("u%05d,%s,%.2f,%s,%d,%d\n" % (i, color, price, city, age, 1 if score > 0 else 0))
PY
# configs/missing.yaml's data: data/linear.csv with holes, about one feature cell in ten missing
# (empty, NA or ?, by a fixed pattern of row and column; the labels are all there).
/usr/bin/python3 - <<'PY'
lines = open("data/linear.csv").read().splitlines()
out = [lines[0]]
for r, line in enumerate(lines[1:]):
    cells = line.split(",")
    for c in range(len(cells) - 1):
        k = (r * 7 + c * 13) % 29
        if k < 3:
            cells[c] = ("", "NA", "?")[k]
    out.append(",".join(cells))
open("data/linear_missing.csv", "w").write("\n".join(out) + "\n")
PY
# configs/libsvm.yaml's LIBSVM file: data/logistic.csv's rows as svmlight writes them (labels
# -1/+1, 1-based indices), the cells with |value| < 0.3 left out as zeros, so rows are sparse.
/usr/bin/python3 - <<'PY'
import csv
with open("data/logistic.csv") as f, open("data/logistic.svm", "w") as out:
    out.write("# data/logistic.csv as LIBSVM (scripts/make_data.sh)\n")
    for row in list(csv.reader(f))[1:]:
        *x, y = row
        pairs = " ".join(f"{i + 1}:{v}" for i, v in enumerate(x) if abs(float(v)) >= 0.3)
        out.write(f"{'+1' if y == '1' else '-1'} {pairs}\n")
PY
# configs/sparse_libsvm.yaml's file: 1500 short "documents" as bags of words over a vocabulary
# of 2^17 word ids (1-based), in 3 topics: each row has 3-8 words of its topic's own 400 and
# 2-6 of 2000 words common to all (a word's value is its count), the topic as the label.
/usr/bin/python3 - <<'PY'
import random
rng = random.Random(7)
width = 2 ** 17
ids = rng.sample(range(1, width + 1), 3 * 400 + 2000)
topics = [ids[t * 400:(t + 1) * 400] for t in range(3)]
common = ids[1200:]
with open("data/topics.svm", "w") as out:
    out.write("# bags of words in 3 topics over 2^17 word ids (scripts/make_data.sh)\n")
    for _ in range(1500):
        topic = rng.randrange(3)
        words = [rng.choice(topics[topic]) for _ in range(rng.randint(3, 8))]
        words += [rng.choice(common) for _ in range(rng.randint(2, 6))]
        counts = {}
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        pairs = " ".join(f"{w}:{counts[w]}" for w in sorted(counts))
        out.write(f"{topic} {pairs}\n")
PY
# configs/compressed_tsv.yaml's file: data/blobs.csv tab-separated and compressed with zstd
# (the delimiter and the compression are both detected). zstd writes the same bytes every time.
tr , '\t' < data/blobs.csv | zstd -q -19 --no-progress -c > data/blobs.tsv.zst
# The pre-trained model of configs/fine_tune.yaml: 2 epochs of configs/softmax_regression.yaml
# (which then misses that config's own accuracy gate: exit 1 is expected).
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
"$bin" run configs/softmax_regression.yaml -q --set training.epochs=2 --set "output.dir=$run" || [[ $? == 1 ]]
cp "$run/model.json" data/models/blobs_softmax.json
echo "wrote data/shop.csv data/linear.csv data/logistic.csv data/blobs.csv data/clicks.csv data/blobs_x.npy data/blobs_y.npy data/linear_missing.csv data/logistic.svm data/topics.svm data/blobs.tsv.zst data/models/blobs_softmax.json"
