// PyTorch memory snapshots (the pickle torch.cuda.memory._dump_snapshot writes) as traces: one
// device's trace entries mapped as scripts/torch_snapshot_to_trace.py maps them, plus each oom
// entry as an allocation of the size that failed. Read whole (core/pickle.hpp), never executed.
#include <algorithm>
#include <bit>
#include <filesystem>
#include <limits>
#include <span>
#include <unordered_map>

#include <fmt/format.h>

#include "alloc/config.hpp"
#include "alloc/torch_snapshot.hpp"
#include "alloc/trace_input.hpp"
#include "core/error.hpp"
#include "core/pickle.hpp"
#include "core/units.hpp"

namespace pinbench::alloc {

namespace {

using value_id = pickle_document::value_id;
using value_type = pickle_document::type;

// Snapshots are a few hundred MiB at most; the arena takes a few times the file.
constexpr std::uint64_t max_snapshot_bytes = 2_GiB;

std::uint64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw input_error(path, "", "cannot read the trace file's size: " + ec.message());
  if (size > max_snapshot_bytes) {
    throw input_error(path, "",
                      fmt::format("a snapshot pickle of {} bytes: larger than the {} bytes (2 GiB) "
                                  "this reader loads",
                                  size, max_snapshot_bytes));
  }
  return size;
}

pickle_document read_snapshot(const std::string& path) {
  const std::uint64_t size = file_bytes(path);
  std::ifstream in = detail::open_input(path);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return pickle_document::read(std::move(bytes), path);
}

struct snapshot_replay {
  std::vector<event> events;
  torch_snapshot_facts facts;
};

// One snapshot's conversion; `path_` names the file in every error, with the JSON-ish path
// of the value ("device_traces[0][5].addr").
class snapshot_converter {
 public:
  snapshot_converter(const pickle_document& doc, const std::string& path)
      : doc_(doc), path_(path) {}

  snapshot_replay convert(int device) {
    const value_id root = doc_.root();
    if (doc_.type_of(root) != value_type::dict) {
      fail("", fmt::format("expected a dict at the top (a torch memory snapshot), got {}",
                           pickle_document::type_name(doc_.type_of(root))));
    }
    const auto traces = doc_.member(root, "device_traces");
    if (!traces) {
      fail("device_traces",
           "missing: not a torch memory snapshot (was the history recorded with "
           "torch.cuda.memory._record_memory_history()?)");
    }
    if (doc_.type_of(*traces) != value_type::list) {
      fail("device_traces", fmt::format("expected a list (one list of entries per device), got {}",
                                        pickle_document::type_name(doc_.type_of(*traces))));
    }
    const auto per_device = doc_.items(*traces);
    const std::string at = fmt::format("device_traces[{}]", device);
    if (device < 0 || static_cast<std::size_t>(device) >= per_device.size()) {
      fail(at, fmt::format("no such device (the snapshot has traces for {} device{})",
                           per_device.size(), per_device.size() == 1 ? "" : "s"));
    }
    const value_id list = per_device[static_cast<std::size_t>(device)];
    if (doc_.type_of(list) != value_type::list) {
      fail(at, fmt::format("expected a list of trace entries, got {}",
                           pickle_document::type_name(doc_.type_of(list))));
    }
    snapshot_replay out;
    replay(doc_.items(list), at, out);
    out.facts.reserved_at_snapshot = reserved(root, device);
    if (out.facts.oom_size) {
      out.facts.reserved_at_oom = reserved_at_oom(out.facts.reserved_at_snapshot);
      if (out.facts.reserved_at_oom && out.facts.oom_device_free)
        out.facts.device_total = *out.facts.reserved_at_oom + *out.facts.oom_device_free;
    }
    if (const auto settings = doc_.member(root, "allocator_settings"))
      out.facts.alloc_conf = alloc_conf(*settings, out.facts.notes);
    out.facts.events = out.events.size();
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& message) const {
    throw input_error(path_, where, message);
  }

  [[nodiscard]] std::string entry_path(std::size_t i) const {
    return fmt::format("{}[{}]", trace_path_, i);
  }

  [[nodiscard]] std::string_view action_of(value_id entry) const {
    const auto a = doc_.member(entry, "action");
    if (!a) return {};
    return doc_.to_text(*a).value_or(std::string_view{});
  }

