// A Storage over files held in memory, for the data-reader fuzz targets: the readers run
// exactly as over PosixStorage (open, size, exact read_at that throws outside the file), on
// bytes the fuzzer made, without touching the disk.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/storage.h"

namespace ts::fuzz {

class MemoryStorage final : public Storage {
 public:
  void add(const std::string& path, std::vector<uint8_t> bytes) { files_[path] = std::move(bytes); }

  std::string name() const override { return "memory"; }
  bool exists(const std::string& path) const override {
    if (files_.count(path)) return true;
    for (const auto& kv : files_)  // a directory: a prefix of some file's path
      if (kv.first.compare(0, path.size() + 1, path + "/") == 0) return true;
    return false;
  }
  std::unique_ptr<RandomAccessFile> open(const std::string& path) const override {
    auto it = files_.find(path);
    if (it == files_.end()) throw RuntimeError("data file " + path + ": cannot open it (not in memory)");
    return std::make_unique<File>(path, it->second);
  }
  std::vector<StorageEntry> list(const std::string& dir) const override {
    std::map<std::string, StorageEntry> entries;  // sorted by name
    const std::string prefix = dir + "/";
    for (const auto& kv : files_) {
      if (kv.first.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string rest = kv.first.substr(prefix.size());
      const size_t slash = rest.find('/');
      if (slash == std::string::npos)
        entries[rest] = {rest, false, static_cast<int64_t>(kv.second.size())};
      else
        entries[rest.substr(0, slash)] = {rest.substr(0, slash), true, 0};
    }
    std::vector<StorageEntry> out;
    for (auto& kv : entries) out.push_back(kv.second);
    return out;
  }

 private:
  class File final : public RandomAccessFile {
   public:
    File(std::string path, std::vector<uint8_t> bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}
    const std::string& path() const override { return path_; }
    int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }
    void read_at(int64_t offset, int64_t bytes, void* dst) const override {
      if (offset < 0 || bytes < 0 || offset > size() || bytes > size() - offset)
        throw RuntimeError("data file " + path_ + ": read of " + std::to_string(bytes) + " bytes at offset " +
                           std::to_string(offset) + " lies outside its " + std::to_string(size()) + " bytes");
      if (bytes > 0) std::memcpy(dst, bytes_.data() + offset, static_cast<size_t>(bytes));
    }

   private:
    std::string path_;
    std::vector<uint8_t> bytes_;
  };

  std::map<std::string, std::vector<uint8_t>> files_;
};

}  // namespace ts::fuzz
