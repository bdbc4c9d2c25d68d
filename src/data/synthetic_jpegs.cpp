// The synthetic JPEG set (see synthetic_jpegs.h).
#include "data/synthetic_jpegs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "core/error.h"
#include "core/file_io.h"
#include "core/rng.h"
#include "core/sha256.h"

namespace ts {
namespace {

// What makes a class a class: base colour, grating frequency (cycles over the shorter side),
// orientation and how strongly each channel carries the grating.
struct ClassLook {
  double colour[3], cycles, angle, channel_weight[3];
};

ClassLook class_look(uint64_t seed, int class_id) {
  Rng rng(seed_mix(seed, 0xc1a55, static_cast<uint64_t>(class_id)));
  ClassLook look{};
  for (double& c : look.colour) c = 40.0 + 176.0 * rng.uniform();
  look.cycles = 2.0 + 10.0 * rng.uniform();
  look.angle = M_PI * rng.uniform();
  for (double& w : look.channel_weight) w = 2.0 * rng.uniform() - 1.0;
  return look;
}

std::string class_name(int class_id, int classes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "c%0*d", classes > 1000 ? 5 : 3, class_id);
  return buf;
}

void check(const SyntheticJpegOptions& o) {
  if (o.classes < 1 || o.classes > 100000 || o.per_class < 1 || o.val_per_class < 1)
    throw ConfigError("make-synthetic-jpeg: --classes must be in 1..100000 and --per-class, --val-per-class >= 1 (got " +
                      std::to_string(o.classes) + ", " + std::to_string(o.per_class) + ", " +
                      std::to_string(o.val_per_class) + ")");
  if (o.quality < 1 || o.quality > 100)
    throw ConfigError("make-synthetic-jpeg: --quality " + std::to_string(o.quality) + " is outside 1..100");
  if (o.out.empty()) throw ConfigError("make-synthetic-jpeg: --out DIR is required");
}

}  // namespace

Image8 synthetic_jpeg_image(const SyntheticJpegOptions& o, const std::string& split, int class_id, int64_t index) {
  const ClassLook look = class_look(o.seed, class_id);
  Rng rng(seed_mix(o.seed, split == "train" ? 1 : 2, static_cast<uint64_t>(class_id) << 32 | static_cast<uint64_t>(index)));
  int width = 400 + static_cast<int>(rng.below(201)), height = 300 + static_cast<int>(rng.below(151));
  if (rng.below(5) == 0) std::swap(width, height);
  const double phase = 2.0 * M_PI * rng.uniform();
  double jitter[3];
  for (double& j : jitter) j = 40.0 * rng.uniform() - 20.0;
  const double k = 2.0 * M_PI * look.cycles / std::min(width, height);
  const double kx = k * std::cos(look.angle), ky = k * std::sin(look.angle);
  Image8 im{width, height, 3, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  uint8_t* p = im.pixels.data();
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const double wave = 50.0 * std::sin(kx * x + ky * y + phase);
      const uint64_t noise = rng.next_u64();  // three noise bytes per pixel, +-24
      for (int c = 0; c < 3; ++c) {
        const double n = static_cast<double>((noise >> (16 * c)) & 0xff) * (48.0 / 255.0) - 24.0;
        const double v = look.colour[c] + jitter[c] + look.channel_weight[c] * wave + n;
        *p++ = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  return im;
}

SyntheticJpegSummary make_synthetic_jpegs(const SyntheticJpegOptions& o) {
  check(o);
  SyntheticJpegSummary summary;
  Sha256 tree;
  for (const char* split : {"train", "val"}) {
    const int count = std::string_view(split) == "train" ? o.per_class : o.val_per_class;
    for (int c = 0; c < o.classes; ++c) {
      const std::string name = class_name(c, o.classes);
      const std::string dir = o.out + "/" + split + "/" + name;
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) throw RuntimeError("make-synthetic-jpeg: cannot create " + dir + ": " + ec.message());
      for (int i = 0; i < count; ++i) {
        char file[48];
        std::snprintf(file, sizeof file, "%s_%05d.jpg", name.c_str(), i);
        const std::vector<uint8_t> jpeg = encode_jpeg(synthetic_jpeg_image(o, split, c, i), o.quality);
        const std::string_view bytes(reinterpret_cast<const char*>(jpeg.data()), jpeg.size());
        write_whole_file(dir + "/" + file, bytes);
        tree.update(std::string(split) + "/" + name + "/" + file + "\n");
        tree.update(bytes);
        summary.images += 1;
        summary.bytes += static_cast<int64_t>(jpeg.size());
      }
    }
  }
  summary.tree_sha256 = tree.finish_hex();
  return summary;
}

}  // namespace ts
