#!/usr/bin/python3
"""The layering of the source tree, checked from the code's own includes (docs/architecture.md).

Every source folder has one front file: the file whose opening comment says what lives in the
folder and, on a line starting "May use:", which folders (a trailing slash: the folder and
everything under it) or single headers its files may include. That comment is the rule: this
test reads it and fails on any include it does not allow, so the comment cannot drift from the
code. A folder without a front file of its own (cli/commands/) follows its parent's. Files may
always include files of their own folder.

Also checked: only transports/ includes ZeroMQ; nothing includes cli/ but cli/; every quoted
include names a file that exists; no .cpp is over 500 lines and no header over 250 (tests
included).

    /usr/bin/python3 tests/layering/test_layering.py [--source DIR]
Exit 0 when the tree keeps every rule; 1 with one line per broken rule.
"""

import argparse
import re
import sys
from pathlib import Path

SOURCE_ROOTS = ("base", "cli", "core", "transports")
LIMITS = {".cpp": 500, ".hpp": 250}
ZMQ_HEADERS = re.compile(r'#include\s*<(zmq\.h|zmq\.hpp|zmq_addon\.hpp)>')
QUOTED = re.compile(r'^\s*#include\s*"([^"]+)"', re.M)
TOKEN = re.compile(r"\b(?:base|cli|core|transports)(?:/[\w.]*\w)*/?")


def opening_comment(text):
    """The // lines at the top of a file (after #pragma once), joined."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#pragma"):
            continue
        if not stripped.startswith("//"):
            break
        lines.append(stripped[2:].strip())
    return lines


def may_use(comment):
    """The tokens of the "May use:" paragraph, or None when the comment has none. Text in
    parentheses explains and is not read."""
    for i, line in enumerate(comment):
        if line.startswith("May use:"):
            paragraph = [line[len("May use:"):]]
            for rest in comment[i + 1:]:
                if not rest:
                    break
                paragraph.append(rest)
            text = re.sub(r"\([^)]*\)", "", " ".join(paragraph))
            return TOKEN.findall(text)
    return None


def allowed(target, rules):
    for rule in rules:
        if rule.endswith("/"):
            if target.startswith(rule):
                return True
        elif target == rule:
            return True
    return False


def check(root):
    problems = []
    files = sorted(p for r in SOURCE_ROOTS for p in (root / r).rglob("*")
                   if p.suffix in LIMITS and p.is_file())
    # Front files: folder -> (front file, rules).
    fronts = {}
    for path in files:
        rules = may_use(opening_comment(path.read_text()))
        if rules is None:
            continue
        folder = path.parent.relative_to(root).as_posix()
        if folder in fronts:
            problems.append(f"{folder}/: two front files ({fronts[folder][0]} and "
                            f"{path.relative_to(root)}): keep one 'May use:' per folder")
        fronts[folder] = (path.relative_to(root).as_posix(), rules)
    folders = sorted({p.parent.relative_to(root).as_posix() for p in files})
    for folder in folders:
        if not any(folder == f or folder.startswith(f + "/") for f in fronts):
            problems.append(f"{folder}/: no front file (a file whose opening comment says what "
                            "lives here and has a 'May use:' line)")

    def rules_for(folder):
        while folder:
            if folder in fronts:
                return fronts[folder][1]
            folder = folder.rpartition("/")[0]
        return []

    for path in files:
        rel = path.relative_to(root).as_posix()
        folder = path.parent.relative_to(root).as_posix()
        text = path.read_text()
        lines = text.count("\n")
        if lines > LIMITS[path.suffix]:
            problems.append(f"{rel}: {lines} lines, over the {LIMITS[path.suffix]} a "
                            f"{path.suffix} may have: split it by what its classes do")
        if ZMQ_HEADERS.search(text) and not rel.startswith("transports/"):
            problems.append(f"{rel}: includes ZeroMQ; only transports/ may")
        rules = rules_for(folder)
        for target in QUOTED.findall(text):
            if not (root / target).is_file():
                problems.append(f"{rel}: includes \"{target}\", which does not exist")
                continue
            if Path(target).parent.as_posix() == folder:
                continue
            if target.startswith("cli/") and not rel.startswith("cli/"):
                problems.append(f"{rel}: includes {target}; nothing outside cli/ may")
            elif not allowed(target, rules):
                front = next((fronts[f][0] for f in sorted(fronts, key=len, reverse=True)
                              if folder == f or folder.startswith(f + "/")), "?")
                problems.append(f"{rel}: includes {target}, which {folder}/ may not use "
                                f"(its rule: 'May use:' in {front})")
    for path in sorted(p for p in (root / "tests").rglob("*") if p.suffix in LIMITS):
        lines = path.read_text().count("\n")
        if lines > LIMITS[path.suffix]:
            problems.append(f"{path.relative_to(root)}: {lines} lines, over the "
                            f"{LIMITS[path.suffix]} a {path.suffix} may have: split it by topic")
    return problems, len(files), len(fronts)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source", default=str(Path(__file__).resolve().parent.parent.parent))
    args = p.parse_args()
    problems, count, fronts = check(Path(args.source))
    for problem in problems:
        print(problem)
    print(f"{count} files, {fronts} front files: "
          + ("layering kept" if not problems else f"{len(problems)} rule(s) broken"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
