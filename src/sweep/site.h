// Site files (configs/sites/*.yaml, docs/sweeps.md "Site file"): which scheduler a machine
// has, its limits, and how logical names in run configs map to resources: GPU generation ->
// partition, gres, constraint, PBS select resources, GPUs per node; mpi flavor -> modules, launcher and the trainscale binary
// built for it; storage name -> path with an optional stage-in copy.
// Errors are ConfigError naming the site file, line, key and the accepted values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ts {

// `node:` what one compute node offers, for `sweep submit`'s shape check (sweep/shape_check.h).
// Unset values are unknown and not checked. The local executor's node is this machine unless a
// local site declares one; a `gpu.<generation>.node` describes that generation's nodes.
struct SiteNode {
  std::optional<int> cores;        // CPU cores of one node
  std::optional<int> gpus;         // GPUs of one node
  std::optional<double> memory_gb; // memory of one node in GiB (2^30 bytes: Slurm's G, PBS's gb)
  bool oversubscribe = false;      // accept shapes that need more cores than a node has
  bool declared() const { return cores || gpus || memory_gb; }
};

// One `gpu:` entry: what an array of runs with `gpu: <generation>` asks the scheduler for.
// Entries are named by generation (k80 ... h200, backend/gpu_generation.h) or `any` (runs
// that accept any GPU).
struct SiteGpu {
  std::string partition;     // Slurm partition / PBS queue ("" = the site's default)
  std::string gres;          // Slurm --gres, e.g. "gpu:a100:{gpus_per_node}" ({gpus_per_node} substituted)
  std::string constraint;    // Slurm --constraint (node features), e.g. "a100_80g"
  std::string select;        // PBS: resources appended to the select chunk, e.g. "gpu_model=a100"
  int gpus_per_node = 1;     // GPUs of one node; a run puts one worker (MPI rank) on each
  // `module load` lines after the MPI entry's, e.g. [cuda/12.4] on nodes that need another toolkit
  std::vector<std::string> modules;
  // trainscale built for these GPUs ("" = the MPI entry's binary): CUDA 13 compiles for compute
  // capability 7.5 and newer only, so K80/P40/P100/V100 nodes need a build with an older toolkit.
  std::string binary;
  // The nodes of this generation where they differ from the site's `node` (set values win).
  SiteNode node;
};

struct SiteMpi {
  std::vector<std::string> modules;        // `module load` lines in job scripts
  std::string launcher = "mpirun";         // mpirun | srun | mpiexec (how arguments are spelled)
  std::string launcher_command;            // the program to run ("" = `launcher`), e.g. mpiexec.mpich
  std::string srun_mpi = "pmix";           // srun --mpi=<srun_mpi>
  std::vector<std::string> launcher_args;  // extra launcher arguments, e.g. [--oversubscribe]
  // The local executor only: a command that runs the launcher on another host, as ssh does
  // (e.g. [ssh, head1], or the test bed's [/run/trainscale-testbed/agent, tsnode1]): the launcher's
  // words follow it shell-quoted and joined into one argument. Empty: the launcher runs here.
  std::vector<std::string> launcher_prefix;
  std::string binary;                      // trainscale built for this flavor ("" = the running binary)
};

struct SiteStorage {
  std::string path;        // directory holding data sets ("" = dataset.root as written)
  std::string stage_from;  // another storage name to copy the data set from before the run ("" = none)
};

// `scheduler: simulate` (docs/sweeps.md "Simulated campaigns"): every run of the campaign goes
// through trainscale-sim on this machine, on the simulated cluster of a cluster file.
struct SiteSimulate {
  std::string cluster;                   // cluster file (required); relative: from the current directory
  std::vector<std::string> cluster_set;  // "dotted.key=value" overrides of it
  std::string binary;                    // trainscale-sim ("" = beside the running trainscale)
  int64_t steps = 3;                     // simulated steps per run
  std::string network_model;             // "" = the simulator's default (CM02)
  std::string coll_selector;             // "" = each run's mpi_flavor, else the cluster file's
};

// The most runs one packed array task may run (sweep submit --pack, the site's `pack`).
constexpr int kMaxPack = 1000;

