// metrics/checkpoint_file: a checkpoint reads back exactly as written (shared parameters, or
// per-rank ones in rank parts beside it; every rank's state, series and timings), atomically
// (no temporary file left), and a damaged file is refused with a message naming it: truncated,
// a flipped byte in a dataset (Fletcher-32), parameters that do not match their SHA-256, a file
// of another schema, a rank part that is missing, damaged or another checkpoint's; an
// inconsistent checkpoint is never written. Also the HDF5 reader's type and shape checks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "metrics/checkpoint_file.h"
#include "metrics/hdf5_file.h"
#include "metrics/hdf5_reader.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

class CheckpointFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

RankCheckpoint rank_state(int r, bool with_params, int64_t params) {
  RankCheckpoint s;
  s.loader_position = 3;
  s.rng = {0x1234567890abcdefULL + static_cast<uint64_t>(r), ~0ULL, 7, 8, 1, 0x3ff0000000000000ULL};
  s.state = {0.5f + static_cast<float>(r), -1.25f};
  if (with_params) {
    for (int64_t i = 0; i < params; ++i) s.params.push_back(0.001f * static_cast<float>(i + 100 * r));
    s.velocity.assign(static_cast<size_t>(params), -0.5f * static_cast<float>(r + 1));
  }
  s.strategy = {static_cast<float>(r)};
  s.loss_scale = 32768.5;
  s.loss_scale_good_steps = 11 + r;
  s.skipped_steps = r;
  s.train_clock = 1.5 + r;
  s.loss = {2.5f, 2.25f + static_cast<float>(r), 2.0f};
  s.seconds["forward"] = {0.1f, 0.2f, 0.3f + static_cast<float>(r)};
  s.seconds["step"] = {1.f, 2.f, 3.f};
  s.series["wire_bytes"] = {4096.f, 512.f + static_cast<float>(r), 512.f};  // a compressed run's record
  s.share_changes = {1, 8, 8, 3, 12, 4};  // heterogeneous workers: equal, then 12 + 4 from step 3
  s.share_window_seconds = 0.25 + r;
  s.share_window_samples = 24 + r;
  return s;
}

Checkpoint sample(bool per_rank) {
  Checkpoint c;
  c.run_id = "lenet-0123456789ab";
  c.config_id = "0123456789ab";
  c.step = 3;
  c.world_size = 2;
  c.attempt = 2;
  c.written = "2026-01-01T00:00:00Z";
  c.params_per_rank = per_rank;
  const int64_t P = 70000;  // more than one 64 Ki chunk
  for (int r = 0; r < 2; ++r) c.ranks.push_back(rank_state(r, per_rank, P));
  if (!per_rank) {
    for (int64_t i = 0; i < P; ++i) c.params.push_back(static_cast<float>(i) * 1e-3f);
    c.velocity.assign(static_cast<size_t>(P), 0.25f);
  }
  const std::vector<float>& params = per_rank ? c.ranks[0].params : c.params;
  c.params_sha256 = sha256_hex_of_floats(params.data(), P);
  c.steps = {1, 2, 3};
  c.samples = {32, 64, 96};
  c.epoch = {0.1, 0.2, 0.3};
  c.time = {0.5, 1.0, 1.5};
  c.lr = {0.1f, 0.1f, 0.05f};
  c.eval_step = {2};
  c.eval_epoch = {0.2};
  c.eval_time = {1.0};
  c.eval_loss = {0.7};
  c.eval_accuracy = {0.75};
  return c;
}

void expect_same(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.config_id, b.config_id);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.attempt, b.attempt);
  EXPECT_EQ(a.written, b.written);
  EXPECT_EQ(a.params_sha256, b.params_sha256);
  EXPECT_EQ(a.params_per_rank, b.params_per_rank);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.velocity, b.velocity);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.time, b.time);
  EXPECT_EQ(a.lr, b.lr);
  EXPECT_EQ(a.eval_step, b.eval_step);
  EXPECT_EQ(a.eval_accuracy, b.eval_accuracy);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    const RankCheckpoint &x = a.ranks[r], &y = b.ranks[r];
    EXPECT_EQ(x.loader_position, y.loader_position);
    EXPECT_EQ(x.rng, y.rng);
    EXPECT_EQ(x.state, y.state);
    EXPECT_EQ(x.params, y.params);
    EXPECT_EQ(x.velocity, y.velocity);
    EXPECT_EQ(x.strategy, y.strategy);
    EXPECT_EQ(x.loss_scale, y.loss_scale);
    EXPECT_EQ(x.loss_scale_good_steps, y.loss_scale_good_steps);
    EXPECT_EQ(x.skipped_steps, y.skipped_steps);
    EXPECT_EQ(x.train_clock, y.train_clock);
    EXPECT_EQ(x.loss, y.loss);
    EXPECT_EQ(x.seconds, y.seconds);
    EXPECT_EQ(x.series, y.series);
    EXPECT_EQ(x.share_changes, y.share_changes);
    EXPECT_EQ(x.share_window_seconds, y.share_window_seconds);
    EXPECT_EQ(x.share_window_samples, y.share_window_samples);
  }
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A checkpoint with rank parts as save_checkpoint writes it: each rank's model (per rank) and
// strategy state to its part first (recording what they hold), the checkpoint file last.
void write_with_parts(const std::string& p, Checkpoint c) {
  c.rank_parts = true;
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    const std::string sha = write_rank_part(p, c, static_cast<int64_t>(r), c.ranks[r]);
    if (c.params_per_rank) c.rank_params_sha256.push_back(sha);
    c.rank_strategy_sizes.push_back(static_cast<int64_t>(c.ranks[r].strategy.size()));
    c.ranks[r].params.clear();
    c.ranks[r].velocity.clear();
    c.ranks[r].strategy.clear();
  }
  write_checkpoint_file(p, c);
}

