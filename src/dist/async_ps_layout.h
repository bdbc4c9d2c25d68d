// The roles of an async_ps world and the shards of the parameter arena (docs/async.md):
// ranks 0 .. workers-1 train, ranks workers .. workers+servers-1
// serve. Server s owns the contiguous shard s of the flat parameter arena (the first
// param_count % servers shards hold one element more).
#pragma once

#include <cstdint>

#include "dist/exchange_strategy.h"

namespace ts {

struct AsyncPsLayout {
  int workers = 1;
  int servers = 1;
  int64_t param_count = 0;

  int server_rank(int server) const { return workers + server; }  // world rank of server s
  int server_of(int world_rank) const { return world_rank - workers; }
  // (offset, count) of server s's shard.
  Bucket shard(int server) const {
    const int64_t base = param_count / servers, extra = param_count % servers;
    const int64_t s = server;
    return {s * base + (s < extra ? s : extra), base + (s < extra ? 1 : 0)};
  }
};

// What rank 0 tells each server before training (the server builds the run's optimizer and
// learning-rate schedule from them and the config).
struct AsyncPsPlan {
  int64_t param_count = 0;
  int64_t total_steps = 0;
  int64_t global_batch = 0;
  int64_t steps_per_epoch = 0;
};

}  // namespace ts
