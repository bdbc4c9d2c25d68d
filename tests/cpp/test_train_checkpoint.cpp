// The pieces of a checkpoint that need no second process (the whole story, with SIGKILL and
// SIGTERM, is tests/python/test_checkpoint_resume.py): file names and their listing, the
// refusal for backends that cannot resume exactly, a rank's state through its byte form, and
// a net's random streams (dropout) continuing exactly where they stopped.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "backend/backend_factory.h"
#include "core/byte_stream.h"
#include "core/error.h"
#include "nn/models.h"
#include "train/capabilities.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"

namespace fs = std::filesystem;
using namespace ts;

TEST(TrainCheckpoint, NamesAndTheirListingNewestFirst) {
  const fs::path dir = fs::temp_directory_path() / ("ts_train_ckpt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = "lenet-0123456789ab";
  EXPECT_EQ(checkpoint_path(dir.string(), run, 40), (dir / "lenet-0123456789ab.checkpoint.40.hdf5").string());
  for (const char* name : {"lenet-0123456789ab.checkpoint.40.hdf5", "lenet-0123456789ab.checkpoint.120.hdf5",
                           "lenet-0123456789ab.checkpoint.9.hdf5",
                           "lenet-0123456789ab.checkpoint.50.hdf5.tmp-77",  // a killed write
                           "lenet-0123456789ab.checkpoint.x1.hdf5", "lenet-0123456789ab.h5",
                           "other-0123456789ab.checkpoint.60.hdf5", "lenet-0123456789ab.checkpoint.70.h5",
                           "lenet-0123456789ab.checkpoint.40.rank-0.hdf5",  // per-rank models' parts
                           "lenet-0123456789ab.checkpoint.40.rank-1.hdf5",
                           "lenet-0123456789ab.checkpoint.130.rank-1.hdf5.tmp-78",
                           "other-0123456789ab.checkpoint.60.rank-0.hdf5"})
    std::ofstream(dir / name) << "x";
  const auto found = list_checkpoints(dir.string(), run);
  ASSERT_EQ(found.size(), 3u) << "rank parts are not checkpoints";
  EXPECT_EQ(found[0].first, 120);
  EXPECT_EQ(found[1].first, 40);
  EXPECT_EQ(found[2].first, 9);
  remove_checkpoints(dir.string(), run);
  EXPECT_TRUE(list_checkpoints(dir.string(), run).empty());
  EXPECT_FALSE(fs::exists(dir / "lenet-0123456789ab.checkpoint.50.hdf5.tmp-77"));
  for (const char* part : {"lenet-0123456789ab.checkpoint.40.rank-0.hdf5", "lenet-0123456789ab.checkpoint.40.rank-1.hdf5",
                           "lenet-0123456789ab.checkpoint.130.rank-1.hdf5.tmp-78"})
    EXPECT_FALSE(fs::exists(dir / part)) << part;
  EXPECT_TRUE(fs::exists(dir / "other-0123456789ab.checkpoint.60.rank-0.hdf5"));
  EXPECT_TRUE(fs::exists(dir / "lenet-0123456789ab.h5")) << "the run file stays";
  EXPECT_TRUE(fs::exists(dir / "other-0123456789ab.checkpoint.60.hdf5")) << "another run's checkpoint stays";
  fs::remove_all(dir);
}

TEST(TrainCheckpoint, BackendsThatCannotResumeExactlyAreRefused) {
  RunConfig run;
  EXPECT_EQ(checkpoint_refusal(run), "");  // cpu
  run.backend = BackendKind::ref;
  EXPECT_EQ(checkpoint_refusal(run), "");
  run.backend = BackendKind::cuda;
  for (AlgorithmChoice choice : {AlgorithmChoice::find, AlgorithmChoice::heuristic}) {
    run.cuda_algorithms = choice;
    const std::string why = checkpoint_refusal(run);
    EXPECT_NE(why.find(std::string("backend cuda with cuda.algorithms ") + algorithm_choice_name(choice) +
                       " is not checkpointed"),
              std::string::npos) << why;
    EXPECT_NE(why.find("set cuda.algorithms: deterministic"), std::string::npos) << why;
  }
  run.cuda_algorithms = AlgorithmChoice::deterministic;
  EXPECT_EQ(checkpoint_refusal(run), "");
  run.backend = BackendKind::cpu;  // a CUDA rank among CPU ranks (ranks.backend) is refused as well
  run.rank_backends = {BackendKind::cpu, BackendKind::cuda};
  run.cuda_algorithms = AlgorithmChoice::find;
  EXPECT_NE(checkpoint_refusal(run).find("backend cuda"), std::string::npos);
  run.dist.strategy = DistStrategy::hogwild;
  run.rank_backends.clear();
  EXPECT_NE(checkpoint_refusal(run).find("hogwild is not checkpointed"), std::string::npos);
}

TEST(TrainCheckpoint, ARankStateSurvivesItsByteForm) {
  RankCheckpoint r;
  r.loader_position = 77;
  r.rng = {1, 2, 3, 4, 0, 0x4000000000000000ULL};
  r.state = {0.5f, 1.5f};
  r.params = {1.f, 2.f, 3.f};
  r.velocity = {-1.f, -2.f, -3.f};
  r.strategy = {2.f};
  r.loss_scale = 1024.25;
  r.loss_scale_good_steps = 5;
  r.skipped_steps = 2;
  r.train_clock = 3.75;
  r.loss = {2.f, 1.f};
  r.seconds["step"] = {0.5f, 0.25f};
  r.seconds["forward"] = {0.125f, 0.0625f};
  Checkpoint series;
  series.step = 2;
  series.steps = {1, 2};
  series.lr = {0.1f, 0.05f};
  series.eval_accuracy = {0.5};
  ByteWriter out;
  pack_series(out, series);
  pack_rank_state(out, r);
  const std::string bytes = out.take();
  ByteReader in(bytes);
  Checkpoint series_back;
  unpack_series(in, series_back);
  const RankCheckpoint back = unpack_rank_state(in);
  EXPECT_TRUE(in.at_end());
  EXPECT_EQ(series_back.step, 2);
  EXPECT_EQ(series_back.steps, series.steps);
  EXPECT_EQ(series_back.lr, series.lr);
  EXPECT_EQ(series_back.eval_accuracy, series.eval_accuracy);
  EXPECT_EQ(back.loader_position, 77);
  EXPECT_EQ(back.rng, r.rng);
  EXPECT_EQ(back.state, r.state);
  EXPECT_EQ(back.params, r.params);
  EXPECT_EQ(back.velocity, r.velocity);
  EXPECT_EQ(back.strategy, r.strategy);
  EXPECT_EQ(back.loss_scale, r.loss_scale);
  EXPECT_EQ(back.loss_scale_good_steps, 5);
  EXPECT_EQ(back.skipped_steps, 2);
  EXPECT_EQ(back.train_clock, 3.75);
  EXPECT_EQ(back.loss, r.loss);
  EXPECT_EQ(back.seconds, r.seconds);
  ByteReader short_read(std::string_view(bytes).substr(0, bytes.size() - 3));
  Checkpoint ignored;
  unpack_series(short_read, ignored);
  EXPECT_THROW(unpack_rank_state(short_read), RuntimeError);
}

// Two nets of one seed with dropout: the second takes the first's random streams after a few
// training forwards, and from then on both drop the same elements (the same losses).
TEST(TrainCheckpoint, DropoutMasksContinueFromTheRandomStreams) {
  auto backend = make_backend("ref", 0);
  const ModelInput input = model_expected_input("mlp");
  auto a = build_model("mlp", *backend, input, 5, 0.5);
  auto b = build_model("mlp", *backend, input, 5, 0.5);
  const int64_t mb = 4;
  a->set_batch(mb);
  b->set_batch(mb);
  std::vector<float> images(static_cast<size_t>(mb * input.sample.numel()));
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(i % 13) / 13.0f;
  const std::vector<int32_t> labels = {1, 2, 3, 4};
  for (int k = 0; k < 3; ++k) a->forward(images.data(), labels.data(), nullptr, Mode::train);
  ASSERT_FALSE(a->rng_states().empty());
  EXPECT_NE(a->rng_states(), b->rng_states());
  b->set_rng_states(a->rng_states());
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(a->forward(images.data(), labels.data(), nullptr, Mode::train),
              b->forward(images.data(), labels.data(), nullptr, Mode::train))
        << "forward " << k;
  EXPECT_THROW(b->set_rng_states({1, 2, 3}), ConfigError);
}