// The checkpoint at `p` with every rank's part read back.
Checkpoint read_with_parts(const std::string& p) {
  Checkpoint c = read_checkpoint_file(p);
  EXPECT_EQ(c.path, p);
  for (size_t r = 0; c.rank_parts && r < c.ranks.size(); ++r) read_rank_part(c, static_cast<int64_t>(r), c.ranks[r]);
  return c;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const RuntimeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_F(CheckpointFile, RoundTripsSharedAndPerRankParameters) {
  for (bool per_rank : {false, true}) {
    const Checkpoint c = sample(per_rank);
    const std::string p = path(per_rank ? "run.checkpoint.3.hdf5" : "shared.hdf5");
    if (per_rank)
      write_with_parts(p, c);
    else
      write_checkpoint_file(p, c);
    expect_same(read_with_parts(p), c);
  }
  // Shared parameters, every rank's strategy state in its part (an error-feedback memory).
  Checkpoint c = sample(false);
  for (size_t r = 0; r < c.ranks.size(); ++r) c.ranks[r].strategy.assign(70000, 0.5f * static_cast<float>(r + 1));
  write_with_parts(path("ef.checkpoint.3.hdf5"), c);
  const Checkpoint back = read_with_parts(path("ef.checkpoint.3.hdf5"));
  EXPECT_TRUE(back.rank_parts && !back.params_per_rank);
  expect_same(back, c);
  EXPECT_EQ(rank_part_path(path("run.checkpoint.3.hdf5"), 1), path("run.checkpoint.3.rank-1.hdf5"));
  EXPECT_TRUE(fs::exists(path("run.checkpoint.3.rank-0.hdf5")) && fs::exists(path("run.checkpoint.3.rank-1.hdf5")));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << "temporary file left: " << e.path();
}

TEST_F(CheckpointFile, ATruncatedFileIsRefused) {
  const std::string p = path("c.hdf5");
  write_checkpoint_file(p, sample(false));
  const std::string bytes = bytes_of(p);
  write_bytes(p, bytes.substr(0, bytes.size() / 2));
  const std::string message = error_of([&] { read_checkpoint_file(p); });
  EXPECT_NE(message.find(p), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST_F(CheckpointFile, AFlippedByteInTheParametersIsCaughtByTheChecksums) {
  const std::string p = path("c.hdf5");
  write_checkpoint_file(p, sample(false));
  std::string bytes = bytes_of(p);
  // The parameters are the bulk of the file: a byte in its middle lies inside their chunks.
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  write_bytes(p, bytes);
  const std::string message = error_of([&] { read_checkpoint_file(p); });
  EXPECT_NE(message.find(p), std::string::npos) << message;
  EXPECT_NE(message.find("damaged"), std::string::npos) << message;
}

TEST_F(CheckpointFile, ParametersThatDoNotMatchTheirSha256AreRefused) {
  Checkpoint c = sample(false);
  c.params_sha256 = std::string(64, '0');
  const std::string p = path("c.hdf5");
  write_checkpoint_file(p, c);
  const std::string message = error_of([&] { read_checkpoint_file(p); });
  EXPECT_NE(message.find("SHA-256"), std::string::npos) << message;
}

TEST_F(CheckpointFile, AFileOfAnotherSchemaIsRefused) {
  const std::string p = path("other.hdf5");
  {
    h5::File f = h5::File::create(p);
    f.set_attr("schema", "trainscale-run/1");
    f.close();
  }
  const std::string message = error_of([&] { read_checkpoint_file(p); });
  EXPECT_NE(message.find("trainscale-checkpoint/2"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { read_checkpoint_file(path("missing.hdf5")); }).find("missing.hdf5"), std::string::npos);
}

TEST_F(CheckpointFile, ARankPartThatIsMissingDamagedOrAnothersIsRefused) {
  const std::string p = path("run.checkpoint.3.hdf5");
  write_with_parts(p, sample(true));
  const Checkpoint c = read_checkpoint_file(p);
  RankCheckpoint into;
  const std::string part1 = rank_part_path(p, 1);
  const std::string good = bytes_of(part1);
  std::string bytes = good;  // the parameters are the bulk of the part
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  write_bytes(part1, bytes);
  std::string message = error_of([&] { read_rank_part(c, 1, into); });
  EXPECT_NE(message.find(part1), std::string::npos) << message;
  EXPECT_NE(message.find("damaged"), std::string::npos) << message;
  write_bytes(part1, bytes_of(rank_part_path(p, 0)));  // rank 0's part in rank 1's place
  message = error_of([&] { read_rank_part(c, 1, into); });
  EXPECT_NE(message.find("rank 0, not of"), std::string::npos) << message;
  fs::remove(part1);
  EXPECT_NE(error_of([&] { read_rank_part(c, 1, into); }).find(part1), std::string::npos);
  write_bytes(part1, good);
  EXPECT_NO_THROW(read_rank_part(c, 1, into));
  EXPECT_EQ(into.params, sample(true).ranks[1].params);
  Checkpoint longer = c;  // a part whose strategy state is not the length the checkpoint says
  longer.rank_strategy_sizes[1] += 1;
  EXPECT_NE(error_of([&] { read_rank_part(longer, 1, into); }).find("strategy state holds"), std::string::npos);
}

TEST_F(CheckpointFile, AnInconsistentCheckpointIsNotWritten) {
  Checkpoint c = sample(true);  // per-rank models left in the ranks instead of their parts
  c.rank_parts = true;
  c.rank_params_sha256 = {c.params_sha256, c.params_sha256};
  c.rank_strategy_sizes = {1, 1};
  const std::string p = path("c.hdf5");
  const std::string message = error_of([&] { write_checkpoint_file(p, c); });
  EXPECT_NE(message.find("not written"), std::string::npos) << message;
  EXPECT_NE(message.find("belong in its rank part"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_empty(dir_)) << "nothing may be left behind";
  RankCheckpoint odd = c.ranks[1];
  odd.velocity.pop_back();  // momentum values not matching the parameters
  EXPECT_NE(error_of([&] { write_rank_part(p, c, 1, odd); }).find("not written"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));
  for (RankCheckpoint& r : c.ranks) r.params.clear(), r.velocity.clear(), r.strategy.clear();
  c.rank_params_sha256 = {c.params_sha256};  // one rank part digest for two ranks
  EXPECT_NE(error_of([&] { write_checkpoint_file(p, c); }).find("rank part digests"), std::string::npos);
  c.rank_params_sha256 = {c.params_sha256, c.params_sha256};
  c.rank_parts = false;  // per-rank models need their parts
  EXPECT_NE(error_of([&] { write_checkpoint_file(p, c); }).find("need rank parts"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));
  c = sample(false);
  c.ranks[0].loss.push_back(1.f);  // a loss more than there are steps
  EXPECT_THROW(write_checkpoint_file(p, c), RuntimeError);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CheckpointFile, TheReaderChecksTypesAndShapes) {
  const std::string p = path("r.hdf5");
  {
    h5::File f = h5::File::create(p, {false, true});
    f.set_attr("text", "caf\xc3\xa9");
    f.set_attr("count", int64_t{-3});
    f.set_attr("real", 0.5);
    h5::Group g = f.create_group("g");
    g.write("ints", std::vector<int64_t>{1, 2, 3});
    const std::vector<float> grid = {1, 2, 3, 4, 5, 6};
    g.write("grid", {2, 3}, grid.data());
    g.write("words", std::vector<uint64_t>{~0ULL, 1});
    f.close();
  }
  const h5::ReadFile f = h5::ReadFile::open(p);
  EXPECT_EQ(f.string_attr("/", "text"), "caf\xc3\xa9");
  EXPECT_EQ(f.int_attr("/", "count"), -3);
  EXPECT_EQ(f.real_attr("/", "real"), 0.5);
  EXPECT_TRUE(f.exists("/g/grid"));
  EXPECT_FALSE(f.exists("/g/none"));
  EXPECT_FALSE(f.exists("/h/none"));
  EXPECT_EQ(f.members("/g"), (std::vector<std::string>{"grid", "ints", "words"}));
  const h5::Array<float> grid = f.read<float>("/g/grid");
  EXPECT_EQ(grid.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(grid.values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.read<uint64_t>("/g/words").values, (std::vector<uint64_t>{~0ULL, 1}));
  EXPECT_NE(error_of([&] { f.read<float>("/g/ints"); }).find("holds integers"), std::string::npos);
  EXPECT_NE(error_of([&] { f.int_attr("/", "text"); }).find("another type"), std::string::npos);
  EXPECT_NE(error_of([&] { f.string_attr("/", "absent"); }).find("missing"), std::string::npos);
  EXPECT_NE(error_of([&] { f.read<double>("/g/absent"); }).find("missing"), std::string::npos);
}
