"""The module map and the size rule hold in src/ (scripts/check_architecture.py): no module
includes one above it in the map of docs/architecture.md, and no function is longer than 100
lines; no docs/ page is longer than 500 lines, and docs/ holds under 4,800 in all. The checker
itself is tested on small trees it must accept and refuse."""
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(REPO, "scripts", "check_architecture.py")


def run_check(root):
    return subprocess.run([sys.executable, CHECK, "--root", str(root)], capture_output=True, text=True)


def test_src_follows_the_module_map_and_the_size_rule():
    proc = run_check(REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def write(root, rel, text):
    path = root / "src" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_an_upward_include_is_refused_with_file_and_line(tmp_path):
    write(tmp_path, "core/a.h", '#pragma once\n')
    write(tmp_path, "nn/net.cpp", '#include "core/a.h"\n#include "train/trainer.h"\n')
    write(tmp_path, "train/trainer.h", '#pragma once\n#include "nn/net.h"\n')
    proc = run_check(tmp_path)
    assert proc.returncode == 1
    assert "src/nn/net.cpp:2: nn includes train/trainer.h (train)" in proc.stdout
    assert "trainer.h" not in proc.stdout.replace("nn includes train/trainer.h", "")


def test_a_backend_include_outside_backend_is_refused(tmp_path):
    write(tmp_path, "nn/layer.cpp", '#include "backend/cpu/cpu_backend.h"\n')
    proc = run_check(tmp_path)
    assert proc.returncode == 1
    assert "nn includes backend/cpu/cpu_backend.h (backend/cpu)" in proc.stdout


def test_a_long_function_is_refused_and_a_long_table_is_not(tmp_path):
    body = "\n".join(f"  x += {i};" for i in range(101))
    table = ",\n".join(f"  {i}" for i in range(150))
    write(tmp_path, "core/long.cpp", "int long_one(int x) {\n" + body + "\n  return x;\n}\n"
          "const int table[] = {\n" + table + "\n};\n"
          "struct S {\n  int short_one() const { return 1; }\n};\n")
    proc = run_check(tmp_path)
    assert proc.returncode == 1
    assert "src/core/long.cpp:1: function long_one is 104 lines" in proc.stdout
    assert "table" not in proc.stdout and "short_one" not in proc.stdout


def test_a_docs_page_over_500_lines_and_docs_over_4800_lines_are_refused(tmp_path):
    write(tmp_path, "core/a.h", "#pragma once\n")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "short.md").write_text("# Short\n" * 500)  # 500 lines: the most a page may have
    proc = run_check(tmp_path)
    assert "docs/" not in proc.stdout, proc.stdout  # (other checks may refuse this small tree)
    (docs / "long.md").write_text("line\n" * 501)
    for i in range(9):
        (docs / "sub" / f"page{i}.md").write_text("line\n" * 450)
    proc = run_check(tmp_path)
    assert proc.returncode == 1
    assert "docs/long.md: 501 lines (at most 500)" in proc.stdout
    assert "docs/short.md" not in proc.stdout and "page0.md" not in proc.stdout
    assert "docs/: 5051 lines in all (under 4800)" in proc.stdout


def test_an_exchange_strategy_over_15_virtual_members_is_refused(tmp_path):
    write(tmp_path, "backend/backend.h", "#pragma once\nclass Backend {\n};\n")
    members = "".join(f"  virtual void hook{i}() {{}}\n" for i in range(14))
    header = ("#pragma once\nclass ExchangeStrategy {\n public:\n  virtual ~ExchangeStrategy() = default;\n" + members +
              "  // not virtual: a comment\n};\nclass Other {\n  virtual void more() = 0;\n};\n")
    write(tmp_path, "dist/exchange_strategy.h", header)
    assert "ExchangeStrategy" not in run_check(tmp_path).stdout  # 15, the destructor counted
    write(tmp_path, "dist/exchange_strategy.h", header.replace(" public:\n", " public:\n  virtual int one_more() const;\n"))
    proc = run_check(tmp_path)
    assert proc.returncode == 1
    assert "src/dist/exchange_strategy.h: class ExchangeStrategy has 16 virtual members (at most 15)" in proc.stdout


def test_a_backend_over_30_virtual_members_is_refused(tmp_path):
    members = "".join(f"  virtual void op{i}() = 0;\n" for i in range(28))
    header = ("#pragma once\nclass Backend {\n public:\n  virtual ~Backend() = default;\n" + members +
              " protected:\n  virtual void release(void* data) = 0;  // virtual in a comment is not counted\n};\n"
              "template <class C>\nC* capability(Backend& b) { return dynamic_cast<C*>(&b); }\n"
              "class InputStaging {\n  virtual void stage() = 0;\n};\n")
    write(tmp_path, "backend/backend.h", header)
    assert "class Backend" not in run_check(tmp_path).stdout  # 30, the destructor counted
    write(tmp_path, "backend/backend.h", header.replace(" public:\n", " public:\n  virtual int one_more() const;\n"))
    proc = run_check(tmp_path)
    assert proc.returncode == 1
    assert "src/backend/backend.h: class Backend has 31 virtual members (at most 30)" in proc.stdout
