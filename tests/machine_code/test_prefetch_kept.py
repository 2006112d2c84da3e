#!/usr/bin/env python3
"""The hot loops that fetch memory ahead still do so in the built binary.

GCC sees no side effect in __builtin_prefetch: a function whose only effect is prefetching is
found "pure" and every call to it that was not inlined first is deleted, silently (compaction's
row prefetch never ran until 2026-11-28; base/memory.hpp, DT_PREFETCH). Nothing a run outputs
can show a lost prefetch, only its speed, so this reads the machine code: each function below
must hold at least one prefetch instruction (x86-64 prefetch*, arm64 prfm).
"""

import argparse
import platform
import re
import shutil
import subprocess
import sys

# Demangled names (objdump -C), matched at the start of the symbol, and the fewest prefetch
# instructions each must hold: the loops that read far apart in large buffers and ask for the
# lines ahead. compact() has two of its key index and three of its rows' (bounds, keys, values).
MUST_PREFETCH = [
    ("dt::models::compact(", 3),                    # a shuffled sparse batch's rows
    ("dt::models::gather(", 1),                     # a shuffled dense batch's rows (MLP)
    ("dt::models::detail::(anonymous namespace)::Mlp<float>::batch_loss_and_gradient(", 1),
    ("dt::models::detail::AffineModel::pass(", 1),  # linear models' rows, read in place
    ("dt::models::gather_params(", 1),              # a wide model's weights at a batch's keys
    ("dt::models::RowWarmer::slice(", 1),           # the next batch's rows during a wait
    ("dt::modes::SparseStar::step_message(", 1),    # the weights of a worker's next keys
]


def prefetches_by_function(binary):
    objdump = shutil.which("objdump")
    if objdump is None:
        sys.exit("test_prefetch_kept: objdump not found (Debian package binutils, which the "
                 "compiler brings): install it to run this test")
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-C", binary], check=True,
                          capture_output=True, text=True).stdout
    mnemonic = re.compile(r"\t(prefetch\w*|prfm)\s")
    counts, current = {}, None
    for line in text.splitlines():
        if line.endswith(">:"):
            current = line[line.index("<") + 1:-2]
            counts.setdefault(current, 0)
        elif current is not None and mnemonic.search(line):
            counts[current] += 1
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    if platform.machine() not in ("x86_64", "aarch64"):
        print(f"skipped: no prefetch mnemonics known for {platform.machine()}")
        return 0
    counts = prefetches_by_function(args.binary)
    failed = []
    for name, fewest in MUST_PREFETCH:
        found = {symbol: n for symbol, n in counts.items() if symbol.startswith(name)}
        if not found:
            failed.append(f"{name}...: no such function in {args.binary} (renamed? update "
                          "MUST_PREFETCH in this test)")
        elif sum(found.values()) < fewest:
            failed.append(f"{name}...: {sum(found.values())} prefetch instruction(s), at least "
                          f"{fewest} expected (a prefetch helper that is not always inlined is "
                          "deleted by GCC: use DT_PREFETCH, base/memory.hpp)")
        else:
            print(f"ok: {name}... {sum(found.values())} prefetch instruction(s)")
    for line in failed:
        print(f"FAIL: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
