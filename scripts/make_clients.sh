#!/usr/bin/env bash
# Writes data/clients/*.csv for configs/federated_files.yaml (and *.npy for federated_arrays.yaml): data/blobs.csv's rows cut into
# three client files of different sizes (600, 500 and 400 rows), each with the full header, as
# three sites would each hold their own records. Deterministic: regenerate after make_data.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p data/clients
awk -F, 'NR == 1 { header = $0; next }
         { n = NR - 1; f = n <= 600 ? "a" : (n <= 1100 ? "b" : "c")
           file = "data/clients/site_" f ".csv"
           if (!(file in seen)) { print header > file; seen[file] = 1 }
           print > file }' data/blobs.csv
# The same three files as float64 .npy arrays, the label the last column (for
# configs/federated_arrays.yaml): Debian's /usr/bin/python3 with numpy.
/usr/bin/python3 - <<'PY'
import numpy as np
for site in "abc":
    rows = np.loadtxt(f"data/clients/site_{site}.csv", delimiter=",", skiprows=1, ndmin=2)
    np.save(f"data/clients/site_{site}.npy", np.ascontiguousarray(rows, dtype="<f8"))
PY
echo "wrote data/clients/site_{a,b,c}.csv and data/clients/site_{a,b,c}.npy"