  std::uint64_t uint_field(value_id dict, const char* key, const std::string& where) const {
    const auto v = doc_.member(dict, key);
    if (!v) fail(where + "." + key, "missing: expected a non-negative integer");
    const auto n = doc_.to_uint64(*v);
    if (!n) {
      fail(where + "." + key, fmt::format("expected a non-negative integer, got {}",
                                          pickle_document::type_name(doc_.type_of(*v))));
    }
    return *n;
  }

  // "stream" is a handle (cudaStream_t as an integer); 0 when absent, as in the script.
  std::int64_t stream_of(value_id entry, std::size_t i) const {
    std::int64_t handle = 0;
    if (const auto v = doc_.member(entry, "stream")) {
      const auto n = doc_.to_int64(*v);
      const auto u = doc_.to_uint64(*v);
      if (!n && !u) {
        fail(entry_path(i) + ".stream", fmt::format("expected an integer, got {}",
                                                   pickle_document::type_name(doc_.type_of(*v))));
      }
      handle = n ? *n : static_cast<std::int64_t>(*u);
    }
    return handle;
  }

  // Streams numbered 0, 1, ... in order of first appearance.
  std::uint32_t stream_index(std::int64_t handle) {
    const auto [it, inserted] =
        streams_.try_emplace(handle, static_cast<std::uint32_t>(streams_.size()));
    return it->second;
  }

  // Pass 1 pairs each alloc with the entry that ends it (free_completed, else the
  // free_requested seen), pass 2 emits in trace order: the script's two passes.
  void replay(std::span<const value_id> entries, const std::string& at, snapshot_replay& out) {
    trace_path_ = at;
    std::vector<std::optional<std::size_t>> end_of(entries.size());
    struct live_block {
      std::size_t alloc_index;
      std::optional<std::size_t> requested;
    };
    std::unordered_map<std::uint64_t, live_block> live;  // address -> its alloc
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const value_id entry = entries[i];
      if (doc_.type_of(entry) != value_type::dict) {
        fail(entry_path(i), fmt::format("expected a dict, got {}",
                                        pickle_document::type_name(doc_.type_of(entry))));
      }
      const std::string_view action = action_of(entry);
      if (action == "alloc") {
        const std::uint64_t addr = uint_field(entry, "addr", entry_path(i));
        if (const auto it = live.find(addr); it != live.end()) {
          // Allocated again without a free_completed in between: the free that was requested
          // (if any) is the best evidence of when the block went.
          end_of[it->second.alloc_index] = it->second.requested;
          live.erase(it);
        }
        live.emplace(addr, live_block{i, std::nullopt});
      } else if (action == "free_requested") {
        const std::uint64_t addr = uint_field(entry, "addr", entry_path(i));
        if (const auto it = live.find(addr); it != live.end()) it->second.requested = i;
      } else if (action == "free_completed" || action == "free") {
        const std::uint64_t addr = uint_field(entry, "addr", entry_path(i));
        if (const auto it = live.find(addr); it != live.end()) {
          end_of[it->second.alloc_index] = i;
          live.erase(it);
        }
      }
    }
    for (const auto& [addr, block] : live) end_of[block.alloc_index] = block.requested;

    std::unordered_map<std::size_t, std::vector<std::size_t>> frees_at;  // entry -> allocs
    for (std::size_t a = 0; a < end_of.size(); ++a)
      if (end_of[a]) frees_at[*end_of[a]].push_back(a);

    std::unordered_map<std::size_t, std::uint64_t> ids;  // alloc entry -> event id
    std::uint64_t next_id = 1;
    std::uint64_t dropped_frees = 0;
    std::optional<std::size_t> oom_entry;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const value_id entry = entries[i];
      const std::string_view action = action_of(entry);
      if (action == "alloc" || action == "oom") {
        const std::uint64_t size = uint_field(entry, "size", entry_path(i));
        const std::int64_t stream = stream_of(entry, i);
        if (action == "oom") {
          // The request that failed, made again: a fresh id, never freed.
          oom_entry = i;
          out.facts.oom_size = size;
          out.facts.oom_device_free.reset();
          if (doc_.member(entry, "device_free"))
            out.facts.oom_device_free = uint_field(entry, "device_free", entry_path(i));
          out.facts.oom_event_index = out.events.size();
        }
        if (size == 0) continue;
        const std::uint64_t id = next_id++;
        if (action == "alloc") ids[i] = id;
        event e;
        e.op = event::kind::alloc;
        e.id = id;
        e.size = size;
        e.stream = stream_index(stream);
        out.events.push_back(std::move(e));
      } else if (action == "free_completed" || action == "free_requested" || action == "free") {
        const auto it = frees_at.find(i);
        if (it != frees_at.end()) {
          for (const std::size_t a : it->second) {
            const auto id = ids.find(a);
            if (id == ids.end()) continue;  // a zero-byte alloc: never replayed
            event e;
            e.op = event::kind::free;
            e.id = id->second;
            out.events.push_back(std::move(e));
          }
        } else if (action != "free_requested") {
          ++dropped_frees;
        }
      }
    }

