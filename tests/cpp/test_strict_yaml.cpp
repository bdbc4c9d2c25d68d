// Strict YAML loading (config/strict_yaml.h) and the readers that use it: a key given twice
// (at any depth), a second document and aliases beyond the budget (a "billion laughs" bomb)
// are refused with the file and line, in run configs, sweep files, site files and manifests.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "config/run_config.h"
#include "config/strict_yaml.h"
#include "core/error.h"
#include "perfmodel/cluster.h"
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

// Cluster files are read strictly too (they were yaml-cpp's plain Load once).
TEST(StrictYaml, ClusterFilesUseIt) {
  try {
    perf::parse_cluster_file("name: a\nnodes: 2\nnodes: 4\n", "cluster.yaml");
    FAIL() << "a duplicate key of a cluster file was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.yaml:3: key 'nodes' is given twice"), std::string::npos) << e.what();
  }
}

// YamlReader: every value checked where it is read, "<file>:<line>: key '<key>': ..." with what
// is accepted and the closest name.
TEST(StrictYaml, ANulByteIsNamedAtItsOwnLine) {
  // yaml-cpp named the line after it ("unknown escape character").
  EXPECT_EQ(error_of(std::string("lr: 0.1\nepochs: 1\0\nfoo: 3\n", 23)),
            "x.yaml:2: a NUL byte (\\x00) at column 10; a YAML file is text: is this the right file, or one cut or "
            "overwritten mid-write?");
  EXPECT_NE(error_of(std::string("\0", 1)).find("x.yaml:1: a NUL byte"), std::string::npos);
}

TEST(StrictYaml, NestingTooDeepIsNamedWithItsLineAndLimit) {
  // 3,000 levels: yaml-cpp alone said "not valid YAML: bad file".
  const std::string flow = "a: " + std::string(3000, '[') + std::string(3000, ']') + "\n";
  EXPECT_NE(error_of(flow).find("x.yaml:1: mappings and lists are nested too deep here (more than 64 levels"),
            std::string::npos)
      << error_of(flow);
  std::string block;
  for (int i = 0; i < 3000; ++i) block += std::string(static_cast<size_t>(i), ' ') + "k" + std::to_string(i) + ":\n";
  // The 65th mapping starts at line 65 (its key k64).
  EXPECT_NE(error_of(block).find("x.yaml:65: mappings and lists are nested too deep"), std::string::npos) << error_of(block);
  std::string fits;
  for (int i = 0; i < 63; ++i) fits += std::string(static_cast<size_t>(i), ' ') + "k" + std::to_string(i) + ":\n";
  EXPECT_EQ(error_of(fits), "");
}

TEST(YamlReader, AnIntegerAboveItsRangeIsNamedAsSuch) {
  const YamlReader r{"s.yaml"};
  const YAML::Node root = r.load("repetitions: 100000000000\nhuge: 99999999999999999999999\nneg: -99999999999999999999\n");
  auto error = [](const auto& read) {
    try {
      read();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error([&] { r.integer(root["repetitions"], "repetitions", 1, 1000000); }),
            "s.yaml:1: key 'repetitions': 100000000000 is above the maximum 1000000; accepted: an integer in 1..1000000");
  EXPECT_EQ(error([&] { r.integer(root["huge"], "huge", 1); }),
            "s.yaml:2: key 'huge': 99999999999999999999999 is above the maximum 9223372036854775807; accepted: an "
            "integer >= 1");
  EXPECT_EQ(error([&] { r.integer(root["neg"], "neg", 1); }), "s.yaml:3: key 'neg': '-99999999999999999999' is not an integer >= 1");
}

TEST(YamlReader, ChecksEachValueWhereItIsRead) {
  const YamlReader r{"f.yaml"};
  const YAML::Node root = r.load("n: 3\nx: lots\nm: {cores: 4, gpu: 1}\nl: [a, b]\ns: [1]\nc: torsu\nb: maybe\ne:\n");
  auto error = [](const auto& read) {
    try {
      read();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(r.integer(root["n"], "n", 1), 3);
  EXPECT_EQ(error([&] { r.integer(root["n"], "n", 4); }), "f.yaml:1: key 'n': '3' is not an integer >= 4");
  EXPECT_EQ(error([&] { r.integer(root["n"], "n", 0, 2); }),
            "f.yaml:1: key 'n': 3 is above the maximum 2; accepted: an integer in 0..2");
  EXPECT_EQ(error([&] { r.number(root["x"], "x", 0, true); }), "f.yaml:2: key 'x': 'lots' is not a number > 0");
  EXPECT_EQ(error([&] { r.scalar(root["m"], "m"); }), "f.yaml:3: key 'm': expected a single value (a scalar), got a mapping");
  EXPECT_EQ(error([&] { r.check_keys(root["m"], "m", {"cores", "gpus"}); }),
            "f.yaml:3: m: unknown key 'gpu' (did you mean 'gpus'?); accepted: cores, gpus");
  EXPECT_EQ(r.list(root["l"], "l", "[a]"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.strings(root["e"], "e", "[a]"), std::vector<std::string>{});  // a key without a value
  EXPECT_EQ(error([&] { r.list(root["n"], "n", "[a, b]"); }), "f.yaml:1: key 'n': expected a list of values, e.g. [a, b], got a scalar");
  EXPECT_EQ(error([&] { r.choice(root["c"], "c", {"star", "torus"}); }),
            "f.yaml:6: key 'c': 'torsu' is not accepted (did you mean 'torus'?); accepted: star | torus");
  EXPECT_EQ(error([&] { r.boolean(root["b"], "b"); }), "f.yaml:7: key 'b': 'maybe' is not accepted; accepted: true, false");
  EXPECT_EQ(error([&] { r.require(root, "z", "f", "docs/x.md"); }), "f.yaml:1: f: key 'z' is required (docs/x.md)");
}
