// The fuzz targets (docs/reliability.md "Fuzzing and sanitizers"): one entry function per
// parser or reader that takes input a user or a damaged disk controls. Each runs arbitrary bytes
// through the code the driver runs on such input and returns when the input was accepted or
// refused with ConfigError or RuntimeError. Anything else escapes and is a bug: another
// exception (std::bad_alloc, std::out_of_range, a yaml-cpp exception), InvariantError (an
// accepted input broke a property, e.g. a canonical config that does not parse back to itself),
// a crash, a leak, a hang or undefined behaviour (the sanitizers of the fuzz build).
// libfuzzer_main.cpp wraps one entry per fuzz binary (scripts/fuzz.sh);
// tests/cpp/test_fuzz_corpus.cpp replays every corpus file (tests/fuzz/<name>/) through its entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ts::fuzz {

// An accepted input that breaks a property the code promises.
class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Run config YAML -> parse_run_config; the canonical YAML must parse back to itself.
void run_config(const uint8_t* data, size_t size);
// Sweep file YAML (its `base` looked up beside configs/sweeps/) -> parse_sweep_file, and for
// small sweeps expand_sweep, the local-site check, the manifest and the dry-run table.
void sweep_file(const uint8_t* data, size_t size);
// Site file YAML -> parse_site_file and the mpi entry for `any`.
void site_file(const uint8_t* data, size_t size);
// A campaign's manifest.yaml (with a matching manifest.hash, in a scratch campaign directory)
// -> load_campaign, then campaign_status and its text.
void manifest(const uint8_t* data, size_t size);
// An IDX split (images and labels files, each raw or gzip; layout in fuzz_data_files.cpp) ->
// open_idx_source over an in-memory Storage, then every sample read.
void idx(const uint8_t* data, size_t size);
// A CIFAR-10 test_batch.bin -> open_cifar10_source over an in-memory Storage, every sample read.
void cifar(const uint8_t* data, size_t size);
// One JPEG file of a jpeg_dir tree -> open_jpeg_dir_source over an in-memory Storage, decoded
// and transformed (training crops and flips, evaluation centre crop).
void jpeg_dir(const uint8_t* data, size_t size);
// A records shard (and its index; layout in fuzz_data_files.cpp) -> open_records_source over an
// in-memory Storage, then every sample read.
void records(const uint8_t* data, size_t size);
// A description of an HDF5 file (shapes, dtypes, layout attribute, chunking, gzip, values; layout
// in fuzz_hdf5_file.cpp), written through HDF5 into a file image -> open_hdf5_image, every sample read.
void hdf5(const uint8_t* data, size_t size);
// A server's directory listing for blob storage (first byte even: an S3 ListObjectsV2 page of
// prefix "d/"; odd: nginx autoindex JSON) -> its parser; every entry named, without '/'.
void blob_listing(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // also the corpus directory tests/fuzz/<name>/
  void (*entry)(const uint8_t* data, size_t size);
};

// Every target, in the order scripts/fuzz.sh runs them.
const std::vector<Target>& targets();

}  // namespace ts::fuzz
