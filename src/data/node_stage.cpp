// Node-local staging (see node_stage.h).
#include "data/node_stage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "core/preemption_signal.h"
#include "core/sha256.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStampName = ".trainscale-stage-complete";
constexpr int64_t kCopyChunk = int64_t{8} << 20;  // bytes per read of the source

// A POSIX tree's walk: each directory once. A directory reached again (a symlink loop, or a
// second link to one directory) or through a link out of the root would make the walk read
// files twice, unrelated files, or recurse without end: it is refused, naming the link.
struct WalkGuard {
  bool posix = false;
  std::string root;        // canonical
  std::string shown_root;  // as given, for messages
  std::vector<std::pair<dev_t, ino_t>> seen;

  void enter(const std::string& dir) {
    if (!posix) return;
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return;  // listing it will say what is wrong
    const auto id = std::make_pair(st.st_dev, st.st_ino);
    if (std::find(seen.begin(), seen.end(), id) != seen.end())
      throw RuntimeError("data root " + shown_root + ": " + dir + " is a directory the walk already read (a " +
                         "symlink loop, or a second link to one directory); remove the link: each data tree is read once");
    std::error_code ec;
    const std::string real = std::filesystem::canonical(dir, ec).string();
    if (!ec && !seen.empty() && real != root && real.rfind(root + "/", 0) != 0)
      throw RuntimeError("data root " + shown_root + ": " + dir + " links to " + real + ", outside the data root; " +
                         "copy or mount that data under the root instead");
    seen.push_back(id);
  }
};

void list_into(const Storage& storage, const std::string& dir, const std::string& relative, std::vector<TreeFile>& out,
               WalkGuard& guard) {
  guard.enter(dir);
  for (const StorageEntry& e : storage.list(dir)) {
    if (relative.empty() && e.name == kStampName) continue;  // the stamp of a staged copy is no data
    const std::string path = join_storage_path(dir, e.name);
    const std::string rel = relative.empty() ? e.name : relative + "/" + e.name;
    if (e.directory)
      list_into(storage, path, rel, out, guard);
    else
      out.push_back({path, rel, e.size, e.mtime_ns});
  }
}

// The stamp's text: one "size mtime_ns relative-path" line per file.
std::string manifest_of(const std::vector<TreeFile>& files) {
  std::ostringstream text;
  for (const TreeFile& f : files) text << f.size << ' ' << f.mtime_ns << ' ' << f.relative << '\n';
  return text.str();
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Copies one file through the source storage into `dst` (created; fsync'd by the caller's stamp
// order only: a crash before the stamp leaves a temp directory that is never read).
void copy_file(const Storage& source, const TreeFile& file, const fs::path& dst, std::vector<char>& buffer) {
  const auto in = source.open(file.path);
  fs::create_directories(dst.parent_path());
  const int fd = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw RuntimeError("dataset.stage: cannot create " + dst.string() + " (" + std::strerror(errno) +
                       "); set dataset.stage_dir to a writable node-local directory");
  for (int64_t offset = 0; offset < in->size();) {
    const int64_t bytes = std::min<int64_t>(kCopyChunk, in->size() - offset);
    try {
      stop_if_signalled_during_startup([&] { return "dataset.stage node_local: copying " + file.path; });  // a large file
      in->read_at(offset, bytes, buffer.data());
    } catch (...) {
      ::close(fd);
      throw;
    }
    for (int64_t done = 0; done < bytes;) {
      const ssize_t put = ::write(fd, buffer.data() + done, static_cast<size_t>(bytes - done));
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw RuntimeError("dataset.stage: writing " + dst.string() + " failed (" + why + ") while copying " +
                           file.path + "; free space in dataset.stage_dir or point it elsewhere");
      }
      done += put;
    }
    offset += bytes;
  }
  if (::close(fd) != 0)
    throw RuntimeError("dataset.stage: closing " + dst.string() + " failed (" + std::strerror(errno) + ")");
}

// Copies every file into `temp_dir`; a preemption signal during start-up stops it between two
// files (or two chunks of one) and removes the partial copy.
void copy_files(const Storage& source, const std::vector<TreeFile>& files, const fs::path& temp_dir,
                std::vector<char>& buffer) {
  size_t copied = 0;
  try {
    for (const TreeFile& f : files) {
      stop_if_signalled_during_startup([&] {
        return "dataset.stage node_local: copied " + std::to_string(copied) + " of " + std::to_string(files.size()) +
               " files to " + temp_dir.string() + ", removed again";
      });
      copy_file(source, f, temp_dir / f.relative, buffer);
      ++copied;
    }
  } catch (const StoppedDuringStartup&) {
    std::error_code ec;
    fs::remove_all(temp_dir, ec);
    throw;
  }
}

}  // namespace

std::vector<TreeFile> list_tree(const Storage& storage, const std::string& root) {
  std::vector<TreeFile> files;
  const bool posix = storage.name() == "local" || storage.name() == "nfs";
  std::error_code ec;  // an unresolvable root: listing it says what is wrong
  WalkGuard guard{posix, posix ? std::filesystem::canonical(root, ec).string() : "", root, {}};
  list_into(storage, root, "", files, guard);
  return files;
}

std::string staged_root(const std::string& source_name, const std::string& root, const std::string& stage_dir) {
  const std::string key = source_name + "\n" + root;
  std::string leaf = fs::path(root).lexically_normal().filename().string();
  if (leaf.empty()) leaf = fs::path(root).lexically_normal().parent_path().filename().string();
  if (leaf.empty() || leaf == "." || leaf == "..") leaf = "data";
  return (fs::path(stage_dir) / "trainscale-stage" / (leaf + "-" + sha256_hex(key.data(), key.size()).substr(0, 12))).string();
}

StageResult stage_tree(const Storage& source, const std::string& root, const std::string& stage_dir) {
  StageResult out;
  out.root = staged_root(source.name(), root, stage_dir);
  const std::vector<TreeFile> files = list_tree(source, root);
  out.files = static_cast<int64_t>(files.size());
  for (const TreeFile& f : files) out.bytes += f.size;
  const std::string manifest = manifest_of(files);
  const fs::path final_dir(out.root);
  if (file_text(final_dir / kStampName) == manifest) {
    out.reused = true;
    return out;
  }
  const fs::path temp_dir = out.root + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(temp_dir, ec);
  fs::create_directories(temp_dir, ec);
  if (ec)
    throw RuntimeError("dataset.stage: cannot create " + temp_dir.string() + " (" + ec.message() +
                       "); set dataset.stage_dir to a writable node-local directory");
  std::vector<char> buffer(static_cast<size_t>(kCopyChunk));
  copy_files(source, files, temp_dir, buffer);
  AtomicFile stamp((temp_dir / kStampName).string());
  stamp.write(manifest);
  stamp.commit();
  // A stale copy (the source changed) moves aside first; a directory cannot be renamed over a
  // non-empty one. Another process that staged the same files meanwhile wins: its copy is used.
  const fs::path stale = out.root + ".stale-" + std::to_string(::getpid());
  if (fs::exists(final_dir)) fs::rename(final_dir, stale, ec);
  fs::rename(temp_dir, final_dir, ec);
  if (ec) {
    fs::remove_all(temp_dir, ec);
    if (file_text(final_dir / kStampName) != manifest)
      throw RuntimeError("dataset.stage: cannot move the staged copy to " + out.root + "; remove it and run again");
  }
  fs::remove_all(stale, ec);
  return out;
}

}  // namespace ts
