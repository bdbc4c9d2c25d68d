// Tests for write_run_file (schema trainscale-run/1): every group, dataset and attribute is
// read back with the HDF5 C API and checked for name, type, shape and value; empty results,
// unwritable directories, mid-write failures and the atomic temp-file-and-rename.
#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

#if __has_include(<hdf5.h>)
#include <hdf5.h>
#else
#include <hdf5/serial/hdf5.h>  // Debian's serial HDF5 (the test target does not get its include dir)
#endif

#include <cmath>
#include <iterator>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "metrics/run_result.h"

namespace fs = std::filesystem;

namespace {

class RunFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ts_runfile_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

// S = 3 steps, R = 2 ranks, E = 2 evaluations, 2 layers.
ts::RunResult sample_result() {
  ts::RunResult r;
  ts::RunRecord& a = r.record;
  a.run_id = "abc123-r0";
  a.config_id = "abc123";
  a.campaign = "unit";
  a.config_yaml = "model: lenet\nlr: 0.05\n";
  a.version = "0.1.0";
  a.git_sha = "0123456789ab";
  a.start_time = "2024-01-01T00:00:00Z";
  a.end_time = "2024-01-01T00:01:00Z";
  a.hosts = "node1,node2";
  a.rank_hosts = "node1,node2";
  a.local_ranks = "0,0";
  a.mpi_flavor = "openmpi";
  a.mpi_version = "4.1.4";
  a.mpi_tuning = "OMPI_MCA_btl_vader_single_copy_mechanism=none";
  a.dist_transport = "staged";
  a.loss_reads = "log";
  a.device_plans = "conv:mb1_ic1oc1_ih1iw1_kh1kw1_sh1sw1_ph0pw0 fwd algo 1\nfc 2";
  a.device_workspace_bytes = int64_t{3} << 20;
  a.backend = "cpu";
  a.device = "cpu";
  a.device_name = "Zen \xc2\xb5" "arch";
  a.device_generation = "none";
  a.isa = "avx512_core";
  a.device_libraries = "onednn 2.6.3";
  a.device_memory_bytes = int64_t{24} << 30;
  a.cpu_model = "Zen \xc2\xb5" "arch";
  a.precision = "fp32";
  a.world_size = 2;
  a.threads = 4;
  a.flush_denormals = 1;
  a.seed = 17;
  a.attempt = 3;
  a.resumed_from_step = 2;
  a.setup_start_unix = 1.7e9;
  a.train_start_unix = 1.7e9 + 2.5;
  a.train_split_samples = 60000;
  a.eval_split_samples = 10000;
  r.config = {{"model", "lenet"}, {"dataset.name", "fashion_mnist"}, {"lr", "0.05"}};
  r.step = {1, 2, 3};
  r.samples = {128, 256, 384};
  r.epoch = {0.25, 0.5, 0.75};
  r.time = {0.1, 0.2, 0.3};
  r.loss = {2.3f, 1.9f, 1.5f};
  r.lr = {0.05f, 0.05f, 0.04f};
  r.wall_time = {1.7e9 + 3, 1.7e9 + 3.5, 1.7e9 + 4};
  r.timing["forward"] = {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f};  // [s * 2 + r]
  r.timing["step"] = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  r.eval_step = {2, 3};
  r.eval_epoch = {0.5, 0.75};
  r.eval_time = {0.25, 0.35};
  r.eval_loss = {0.6, 0.5};
  r.eval_accuracy = {0.8, 0.85};
  r.eval_wall_time = {1.7e9 + 3.6, 1.7e9 + 4.1};
  r.eval_seconds = {0.05, 0.06};
  r.summary = {{"images_per_s", 1234.5}, {"best_accuracy", 0.85}};
  r.diverged = false;
  r.params_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  r.model_name = "lenet";
  r.model_parameters = 1663370;
  r.model_flops_per_sample = 4'000'000;
  r.layers = {{"conv1", "conv2d", "conv:mb1_ic1oc32_ih28iw28_kh5kw5_sh1sw1_ph2pw2_g1", 832, 1'000'000},
              {"fc2", "linear", "ip:mb1_ic512oc10", 5130, 10240}};
  return r;
}

// ---- read-back helpers (HDF5 C API) ---------------------------------------------------------

struct H5 {  // closes an id of any kind on scope exit
  hid_t id;
  explicit H5(hid_t i) : id(i) { EXPECT_GE(i, 0); }
  ~H5() {
    if (id < 0) return;
    switch (H5Iget_type(id)) {
      case H5I_FILE: H5Fclose(id); break;
      case H5I_GROUP: H5Gclose(id); break;
      case H5I_DATASET: H5Dclose(id); break;
      case H5I_ATTR: H5Aclose(id); break;
      case H5I_DATATYPE: H5Tclose(id); break;
      case H5I_DATASPACE: H5Sclose(id); break;
      default: break;
    }
  }
  operator hid_t() const { return id; }
};

std::string string_attr(hid_t loc, const char* obj, const char* name) {
  H5 attr(H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT));
  H5 type(H5Aget_type(attr));
  EXPECT_EQ(H5Tget_class(type), H5T_STRING) << name;
  EXPECT_TRUE(H5Tis_variable_str(type) > 0) << name;
  EXPECT_EQ(H5Tget_cset(type), H5T_CSET_UTF8) << name;
  H5 mem(H5Tcopy(H5T_C_S1));
  H5Tset_size(mem, H5T_VARIABLE);
  H5Tset_cset(mem, H5T_CSET_UTF8);
  char* text = nullptr;
  EXPECT_GE(H5Aread(attr, mem, &text), 0) << name;
  std::string out = text ? text : "";
  H5free_memory(text);
  return out;
}

