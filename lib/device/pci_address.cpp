#include "device/pci_address.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>

#include "core/text.hpp"

namespace pinbench::device {

namespace {

bool is_hex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

std::string sysfs_pci_address(std::string_view bus_id) {
  // "DDDDDDDD:BB:DD.F": domain, bus, device, function.
  const std::string_view id = trim(bus_id);
  const auto colon = id.find(':');
  if (colon == std::string_view::npos) return {};
  const std::string_view domain = id.substr(0, colon);
  std::string_view rest = id.substr(colon + 1);
  if (!is_hex(domain) || domain.size() > 8 || rest.size() != 7 || rest[2] != ':' ||
      rest[5] != '.' || !is_hex(rest.substr(0, 2)) || !is_hex(rest.substr(3, 2)) ||
      !is_hex(rest.substr(6, 1)))
    return {};
  unsigned long domain_value = 0;
  std::from_chars(domain.data(), domain.data() + domain.size(), domain_value, 16);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04lx", domain_value);
  std::string out = buf;
  out += ':';
  for (char c : rest) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace pinbench::device
