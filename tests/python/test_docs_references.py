"""Docs name only what exists (issue 37): every file path, `trainscale` CLI flag and run-config key
that docs/**/*.md and README.md name, and every file path a comment in src/ names, must exist in
the tree. The checks are functions over text, tested on small planted strings first, then run on
the repository.

- Paths: `src/...`, `scripts/...`, `configs/...`, `docs/...`, `tests/...`, `bench/...`,
  `analysis/...`, `datasets/...`, `jobs/...`, `reports/...`, `cmake/...`, paths relative to
  src/ (`dist/allreduce.h`), bare source names in backticks (`checks.cpp`), `DESIGN.md`-style
  names, and markdown links with their anchors. Placeholders (`<sha>`, `NAME`, `*`) and the
  outputs of commands (after `-o`, `--out`, ...) are not checked; `{h,cpp}` is expanded.
- CLI flags: `--flag` must be an option of trainscale or trainscale-sim (src/app, src/sim), of a
  script the docs describe (scripts/, bench/, analysis/, jobs/), or one of the other tools' flags
  listed in OTHER_TOOLS_FLAGS.
- Config keys: a backticked dotted key of a config section (`dataset.stage`, `dist.allreduce:
  ps`) and the key of every `--set KEY=VALUE` must be a key of the schema (src/config/schema.cpp),
  a group of such keys (`checkpoint.*`, `dist.emulate_slowdown`) or a removed key.
"""
import functools
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TOP_DIRS = ("src", "scripts", "configs", "docs", "tests", "bench", "analysis", "datasets", "jobs", "reports",
            "cmake")
SRC_MODULES = ("core", "backend", "nn", "hdf5", "data", "dist", "metrics", "config", "sweep", "perfmodel", "train",
               "app", "sim")
SKIP_DIRS = {".git", "__pycache__", "node_modules"}
TOP_SKIP_DIRS = {"runs", "campaigns", ".device"}  # outputs at the repository's top, not sources
SOURCE_EXTENSIONS = ("h", "cpp", "cu", "cuh", "py", "sh", "yaml", "in", "cmake", "supp", "dict")
# Flags of the other programs the docs show next to trainscale's (launchers, schedulers, build
# tools, test runners), which no file of this repository declares.
OTHER_TOOLS_FLAGS = {
    "--bind-to", "--oversubscribe", "--hostfile", "--kill-on-bad-exit", "--mpi", "--requeue", "--no-requeue",
    "--signal", "--array", "--nodes", "--ntasks", "--ntasks-per-node", "--cpus-per-task", "--time", "--output",
    "--partition", "--account", "--gres", "--constraint", "--mem", "--mem-per-cpu", "--parsable", "--me",
    "--single-sbatch", "--target", "--test-dir", "--build", "--gtest_filter", "--gtest_output", "--no-deps",
    "--usage", "--ruleset", "--version", "--help", "--as", "--main", "--dump-dom", "--screenshot",
}
# Files of other projects the docs name (MPI's headers, PyTorch's sources, MLPerf's rules).
OTHER_PROJECTS_FILES = {"mpi.h", "mpi-ext.h", "Conv_v8.cpp", "common.yaml", "open_common.yaml", "open_resnet.yaml",
                        "open_lenet.yaml", "closed_resnet_sgd.yaml"}
OUTPUT_FLAGS = ("-o", "--out", "--out-dir", "--output", "--csv", "--mllog", ">")
PLACEHOLDER = re.compile(r"<|>|\*|\$|\.\.\.|(?<![A-Za-z])[A-Z][A-Z0-9_]+(?![a-z])|(?:^|/)[a-z]\.\w+$|(?:^|/)\.venv")


# ---------------------------------------------------------------------------------------------
# What exists


@functools.lru_cache(maxsize=None)
def basenames(root):
    names = set()
    for dirpath, dirnames, filenames in os.walk(root):
        top = dirpath == root
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".venv")
                       and not (top and (d in TOP_SKIP_DIRS or d.startswith("build")))]
        names.update(filenames)
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def config_keys(root):
    """Schema keys, removed keys and the groups (every proper prefix of a dotted key)."""
    keys = set()
    for name in sorted(os.listdir(os.path.join(root, "src", "config"))):
        if not name.endswith(".cpp"):
            continue
        with open(os.path.join(root, "src", "config", name), encoding="utf-8") as f:
            text = f.read()
        keys.update(re.findall(r'\{\s*"([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)",\s*T::', text))
        removed = re.search(r"removed_run_config_keys\(\)\s*\{(.*?)\n\}", text, re.S)
        if removed:
            keys.update(re.findall(r'\{\s*"([a-z][a-z0-9_.]*)",', removed.group(1)))
    groups = set()
    for key in keys:
        parts = key.split(".")
        for i in range(1, len(parts)):
            groups.add(".".join(parts[:i]))
    return frozenset(keys), frozenset(groups)