int64_t int_attr(hid_t loc, const char* obj, const char* name) {
  H5 attr(H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT));
  H5 type(H5Aget_type(attr));
  EXPECT_EQ(H5Tget_class(type), H5T_INTEGER) << name;
  EXPECT_EQ(H5Tget_size(type), 8u) << name;
  int64_t v = -1;
  EXPECT_GE(H5Aread(attr, H5T_NATIVE_INT64, &v), 0);
  return v;
}

double double_attr(hid_t loc, const char* obj, const char* name) {
  H5 attr(H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT));
  H5 type(H5Aget_type(attr));
  EXPECT_EQ(H5Tget_class(type), H5T_FLOAT) << name;
  EXPECT_EQ(H5Tget_size(type), 8u) << name;
  double v = -1;
  EXPECT_GE(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), 0);
  return v;
}

int attr_count(hid_t loc, const char* obj) {
  H5O_info_t info;
  EXPECT_GE(H5Oget_info_by_name(loc, obj, &info, H5P_DEFAULT), 0);
  return static_cast<int>(info.num_attrs);
}

// Reads dataset `path`, checking its class/size and shape.
template <typename T>
std::vector<T> read_dataset(hid_t file, const char* path, H5T_class_t cls, std::vector<hsize_t> shape) {
  H5 d(H5Dopen2(file, path, H5P_DEFAULT));
  H5 type(H5Dget_type(d));
  EXPECT_EQ(H5Tget_class(type), cls) << path;
  EXPECT_EQ(H5Tget_size(type), sizeof(T)) << path;
  H5 space(H5Dget_space(d));
  int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  EXPECT_EQ(dims, shape) << path;
  // Chunked and deflate-compressed.
  H5 dcpl(H5Dget_create_plist(d));
  EXPECT_EQ(H5Pget_layout(dcpl), H5D_CHUNKED) << path;
  EXPECT_GE(H5Pget_nfilters(dcpl), 1) << path;
  hsize_t n = 1;
  for (auto x : dims) n *= x;
  std::vector<T> v(n);
  hid_t mem = std::is_same_v<T, int64_t> ? H5T_NATIVE_INT64
              : std::is_same_v<T, float> ? H5T_NATIVE_FLOAT
                                         : H5T_NATIVE_DOUBLE;
  if (n) EXPECT_GE(H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0) << path;
  return v;
}

bool exists(hid_t file, const char* path) { return H5Lexists(file, path, H5P_DEFAULT) > 0; }

}  // namespace

