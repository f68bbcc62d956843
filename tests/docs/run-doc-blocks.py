#!/usr/bin/env python3
"""tests/docs/run-doc-blocks.py: every code block of README.md and docs/*.md, run.

    run-doc-blocks.py SOURCE_DIR BUILD_DIR SCRATCH_DIR [--list] [--only NAME.md ...]

What it does, in order:

1. Links. Every relative link of those files ([text](path) and [text](path#anchor),
   outside code) must name a file or folder of the tree, and an anchor must be a heading
   of the file it names (GitHub's slugs).
2. Install. BUILD_DIR is installed into SCRATCH_DIR/prefix (`cmake --install`, as a user
   installs plume), which the blocks then use: its pkg-config file, its `plume` command,
   its Python module.
3. Blocks, file by file, in the order they appear, each file's blocks in one scratch
   folder of their own (SCRATCH_DIR/work/NAME), so that a block can use the files an
   earlier block of the same page made, as a reader following the page would:
   - ```c: written to a file (block-LINE.c, or the name of a `<!-- file: NAME.c -->`
     marker on the line before the block), compiled with `cc -std=c11 -Wall -Wextra
     -Werror` and `pkg-config --cflags --libs plume` of the installed prefix, with an
     rpath to its library (no LD_LIBRARY_PATH is set), and run; it must exit 0;
   - ```python: run by a python3 with numpy (the installed module on PYTHONPATH, as the
     pages say to set it); it must exit 0;
   - ```sh / ```bash / ```shell: run by `bash -e -o pipefail`; it must exit 0. The
     folder holds `build`, a link to BUILD_DIR, so that `build/apps/plume` and
     `build/benchmarks/...` work as in a checkout; `plume` of the prefix is on PATH;
   - any other language (text, json, console output, none) is not run.
   HOME is SCRATCH_DIR/home for every block (so `~/plume`, the calibration cache and the
   tuning tables stay in the scratch folder).
   A block that is not complete by itself says so on the line before it:
   `<!-- fragment -->`; a complete command that a test must not run (it installs
   packages, takes minutes, needs a GPU or several machines) says why:
   `<!-- not-run: REASON -->`. Both are listed in the output, never silently skipped.

Exit 0 when every link resolves and every block that runs exits 0; 1 otherwise, with each
failing block's file, line, command and the end of its output. --list only lists the
blocks and what would happen to each. PLUME_SANITIZE (as the install test has it) builds
the C blocks with the same sanitizers and leaves the Python blocks out (python3 cannot load
a sanitized libplume), saying so.
"""
import os
import re
import shutil
import subprocess
import sys
import time

