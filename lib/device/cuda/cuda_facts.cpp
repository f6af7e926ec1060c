#include "device/cuda/cuda_facts.hpp"

namespace pinbench::device::cuda {

std::string format_cuda_version(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string format_gpu_uuid(const std::array<unsigned char, 16>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 0x0f];
  }
  return out;
}

}  // namespace pinbench::device::cuda
