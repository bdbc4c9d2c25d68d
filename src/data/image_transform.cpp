// Image transforms (see image_transform.h). The resampler precomputes, per output column and
// row, the two source indices and the weight (the window and the flip live in these tables),
// so the per-pixel loop is four loads and a few multiply-adds per channel.
#include "data/image_transform.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ts {
namespace {

// Python's round() (half to even), as torchvision's integer boxes use it.
int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }

// For each of `out` output positions along one axis: source indices i0, i1 and the weight of
// i1. src = start + (o + 0.5) * extent / out - 0.5, clamped to [0, size - 1].
struct AxisTaps {
  std::vector<int> i0, i1;
  std::vector<float> w1;
};

AxisTaps axis_taps(double start, double extent, int out, int size, bool mirror) {
  AxisTaps t;
  t.i0.resize(static_cast<size_t>(out));
  t.i1.resize(static_cast<size_t>(out));
  t.w1.resize(static_cast<size_t>(out));
  const double step = extent / out;
  for (int o = 0; o < out; ++o) {
    const int from = mirror ? out - 1 - o : o;
    const double src = std::clamp(start + (from + 0.5) * step - 0.5, 0.0, static_cast<double>(size - 1));
    const int i0 = static_cast<int>(src);  // src >= 0: truncation is floor
    t.i0[static_cast<size_t>(o)] = i0;
    t.i1[static_cast<size_t>(o)] = std::min(i0 + 1, size - 1);
    t.w1[static_cast<size_t>(o)] = static_cast<float>(src - i0);
  }
  return t;
}

// Per channel x -> x * scale + bias with x in [0, 255]: (x / 255 - mean) / stddev.
void channel_affine(const Normalisation& stats, int channels, std::vector<float>& scale, std::vector<float>& bias) {
  const size_t n = stats.mean.size();
  if (n != stats.stddev.size() || (n > 1 && static_cast<int>(n) != channels))
    throw RuntimeError("image normalisation: " + std::to_string(n) + " means and " +
                       std::to_string(stats.stddev.size()) + " standard deviations for " + std::to_string(channels) +
                       " channels (need 0, 1 or one per channel)");
  scale.assign(static_cast<size_t>(channels), 1.0f / 255.0f);
  bias.assign(static_cast<size_t>(channels), 0.0f);
  for (int c = 0; c < channels && n > 0; ++c) {
    const size_t k = n == 1 ? 0 : static_cast<size_t>(c);
    scale[static_cast<size_t>(c)] = 1.0f / (255.0f * stats.stddev[k]);
    bias[static_cast<size_t>(c)] = -stats.mean[k] / stats.stddev[k];
  }
}

}  // namespace

SourceWindow random_resized_crop_window(int width, int height, Rng& rng) {
  constexpr double kScaleMin = 0.08, kScaleMax = 1.0;
  const double log_ratio_min = std::log(3.0 / 4.0), log_ratio_max = std::log(4.0 / 3.0);
  const double area = static_cast<double>(width) * height;
  SourceWindow w;
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target_area = area * (kScaleMin + (kScaleMax - kScaleMin) * rng.uniform());
    const double ratio = std::exp(log_ratio_min + (log_ratio_max - log_ratio_min) * rng.uniform());
    const int cw = round_half_even(std::sqrt(target_area * ratio));
    const int ch = round_half_even(std::sqrt(target_area / ratio));
    if (cw > 0 && cw <= width && ch > 0 && ch <= height) {
      w.y = static_cast<double>(rng.below(static_cast<uint64_t>(height - ch + 1)));
      w.x = static_cast<double>(rng.below(static_cast<uint64_t>(width - cw + 1)));
      w.width = cw;
      w.height = ch;
      found = true;
    }
  }
  if (!found) {  // torchvision's fallback: the centre crop of the nearest allowed ratio
    const double in_ratio = static_cast<double>(width) / height;
    int cw = width, ch = height;
    if (in_ratio < 3.0 / 4.0) ch = round_half_even(cw / (3.0 / 4.0));
    else if (in_ratio > 4.0 / 3.0) cw = round_half_even(ch * (4.0 / 3.0));
    w = {static_cast<double>((width - cw) / 2), static_cast<double>((height - ch) / 2), static_cast<double>(cw),
         static_cast<double>(ch)};
  }
  w.flip = rng.uniform() < 0.5;
  return w;
}