def config_sections(root):
    keys, _ = config_keys(root)
    return {k.split(".")[0] for k in keys if "." in k}


@functools.lru_cache(maxsize=None)
def python_attributes(root):
    """module.name pairs of the analysis package (`metrics.scaling` is not a config key)."""
    pairs = set()
    pkg = os.path.join(root, "analysis", "trainscale_analysis")
    if not os.path.isdir(pkg):
        return frozenset()
    for name in os.listdir(pkg):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), encoding="utf-8") as f:
                for attr in re.findall(r"^(?:def|class)\s+(\w+)|^(\w+)\s*=", f.read(), re.M):
                    pairs.add(name[:-3] + "." + (attr[0] or attr[1]))
    return frozenset(pairs)


def _files_under(root, subdirs, extensions):
    for sub in subdirs:
        top = os.path.join(root, sub)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith((".venv", "build"))]
            for name in filenames:
                if name.endswith(extensions):
                    yield os.path.join(dirpath, name)


@functools.lru_cache(maxsize=None)
def known_flags(root):
    """Every --flag trainscale, trainscale-sim and the repository's scripts accept or print."""
    flags = set(OTHER_TOOLS_FLAGS)
    for path in _files_under(root, ("src/app", "src/sim"), (".cpp", ".h")):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        flags.update("--" + m for m in re.findall(r'\(\s*"([a-z][a-z0-9-]*)(?:,[A-Za-z])?"\s*,', text))
        flags.update(re.findall(r"--[a-z][a-z0-9-]*", text))
    for path in _files_under(root, ("scripts", "bench", "analysis", "jobs", "tests/fuzz"),
                             (".sh", ".py", ".in", ".cpp")):
        with open(path, encoding="utf-8", errors="replace") as f:
            flags.update(re.findall(r"--[a-z][a-z0-9_-]*", f.read()))
    return frozenset(flags)


# ---------------------------------------------------------------------------------------------
# What a text names


def expand_braces(path):
    m = re.search(r"\{([^{}]*,[^{}]*)\}", path)
    if not m:
        return [path]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(path[:m.start()] + alt + path[m.end():]))
    return out


PATH_RE = re.compile(r"(?<![\w./~-])((?:\.\./)*(?:%s)/[\w./{},<>*$-]*)" % "|".join(TOP_DIRS + SRC_MODULES))
BARE_RE = re.compile(r"`([\w.-]+\.(?:%s)(?:\.in)?)`" % "|".join(SOURCE_EXTENSIONS))
BARE_BRACE_RE = re.compile(r"`([\w-]+\.\{[a-z,]+\})`")
UPPER_MD_RE = re.compile(r"(?<![\w./-])([A-Z][A-Z_]+\.md)\b")
UP_RE = re.compile(r'(?<![\w./("-])((?:\.\./)+[\w./-]*\w)')
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")


def _after_output_flag(text, start):
    before = text[max(0, start - 16):start].rstrip()
    return any(before.endswith(" " + f) or before.endswith("`" + f) or before == f for f in OUTPUT_FLAGS)


