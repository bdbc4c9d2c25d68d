// core/file_io (the one atomic writer: temp name in the same directory, fsync, rename,
// directory fsync; nothing left behind on failure; errors name the file), core/run_marker (the
// one marker format: text round trip, paths, plain-text markers of earlier versions) and
// core/strings (join, split, trim, suggestions).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "core/run_marker.h"
#include "core/strings.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

class CoreFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts_core_io_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(CoreFiles, WritesAndReplacesAtomically) {
  const std::string path = (dir_ / "a.txt").string();
  write_file_atomically(path, "first\n");
  EXPECT_EQ(read_text_file(path), "first\n");
  write_file_atomically(path, "second\n");
  EXPECT_EQ(read_text_file(path), "second\n");
  EXPECT_EQ(listing(), std::vector<std::string>{"a.txt"});  // no temporary file left
}

TEST_F(CoreFiles, TheTemporaryFileLivesBesideTheTarget) {
  AtomicFile f((dir_ / "b.h5").string());
  EXPECT_EQ(fs::path(f.temp_path()).parent_path(), dir_);
  EXPECT_EQ(f.temp_path(), (dir_ / "b.h5").string() + ".tmp-" + std::to_string(::getpid()));
  { std::ofstream(f.temp_path()) << "written by another library"; }
  f.commit();
  EXPECT_EQ(read_text_file((dir_ / "b.h5").string()), "written by another library");
  EXPECT_EQ(listing(), std::vector<std::string>{"b.h5"});
}

TEST_F(CoreFiles, AnUncommittedFileLeavesNothing) {
  {
    AtomicFile f((dir_ / "c.txt").string());
    f.write("half");
    EXPECT_TRUE(fs::exists(f.temp_path()));
  }  // an error before commit() unwinds through here
  EXPECT_TRUE(listing().empty());
}