    auto& notes = out.facts.notes;
    if (dropped_frees > 0) {
      notes.push_back(fmt::format(
          "dropped {} free(s) of blocks allocated before the recorded history began",
          dropped_frees));
    }
    std::size_t still_live = 0;
    for (const auto& [a, id] : ids)
      if (!end_of[a]) ++still_live;
    if (still_live > 0) {
      notes.push_back(
          fmt::format("{} allocation(s) are still live at the end of the trace", still_live));
    }
    if (oom_entry) {
      notes.push_back(fmt::format(
          "{}[{}]: the oom request of {} bytes is replayed as an allocation that is never freed",
          at, *oom_entry, *out.facts.oom_size));
      after_oom_ = entries.subspan(*oom_entry + 1);
    }
  }

  // Sum of total_size over the segments of `device` (a segment without "device" counts).
  std::uint64_t reserved(value_id root, int device) const {
    const auto segments = doc_.member(root, "segments");
    if (!segments) return 0;
    if (doc_.type_of(*segments) != value_type::list) {
      fail("segments", fmt::format("expected a list, got {}",
                                   pickle_document::type_name(doc_.type_of(*segments))));
    }
    std::uint64_t total = 0;
    const auto items = doc_.items(*segments);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string where = fmt::format("segments[{}]", i);
      if (doc_.type_of(items[i]) != value_type::dict) {
        fail(where, fmt::format("expected a dict, got {}",
                                pickle_document::type_name(doc_.type_of(items[i]))));
      }
      if (const auto d = doc_.member(items[i], "device")) {
        const auto n = doc_.to_int64(*d);
        if (n && *n != device) continue;
      }
      total += uint_field(items[i], "total_size", where);
    }
    return total;
  }

  // Walks the segment entries after the oom back from the snapshot's segments.
  std::optional<std::uint64_t> reserved_at_oom(std::uint64_t at_snapshot) const {
    std::uint64_t added = 0, released = 0;
    for (const value_id entry : after_oom_) {
      const std::string_view action = action_of(entry);
      const bool grows = action == "segment_alloc" || action == "segment_map";
      const bool shrinks = action == "segment_free" || action == "segment_unmap";
      if (!grows && !shrinks) continue;
      const auto size = doc_.member(entry, "size");
      const auto bytes = size ? doc_.to_uint64(*size) : std::nullopt;
      if (!bytes) return std::nullopt;
      (grows ? added : released) += *bytes;
    }
    if (at_snapshot + released < added) return std::nullopt;
    return at_snapshot + released - added;
  }

  // allocator_settings (torch/csrc/cuda/Module.cpp's snapshot) in parse_config's syntax.
  std::string alloc_conf(value_id settings, std::vector<std::string>& notes) const {
    const std::string at = "allocator_settings";
    if (doc_.type_of(settings) != value_type::dict) {
      fail(at, fmt::format("expected a dict, got {}",
                           pickle_document::type_name(doc_.type_of(settings))));
    }
    config c;
    if (const auto v = doc_.member(settings, "expandable_segments")) {
      const auto b = doc_.to_bool(*v);
      if (!b) fail(at + ".expandable_segments", "expected True or False");
      c.expandable_segments = *b;
    }
    if (const auto v = doc_.member(settings, "max_split_size")) {
      // Bytes; unlimited is SIZE_MAX, which PyTorch writes as int64: -1.
      const auto s = doc_.to_int64(*v);
      const auto u = doc_.to_uint64(*v);
      const bool unlimited = (s && *s == -1) || (u && *u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
      if (!unlimited) {
        if (!u || *u <= (std::uint64_t{20} << 20)) {
          fail(at + ".max_split_size",
               "expected -1 (unlimited) or a byte count above 20 MiB, as PyTorch allows");
        }
        c.max_split_size_bytes = static_cast<std::size_t>(*u);
      }
    }
    if (const auto v = doc_.member(settings, "garbage_collection_threshold")) {
      const auto t = doc_.to_double(*v);
      if (!t || *t < 0 || *t >= 1)
        fail(at + ".garbage_collection_threshold", "expected a number in [0, 1)");
      c.garbage_collection_threshold = *t;
    }
    if (const auto v = doc_.member(settings, "roundup_power2_divisions"))
      c.roundup_power2_divisions = roundup_table(*v, at + ".roundup_power2_divisions");
    if (const auto v = doc_.member(settings, "PYTORCH_CUDA_ALLOC_CONF")) {
      const auto text = doc_.to_text(*v);
      if (text && !text->empty()) {
        std::string shown;
        for (const char ch : *text) shown += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
        notes.push_back("allocator_settings: PYTORCH_CUDA_ALLOC_CONF was \"" + shown + "\"");
      }
    }
    std::string text = c.to_string();
    (void)parse_config(text, path_, at);  // what the tuner is given must parse
    return text;
  }

  // {"1": d, "2": d, "4": d, ... "32768": d}: divisions per power-of-two interval starting at
  // KEY MiB (PyTorch's 16 intervals), or one number for all; spread over config's 64 entries.
  std::vector<std::size_t> roundup_table(value_id v, const std::string& at) const {
    constexpr std::size_t intervals = 16, first_log2 = 20;
    std::vector<std::size_t> table(intervals, 0);
    auto divisions = [&](value_id d, const std::string& where) {
      const auto n = doc_.to_uint64(d);
      if (!n || (*n != 0 && (*n & (*n - 1)) != 0))
        fail(where, "expected a power of two or 0 (divisions)");
      return static_cast<std::size_t>(*n);
    };
    if (doc_.type_of(v) == value_type::integer) {
      std::fill(table.begin(), table.end(), divisions(v, at));
    } else if (doc_.type_of(v) == value_type::dict) {
      for (const auto& [key, d] : doc_.members(v)) {
        std::uint64_t mib = 0;
        bool number = !key.empty() && key.size() <= 18;
        for (const char ch : key) {
          number = number && ch >= '0' && ch <= '9';
          if (number) mib = mib * 10 + static_cast<std::uint64_t>(ch - '0');
        }
        if (!number || mib == 0 || (mib & (mib - 1)) != 0)
          fail(at, "expected keys that are powers of two (MiB), got " + detail::quote_snippet(key));
        const auto j = static_cast<std::size_t>(std::bit_width(mib) - 1);
        table[std::min(j, intervals - 1)] = divisions(d, at + "." + key);
      }
    } else {
      fail(at, fmt::format("expected a dict of interval -> divisions, got {}",
                           pickle_document::type_name(doc_.type_of(v))));
    }
    std::vector<std::size_t> out(64, 0);
    for (std::size_t b = 0; b < out.size(); ++b)
      out[b] = table[std::min(b < first_log2 ? 0 : b - first_log2, intervals - 1)];
    return out;
  }

  const pickle_document& doc_;
  const std::string& path_;
  std::string trace_path_;
  std::span<const value_id> after_oom_;
  std::unordered_map<std::int64_t, std::uint32_t> streams_;  // handle -> index
};

