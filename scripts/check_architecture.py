#!/usr/bin/env python3
"""Checks src/ against the module map of docs/architecture.md and the house style's size rule.

1. Includes: every `#include "module/..."` in src/ must go to the file's own module or to a
   module below it in the map (MODULES, bottom to top); anything else is a violation, printed as
   file:line: what includes what, and what that module may use.
2. Function length: no function body in src/ longer than --max-lines lines (default 100),
   counted from the line of its opening brace to its closing brace; lambdas count towards the
   function around them.
3. Docs size: no page under docs/ longer than 500 lines, and docs/ under 4,800 lines in all
   (reference pages; measurements live under reports/).
4. The exchange protocol stays small: `class ExchangeStrategy` (src/dist/exchange_strategy.h)
   has at most MAX_EXCHANGE_VIRTUALS virtual members, its destructor counted; what only some
   strategies do is a capability interface of its own (dist/remote_model.h and the like).

Usage: scripts/check_architecture.py [--root REPO] [--max-lines N] [--quiet]
Exit status: 0 when both checks pass, 1 otherwise. tests/python/test_architecture.py runs it.
"""
import argparse
import os
import re
import sys

# Module -> the modules it may include (besides itself). Bottom to top; keep in step with the
# table in docs/architecture.md.
MODULES = {
    "core": [],
    "backend": ["core"],                       # the op table, descriptors, tensors, registry
    "backend/ref": ["backend", "core"],
    "backend/cpu": ["backend", "core"],
    "backend/cuda": ["backend", "core"],
    "backend/factory": ["backend/ref", "backend/cpu", "backend/cuda", "backend", "core"],
    "nn": ["backend", "core"],
    "hdf5": ["core"],                          # HDF5 error text, quiet errors, ids
    "data": ["hdf5", "core"],
    "dist": ["core"],
    "metrics": ["hdf5", "core"],
    "config": ["nn", "backend", "data", "dist", "core"],
    "sweep": ["config", "metrics", "core"],
    "perfmodel": ["config", "nn", "backend", "backend/factory", "dist", "core"],
    "train": ["config", "nn", "backend", "backend/factory", "data", "dist", "metrics", "core"],
    "sim": ["app", "perfmodel", "train", "sweep", "config", "nn", "backend", "backend/factory", "data", "dist",
            "metrics", "core"],
    "app": ["train", "sweep", "perfmodel", "config", "nn", "backend", "backend/factory", "data", "dist",
            "metrics", "core"],
}
# Files of src/backend/ that are the factory on top of the concrete backends.
FACTORY_FILES = {"backend/backend_factory.h", "backend/backend_factory.cpp"}


def module_of(rel):
    """Module of a path relative to src/ ("backend/cpu/cpu_backend.cpp" -> "backend/cpu")."""
    if rel in FACTORY_FILES:
        return "backend/factory"
    parts = rel.split("/")
    if parts[0] == "backend" and len(parts) > 2:
        return "backend/" + parts[1]
    if parts[0] == "nn":
        return "nn"
    return parts[0]


def source_files(src):
    for dirpath, _, names in os.walk(src):
        for name in sorted(names):
            if name.endswith((".h", ".cpp", ".cu", ".cuh", ".h.in")):
                yield os.path.join(dirpath, name)


def check_includes(src):
    problems = []
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for path in source_files(src):
        rel = os.path.relpath(path, src)
        mine = module_of(rel)
        if mine not in MODULES:
            problems.append(f"{rel}: module '{mine}' is not in the module map (scripts/check_architecture.py)")
            continue
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                m = include.match(line)
                if not m:
                    continue
                target = m.group(1)
                if "/" not in target:
                    continue  # a generated or same-directory header
                theirs = module_of(target)
                if theirs == mine or theirs in MODULES[mine]:
                    continue
                if target.startswith("core/build_info"):
                    continue  # generated into the build tree; part of core
                problems.append(f"src/{rel}:{lineno}: {mine} includes {target} ({theirs}); "
                                f"{mine} may use: {', '.join(MODULES[mine]) or 'nothing but itself'}")
    return problems


