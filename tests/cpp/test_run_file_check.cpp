// The run-file check (metrics/run_file_check.h) on real faults: a run file written by the writer
// is complete; garbage bytes, the same file cut in half, a deleted file, a directory in its place,
// an HDF5 file that is not a run file and a run file without /summary or with one summary key
// missing are not, and each says why.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "metrics/hdf5_file.h"
#include "metrics/run_file_check.h"
#include "metrics/run_result.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

class RunFileCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ts_runfilecheck_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A run file as the trainer writes it (one step, one rank).
  std::string written(const std::string& name) {
    RunResult r;
    r.record.run_id = "abc-r0";
    r.step = {1};
    r.samples = {32};
    r.epoch = {0.01};
    r.time = {0.5};
    r.loss = {2.3f};
    r.lr = {0.05f};
    r.timing["step"] = {0.5f};
    r.summary["images_per_s"] = 64.0;
    const std::string path = (dir_ / name).string();
    write_run_file(path, r);
    return path;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(RunFileCheckTest, AWrittenRunFileIsComplete) {
  const RunFileCheck c = check_run_file(written("ok.h5"));
  EXPECT_EQ(c.state, RunFileState::complete) << c.detail;
  EXPECT_EQ(c.detail, "");
  EXPECT_STREQ(run_file_state_name(c.state), "complete");
  // The keys asked for are the writer's: diverged included.
  EXPECT_NE(std::find(run_file_summary_keys().begin(), run_file_summary_keys().end(), "diverged"), run_file_summary_keys().end());
  EXPECT_NE(std::find(run_file_summary_keys().begin(), run_file_summary_keys().end(), "images_per_s"),
            run_file_summary_keys().end());
}

TEST_F(RunFileCheckTest, GarbageTruncatedAndMissingFilesAreNotResults) {
  const std::string garbage = (dir_ / "garbage.h5").string();
  {
    std::ofstream out(garbage, std::ios::binary);
    for (int i = 0; i < 4096; ++i) out.put(static_cast<char>((i * 131 + 7) & 0xff));
  }
  RunFileCheck c = check_run_file(garbage);
  EXPECT_EQ(c.state, RunFileState::unreadable);
  EXPECT_NE(c.detail.find("does not open as HDF5"), std::string::npos) << c.detail;

  const std::string half = written("half.h5");
  fs::resize_file(half, fs::file_size(half) / 2);
  c = check_run_file(half);
  EXPECT_EQ(c.state, RunFileState::unreadable) << c.detail;
  EXPECT_NE(c.detail.find("does not open as HDF5"), std::string::npos) << c.detail;

  const std::string gone = written("gone.h5");
  fs::remove(gone);
  c = check_run_file(gone);
  EXPECT_EQ(c.state, RunFileState::missing);
  EXPECT_NE(c.detail.find(gone), std::string::npos) << c.detail;

  fs::create_directories(dir_ / "dir.h5");
  EXPECT_EQ(check_run_file((dir_ / "dir.h5").string()).state, RunFileState::unreadable);
}

TEST_F(RunFileCheckTest, FilesWithoutACompleteSummaryAreIncomplete) {
  const std::string other = (dir_ / "other.h5").string();
  {
    h5::File f = h5::File::create(other);  // HDF5, but no trainscale run file
    f.close();
  }
  RunFileCheck c = check_run_file(other);
  EXPECT_EQ(c.state, RunFileState::incomplete);
  EXPECT_NE(c.detail.find("schema"), std::string::npos) << c.detail;

  const std::string no_summary = (dir_ / "no_summary.h5").string();
  {
    h5::File f = h5::File::create(no_summary);
    f.set_attr("schema", "trainscale-run/1");
    f.close();
  }
  c = check_run_file(no_summary);
  EXPECT_EQ(c.state, RunFileState::incomplete);
  EXPECT_EQ(c.detail, "no /summary group");

  const std::string short_summary = (dir_ / "short_summary.h5").string();
  {
    h5::File f = h5::File::create(short_summary);
    f.set_attr("schema", "trainscale-run/1");
    {
      h5::Group s = f.create_group("summary");
      for (const auto& key : run_file_summary_keys())
        if (key != "time_to_target") s.set_attr(key, 1.0);
    }
    f.close();
  }
  c = check_run_file(short_summary);
  EXPECT_EQ(c.state, RunFileState::incomplete);
  EXPECT_EQ(c.detail, "/summary lacks the attribute `time_to_target`");
}
