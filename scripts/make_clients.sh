#!/usr/bin/env bash
# Writes data/clients/*.csv for configs/federated_files.yaml: data/blobs.csv's rows cut into
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
echo "wrote data/clients/site_a.csv data/clients/site_b.csv data/clients/site_c.csv"