TEST_F(CoreFiles, ErrorsNameTheFile) {
  const std::string path = (dir_ / "no" / "such" / "d.txt").string();
  try {
    write_file_atomically(path, "x");
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  try {
    read_text_file(path);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// A full disk, for real: every write to /dev/full fails with ENOSPC.
TEST(CoreFilesFullDisk, TheErrorNamesTheFileTheReasonAndWhatToDo) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "/dev/full is missing here";
  try {
    write_whole_file("/dev/full", std::string(1 << 16, 'x'), "runs/x.h5");
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("runs/x.h5: its temporary file /dev/full"), std::string::npos) << what;
    EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
    EXPECT_NE(what.find("free space there (df -h /dev)"), std::string::npos) << what;
  }
}

TEST_F(CoreFiles, MarkersRoundTrip) {
  EXPECT_EQ(marker_path("runs/abc-r0.h5", MarkerKind::failed), "runs/abc-r0.FAILED");
  EXPECT_EQ(marker_path("runs/abc-r0", MarkerKind::done), "runs/abc-r0.DONE");
  EXPECT_EQ(marker_path("runs/abc-r0.h5", MarkerKind::running), "runs/abc-r0.RUNNING");

  RunMarker m;
  m.reason = "cfg.yaml:3: key 'lr': must be > 0\nsecond line";
  m.attempt = 2;
  m.log = "logs/abc-r0.attempt2.log";
  m.host = "node7";
  m.end = "2026-11-21T18:31:02Z";
  const std::string path = (dir_ / "abc-r0.FAILED").string();
  write_marker(path, m);
  EXPECT_EQ(read_text_file(path),
            "reason: cfg.yaml:3: key 'lr': must be > 0 second line\nattempt: 2\nlog: logs/abc-r0.attempt2.log\n"
            "host: node7\nend: 2026-11-21T18:31:02Z\n");
  const RunMarker back = read_marker(path);
  EXPECT_EQ(back.reason, "cfg.yaml:3: key 'lr': must be > 0 second line");  // one line, colons kept
  EXPECT_EQ(back.attempt, 2);
  EXPECT_EQ(back.log, m.log);
  EXPECT_EQ(back.host, m.host);
  EXPECT_EQ(back.end, m.end);
  EXPECT_FALSE(back.stage_in_s.has_value());

  RunMarker done;
  done.status = "diverged";
  done.run_file = "abc-r0.h5";
  done.pid = 4242;
  done.stage_in_s = 0.25;
  const RunMarker d = parse_marker(marker_text(done));
  EXPECT_EQ(d.status, "diverged");
  EXPECT_EQ(d.run_file, "abc-r0.h5");
  EXPECT_EQ(d.pid, 4242);
  ASSERT_TRUE(d.stage_in_s.has_value());
  EXPECT_DOUBLE_EQ(*d.stage_in_s, 0.25);
  EXPECT_TRUE(d.reason.empty());

  // PREEMPTED: the signal, the step and the checkpoint written there.
  EXPECT_EQ(marker_path("runs/abc-r0.h5", MarkerKind::preempted), "runs/abc-r0.PREEMPTED");
  RunMarker preempted;
  preempted.signal = "SIGUSR1";
  preempted.step = 120;
  preempted.checkpoint = "abc-r0.checkpoint.120.hdf5";
  preempted.attempt = 3;
  const RunMarker p = parse_marker(marker_text(preempted));
  EXPECT_EQ(p.signal, "SIGUSR1");
  EXPECT_EQ(p.step, 120);
  EXPECT_EQ(p.checkpoint, "abc-r0.checkpoint.120.hdf5");
  EXPECT_EQ(p.attempt, 3);
}

TEST(RunMarkerText, PlainTextIsTheReason) {
  // Markers written before the key: value format held the bare reason.
  EXPECT_EQ(parse_marker("rank 0 on node0: out of memory\n").reason, "rank 0 on node0: out of memory");
  EXPECT_EQ(parse_marker("out of memory \"conv1\"\n").reason, "out of memory \"conv1\"");
}

TEST(Strings, JoinSplitTrim) {
  EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join({"a", "b"}, " | "), "a | b");
  EXPECT_EQ(join({}), "");
  EXPECT_EQ(split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(split("", ','), std::vector<std::string>{""});
  EXPECT_EQ(trim("  x y \r\n"), "x y");
  EXPECT_EQ(trim(" \n"), "");
  EXPECT_TRUE(starts_with("dist.allreduce", "dist."));
  EXPECT_FALSE(starts_with("dist", "dist."));
}

TEST(Strings, ClosestMatchSuggestsPlausibleTypos) {
  EXPECT_EQ(edit_distance("momentun", "momentum"), 1u);
  EXPECT_EQ(closest_match("momentun", {"lr", "momentum", "model"}), "momentum");
  EXPECT_EQ(closest_match("dist.alreduce", {"dist.allreduce", "dist.overlap"}), "dist.allreduce");
  EXPECT_EQ(closest_match("butterfly", {"mpi", "ring", "tree"}), "");
  EXPECT_EQ(closest_match("H100", {"p100", "h100"}), "h100");  // a case-only difference wins the tie
  EXPECT_EQ(json_quote("a\"b\n"), "\"a\\\"b\\n\"");
}

// The published FNV-1a 64 test vectors: config ids, sweep seeds, manifest hashes and the
// jpeg_dir hold-out depend on these exact bits.
TEST(Strings, Fnv1a64MatchesThePublishedVectors) {
  EXPECT_EQ(ts::fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(ts::fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(ts::fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(Strings, DurationTextRoundsToTheTwoLargestUnits) {
  EXPECT_EQ(duration_text(0), "0s");
  EXPECT_EQ(duration_text(41.6), "42s");
  EXPECT_EQ(duration_text(59.4), "59s");
  EXPECT_EQ(duration_text(185), "3m05s");
  EXPECT_EQ(duration_text(3720), "1h02m");
  EXPECT_EQ(duration_text(90061), "25h01m");
  for (double unknown : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) EXPECT_EQ(duration_text(unknown), "?");
}

TEST(Strings, TerminalSafeEscapesWhatIsNotPrintableUtf8) {
  EXPECT_EQ(terminal_safe("caf\xc3\xa9 \xe2\x82\xac ok\n\tx"), "caf\xc3\xa9 \xe2\x82\xac ok\n\tx");  // UTF-8 kept
  EXPECT_EQ(terminal_safe("foo\xff\xfe: bad"), "foo\\xFF\\xFE: bad");                            // not UTF-8
  EXPECT_EQ(terminal_safe("\x1b[2Jcleared\r\x7f"), "\\x1B[2Jcleared\\x0D\\x7F");                   // controls
  EXPECT_EQ(terminal_safe("\xc0\xaf \xed\xa0\x80 \xe2\x82"), "\\xC0\\xAF \\xED\\xA0\\x80 \\xE2\\x82");  // overlong, surrogate, cut
  EXPECT_EQ(terminal_safe(std::string("a\0b", 3)), "a\\x00b");
}

// read_config_text: every kind of file a person gives is checked before it is read.
TEST_F(CoreFiles, ConfigFilesAboveTheBoundAreRefusedBySizeNamingBoth) {
  const std::string path = (dir_ / "big.yaml").string();
  write_whole_file(path, "a: 1\n");
  fs::resize_file(path, kMaxConfigFileBytes + 1);
  for (const std::string what : {"run config file (--config)", "sweep file", "site file", "cluster file"}) {
    try {
      read_config_text(path, what);
      FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), path + ": 1048577 bytes is too large for a " + what + "; a " + what +
                                           " may be at most 1048576 bytes (1 MiB); is this the right file?");
    }
  }
  fs::resize_file(path, kMaxConfigFileBytes);  // at the bound: read
  EXPECT_EQ(read_config_text(path, "sweep file").size(), static_cast<size_t>(kMaxConfigFileBytes));
}

TEST(ConfigFiles, DevicesAreNamedForWhatTheyAre) {
  auto error = [](const std::string& path) {
    try {
      read_config_text(path, "cluster file");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("/dev/null"), "/dev/null: is not a regular file (a character device (it reads as an empty file)), so "
                                "not a cluster file; give the YAML file");
  EXPECT_NE(error("/dev/zero").find("/dev/zero: is not a regular file (a character device)"), std::string::npos);
}

TEST_F(CoreFiles, AnUnreadableConfigSaysPermissionDenied) {
  const std::string path = (dir_ / "locked.yaml").string();
  write_whole_file(path, "lr: 0.1\n");
  fs::permissions(path, fs::perms::none);
  if (::access(path.c_str(), R_OK) == 0) GTEST_SKIP() << "this user (root?) reads a file of mode 000 anyway";
  try {
    read_config_text(path, "run config file (--config)");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open the run config file (--config) (Permission denied)");
  }
}