TEST_F(RunFile, WritesEveryNameTypeShapeAndValue) {
  const std::string path = (dir_ / "abc123-r0.h5").string();
  ts::RunResult r = sample_result();
  ts::write_run_file(path, r);
  EXPECT_EQ(listing(), std::vector<std::string>{"abc123-r0.h5"});  // no temp file left

  H5 f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  // Root attributes: every field of the run record under its documented name and type.
  const ts::RunRecord& a = r.record;
  const std::pair<const char*, std::string> strings[] = {
      {"schema", "trainscale-run/1"}, {"run_id", a.run_id}, {"config_id", a.config_id}, {"campaign", a.campaign},
      {"status", "ok"}, {"message", ""}, {"warnings", ""}, {"config", a.config_yaml}, {"version", a.version}, {"git_sha", a.git_sha},
      {"start_time", a.start_time}, {"end_time", a.end_time}, {"hosts", a.hosts}, {"rank_hosts", a.rank_hosts},
      {"local_ranks", a.local_ranks}, {"mpi_flavor", a.mpi_flavor},
      {"mpi_version", a.mpi_version}, {"mpi_tuning", a.mpi_tuning},
      {"dist_transport", a.dist_transport}, {"loss_reads", a.loss_reads}, {"backend", a.backend}, {"device", a.device}, {"device_name", a.device_name},
      {"device_generation", a.device_generation}, {"isa", a.isa}, {"device_libraries", a.device_libraries},
      {"device_plans", a.device_plans}, {"cpu_model", a.cpu_model}, {"precision", a.precision}};
  for (const auto& [k, v] : strings) EXPECT_EQ(string_attr(f, "/", k), v) << k;
  EXPECT_EQ(int_attr(f, "/", "world_size"), 2);
  EXPECT_EQ(int_attr(f, "/", "threads"), 4);
  EXPECT_EQ(int_attr(f, "/", "seed"), 17);
  EXPECT_EQ(int_attr(f, "/", "device_memory_bytes"), int64_t{24} << 30);
  EXPECT_EQ(int_attr(f, "/", "device_workspace_bytes"), a.device_workspace_bytes);
  EXPECT_EQ(int_attr(f, "/", "simulated"), 0);  // measured: no sim_cluster / sim_platform
  EXPECT_EQ(int_attr(f, "/", "attempt"), 3);
  EXPECT_EQ(int_attr(f, "/", "resumed_from_step"), 2);
  EXPECT_EQ(int_attr(f, "/", "flush_denormals"), 1);
  EXPECT_EQ(double_attr(f, "/", "setup_start_unix"), 1.7e9);
  EXPECT_EQ(double_attr(f, "/", "train_start_unix"), 1.7e9 + 2.5);
  EXPECT_EQ(int_attr(f, "/", "train_split_samples"), 60000);
  EXPECT_EQ(int_attr(f, "/", "eval_split_samples"), 10000);
  EXPECT_EQ(attr_count(f, "/"), static_cast<int>(std::size(strings)) + 13);

  // /config
  EXPECT_EQ(string_attr(f, "/config", "dataset.name"), "fashion_mnist");
  EXPECT_EQ(string_attr(f, "/config", "lr"), "0.05");
  EXPECT_EQ(string_attr(f, "/config", "model"), "lenet");
  EXPECT_EQ(attr_count(f, "/config"), 3);

  // /train [S]
  EXPECT_EQ(read_dataset<int64_t>(f, "/train/step", H5T_INTEGER, {3}), r.step);
  EXPECT_EQ(read_dataset<double>(f, "/train/epoch", H5T_FLOAT, {3}), r.epoch);
  EXPECT_EQ(read_dataset<int64_t>(f, "/train/samples", H5T_INTEGER, {3}), r.samples);
  EXPECT_EQ(read_dataset<double>(f, "/train/time", H5T_FLOAT, {3}), r.time);
  EXPECT_EQ(read_dataset<float>(f, "/train/loss", H5T_FLOAT, {3}), r.loss);
  EXPECT_EQ(read_dataset<float>(f, "/train/lr", H5T_FLOAT, {3}), r.lr);
  EXPECT_EQ(string_attr(f, "/train/time", "units"), "seconds");
  EXPECT_EQ(read_dataset<double>(f, "/train/wall_time", H5T_FLOAT, {3}), r.wall_time);
  EXPECT_EQ(string_attr(f, "/train/wall_time", "units"), "seconds since 1970-01-01 UTC");

  // /timing [S, R]
  EXPECT_EQ(read_dataset<float>(f, "/timing/forward", H5T_FLOAT, {3, 2}), r.timing["forward"]);
  EXPECT_EQ(read_dataset<float>(f, "/timing/step", H5T_FLOAT, {3, 2}), r.timing["step"]);
  EXPECT_FALSE(exists(f, "/timing/backward"));

  // /eval [E]
  EXPECT_EQ(read_dataset<int64_t>(f, "/eval/step", H5T_INTEGER, {2}), r.eval_step);
  EXPECT_EQ(read_dataset<double>(f, "/eval/epoch", H5T_FLOAT, {2}), r.eval_epoch);
  EXPECT_EQ(read_dataset<double>(f, "/eval/time", H5T_FLOAT, {2}), r.eval_time);
  EXPECT_EQ(read_dataset<double>(f, "/eval/loss", H5T_FLOAT, {2}), r.eval_loss);
  EXPECT_EQ(read_dataset<double>(f, "/eval/accuracy", H5T_FLOAT, {2}), r.eval_accuracy);
  EXPECT_EQ(read_dataset<double>(f, "/eval/wall_time", H5T_FLOAT, {2}), r.eval_wall_time);
  EXPECT_EQ(read_dataset<double>(f, "/eval/seconds", H5T_FLOAT, {2}), r.eval_seconds);

  // /summary: given values, NaN for the missing schema keys, diverged as int64.
  EXPECT_EQ(double_attr(f, "/summary", "images_per_s"), 1234.5);
  EXPECT_EQ(double_attr(f, "/summary", "best_accuracy"), 0.85);
  for (const char* k : {"images_per_s_per_worker", "step_time_median", "step_time_p90", "warmup_steps",
                        "final_train_loss", "min_train_loss", "final_accuracy", "time_to_target"})
    EXPECT_TRUE(std::isnan(double_attr(f, "/summary", k))) << k;
  EXPECT_EQ(int_attr(f, "/summary", "diverged"), 0);
  EXPECT_EQ(string_attr(f, "/summary", "params_sha256"), r.params_sha256);
  EXPECT_EQ(attr_count(f, "/summary"), 12);

  // /model attrs and the compound layer table.
  EXPECT_EQ(string_attr(f, "/model", "name"), "lenet");
  EXPECT_EQ(int_attr(f, "/model", "parameters"), 1663370);
  EXPECT_EQ(int_attr(f, "/model", "flops_per_sample"), 4'000'000);
  H5 layers(H5Dopen2(f, "/model/layers", H5P_DEFAULT));
  H5 ftype(H5Dget_type(layers));
  ASSERT_EQ(H5Tget_class(ftype), H5T_COMPOUND);
  ASSERT_EQ(H5Tget_nmembers(ftype), 5);
  const char* names[] = {"name", "kind", "descriptor", "parameters", "flops"};
  const H5T_class_t classes[] = {H5T_STRING, H5T_STRING, H5T_STRING, H5T_INTEGER, H5T_INTEGER};
  for (unsigned i = 0; i < 5; ++i) {
    char* n = H5Tget_member_name(ftype, i);
    EXPECT_STREQ(n, names[i]);
    H5free_memory(n);
    EXPECT_EQ(H5Tget_member_class(ftype, i), classes[i]);
  }
  struct Row {
    char* name;
    char* kind;
    char* descriptor;
    int64_t parameters, flops;
  };
  H5 str(H5Tcopy(H5T_C_S1));
  H5Tset_size(str, H5T_VARIABLE);
  H5Tset_cset(str, H5T_CSET_UTF8);
  H5 mem(H5Tcreate(H5T_COMPOUND, sizeof(Row)));
  H5Tinsert(mem, "name", HOFFSET(Row, name), str);
  H5Tinsert(mem, "kind", HOFFSET(Row, kind), str);
  H5Tinsert(mem, "descriptor", HOFFSET(Row, descriptor), str);
  H5Tinsert(mem, "parameters", HOFFSET(Row, parameters), H5T_NATIVE_INT64);
  H5Tinsert(mem, "flops", HOFFSET(Row, flops), H5T_NATIVE_INT64);
  H5 space(H5Dget_space(layers));
  ASSERT_EQ(H5Sget_simple_extent_npoints(space), 2);
  Row rows[2];
  ASSERT_GE(H5Dread(layers, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows), 0);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(std::string(rows[i].name), r.layers[static_cast<size_t>(i)].name);
    EXPECT_EQ(std::string(rows[i].kind), r.layers[static_cast<size_t>(i)].kind);
    EXPECT_EQ(std::string(rows[i].descriptor), r.layers[static_cast<size_t>(i)].descriptor);
    EXPECT_EQ(rows[i].parameters, r.layers[static_cast<size_t>(i)].parameters);
    EXPECT_EQ(rows[i].flops, r.layers[static_cast<size_t>(i)].flops);
  }
  H5Dvlen_reclaim(mem, space, H5P_DEFAULT, rows);
}

