// Submitting a campaign (docs/sweeps.md "Submitting"): runs grouped by resource shape, one
// job-array script per shape (and per part when a shape exceeds the site's max array size)
// rendered from jobs/{slurm,pbs}.sh.in, an index file per script mapping array task -> the
// manifest indices it runs (one, or K one after another with --pack K), submission with sbatch --parsable / qsub, the record in jobs/submissions.yaml, the
// scheduler queried for running/pending tasks and why they wait. The local executor is
// sweep/local_executor.h.
// Every run is started by the same launcher logic: the site's MPI entry for the run's
// mpi_flavor gives mpirun -np W | srun --mpi=<pmi> -n W | mpiexec -n W and the binary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sweep/campaign.h"

namespace ts {

// The allocation one array task asks for (all runs of an array share it). Runs of different GPU
// generations never share an array: `gpu` is part of the shape.
struct JobShape {
  int workers = 1;          // MPI ranks = the run's `workers` (+ dist.servers with async_ps), one per GPU on GPU runs
  int nodes = 1;
  int tasks_per_node = 1;
  int cpus_per_task = 1;    // resources.cpus_per_worker, else the run's `threads`
  int threads = 1;          // the run's `threads` (the most of any rank): the script's OMP_NUM_THREADS
  int gpus_per_node = 0;    // GPU runs: min(workers, the site entry's gpus_per_node)
  std::string gpu;          // the run's gpu (a generation or any); "" for runs without a GPU
  std::string partition;    // gpu mapping's partition, else resources.partition, else the site's
  std::string walltime;     // resources.walltime, else the site's default
  std::string mem;          // resources.mem, else the site's defaults.mem ("" = scheduler default)
  std::string gres, constraint;  // Slurm, from the site's gpu entry ({gpus_per_node} substituted)
  std::string select;       // PBS select resources from the site's gpu entry ({gpus_per_node} substituted)
  std::string mpi;          // site mpi entry name
  // "workers=2 nodes=1 cpus=1 gpus=0 partition=- walltime=00:20:00 mpi=openmpi"; GPU runs add
  // "gpu=<generation>" after gpus; runs whose threads differ from the CPUs per task (resources.
  // cpus_per_worker) add "threads=<n>" after cpus.
  std::string label() const;
  bool operator==(const JobShape& o) const {
    return label() == o.label() && gres == o.gres && constraint == o.constraint && select == o.select;
  }
};

struct ShapeGroup {
  JobShape shape;
  std::vector<int64_t> indices;  // manifest indices, ascending
};

// Groups `indices` (all runs when empty) by shape, in order of first appearance.
// ConfigError when a run's gpu / mpi_flavor is not in the site or resources are malformed.
std::vector<ShapeGroup> group_by_shape(const Campaign& campaign, const std::vector<int64_t>& indices);

// The site MPI entry an array of `shape` launches with: shape.mpi's, with the binary of the
// shape's gpu entry when it names one.
SiteMpi shape_mpi(const Site& site, const JobShape& shape);

// Launcher + binary, e.g. {"mpirun", "-np", "2", "--oversubscribe", "/x/bin/trainscale"}.
std::vector<std::string> launch_command(const SiteMpi& mpi, int workers);

// Packing (sweep submit --pack K): `indices` in order, K to an array task (the last task may
// hold fewer). K = 1: one index per task. ConfigError when K is outside 1..kMaxPack.
std::vector<std::vector<int64_t>> pack_indices(const std::vector<int64_t>& indices, int pack);

// Index files: line t+1 holds the manifest indices array task t runs, separated by spaces, in
// the order the task runs them ("0 1 2\n3 4 5\n"; one index per line without packing). A task
// that runs `width` runs side by side has that many lanes, separated by " | ", each run one after
// another in its lane: its runs j, j + width, ... in lane j ("0 2 | 1 3").
std::string index_file_text(const std::vector<std::vector<int64_t>>& tasks, int width = 1);
// Reads one back (an unreadable file: no tasks): each task's indices, lane after lane.
// ConfigError naming the file and line for a line that is not a list of indices.
std::vector<std::vector<int64_t>> read_index_file(const std::string& path);
// The same with each task's lanes apart (one lane for a task that runs its runs one after another).
std::vector<std::vector<std::vector<int64_t>>> read_index_lanes(const std::string& path);

// Array scripts of one submission.
struct JobScript {
  std::string scheduler;   // slurm | pbs
  std::string name;        // job name
  std::string script;      // path of the script
  std::string index_file;  // path of its index file
  std::string shape;       // JobShape::label()
  int64_t count = 0;       // array tasks
  int64_t runs = 0;        // runs of all its tasks (count when not packed)
  int pack = 1;            // runs per task (the last may have fewer)
  int width = 1;           // of them side by side (shape_check.h pack_layout), in lanes
};

// The text of one array script for `count` tasks whose indices are in `index_file`, each task
// running up to `pack` runs, W of them side by side as the site allows (shape_check.h
// pack_layout: an allocation of W runs' tasks, walltime ceil(pack / W) x the shape's), the rest
// one after another. Pure (writes nothing): golden tests compare it with tests/golden/.
std::string render_job_script(const Campaign& campaign, const std::string& scheduler, const JobShape& shape,
                              const std::string& job_name, const std::string& index_file, int64_t count, int throttle,
                              int pack = 1);

// Writes scripts and index files into CAMPAIGN/jobs/ (names start with `tag`: "" or
// "resubmit1-"), `pack` runs per array task, splitting shapes over the site's max_array_size
// (array tasks per script).
std::vector<JobScript> write_job_scripts(const Campaign& campaign, const std::string& scheduler,
                                         const std::vector<ShapeGroup>& groups, int throttle, const std::string& tag,
                                         int pack = 1);

// Submits one script (sbatch --parsable / qsub) and returns the job id. RuntimeError with the
// scheduler's message when it refuses.
std::string submit_job_script(const JobScript& job);

// Appends {scheduler, job_id, script, index_file, count} records to jobs/submissions.yaml.
struct SubmissionRecord {
  std::string scheduler, job_id, script, index_file, host;
  int64_t count = 0;
  long pid = 0;  // local executor
};
void record_submissions(const std::string& campaign_dir, const std::vector<SubmissionRecord>& records);
std::vector<SubmissionRecord> read_submissions(const std::string& campaign_dir);
// The next free "resubmit<N>-" tag.
std::string next_resubmit_tag(const std::string& campaign_dir);

// Asks the scheduler(s) of the recorded submissions which manifest indices are running or
// pending, and why pending ones wait (squeue %r; qstat -f comment; a live local executor's
// queued indices are pending). The runs of a packed task share its state, with the task's
// indices in SchedulerTask::pack (campaign.h says how a running pack's runs are told apart).
// Notes say what could not be asked.
SchedulerStates query_scheduler(const Campaign& campaign, std::vector<std::string>* notes);

// Whether `program` is an executable in a directory of $PATH.
bool program_on_path(const std::string& program);

}  // namespace ts