FENCE = re.compile(r"^( {0,3})(```+|~~~+)\s*([\w+-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(fragment|not-run:\s*(.+?)|file:\s*(\S+))\s*-->\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
LANGUAGES = {"c": "c", "python": "python", "py": "python", "sh": "sh", "bash": "sh",
             "shell": "sh"}
TIMEOUT_S = 600


class Block:
    def __init__(self, path, line, lang, text, marker):
        self.path, self.line, self.lang, self.text = path, line, lang, text
        self.kind = LANGUAGES.get(lang.lower())
        self.fragment = self.not_run = self.file = None
        if marker:
            if marker.group(1) == "fragment":
                self.fragment = True
            elif marker.group(2):
                self.not_run = marker.group(2)
            else:
                self.file = marker.group(3)

    def where(self, source):
        return f"{os.path.relpath(self.path, source)}:{self.line}"


def parse(path):
    """The fenced blocks of a Markdown file, and its lines outside them."""
    blocks, prose = [], []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    k = 0
    while k < len(lines):
        m = FENCE.match(lines[k])
        if not m:
            prose.append((k + 1, lines[k]))
            k += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3)
        marker = MARKER.match(lines[k - 1]) if k > 0 else None
        body, j = [], k + 1
        while j < len(lines) and not re.match(r"^ {0,3}" + re.escape(fence[0]) + "{%d,}\\s*$"
                                              % len(fence), lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if j == len(lines):
            raise SystemExit(f"{path}:{k + 1}: a code block that is never closed")
        blocks.append(Block(path, k + 1, lang, "\n".join(body) + "\n", marker))
        k = j + 1
    return blocks, prose


def slug(heading, seen):
    text = INLINE_CODE.sub(lambda m: m.group(0)[1:-1], heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    s = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
    n = seen.get(s, 0)
    seen[s] = n + 1
    return s if n == 0 else f"{s}-{n}"


def anchors(path, cache):
    if path not in cache:
        seen, found = {}, set()
        for _, line in parse(path)[1]:
            m = HEADING.match(line)
            if m:
                found.add(slug(m.group(1), seen))
        cache[path] = found
    return cache[path]


def check_links(files, source):
    problems, cache, count = [], {}, 0
    for path in files:
        for number, line in parse(path)[1]:
            for target in LINK.findall(INLINE_CODE.sub("", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                    continue
                count += 1
                where = f"{os.path.relpath(path, source)}:{number}"
                file_part, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                rel = os.path.relpath(resolved, source)
                if not os.path.exists(resolved):
                    problems.append(f"{where}: {target}: no such file or folder ({rel})")
                    continue
                if anchor and resolved.endswith(".md") and anchor not in anchors(resolved, cache):
                    problems.append(f"{where}: {target}: no heading '#{anchor}' in {rel}")
    return count, problems


def python_with_numpy():
    for candidate in [os.environ.get("PYTHON"), "python3", "/usr/bin/python3"]:
        if candidate and shutil.which(candidate) and subprocess.run(
                [candidate, "-c", "import numpy"], capture_output=True).returncode == 0:
            return candidate
    return None


def install(build, prefix):
    cmake = os.environ.get("CMAKE", "cmake")
    subprocess.run([cmake, "--install", build, "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    for folder, _, names in os.walk(prefix):
        if "plume.pc" in names and folder.endswith("pkgconfig"):
            return os.path.dirname(folder)
    raise SystemExit(f"run-doc-blocks: no pkgconfig/plume.pc installed under {prefix}")


def run(cmd, cwd, env, where, log):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
        output, code = p.stdout.decode(errors="replace"), p.returncode
    except subprocess.TimeoutExpired as e:
        output, code = (e.stdout or b"").decode(errors="replace"), f"timeout {TIMEOUT_S} s"
    seconds = time.monotonic() - start
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"==== {where}: {' '.join(cmd)} -> {code}\n{output}\n")
    return code, output, seconds


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    only = [a for a in argv[argv.index("--only") + 1:]] if "--only" in argv else []
    if "--only" in argv:
        args = args[:3]
    if len(args) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    source, build, scratch = (os.path.abspath(a) for a in args)
    listing = "--list" in argv
    files = [os.path.join(source, "README.md")] + sorted(
        os.path.join(source, "docs", n) for n in os.listdir(os.path.join(source, "docs"))
        if n.endswith(".md"))

    count, problems = check_links(files, source)
    print(f"links: {count} relative links in {len(files)} files, {len(problems)} broken")
    for p in problems:
        print(f"  BROKEN {p}")

    if only:
        files = [f for f in files if os.path.basename(f) in only]
    blocks = [b for f in files for b in parse(f)[0]]
    sanitize = os.environ.get("PLUME_SANITIZE", "")
    python = None if sanitize else python_with_numpy()

    if not listing:
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(os.path.join(scratch, "home"))
        libdir = install(build, os.path.join(scratch, "prefix"))
        prefix = os.path.join(scratch, "prefix")
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_LIBRARY_PATH", "PLUME_LIBRARY", "PYTHONPATH", "XDG_CACHE_HOME",
                            "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR")}
        # `python3` in a shell block is the python3 with numpy that runs the Python blocks.
        shims = os.path.join(scratch, "bin")
        os.makedirs(shims)
        if python:
            os.symlink(shutil.which(python), os.path.join(shims, "python3"))
        env.update(HOME=os.path.join(scratch, "home"),
                   PATH=os.pathsep.join([shims, os.path.join(prefix, "bin"), env.get("PATH", "")]),
                   PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"),
                   PYTHONPATH=os.path.join(prefix, "python"))
        log = os.path.join(scratch, "blocks.log")
        cc = os.environ.get("CC", "cc")
        pc_flags = subprocess.run(["pkg-config", "--cflags", "--libs", "plume"], env=env,
                                  check=True, capture_output=True, text=True).stdout.split()
        san = [f"-fsanitize={sanitize}"] if sanitize else []

    ran = failed = 0
    total_start = time.monotonic()
    for b in blocks:
        where = b.where(source)
        if b.kind is None:
            continue
        if b.fragment:
            print(f"skip     {where} {b.lang}: a fragment")
            continue
        if b.not_run:
            print(f"not run  {where} {b.lang}: {b.not_run}")
            continue
        if b.kind == "python" and not python:
            print(f"skip     {where} python: " + (f"libplume is built with -fsanitize={sanitize}"
                                                   if sanitize else "no python3 with numpy"))
            continue
        if listing:
            print(f"run      {where} {b.lang}")
            continue
        folder = os.path.join(scratch, "work", os.path.splitext(os.path.basename(b.path))[0])
        if not os.path.isdir(folder):
            os.makedirs(folder)
            os.symlink(build, os.path.join(folder, "build"))
        name = b.file or f"block-{b.line}." + {"c": "c", "python": "py", "sh": "sh"}[b.kind]
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(b.text)
        if b.kind == "c":
            exe = os.path.join(folder, os.path.splitext(name)[0])
            code, output, seconds = run(
                [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *san, name, "-o", exe, *pc_flags,
                 f"-Wl,-rpath,{libdir}"], folder, env, where, log)
            if code == 0:
                code, more, s2 = run([exe], folder, env, where, log)
                output, seconds = output + more, seconds + s2
        elif b.kind == "python":
            code, output, seconds = run([python, name], folder, env, where, log)
        else:
            code, output, seconds = run(["bash", "-e", "-o", "pipefail", name], folder, env,
                                        where, log)
        ran += 1
        if code == 0:
            print(f"ok       {where} {b.lang} ({seconds:.1f} s)")
        else:
            failed += 1
            tail = "\n".join(output.rstrip("\n").split("\n")[-40:])
            print(f"FAIL     {where} {b.lang}: exit {code} after {seconds:.1f} s "
                  f"(in {folder}, {name}):\n{tail}\n")
        sys.stdout.flush()
    if not listing:
        print(f"blocks: {ran} run, {failed} failed, in {time.monotonic() - total_start:.1f} s "
              f"(every block's output: {log})")
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