SourceWindow centre_crop_window(int width, int height, int out_height, int out_width, double crop_fraction) {
  // Resize(size): the shorter side becomes `size`, the longer int(size * long / short).
  const int size = round_half_even(std::min(out_height, out_width) / crop_fraction);
  const bool wide = width >= height;
  const int short_side = wide ? height : width, long_side = wide ? width : height;
  const int resized_long = static_cast<int>(static_cast<double>(size) * long_side / short_side);
  const int rw = wide ? resized_long : size, rh = wide ? size : resized_long;
  // CenterCrop: offsets int(round((resized - out) / 2)); a crop larger than the image is the
  // image padded in torchvision, here the clamped edge pixels (only for outputs above `size`).
  const int left = round_half_even((rw - out_width) / 2.0), top = round_half_even((rh - out_height) / 2.0);
  const double sx = static_cast<double>(width) / rw, sy = static_cast<double>(height) / rh;
  return {left * sx, top * sy, out_width * sx, out_height * sy, false};
}

SourceWindow whole_image_window(int width, int height) {
  return {0.0, 0.0, static_cast<double>(width), static_cast<double>(height), false};
}

void resample_normalise(const Image8& src, const SourceWindow& window, int out_height, int out_width,
                        const Normalisation& stats, float* dst) {
  const int channels = src.channels;
  std::vector<float> scale, bias;
  channel_affine(stats, channels, scale, bias);
  const AxisTaps cols = axis_taps(window.x, window.width, out_width, src.width, window.flip);
  const AxisTaps rows = axis_taps(window.y, window.height, out_height, src.height, false);
  const size_t plane = static_cast<size_t>(out_height) * out_width;
  const size_t stride = static_cast<size_t>(src.width) * channels;
  for (int y = 0; y < out_height; ++y) {
    const uint8_t* top = src.pixels.data() + static_cast<size_t>(rows.i0[static_cast<size_t>(y)]) * stride;
    const uint8_t* bottom = src.pixels.data() + static_cast<size_t>(rows.i1[static_cast<size_t>(y)]) * stride;
    const float wy = rows.w1[static_cast<size_t>(y)];
    for (int c = 0; c < channels; ++c) {
      float* out = dst + static_cast<size_t>(c) * plane + static_cast<size_t>(y) * out_width;
      const float sc = scale[static_cast<size_t>(c)], bi = bias[static_cast<size_t>(c)];
      for (int x = 0; x < out_width; ++x) {
        const size_t a = static_cast<size_t>(cols.i0[static_cast<size_t>(x)]) * channels + c;
        const size_t b = static_cast<size_t>(cols.i1[static_cast<size_t>(x)]) * channels + c;
        const float wx = cols.w1[static_cast<size_t>(x)];
        const float upper = top[a] + wx * (top[b] - top[a]);
        const float lower = bottom[a] + wx * (bottom[b] - bottom[a]);
        out[x] = (upper + wy * (lower - upper)) * sc + bi;
      }
    }
  }
}

std::string image_transform_name(ImageTransformKind kind) {
  switch (kind) {
    case ImageTransformKind::random_crop_flip: return "random-resized-crop+flip";
    case ImageTransformKind::centre_crop: return "resize+centre-crop";
    case ImageTransformKind::resize: return "resize";
  }
  return "?";
}

ImageTransform::ImageTransform(ImageTransformKind kind, int out_height, int out_width, Normalisation stats)
    : kind_(kind), out_height_(out_height), out_width_(out_width), stats_(std::move(stats)) {
  if (out_height < 1 || out_width < 1)
    throw RuntimeError("image transform: output size " + std::to_string(out_height) + "x" +
                       std::to_string(out_width) + " is not positive");
}

void ImageTransform::apply(const Image8& image, uint64_t augment_seed, float* dst) const {
  SourceWindow window;
  if (kind_ == ImageTransformKind::random_crop_flip) {
    Rng rng(augment_seed);
    window = random_resized_crop_window(image.width, image.height, rng);
  } else if (kind_ == ImageTransformKind::centre_crop) {
    window = centre_crop_window(image.width, image.height, out_height_, out_width_);
  } else {
    window = whole_image_window(image.width, image.height);
  }
  resample_normalise(image, window, out_height_, out_width_, stats_, dst);
}

}  // namespace ts