def strip_code(text):
    """Blanks comments, string and char literals (keeping newlines) so braces can be counted."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_functions(path, max_lines):
    """(name, first line, lines) of every function body longer than max_lines."""
    with open(path, encoding="utf-8") as f:
        code = strip_code(f.read())
    code = re.sub(r"^\s*#.*$", "", code, flags=re.M)  # preprocessor lines
    found, stack, header_start, line = [], [], 0, 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";":
            header_start = i + 1
        elif c == "{":
            header = code[header_start:i]
            kind = classify(header, stack)
            stack.append((kind, line, header))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, start, header = stack.pop()
                if kind == "func" and line - start + 1 > max_lines:
                    name = re.findall(r"([~\w:]+)\s*\(", header)
                    found.append((name[0] if name else "?", start, line - start + 1))
            header_start = i + 1
    return found


def classify(header, stack):
    if stack and stack[-1][0] in ("func", "block"):
        return "block"
    h = " ".join(header.split())
    if re.search(r"\bnamespace\b|extern \"C\"", h):
        return "ns"
    if h.rstrip().endswith("=") or re.search(r"=\s*$", h):
        return "block"  # an initializer list
    if ")" in h:
        return "func"
    if re.search(r"\b(class|struct|union|enum)\b", h):
        return "class"
    return "block"


def check_lengths(src, max_lines):
    problems = []
    for path in source_files(src):
        if not path.endswith((".cpp", ".h", ".cu")):
            continue
        for name, start, lines in long_functions(path, max_lines):
            problems.append(f"src/{os.path.relpath(path, src)}:{start}: function {name} is {lines} lines "
                            f"(at most {max_lines}): split it into named steps")
    return problems


DOCS_MAX_PAGE_LINES = 500    # one page per topic: reference, not a lab notebook (issue 37)
DOCS_MAX_TOTAL_LINES = 4800  # all of docs/ together; measurements live under reports/


def docs_pages(docs):
    """Every .md page under docs/ (subfolders included), with its line count."""
    pages = []
    for dirpath, _, names in os.walk(docs):
        for name in sorted(names):
            if name.endswith(".md"):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    pages.append((path, sum(1 for _ in f)))
    return sorted(pages)


def check_docs_page_lengths(docs, max_lines=DOCS_MAX_PAGE_LINES):
    return [f"docs/{os.path.relpath(path, docs)}: {lines} lines (at most {max_lines}): split it by topic, "
            f"or move measurements to reports/" for path, lines in docs_pages(docs) if lines > max_lines]


def check_docs_total(docs, max_total=DOCS_MAX_TOTAL_LINES):
    total = sum(lines for _, lines in docs_pages(docs))
    if total < max_total:
        return []
    return [f"docs/: {total} lines in all (under {max_total}): cut repetition and dated narrative"]


MAX_BACKEND_VIRTUALS = 30
MAX_EXCHANGE_VIRTUALS = 15


def check_interface_size(src, header, cls, max_virtuals, kind, example):
    """The virtual members of `cls` in src/`header`, if more than `max_virtuals` (a tree without
    the header, as the checker's tests make, has nothing to check)."""
    path = os.path.join(src, header)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        code = strip_code(f.read())
    m = re.search(r"\bclass\s+" + cls + r"\s*\{", code)
    if not m:
        return [f"src/{header}: no class {cls}"]
    end = re.compile(r"^\};", re.M).search(code, m.end())
    count = len(re.findall(r"\bvirtual\b", code[m.end():end.start() if end else len(code)]))
    if count <= max_virtuals:
        return []
    return [f"src/{header}: class {cls} has {count} virtual members (at most {max_virtuals}): "
            f"put what only some {kind} do in a capability interface of its own ({example} ...)"]


def check_backend_interface(src):
    """class Backend is the op table: at most MAX_BACKEND_VIRTUALS virtual members."""
    return check_interface_size(src, "backend/backend.h", "Backend", MAX_BACKEND_VIRTUALS, "backends",
                                "backend/input_staging.h")


def check_exchange_interface(src):
    """class ExchangeStrategy is the synchronous protocol: at most MAX_EXCHANGE_VIRTUALS."""
    return check_interface_size(src, "dist/exchange_strategy.h", "ExchangeStrategy", MAX_EXCHANGE_VIRTUALS,
                                "strategies", "dist/remote_model.h")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--max-lines", type=int, default=100)
    p.add_argument("--quiet", action="store_true", help="print only violations")
    args = p.parse_args()
    src = os.path.join(args.root, "src")
    includes = check_includes(src)
    lengths = check_lengths(src, args.max_lines)
    for line in includes + lengths:
        print(line)
    if not args.quiet:
        print(f"check_architecture: {len(includes)} include violation(s), "
              f"{len(lengths)} function(s) over {args.max_lines} lines")
    docs = os.path.join(args.root, "docs")
    docs_problems = check_docs_page_lengths(docs) + check_docs_total(docs)
    for line in docs_problems:
        print(line)
    backend = check_backend_interface(src)
    for line in backend:
        print(line)
    exchange = check_exchange_interface(src)
    for line in exchange:
        print(line)
    return 1 if includes or lengths or docs_problems or backend or exchange else 0


if __name__ == "__main__":
    sys.exit(main())