// trainscale-sim's runs: simulated = 1 and the cluster and platform they ran on.
TEST_F(RunFile, SimulatedRunHasItsFlagClusterAndPlatform) {
  const std::string path = (dir_ / "sim-r0.h5").string();
  ts::RunResult r = sample_result();
  r.record.simulated = 1;
  r.record.sim_cluster = "name: skylake-8180m\nnodes: 1000\n";
  r.record.sim_platform = "1000 nodes x 1 ranks, star, alpha 0.5 us, 200 Gbit/s";
  ts::write_run_file(path, r);
  H5 f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  EXPECT_EQ(int_attr(f, "/", "simulated"), 1);
  EXPECT_EQ(string_attr(f, "/", "sim_cluster"), r.record.sim_cluster);
  EXPECT_EQ(string_attr(f, "/", "sim_platform"), r.record.sim_platform);
}

TEST_F(RunFile, EmptyResultWritesZeroLengthDatasets) {
  ts::RunResult r;
  r.record.world_size = 3;
  r.timing["step"] = {};
  r.diverged = true;
  r.summary["diverged"] = 1.0;  // ignored: the int64 flag comes from result.diverged
  const std::string path = (dir_ / "empty.h5").string();
  ts::write_run_file(path, r);
  H5 f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  EXPECT_TRUE(read_dataset<int64_t>(f, "/train/step", H5T_INTEGER, {0}).empty());
  EXPECT_TRUE(read_dataset<float>(f, "/train/loss", H5T_FLOAT, {0}).empty());
  EXPECT_TRUE(read_dataset<float>(f, "/timing/step", H5T_FLOAT, {0, 3}).empty());
  EXPECT_TRUE(read_dataset<double>(f, "/eval/accuracy", H5T_FLOAT, {0}).empty());
  EXPECT_EQ(int_attr(f, "/summary", "diverged"), 1);
  EXPECT_EQ(string_attr(f, "/", "schema"), "trainscale-run/1");
  EXPECT_EQ(string_attr(f, "/", "status"), "ok");
  H5 layers(H5Dopen2(f, "/model/layers", H5P_DEFAULT));
  H5 space(H5Dget_space(layers));
  EXPECT_EQ(H5Sget_simple_extent_npoints(space), 0);
}