snapshot_replay convert_snapshot(const std::string& path, int device) {
  const pickle_document doc = read_snapshot(path);
  return snapshot_converter(doc, path).convert(device);
}

class replay_source final : public event_source {
 public:
  explicit replay_source(std::vector<event> events) : events_(std::move(events)) {}
  bool next(event& out) override {
    if (next_ == events_.size()) return false;
    out = std::move(events_[next_++]);
    return true;
  }

 private:
  std::vector<event> events_;
  std::size_t next_ = 0;
};

}  // namespace

namespace detail {

std::unique_ptr<event_source> open_pickle_trace(const std::string& path, int device) {
  return std::make_unique<replay_source>(convert_snapshot(path, device).events);
}

void check_pickle_trace(const std::string& path) {
  (void)file_bytes(path);
  std::ifstream in = open_input(path);
  char head[2] = {};
  in.read(head, 2);
  const auto version = static_cast<unsigned char>(head[1]);
  if (in.gcount() < 2 || version < 2 || version > 5) {
    throw input_error(path, "offset 0",
                      "expected a pickle of protocol 2 to 5 (a PyTorch memory snapshot), got " +
                          (in.gcount() < 2 ? std::string("the end of the file")
                                           : fmt::format("protocol {}", version)));
  }
}

}  // namespace detail

torch_snapshot_facts read_torch_snapshot_facts(const std::string& path, int device) {
  return convert_snapshot(path, device).facts;
}

}  // namespace pinbench::alloc
