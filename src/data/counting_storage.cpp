// CountingStorage (see counting_storage.h).
#include "data/counting_storage.h"

#include <string>
#include <utility>
#include <vector>

#include "core/timer.h"

namespace ts {
namespace {

thread_local ReadCounts this_thread_counts;

class CountingFile final : public RandomAccessFile {
 public:
  explicit CountingFile(std::unique_ptr<RandomAccessFile> inner) : inner_(std::move(inner)) {}
  const std::string& path() const override { return inner_->path(); }
  int64_t size() const override { return inner_->size(); }
  void read_at(int64_t offset, int64_t bytes, void* dst) const override {
    const double t0 = now_seconds();
    inner_->read_at(offset, bytes, dst);  // a failed read throws and counts nothing
    this_thread_counts.seconds += now_seconds() - t0;
    this_thread_counts.bytes += bytes;
  }

 private:
  std::unique_ptr<RandomAccessFile> inner_;
};

class CountingStorage final : public Storage {
 public:
  explicit CountingStorage(std::unique_ptr<Storage> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  bool exists(const std::string& path) const override { return inner_->exists(path); }
  std::unique_ptr<RandomAccessFile> open(const std::string& path) const override {
    return std::make_unique<CountingFile>(inner_->open(path));
  }
  std::vector<StorageEntry> list(const std::string& dir) const override { return inner_->list(dir); }

 private:
  std::unique_ptr<Storage> inner_;
};

}  // namespace

ReadCounts thread_read_counts() { return this_thread_counts; }

std::unique_ptr<Storage> make_counting_storage(std::unique_ptr<Storage> inner) {
  return std::make_unique<CountingStorage>(std::move(inner));
}

}  // namespace ts
