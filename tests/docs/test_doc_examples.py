"""Every example in README.md and docs/*.md works: each ```yaml block validates with the built
`disttrain`, and each ```sh / ```bash / ```console block runs, so that a doc example cannot break
unnoticed. docs/config.md is left out: `disttrain reference` writes it and
tests/unit/test_config_docs.cpp checks it.

The rules a page follows (docs/README.md, "Examples are tested", says the same for writers):

- Every fence names its language. Checked: yaml, yml, sh, bash, shell, console. Not run:
  text, json, csv. Indented code blocks are refused: they would hide a command from this test.
- The blocks of one page run in order, in one fresh folder holding copies of configs/, data/
  and scripts/, a link build/release/disttrain to the binary under test, and that binary first
  on PATH. A later block sees the files an earlier one made.
- An HTML comment on the lines right before a fence steers it:
    <!-- doc-test: skip: REASON -->   not run here, and the reason why (required)
    <!-- doc-test: file: NAME -->     the block is also saved as NAME in the folder
    <!-- doc-test: base: PATH -->     a YAML fragment goes on this config instead of the default
    <!-- doc-test: exit: N -->        the block (console: its last command) must exit N, not 0
- A YAML block with `version:` is a whole config: it must pass `disttrain validate`. Any other
  YAML block is a fragment: its top-level sections replace those of the base config (a small
  synthetic one, or `base:`), the result is saved next to the base and must validate.
- A sh/bash/shell block runs as one bash script with `set -euo pipefail`.
- A console block: lines starting with `$ ` are commands (a trailing backslash continues them),
  the lines after one are what it prints. Each printed line shown must appear, in order, in the
  command's real stdout and stderr, once numbers with a decimal point or of two digits or more
  are masked (timings, pids, steps), and this folder is read as /home/you/disttrain. A line
  `...` stands for lines left out, and `...` inside a line for text left out (a host name).
- Each block has TIMEOUT seconds; the whole test stays far below a minute.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMEOUT = 30
CHECKED = {"yaml", "yml", "sh", "bash", "shell", "console"}
NOT_RUN = {"text", "json", "csv"}
SHOWN_HOME = "/home/you/disttrain"  # the folder console output is shown from

BASE_CONFIG = """\
version: 1
name: doc-example
data: {synthetic: {kind: linear, rows: 1000, features: 5}}
shards: {count: 2}
training: {epochs: 1}
"""


class Block:
    def __init__(self, page, line, lang, text, marks):
        self.page, self.line, self.lang, self.text, self.marks = page, line, lang, text, marks

    def where(self):
        return f"{self.page}:{self.line}"


def parse_page(path, rel):
    """The fenced blocks of a page with their doc-test marks; problems of form as errors."""
    blocks, errors, marks, mark_line = [], [], {}, 0
    lines = path.read_text().splitlines()
    i, previous_blank = 0, True
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*<!--\s*doc-test:\s*(\w[\w-]*)\s*(?::\s*(.*?))?\s*-->\s*$", line)
        if m:
            key, value = m.group(1), (m.group(2) or "").strip()
            if key not in ("skip", "file", "base", "exit"):
                errors.append(f"{rel}:{i + 1}: unknown doc-test mark '{key}' (skip, file, base or exit)")
            elif not value:
                errors.append(f"{rel}:{i + 1}: doc-test {key} needs a value (skip: why it cannot run here)")
            marks[key], mark_line = value, i + 1
            i += 1
            continue
        fence = re.match(r"^(\s*)(```+|~~~+)\s*([\w-]*)", line)
        if fence:
            indent, ticks, lang = fence.groups()
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(ticks):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            if not lang:
                errors.append(f"{rel}:{start}: a fence without a language: say ```sh, ```yaml, ```text ...")
            elif lang not in CHECKED | NOT_RUN:
                errors.append(f"{rel}:{start}: fence language '{lang}' is neither checked "
                              f"({', '.join(sorted(CHECKED))}) nor known not to run ({', '.join(sorted(NOT_RUN))})")
            if lang in CHECKED:
                blocks.append(Block(rel, start, lang, "\n".join(body) + "\n", marks))
            elif marks:
                errors.append(f"{rel}:{mark_line}: doc-test mark on a ```{lang} block, which is never run")
            marks = {}
            i += 1
            previous_blank = False
            continue
        if line.startswith("    ") and line.strip() and previous_blank and not marks:
            errors.append(f"{rel}:{i + 1}: an indented code block; make it a fenced one (```sh, ```text ...) "
                          "so that this test sees it")
        if line.strip() and marks:
            errors.append(f"{rel}:{mark_line}: a doc-test mark must stand right before a fence")
            marks = {}
        previous_blank = not line.strip()
        i += 1
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
        if re.match(r"\w+:", target):
            continue  # http:, mailto:
        resolved = (path.parent / target).resolve()
        if not resolved.exists():
            errors.append(f"{rel}: link to {target}, which does not exist")
    return blocks, errors


def run_bash(script, cwd, env):
    """(exit code, stdout + stderr) of a bash script, killed with its process group at TIMEOUT."""
    proc = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever it left in the background
    except ProcessLookupError:
        pass
    return proc.returncode, out


def masked(text, folder):
    text = text.replace(str(folder), SHOWN_HOME)
    text = re.sub(r"\d+\.\d+(?:e[-+]?\d+)?|\d{2,}", "#", text)
    return [l.rstrip() for l in text.splitlines() if l.strip() and l.strip() != "..."]


def check_yaml(block, folder, env):
    text = block.text
    whole = re.search(r"^version\s*:", text, re.M) is not None
    if "file" in block.marks:
        (folder / block.marks["file"]).write_text(text)
    if whole:
        config = folder / block.marks.get("file", f"example-{block.line}.yaml")
        config.write_text(text)
    else:
        base_path = folder / block.marks["base"] if "base" in block.marks else None
        base = base_path.read_text() if base_path else BASE_CONFIG
        sections = {m.group(1) for m in re.finditer(r"^([A-Za-z_]\w*)\s*:", text, re.M)}
        kept, dropping = [], False
        for line in base.splitlines():
            top = re.match(r"^([A-Za-z_]\w*)\s*:", line)
            if top:
                dropping = top.group(1) in sections
            if not dropping:
                kept.append(line)
        config = (base_path.parent if base_path else folder) / f"example-{block.line}.yaml"
        config.write_text("\n".join(kept) + "\n" + text)
    want = int(block.marks.get("exit", 0))
    code, out = run_bash(f"disttrain validate {config.name}", config.parent, env)
    if code != want:
        what = "a whole config" if whole else "a fragment on " + block.marks.get("base", "the default base")
        return f"{block.where()}: ({what}) `disttrain validate` exited {code}, not {want}:\n{out}"
    return None


def check_shell(block, folder, env):
    want = int(block.marks.get("exit", 0))
    if "file" in block.marks:
        (folder / block.marks["file"]).write_text(block.text)
    if block.lang != "console":
        code, out = run_bash("set -euo pipefail\n" + block.text, folder, env)
        if code != want:
            return f"{block.where()}: exited {code}, not {want}:\n{out}"
        return None
    commands = []  # [command, [shown output lines]]
    continuing = False
    for line in block.text.splitlines():
        if continuing:
            commands[-1][0] += "\n" + line
            continuing = line.endswith("\\")
        elif line.startswith("$ "):
            commands.append([line[2:], []])
            continuing = line.endswith("\\")
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            return f"{block.where()}: a console block starts with a command (`$ ...`), not {line!r}"
    for n, (command, shown) in enumerate(commands):
        code, out = run_bash("set -o pipefail\n" + command, folder, env)
        expected = want if n == len(commands) - 1 else 0
        if code != expected:
            return f"{block.where()}: `{command}` exited {code}, not {expected}:\n{out}"
        actual = masked(out, folder)
        at = 0
        for line in masked("\n".join(shown), folder):
            pattern = re.compile(".*".join(map(re.escape, line.split("..."))))  # `...` elides
            while at < len(actual) and not pattern.fullmatch(actual[at]):
                at += 1
            if at == len(actual):
                return (f"{block.where()}: `{command}` did not print (numbers masked as #):\n  {line}\n"
                        f"it printed:\n" + "\n".join("  " + l for l in masked(out, folder)))
            at += 1
    return None


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("pages", nargs="*", help="only these pages (paths relative to --source)")
    ARGS = p.parse_args()
    source = Path(ARGS.source).resolve()
    binary = Path(ARGS.binary).resolve()
    pages = ARGS.pages or ["README.md"] + sorted(
        str(p.relative_to(source)) for p in (source / "docs").glob("*.md") if p.name != "config.md")

    failures, counts, start = [], {"checked": 0, "skipped": 0}, time.monotonic()
    for rel in pages:
        blocks, errors = parse_page(source / rel, rel)
        failures += errors
        with tempfile.TemporaryDirectory(prefix="disttrain-doc-") as tmp:
            folder = Path(tmp)
            for sub in ("configs", "data", "scripts"):
                shutil.copytree(source / sub, folder / sub)
            (folder / "build" / "release").mkdir(parents=True)
            (folder / "build" / "release" / "disttrain").symlink_to(binary)
            env = dict(os.environ, PATH=f"{binary.parent}{os.pathsep}{os.environ.get('PATH', '')}")
            for name in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
                         "PMI_SIZE", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "MASTER_ADDR", "MASTER_PORT"):
                env.pop(name, None)  # a launcher's variables would turn every `run` into a rank
            for block in blocks:
                if "skip" in block.marks:
                    counts["skipped"] += 1
                    print(f"skip {block.where()} ({block.lang}): {block.marks['skip']}")
                    continue
                counts["checked"] += 1
                t = time.monotonic()
                check = check_yaml if block.lang in ("yaml", "yml") else check_shell
                error = check(block, folder, env)
                status = "FAIL" if error else "ok"
                print(f"{status:4} {block.where()} ({block.lang}) {time.monotonic() - t:.2f} s")
                if error:
                    failures.append(error)
    print(f"{counts['checked']} blocks checked, {counts['skipped']} skipped, "
          f"{len(failures)} failures, {time.monotonic() - start:.1f} s")
    for f in failures:
        print("\n" + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