struct Site {
  std::string path;          // the site file ("<built-in local>" for the default)
  std::string name;
  std::string scheduler = "local";  // slurm | pbs | local | simulate
  std::string account;
  std::string partition;     // default partition (Slurm) / queue (PBS) for runs without a gpu
  int64_t max_array_size = 1000;
  int throttle = 0;          // concurrent array tasks (0 = no limit; the local executor: 1)
  std::string walltime = "01:00:00";  // default when the sweep's resources give none
  std::string mem;           // defaults.mem: memory per node when the sweep's resources give none ("" = the scheduler's)
  // `pack`: runs per array task (sweep submit --pack): Slurm and PBS only; 1 = one run per task.
  int pack = 1;
  // `pack_side_by_side`: a packed task runs as many of its runs at once as one node holds
  // (shape_check.h pack_layout); false: one after another (runs that share a node contend for it).
  bool pack_side_by_side = false;
  int pack_nodes = 1;  // `pack_nodes`: the most nodes a packed task's side-by-side runs spread over
  int workers_per_node = 0;  // CPU runs: MPI ranks per node (0 = all ranks on one node)
  std::string templates;     // directory of the job templates ("" = <source>/jobs)
  SiteNode node;             // `node:` (cores, gpus, memory_gb, oversubscribe)
  // Preemption (docs/reliability.md "Preemption"): Slurm `#SBATCH --requeue` (PBS `#PBS -r y`),
  // and a task that ends preempted requeues itself (scontrol requeue).
  bool requeue = false;
  // Slurm `#SBATCH --signal=B:USR1@<n>`: the batch shell gets SIGUSR1 n seconds before the
  // walltime and forwards it to the ranks. The local executor waits this long after forwarding
  // an interrupt before it kills what is left (0 = 60 s there).
  int signal_seconds = 0;
  std::vector<std::string> setup;              // extra shell lines run before the launcher
  std::map<std::string, std::string> env;      // exported in job scripts and the local executor
  std::string mpi_default;                     // the mpi entry for runs with mpi_flavor: any
  std::map<std::string, SiteGpu> gpu;
  std::map<std::string, SiteMpi> mpi;
  std::vector<std::string> mpi_order;          // mpi entry names in file order
  std::map<std::string, SiteStorage> storage;
  // Node-local scratch directory: dataset.stage: node_local copies there when the run's
  // dataset.stage_dir is unset ("" = the run's own default, $TMPDIR or /tmp).
  std::string scratch;
  SiteSimulate simulate;                       // scheduler: simulate
};

// Parses a site file (ConfigError naming file:line:key on anything malformed).
Site load_site_file(const std::string& path);
Site parse_site_file(const std::string& text, const std::string& path);

// The site used when a campaign has none: this machine, no scheduler, the running binary
// launched with mpirun --oversubscribe, storage `local` = dataset.root as written.
Site default_local_site();

// Checks a resolved run's gpu, mpi_flavor and dataset.storage against the site. Returns "" when
// the site has them, else the reason (names the key, the value and what the site offers).
// gpu `none` needs no entry; a generation or `any` needs the entry of that name. A simulate site
// takes every run (the simulator stands for any GPU, MPI library and storage).
std::string site_check_run(const Site& site, const std::string& gpu, const std::string& mpi_flavor,
                           const std::string& storage);

// Shell-quotes `s` for bash ('...' with embedded quotes escaped); plain words stay as they are.
std::string shell_quote(const std::string& s);

// Where a run reads its data set under a site's storage mapping: `<storage path>/<basename of
// dataset.root>` (dataset.root as written when the storage has no path). With `stage_from`,
// the data set is first copied from `<stage_from path>/<basename>` (once: a stamp file marks a
// finished copy; the copy goes to a temp name and is renamed).
struct StagedData {
  std::string root;       // the directory the run reads
  bool copied = false;    // this call copied the data set
  double seconds = 0.0;   // time spent staging (0 when nothing was copied)
  std::string note;       // one line for the attempt log
};
// `copy` false: only the path (ranks other than 0 read what rank 0 staged).
StagedData stage_dataset(const Site& site, const std::string& storage, const std::string& dataset_root, bool copy = true);

}  // namespace ts
