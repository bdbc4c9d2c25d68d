// Strict YAML loading (config/strict_yaml.h) and the readers that use it: a key given twice
// (at any depth), a second document and aliases beyond the budget (a "billion laughs" bomb)
// are refused with the file and line, in run configs, sweep files, site files and manifests.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "config/run_config.h"
#include "config/strict_yaml.h"
#include "core/error.h"
#include "sweep/site.h"

using namespace ts;

namespace {

// The ConfigError message of loading `text` ("" when it loads).
std::string error_of(const std::string& text, YamlLimits limits = {}) {
  try {
    load_yaml_strictly(text, "x.yaml", limits);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Nine levels of ten aliases each: 10^9 nodes once expanded, a few hundred bytes as text.
std::string billion_laughs() {
  std::string text = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int level = 1; level <= 9; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", " : "") + prev;
    text += "]\n";
  }
  return text;
}

}  // namespace

TEST(StrictYaml, PlainDocumentsLoad) {
  EXPECT_EQ(load_yaml_strictly("a: 1\nb: {c: 2, d: [3, 4]}\n", "x.yaml")["b"]["c"].as<int>(), 2);
  EXPECT_EQ(load_yaml_strictly("---\na: 1\n...\n", "x.yaml")["a"].as<int>(), 1);  // markers of one document
  EXPECT_TRUE(yaml_is_empty(load_yaml_strictly("", "x.yaml")));
  EXPECT_TRUE(yaml_is_empty(load_yaml_strictly("# only a comment\n", "x.yaml")));
  EXPECT_FALSE(yaml_is_empty(load_yaml_strictly("{}\n", "x.yaml")));
  // The same key in different mappings, and aliases within the budget, are fine.
  EXPECT_EQ(error_of("a: {k: 1}\nb: {k: 2}\nruns: [{k: 1}, {k: 2}]\n"), "");
  EXPECT_EQ(error_of("base: &b {lr: 0.1, steps: 4}\nother: *b\n"), "");
}

TEST(StrictYaml, DuplicateKeysAreRefusedAtAnyDepth) {
  std::string e = error_of("lr: 0.1\nsteps: 4\nlr: 0.2\n");
  EXPECT_NE(e.find("x.yaml:3: key 'lr' is given twice in one mapping (first at line 1)"), std::string::npos) << e;
  e = error_of("dist:\n  allreduce: ring\n  overlap: true\n  allreduce: tree\n");
  EXPECT_NE(e.find("x.yaml:4: key 'dist.allreduce' is given twice"), std::string::npos) << e;
  e = error_of("runs:\n  - {index: 0, run_id: a, run_id: b}\n");
  EXPECT_NE(e.find("x.yaml:2: key 'runs[0].run_id' is given twice"), std::string::npos) << e;
  e = error_of("a: {x: 1, x: 2}\n");
  EXPECT_NE(e.find("key 'a.x' is given twice"), std::string::npos) << e;
  e = error_of("matrix: {lr: [0.1]}\nbase: b.yaml\nmatrix: {steps: [4]}\n");  // two matrix sections
  EXPECT_NE(e.find("x.yaml:3: key 'matrix' is given twice"), std::string::npos) << e;
  e = error_of("k: &v lr\n*v : 1\nlr: 2\n");  // an alias as a key is its scalar's text
  EXPECT_NE(e.find("key 'lr' is given twice"), std::string::npos) << e;
}

TEST(StrictYaml, ASecondDocumentIsRefused) {
  std::string e = error_of("lr: 0.1\n---\nlr: 0.2\n");
  EXPECT_NE(e.find("x.yaml:2: a second YAML document"), std::string::npos) << e;
  e = error_of("lr: 0.1\n---\n");
  EXPECT_NE(e.find("a second YAML document"), std::string::npos) << e;
}

TEST(StrictYaml, AliasBombsAreRefusedWithoutExpandingThem) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of(billion_laughs());
  EXPECT_NE(e.find("aliases (*name) expand to more than 10000 nodes"), std::string::npos) << e;
  EXPECT_NE(e.find("x.yaml:"), std::string::npos) << e;
  // Counted, not built: well under the time even one million nodes would take (a bound, not a timing).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_NE(error_of("a: &a [1, 2, 3]\nb: [*a, *a, *a]\n", YamlLimits{8}).find("more than 8 nodes"), std::string::npos);
  EXPECT_NE(error_of("a: &a [1, *a]\n").find("makes a cycle"), std::string::npos);
}

TEST(StrictYaml, TheReadersUseIt) {
  auto run_config_error = [](const std::string& text) {
    try {
      parse_run_config(text, "run.yaml", {});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(run_config_error("dist: {allreduce: ring}\nlr: 0.1\ndist: {allreduce: tree}\n").find("run.yaml:3: key 'dist'"),
            std::string::npos);
  EXPECT_NE(run_config_error("lr: 0.1\n---\nlr: 0.2\n").find("run.yaml:2: a second YAML document"), std::string::npos);
  EXPECT_NE(run_config_error(billion_laughs()).find("run.yaml:"), std::string::npos);
  try {
    parse_site_file("scheduler: local\nenv: {A: 1, B: 2, A: 3}\n", "site.yaml");
    FAIL() << "a duplicate env key was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("site.yaml:2: key 'env.A' is given twice"), std::string::npos) << e.what();
  }
}