def path_problems(text, where, root=REPO, base_dir=None):
    """(where, what) for every path the text names that does not exist. base_dir: the directory
    of the file the text is in, for markdown links."""
    problems = []
    names = basenames(root)
    for m in PATH_RE.finditer(text):
        raw = m.group(1).rstrip(".,;:)")
        if PLACEHOLDER.search(raw) or _after_output_flag(text, m.start()):
            continue
        for path in expand_braces(raw):
            path = path.rstrip("/")
            if path.startswith("../"):
                continue  # markdown-style relative paths are checked as links
            parts = path.split("/")
            if parts[0] == "src" and len(parts) == 2 and "." not in parts[1]:
                continue  # src/dst, src/diff_src: tensors, not the tree (src/ holds only modules)
            if parts[0] == "jobs" and not path.endswith(".in"):
                continue  # a campaign's jobs/ (scripts it wrote), not the templates of jobs/
            candidates = [path] if parts[0] in TOP_DIRS else []
            if parts[0] in SRC_MODULES:
                candidates += [os.path.join("src", path), path]
            if "." not in parts[-1]:  # a directory, or a file named without its extension
                candidates += [c + ext for c in candidates for ext in (".h", ".cpp", ".cu", ".py")]
            if not any(os.path.exists(os.path.join(root, c)) for c in candidates):
                problems.append((where, f"path {path} does not exist"))
    for regex in (BARE_RE, BARE_BRACE_RE):
        for m in regex.finditer(text):
            for name in expand_braces(m.group(1)):
                if (not PLACEHOLDER.search(name) and "/" not in name and name not in names
                        and name not in OTHER_PROJECTS_FILES):
                    problems.append((where, f"file {name} is nowhere in the repository"))
    for m in UPPER_MD_RE.finditer(text):
        if m.group(1) not in names and m.group(1) != "NAME.md":
            problems.append((where, f"file {m.group(1)} is nowhere in the repository"))
    if base_dir is not None:
        for m in UP_RE.finditer(text):
            path = os.path.normpath(os.path.join(base_dir, m.group(1)))
            if os.path.relpath(path, root).startswith(".."):
                problems.append((where, f"path {m.group(1)} is outside the repository"))
            elif not os.path.exists(path):
                problems.append((where, f"path {m.group(1)} does not exist"))
        problems += link_problems(text, where, root, base_dir)
    return problems


def github_slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors_of(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    anchors, seen = set(), {}
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*$", text, re.M):
        slug = github_slug(m.group(1))
        n = seen.get(slug, 0)
        anchors.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    anchors.update(re.findall(r'<a id="([^"]+)"', text))
    return frozenset(anchors)


def link_problems(text, where, root, base_dir):
    problems = []
    for m in LINK_RE.finditer(text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        file_part, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(base_dir, file_part)) if file_part else None
        if path is not None and os.path.relpath(path, root).startswith(".."):
            problems.append((where, f"link {target}: outside the repository"))
            continue
        if path is not None and not os.path.exists(path):
            problems.append((where, f"link {target}: {file_part} does not exist"))
            continue
        if anchor:
            doc = path or where_file(where)
            if doc and doc.endswith(".md") and anchor not in anchors_of(doc):
                problems.append((where, f"link {target}: no heading or anchor #{anchor} in {os.path.relpath(doc, root)}"))
    return problems


def where_file(where):
    return where.rsplit(":", 1)[0] if where else None


FLAG_RE = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_-]*)")


def flag_problems(text, where, root=REPO):
    flags = known_flags(root)
    return [(where, f"flag {m.group(1)} is not an option of trainscale, its scripts or a listed tool")
            for m in FLAG_RE.finditer(text) if m.group(1) not in flags]


BACKTICK_RE = re.compile(r"`([^`\n]+)`")
KEY_LEAD_RE = re.compile(r"^~?([a-z][a-z0-9_]*(?:\.[a-z0-9_*]+)+)(?=$|[:= ,])")
SET_RE = re.compile(r"--set\s+'?~?([a-z][a-z0-9_.]*)(?=[=\s'`]|$)")


def key_problems(text, where, root=REPO):
    keys, groups = config_keys(root)
    sections = config_sections(root)
    attrs = python_attributes(root)
    problems = []

    def known(key):
        return key in keys or key in groups or (key.endswith(".*") and key[:-2] in groups)

    for m in BACKTICK_RE.finditer(text):
        lead = KEY_LEAD_RE.match(m.group(1).strip())
        if not lead:
            continue
        key = lead.group(1)
        parts = key.split(".")
        if parts[0] not in sections or parts[-1] in SOURCE_EXTENSIONS + ("md", "h5", "hdf5", "json", "txt"):
            continue
        if ".".join(parts[:2]) in attrs:
            continue
        if not known(key):
            problems.append((where, f"config key {key} is not in the schema"))
    for m in SET_RE.finditer(text):
        if m.group(1) != "key" and not known(m.group(1)):
            problems.append((where, f"--set {m.group(1)}: not a config key of the schema"))
    return problems


def comment_text(source):
    """The comments of a C++ source, each on its own line (line numbers kept)."""
    out = []
    for m in re.finditer(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])'", source, re.S):
        if m.group(0).startswith(("//", "/*")):
            line = source.count("\n", 0, m.start()) + 1
            for i, piece in enumerate(m.group(0).split("\n")):
                out.append((line + i, piece))
    return out


