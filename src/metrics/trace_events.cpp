// Chrome trace events of a run file (see trace_events.h).
#include "metrics/trace_events.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "core/strings.h"

namespace ts {
namespace {

constexpr int kTrainingThread = 0, kCommThread = 1, kBucketThread = 2;

// Seconds as the format's microseconds, in fixed notation to the nanosecond ("5000000", "12.5").
std::string micros(double seconds) {
  if (!std::isfinite(seconds)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", seconds * 1e6);
  std::string text(buf);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text == "-0" ? "0" : text;
}

struct EventSink {
  std::vector<std::string> events;

  // A complete event ("ph": "X"); times in seconds, written in microseconds as the format wants.
  // Its args: the step, then `more_args` (JSON members after a comma, or "").
  void span(const std::string& name, const char* category, int64_t rank, int thread, double start, double seconds,
            int64_t step, const std::string& more_args = "") {
    events.push_back("{\"name\": " + json_quote(name) + ", \"cat\": \"" + category + "\", \"ph\": \"X\", \"ts\": " +
                     micros(start) + ", \"dur\": " + micros(seconds) + ", \"pid\": " +
                     std::to_string(rank) + ", \"tid\": " + std::to_string(thread) +
                     ", \"args\": {\"step\": " + std::to_string(step) + more_args + "}}");
  }
  void name_process(int64_t rank, const std::string& name) {
    events.push_back("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(rank) +
                     ", \"args\": {\"name\": " + json_quote(name) + "}}");
    events.push_back("{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": " + std::to_string(rank) +
                     ", \"args\": {\"sort_index\": " + std::to_string(rank) + "}}");
  }
  void name_thread(int64_t rank, int thread, const char* name) {
    events.push_back("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + std::to_string(rank) +
                     ", \"tid\": " + std::to_string(thread) + ", \"args\": {\"name\": \"" + name + "\"}}");
  }
};

double seconds_of(const RunFileView& run, const char* phase, int64_t step, int64_t rank) {
  const auto it = run.timing.find(phase);
  if (it == run.timing.end()) return 0;
  const float v = it->second[static_cast<size_t>(step * run.ranks + rank)];
  return std::isfinite(v) ? v : 0;
}

bool has(const RunFileView& run, const char* phase) { return run.timing.count(phase) > 0; }

// The communication thread of one step: comm ending where comm_wait ends, its parts inside it.
void comm_events(EventSink& out, const RunFileView& run, int64_t s, int64_t r, double step_start, double comm_end) {
  const double comm = seconds_of(run, "comm", s, r);
  if (!has(run, "comm")) return;
  const double start = std::max(step_start, comm_end - comm);
  out.span("comm", "communication", r, kCommThread, start, comm, s);
  double at = start;  // the parameter-server phases, one after another inside comm
  for (const char* part : {"gather", "average", "broadcast"}) {
    if (!has(run, part)) continue;
    out.span(part, "communication", r, kCommThread, at, seconds_of(run, part, s, r), s);
    at += seconds_of(run, part, s, r);
  }
  if (has(run, "compress")) out.span("compress", "communication", r, kCommThread, start, seconds_of(run, "compress", s, r), s);
  if (has(run, "decompress")) {
    const double d = seconds_of(run, "decompress", s, r);
    out.span("decompress", "communication", r, kCommThread, start + comm - d, d, s);
  }
}

// The buckets of step s on rank r (row n of /bucket_timing), each at its recorded start from the
// rank's step start, for its recorded seconds, named "bucket B" with the bucket in its args; a
// bucket the step did not exchange (NaN) is left out.
void bucket_events(EventSink& out, const RunFileView& run, size_t n, int64_t s, int64_t r, double step_start) {
  const size_t B = static_cast<size_t>(run.bucket_count);
  for (size_t b = 0; b < B; ++b) {
    const size_t at = (n * static_cast<size_t>(run.ranks) + static_cast<size_t>(r)) * B + b;
    const double begin = run.bucket_start[at], end = run.bucket_end[at];
    if (std::isfinite(begin) && std::isfinite(end))
      out.span("bucket " + std::to_string(b), "bucket", r, kBucketThread, step_start + begin, end - begin, s,
               ", \"bucket\": " + std::to_string(b));
  }
}

// One step of one rank, starting at `start` seconds of the training clock.
void step_events(EventSink& out, const RunFileView& run, int64_t s, int64_t r, double start) {
  const double step = seconds_of(run, "step", s, r);
  out.span("step " + std::to_string(run.step.empty() ? s + 1 : run.step[static_cast<size_t>(s)]), "step", r,
           kTrainingThread, start, step, s);
  double at = start;
  for (const char* phase : {"data_wait", "forward", "backward"}) {
    if (!has(run, phase)) continue;
    out.span(phase, "compute", r, kTrainingThread, at, seconds_of(run, phase, s, r), s);
    at += seconds_of(run, phase, s, r);
  }
  const double wait = seconds_of(run, "comm_wait", s, r), update = seconds_of(run, "optimizer", s, r);
  const double tail = std::max(at, start + step - wait - update);  // where comm_wait begins
  if (tail > at) out.span("step_other", "compute", r, kTrainingThread, at, tail - at, s);
  if (has(run, "comm_wait")) out.span("comm_wait", "communication", r, kTrainingThread, tail, wait, s);
  if (has(run, "optimizer")) out.span("optimizer", "compute", r, kTrainingThread, tail + wait, update, s);
  comm_events(out, run, s, r, start, tail + wait);
}

// True when every step and evaluation has its wall time (files since /train/wall_time, runs
// that were not resumed): the trace is then on the wall clock, with evaluations and checkpoints.
bool has_wall_clock(const RunFileView& run) {
  const auto finite = [](double t) { return std::isfinite(t); };
  return run.steps > 0 && static_cast<int64_t>(run.wall_time.size()) == run.steps &&
         run.eval_wall_time.size() == run.eval_step.size() && std::ranges::all_of(run.wall_time, finite) &&
         std::ranges::all_of(run.eval_wall_time, finite);
}

// Evaluations and checkpoints of rank 0 (the run file has its times) as spans on its training thread.
void pauses_on_the_wall_clock(EventSink& out, const RunFileView& run, double origin) {
  for (size_t e = 0; e < run.eval_step.size(); ++e)
    out.span("evaluation", "evaluation", 0, kTrainingThread, run.eval_wall_time[e] - origin, run.eval_seconds[e],
             run.eval_step[e] - 1);
  for (size_t c = 0; c < run.checkpoint_step.size(); ++c)
    out.span("checkpoint", "checkpoint", 0, kTrainingThread, run.checkpoint_wall_time[c] - origin,
             run.checkpoint_seconds[c], run.checkpoint_step[c] - 1);
}

}  // namespace

std::string buckets_note(const RunFileView& run) {
  if (run.bucket_count == 0)
    return "not recorded: the run file has no /bucket_timing (written before it existed, or a strategy without "
           "timed buckets: hogwild, nccl)";
  const int64_t stride = run.bucket_step.size() > 1 ? run.bucket_step[1] - run.bucket_step[0] : 1;
  return std::to_string(run.bucket_count) + " bucket(s) on each rank's \"buckets\" thread, in " +
         std::to_string(run.bucket_step.size()) + " recorded step(s)" +
         (stride > 1 ? " (one step in " + std::to_string(stride) + ")" : "");
}

std::string chrome_trace_json(const RunFileView& run) {
  EventSink out;
  for (int64_t r = 0; r < run.ranks; ++r) {
    const std::string host = run.rank_hosts.empty() ? "" : " (" + run.rank_hosts[static_cast<size_t>(r)] + ")";
    out.name_process(r, "rank " + std::to_string(r) + host);
    out.name_thread(r, kTrainingThread, "training");
    if (has(run, "comm")) out.name_thread(r, kCommThread, "communication");
  }
  std::map<int64_t, size_t> bucket_row;  // step number -> its row of /bucket_timing
  for (size_t n = 0; n < run.bucket_step.size(); ++n) bucket_row[run.bucket_step[n]] = n;
  if (run.bucket_count > 0)
    for (int64_t r = 0; r < run.ranks; ++r) out.name_thread(r, kBucketThread, "buckets");
  const bool wall = has_wall_clock(run);
  // Wall clock: each step ends at rank 0's /train/wall_time; else the training clock.
  const double origin = wall ? run.wall_time[0] - seconds_of(run, "step", 0, 0) : 0;
  double start = 0;  // the start of step s
  for (int64_t s = 0; s < run.steps; ++s) {
    if (wall) start = run.wall_time[static_cast<size_t>(s)] - seconds_of(run, "step", s, 0) - origin;
    if (has(run, "step"))
      for (int64_t r = 0; r < run.ranks; ++r) step_events(out, run, s, r, start);
    const auto row = bucket_row.find(run.step.empty() ? s + 1 : run.step[static_cast<size_t>(s)]);
    if (row != bucket_row.end() && run.bucket_count > 0)
      for (int64_t r = 0; r < run.ranks; ++r) bucket_events(out, run, row->second, s, r, start);
    const double clock = run.time.empty() ? 0 : run.time[static_cast<size_t>(s)];
    if (!wall) start = std::max(start + seconds_of(run, "step", s, 0), clock);
  }
  if (wall) {
    pauses_on_the_wall_clock(out, run, origin);
  } else {
    for (size_t e = 0; e < run.eval_time.size(); ++e)
      out.events.push_back("{\"name\": \"evaluation\", \"cat\": \"evaluation\", \"ph\": \"i\", \"s\": \"g\", \"ts\": " +
                           micros(run.eval_time[e]) + ", \"pid\": 0, \"tid\": 0, \"args\": {\"step\": " +
                           std::to_string(run.eval_step[e]) + ", \"accuracy\": " + json_number(run.eval_accuracy[e]) + "}}");
  }
  const std::string clock = wall ? "wall clock of rank 0 from the first step's start, seconds x 1e6"
                                 : "training clock of rank 0 (evaluations and checkpoints excluded), seconds x 1e6";
  return "{\"traceEvents\": [\n" + join(out.events, ",\n") + "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {" +
         "\"run_id\": " + json_quote(run.attribute("run_id")) + ", \"file\": " + json_quote(run.path) +
         ", \"clock\": " + json_quote(clock) + ", \"buckets\": " + json_quote(buckets_note(run)) + "}}\n";
}

}  // namespace ts