TEST_F(RunFile, LongRunIsChunked) {
  ts::RunResult r;
  r.record.world_size = 2;
  const int64_t S = 100000;
  for (int64_t s = 0; s < S; ++s) {
    r.step.push_back(s);
    r.samples.push_back(s * 64);
    r.epoch.push_back(static_cast<double>(s) / 1000);
    r.time.push_back(static_cast<double>(s) * 0.01);
    r.loss.push_back(1.0f);
    r.lr.push_back(0.1f);
  }
  r.timing["step"].assign(static_cast<size_t>(S * 2), 0.01f);
  const std::string path = (dir_ / "long.h5").string();
  ts::write_run_file(path, r);
  H5 f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  auto v = read_dataset<float>(f, "/timing/step", H5T_FLOAT, {static_cast<hsize_t>(S), 2});
  EXPECT_EQ(v.back(), 0.01f);
  EXPECT_LT(fs::file_size(path), 2'000'000u);  // constant columns compress well
}

TEST_F(RunFile, ReplacesExistingFileAtomically) {
  const std::string path = (dir_ / "run.h5").string();
  ts::RunResult r = sample_result();
  ts::write_run_file(path, r);
  r.record.status = ts::RunStatus::diverged;
  ts::write_run_file(path, r);
  EXPECT_EQ(listing(), std::vector<std::string>{"run.h5"});
  H5 f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  EXPECT_EQ(string_attr(f, "/", "status"), "diverged");
}