# ---------------------------------------------------------------------------------------------
# The repository


def doc_files(root=REPO):
    files = [os.path.join(root, "README.md")]
    for dirpath, _, filenames in os.walk(os.path.join(root, "docs")):
        files += [os.path.join(dirpath, n) for n in sorted(filenames) if n.endswith(".md")]
    return files


def doc_problems(root=REPO):
    problems = []
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(path, root)
        problems += path_problems(text, path, root, base_dir=os.path.dirname(path))
        problems += flag_problems(text, rel, root)
        problems += key_problems(text, rel, root)
    return [(os.path.relpath(w, root) if os.path.isabs(w) else w, what) for w, what in problems]


def source_comment_problems(root=REPO):
    problems = []
    for path in _files_under(root, ("src",), (".h", ".cpp", ".cu", ".cuh", ".h.in")):
        with open(path, encoding="utf-8") as f:
            source = f.read()
        rel = os.path.relpath(path, root)
        for line, text in comment_text(source):
            problems += path_problems(text, f"{rel}:{line}", root)
    return problems


# ---------------------------------------------------------------------------------------------
# Tests of the checks on planted text


def test_a_planted_missing_path_is_found_and_real_ones_are_not():
    text = ("see `src/dist/allreduce.h`, dist/sync_strategy.{h,cpp} and scripts/no_such_script.sh; "
            "`reports/allreduce/NAME.md` and `-o reports/qs.html` are placeholders and outputs; "
            "docs/nowhere.md and `cuda_ops_pending.cpp` and DESIGN.md do not exist; "
            "`../shared/DESIGN.md` is outside")
    found = [what for _, what in path_problems(text, "t", REPO, base_dir=REPO)]
    assert "path scripts/no_such_script.sh does not exist" in found
    assert "path docs/nowhere.md does not exist" in found
    assert "file cuda_ops_pending.cpp is nowhere in the repository" in found
    assert "file DESIGN.md is nowhere in the repository" in found
    assert "path ../shared/DESIGN.md is outside the repository" in found
    assert len(found) == 5, found


def test_a_planted_broken_link_and_anchor_are_found():
    docs = os.path.join(REPO, "docs")
    text = ("[a](config.md) [b](nowhere.md) [c](config.md#gpu-generation) [d](config.md#no-such-heading) "
            "[e](https://example.org/x)")
    found = [what for _, what in path_problems(text, "t", REPO, base_dir=docs)]
    assert found == ["link nowhere.md: nowhere.md does not exist",
                     "link config.md#no-such-heading: no heading or anchor #no-such-heading in docs/config.md"], found


def test_a_planted_unknown_flag_is_found():
    text = "trainscale sweep submit DIR --pack 3 --throttle 2 --pakc 3; mpirun --bind-to none"
    assert [what for _, what in flag_problems(text, "t")] == [
        "flag --pakc is not an option of trainscale, its scripts or a listed tool"]


def test_a_planted_unknown_config_key_is_found():
    text = ("`dataset.stage`, `dist.allreduce: ps`, `checkpoint.*`, `dist.emulate_slowdown`, "
            "`metrics.scaling`, `checkpoint.cpp`, `--set lr=0.1`, `dist.update`; "
            "but `dataset.stag`, `dist.allreduce_algo: ring` and --set dataset.rot=/x are not keys")
    assert [what for _, what in key_problems(text, "t")] == [
        "config key dataset.stag is not in the schema",
        "config key dist.allreduce_algo is not in the schema",
        "--set dataset.rot: not a config key of the schema"]


def test_comments_are_read_from_sources_and_strings_are_not():
    source = 'int a; // see docs/config.md\nconst char* s = "// not/a/comment.h";\n/* two\n lines */\n'
    assert comment_text(source) == [(1, "// see docs/config.md"), (3, "/* two"), (4, " lines */")]


# ---------------------------------------------------------------------------------------------
# The repository


def test_docs_and_readme_name_only_what_exists():
    problems = doc_problems()
    assert not problems, "\n".join(f"{w}: {what}" for w, what in problems)


def test_source_comments_name_only_files_that_exist():
    problems = source_comment_problems()
    assert not problems, "\n".join(f"{w}: {what}" for w, what in problems)