TEST_F(RunFile, MissingDirectoryIsNamed) {
  const std::string missing = (dir_ / "no" / "such").string();
  try {
    ts::write_run_file(missing + "/run.h5", sample_result());
    FAIL() << "expected an error";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST_F(RunFile, UnwritableDirectoryIsNamed) {
  // Permission bits do not stop root (CI runs as root), so use a "directory" that is a regular
  // file: no process can create a file inside it.
  fs::path blocker = dir_ / "a_file";
  { std::ofstream(blocker) << "not a directory"; }
  try {
    ts::write_run_file((blocker / "run.h5").string(), sample_result());
    FAIL() << "expected an error";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(blocker.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // nothing left behind
}

TEST_F(RunFile, FailureMidWriteRemovesTempFile) {
  ts::RunResult r = sample_result();
  r.config[""] = "an attribute without a name makes HDF5 fail";
  const std::string path = (dir_ / "run.h5").string();
  try {
    ts::write_run_file(path, r);
    FAIL() << "expected an error";
  } catch (const ts::RuntimeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("HDF5 call H5A"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path + ".tmp-"), std::string::npos) << msg;
  }
  EXPECT_TRUE(listing().empty());
}

TEST_F(RunFile, InconsistentLengthsRejectedBeforeWriting) {
  ts::RunResult r = sample_result();
  r.timing["comm"] = {0.1f};  // needs S x R = 6
  const std::string path = (dir_ / "run.h5").string();
  try {
    ts::write_run_file(path, r);
    FAIL() << "expected an error";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("/timing/comm"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(listing().empty());
}

// /partition (heterogeneous workers): written only when the result has one, every name with
// its type, shape and value; arrays that are not steps x ranks are refused before writing.
TEST_F(RunFile, PartitionOfHeterogeneousWorkers) {
  const std::string plain = (dir_ / "equal.h5").string();
  ts::write_run_file(plain, sample_result());
  {
    H5 f(H5Fopen(plain.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    EXPECT_FALSE(exists(f, "/partition")) << "equal shares: no /partition";
  }
  ts::RunResult r = sample_result();  // 3 steps x 2 ranks
  ts::PartitionRecord& p = r.partition;
  p.kind = "measured";
  p.emulate_slowdown_rank = 1;
  p.emulate_slowdown_factor = 2.5;
  p.shares = {64, 64, 64, 64, 96, 32};
  p.compute = {0.1f, 0.2f, 0.1f, 0.2f, 0.15f, 0.16f};
  p.idle = {0.1f, 0.f, 0.1f, 0.f, 0.01f, 0.f};
  p.change_step = {1, 3};
  p.change_shares = {64, 64, 96, 32};
  const std::string path = (dir_ / "hetero.h5").string();
  ts::write_run_file(path, r);
  H5 f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  EXPECT_EQ(string_attr(f, "/partition", "kind"), "measured");
  EXPECT_EQ(int_attr(f, "/partition", "emulate_slowdown_rank"), 1);
  EXPECT_EQ(double_attr(f, "/partition", "emulate_slowdown_factor"), 2.5);
  EXPECT_EQ(read_dataset<int64_t>(f, "/partition/shares", H5T_INTEGER, {3, 2}), p.shares);
  EXPECT_EQ(read_dataset<float>(f, "/partition/compute", H5T_FLOAT, {3, 2}), p.compute);
  EXPECT_EQ(read_dataset<float>(f, "/partition/idle", H5T_FLOAT, {3, 2}), p.idle);
  EXPECT_EQ(read_dataset<int64_t>(f, "/partition/change_step", H5T_INTEGER, {2}), p.change_step);
  EXPECT_EQ(read_dataset<int64_t>(f, "/partition/change_shares", H5T_INTEGER, {2, 2}), p.change_shares);

  p.idle.pop_back();
  const std::string bad = (dir_ / "bad.h5").string();
  EXPECT_THROW(ts::write_run_file(bad, r), ts::RuntimeError);
  EXPECT_FALSE(std::filesystem::exists(bad));
}
