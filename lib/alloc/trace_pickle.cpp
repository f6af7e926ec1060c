// PyTorch memory snapshots (the pickle torch.cuda.memory._dump_snapshot writes) as traces: one
// device's trace entries mapped as scripts/torch_snapshot_to_trace.py maps them, plus each oom
// entry as an allocation of the size that failed. Read whole (core/pickle.hpp), never executed.
#include <algorithm>
#include <bit>
#include <filesystem>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "alloc/config.hpp"
#include "alloc/snapshot_records.hpp"
#include "alloc/torch_snapshot.hpp"
#include "alloc/trace_input.hpp"
#include "core/error.hpp"
#include "core/pickle.hpp"
#include "core/text.hpp"
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
  detail::snapshot_replay_plan plan;
  torch_snapshot_facts facts;
};

// One snapshot's conversion; `path_` names the file in every error, with the JSON-ish path
// of the value ("device_traces[0][5].addr").
class snapshot_converter {
 public:
  snapshot_converter(const pickle_document& doc, const std::string& path)
      : doc_(doc), path_(path) {}

  /// How many devices the snapshot has traces for.
  std::size_t devices() { return doc_.items(traces()).size(); }

  snapshot_replay convert(int device) {
    const value_id root = doc_.root();
    const auto per_device = doc_.items(traces());
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
    detail::device_records records;
    records.source = path_;
    records.device = device;
    trace_path_ = at;
    const auto entries = doc_.items(list);
    out.facts.format = format_of(root, per_device);
    // Read as the release that wrote it: the blocks the recording began with were sized by its
    // rules (under PyTorch's defaults when it does not say: releases before 2.3), and its
    // settings' text is what that release reads back.
    const pytorch_release writer =
        out.facts.format ? out.facts.format->newest : pytorch_release::newest();
    records.settings.release = writer;
    if (const auto settings = doc_.member(root, "allocator_settings")) {
      records.settings = read_settings(*settings, writer, out.facts.notes);
      out.facts.settings = records.settings;
      out.facts.alloc_conf = records.settings.to_string();
    }
    records.trace = read_entries(entries);
    records.segments = read_segments(root, device);
    out.plan = detail::plan_snapshot_replay(records, at);
    auto& facts = out.facts;
    for (auto& note : out.plan.notes) facts.notes.push_back(std::move(note));
    out.plan.notes.clear();
    facts.device = device;
    facts.events = out.plan.events.size();
    facts.oom_event_index = out.plan.oom_event_index;
    for (const auto& seg : records.segments) facts.reserved_at_snapshot += seg.size;
    if (out.plan.oom_entry) {
      const auto& oom = records.trace[*out.plan.oom_entry];
      facts.oom_size = oom.size;
      facts.oom_device_free = oom.device_free;
      facts.reserved_at_oom =
          reserved_at_oom(records, *out.plan.oom_entry, facts.reserved_at_snapshot);
      if (facts.reserved_at_oom && facts.oom_device_free)
        facts.device_total = *facts.reserved_at_oom + *facts.oom_device_free;
    }
    facts.pytorch_decisions = out.plan.recorded->device_calls();
    facts.start_segments = out.plan.recorded->start.segments.size();
    facts.start_live_blocks = out.plan.recorded->start.live_blocks();
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& message) const {
    throw input_error(path_, where, message);
  }

  value_id traces() const {
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
    return *traces;
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
  std::int64_t stream_of(value_id dict, const std::string& where) const {
    std::int64_t handle = 0;
    if (const auto v = doc_.member(dict, "stream")) {
      const auto n = doc_.to_int64(*v);
      const auto u = doc_.to_uint64(*v);
      if (!n && !u) {
        fail(where + ".stream", fmt::format("expected an integer, got {}",
                                            pickle_document::type_name(doc_.type_of(*v))));
      }
      handle = n ? *n : static_cast<std::int64_t>(*u);
    }
    return handle;
  }

  // Device addresses are far below 2^60; beyond, the sums a replay makes would wrap.
  void check_extent(std::uint64_t address, std::uint64_t size, const std::string& where) const {
    constexpr std::uint64_t limit = std::uint64_t{1} << 60;
    if (address >= limit || size >= limit || address + size > limit)
      fail(where, fmt::format("expected an address and a size below 2^60, got {:#x} and {}",
                              address, size));
  }

  static detail::entry_kind kind_of(std::string_view action) {
    using detail::entry_kind;
    if (action == "alloc") return entry_kind::alloc;
    if (action == "free_requested") return entry_kind::free_requested;
    if (action == "free_completed" || action == "free") return entry_kind::free_completed;
    if (action == "segment_alloc") return entry_kind::segment_alloc;
    if (action == "segment_free") return entry_kind::segment_free;
    if (action == "segment_map") return entry_kind::segment_map;
    if (action == "segment_unmap") return entry_kind::segment_unmap;
    if (action == "oom") return entry_kind::oom;
    return entry_kind::other;
  }

  // What a release's stack shows: empty_cache() (Python's, or emptyCache in C++), or the
  // allocator's malloc (its retry path); none without frames.
  std::optional<bool> released_by(value_id entry) const {
    const auto frames = doc_.member(entry, "frames");
    if (!frames) return std::nullopt;
    std::optional<bool> by;
    for (const value_id f : doc_.items(*frames)) {
      const auto name = doc_.member(f, "name");
      const std::string_view n = name ? doc_.to_text(*name).value_or("") : "";
      if (n == "empty_cache" || n.find("emptyCache") != std::string_view::npos) return true;
      if (n.find("::malloc") != std::string_view::npos) by = false;
    }
    return by;
  }

  std::vector<detail::trace_record> read_entries(std::span<const value_id> entries) const {
    using detail::entry_kind;
    std::vector<detail::trace_record> out(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const value_id entry = entries[i];
      if (doc_.type_of(entry) != value_type::dict) {
        fail(entry_path(i), fmt::format("expected a dict, got {}",
                                        pickle_document::type_name(doc_.type_of(entry))));
      }
      detail::trace_record& r = out[i];
      r.kind = kind_of(action_of(entry));
      if (r.kind == entry_kind::other) continue;
      const std::string where = entry_path(i);
      if (r.kind == entry_kind::oom) {
        // The device's free bytes, under a key of their own (in the address slot inside).
        if (doc_.member(entry, "device_free"))
          r.device_free = uint_field(entry, "device_free", where);
      } else {
        r.address = uint_field(entry, "addr", where);
      }
      r.size = uint_field(entry, "size", where);
      check_extent(r.address, r.size, where);
      const bool segment_entry =
          r.kind == entry_kind::segment_alloc || r.kind == entry_kind::segment_free ||
          r.kind == entry_kind::segment_map || r.kind == entry_kind::segment_unmap;
      if (segment_entry && r.size == 0) fail(where + ".size", "expected a segment's size, above 0");
      r.stream = stream_of(entry, where);
      if (r.kind == entry_kind::segment_free || r.kind == entry_kind::segment_unmap)
        r.by_empty_cache = released_by(entry);
    }
    return out;
  }

  // The dump's segments of `device`, with their blocks, in address order. Releases before
  // blocks carried their address give the blocks in order from the segment's start, with the
  // request in their history.
  std::vector<detail::segment_record> read_segments(value_id root, int device) const {
    std::vector<detail::segment_record> out;
    const auto segments = doc_.member(root, "segments");
    if (!segments) return out;
    if (doc_.type_of(*segments) != value_type::list) {
      fail("segments", fmt::format("expected a list, got {}",
                                   pickle_document::type_name(doc_.type_of(*segments))));
    }
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
      detail::segment_record seg;
      seg.address = uint_field(items[i], "address", where);
      seg.size = uint_field(items[i], "total_size", where);
      check_extent(seg.address, seg.size, where);
      if (seg.size == 0) fail(where + ".total_size", "expected a segment's size, above 0");
      seg.stream = stream_of(items[i], where);
      if (const auto t = doc_.member(items[i], "segment_type")) {
        const auto text = doc_.to_text(*t);
        if (text == "small") seg.small = true;
        if (text == "large") seg.small = false;
      }
      if (const auto e = doc_.member(items[i], "is_expandable"))
        seg.expandable = doc_.to_bool(*e).value_or(false);
      if (const auto blocks = doc_.member(items[i], "blocks")) {
        std::uint64_t at = seg.address;
        const auto list = doc_.items(*blocks);
        for (std::size_t b = 0; b < list.size(); ++b) {
          const std::string bw = fmt::format("{}.blocks[{}]", where, b);
          if (doc_.type_of(list[b]) != value_type::dict) {
            fail(bw, fmt::format("expected a dict, got {}",
                                 pickle_document::type_name(doc_.type_of(list[b]))));
          }
          detail::block_record block;
          block.size = uint_field(list[b], "size", bw);
          block.address = doc_.member(list[b], "address") ? uint_field(list[b], "address", bw) : at;
          check_extent(block.address, block.size, bw);
          if (block.size == 0) fail(bw + ".size", "expected a block's size, above 0");
          if (block.address < seg.address || block.address + block.size > seg.address + seg.size)
            fail(bw, fmt::format("expected a block inside its segment [{:#x}, +{}), got [{:#x}, "
                                 "+{})",
                                 seg.address, seg.size, block.address, block.size));
          at = block.address + block.size;
          if (const auto st = doc_.member(list[b], "state")) {
            const auto state = doc_.to_text(*st).value_or("");
            block.live = state == "active_allocated" || state == "active_pending_free";
          }
          block.requested_size = block.size;
          if (doc_.member(list[b], "requested_size")) {
            block.requested_size = uint_field(list[b], "requested_size", bw);
          } else if (const auto h = doc_.member(list[b], "history")) {
            // Early releases: the request of the block's last owner, "real_size".
            const auto history = doc_.items(*h);
            if (!history.empty())
              if (const auto real = doc_.member(history.back(), "real_size"))
                block.requested_size = doc_.to_uint64(*real).value_or(block.size);
          }
          seg.blocks.push_back(block);
        }
      }
      out.push_back(std::move(seg));
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    for (std::size_t i = 1; i < out.size(); ++i)
      if (out[i - 1].address + out[i - 1].size > out[i].address)
        fail("segments", fmt::format("expected segments apart, got one at {:#x} of {} bytes and "
                                     "one at {:#x} on device {}",
                                     out[i - 1].address, out[i - 1].size, out[i].address, device));
    return out;
  }

  // Reserved at the oom: what the dump's segments hold, with the segment entries after the oom
  // undone; none when they do not add up.
  static std::optional<std::uint64_t> reserved_at_oom(const detail::device_records& records,
                                                      std::size_t oom_entry,
                                                      std::uint64_t at_snapshot) {
    using detail::entry_kind;
    std::uint64_t added = 0, released = 0;
    for (std::size_t i = oom_entry + 1; i < records.trace.size(); ++i) {
      const auto& e = records.trace[i];
      if (e.kind == entry_kind::segment_alloc || e.kind == entry_kind::segment_map) added += e.size;
      if (e.kind == entry_kind::segment_free || e.kind == entry_kind::segment_unmap)
        released += e.size;
    }
    if (at_snapshot + released < added) return std::nullopt;
    return at_snapshot + released - added;
  }

  // Which releases write a snapshot like this one, from the keys each release added
  // (torch/csrc/cuda/Module.cpp's snapshot, CUDACachingAllocator's trace entries).
  // The whole file tells, whichever device is replayed: an entry of any device's trace.
  std::optional<snapshot_format> format_of(value_id root,
                                           std::span<const value_id> per_device) const {
    std::optional<value_id> entry, segment, block;
    for (const value_id list : per_device) {
      for (const value_id e : doc_.items(list))
        if (doc_.type_of(e) == value_type::dict && action_of(e) != "oom") {
          entry = e;
          break;
        }
      if (entry) break;
    }
    if (const auto segments = doc_.member(root, "segments"))
      for (const value_id seg : doc_.items(*segments)) {
        if (doc_.type_of(seg) != value_type::dict) continue;
        if (!segment) segment = seg;
        if (const auto blocks = doc_.member(seg, "blocks");
            blocks && !doc_.items(*blocks).empty()) {
          segment = seg;
          block = doc_.items(*blocks).front();
          break;
        }
      }
    if (!entry && !segment) return std::nullopt;
    const auto has = [&](std::optional<value_id> v, std::string_view key) {
      return v && doc_.type_of(*v) == value_type::dict && doc_.member(*v, key).has_value();
    };
    const auto settings = doc_.member(root, "allocator_settings");
    const auto r = [](int minor) { return pytorch_release{2, minor}; };
    if (has(block, "history") || (block && !has(block, "address")))
      return snapshot_format{r(0), r(0), "its blocks have a history and no address"};
    if (has(entry, "user_metadata"))
      return snapshot_format{r(10), pytorch_release::newest(),
                             "its trace entries have user_metadata"};
    if (settings && has(settings, "graph_capture_record_stream_reuse"))
      return snapshot_format{r(9), r(9),
                             "its allocator_settings have graph_capture_record_stream_reuse"};
    if (has(entry, "compile_context"))
      return snapshot_format{r(8), r(8), "its trace entries have compile_context"};
    if (doc_.member(root, "external_annotations"))
      return snapshot_format{r(5), r(7), "it has external_annotations"};
    if (settings) return snapshot_format{r(3), r(4), "it has allocator_settings"};
    if (has(entry, "time_us"))
      return snapshot_format{r(2), r(2),
                             "its trace entries have time_us, and no allocator_settings"};
    if (has(segment, "is_expandable") || has(segment, "segment_pool_id"))
      return snapshot_format{r(1), r(1), "its segments have is_expandable, its entries no time_us"};
    return std::nullopt;
  }

  // Options the settings dict has no key for are in PYTORCH_CUDA_ALLOC_CONF's text only. Each
  // is read by parse_config's rules (the newest release's: whether the snapshot's release has
  // the option is unsupported_by's to say); a text or a value it refuses is left out.
  void read_text_only_options(std::string_view text, const std::string& at, config& c) const {
    std::vector<std::pair<std::string_view, std::string_view>> items;
    try {
      items = config_items(text, path_, at);
    } catch (const input_error&) {
      return;
    }
    for (const auto& [key, value] : items) {
      if (key != "max_non_split_rounding_mb" && key != "per_process_memory_fraction") continue;
      try {
        const config one = parse_config(fmt::format("{}:{}", key, value), path_, at);
        if (one.max_non_split_rounding_bytes)
          c.max_non_split_rounding_bytes = one.max_non_split_rounding_bytes;
        if (one.per_process_memory_fraction)
          c.per_process_memory_fraction = one.per_process_memory_fraction;
      } catch (const input_error&) {
      }
    }
  }

  // allocator_settings (torch/csrc/cuda/Module.cpp's snapshot) in parse_config's syntax.
  config read_settings(value_id settings, pytorch_release release,
                       std::vector<std::string>& notes) const {
    const std::string at = "allocator_settings";
    if (doc_.type_of(settings) != value_type::dict) {
      fail(at, fmt::format("expected a dict, got {}",
                           pickle_document::type_name(doc_.type_of(settings))));
    }
    config c;
    c.release = release;
    if (const auto v = doc_.member(settings, "expandable_segments")) {
      const auto b = doc_.to_bool(*v);
      if (!b) fail(at + ".expandable_segments", "expected True or False");
      c.expandable_segments = *b;
    }
    if (const auto v = doc_.member(settings, "max_split_size")) {
      // Bytes; unlimited is SIZE_MAX, which PyTorch writes as int64: -1.
      const auto s = doc_.to_int64(*v);
      const auto u = doc_.to_uint64(*v);
      const bool unlimited =
          (s && *s == -1) ||
          (u && *u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
      if (!unlimited) {
        if (!u || *u < (std::uint64_t{20} << 20)) {
          fail(at + ".max_split_size",
               "expected -1 (unlimited) or a byte count of at least 20 MiB, as PyTorch allows");
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
        read_text_only_options(*text, at + ".PYTORCH_CUDA_ALLOC_CONF", c);
      }
    }
    return c;
  }

  // {"1": d, "2": d, "4": d, ... "32768": d}: divisions per power-of-two interval starting at
  // KEY MiB (PyTorch's 16 intervals), or one number for all; spread over config's 64 entries.
  std::vector<std::size_t> roundup_table(value_id v, const std::string& at) const {
    roundup_intervals table{};
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
        table[std::min(j, table.size() - 1)] = divisions(d, at + "." + key);
      }
    } else {
      fail(at, fmt::format("expected a dict of interval -> divisions, got {}",
                           pickle_document::type_name(doc_.type_of(v))));
    }
    return expand_intervals(table);
  }

  const pickle_document& doc_;
  const std::string& path_;
  std::string trace_path_;
};

snapshot_replay convert_snapshot(const std::string& path, int device) {
  const pickle_document doc = read_snapshot(path);
  return snapshot_converter(doc, path).convert(device);
}

class replay_source final : public event_source {
 public:
  explicit replay_source(detail::snapshot_replay_plan plan)
      : events_(std::move(plan.events)), recorded_(std::move(plan.recorded)) {}
  bool next(event& out) override {
    if (next_ == events_.size()) return false;
    out = std::move(events_[next_++]);
    return true;
  }
  [[nodiscard]] std::shared_ptr<const recording> recorded() const override { return recorded_; }

 private:
  std::vector<event> events_;
  std::shared_ptr<const recording> recorded_;
  std::size_t next_ = 0;
};

}  // namespace

namespace detail {

std::unique_ptr<event_source> open_pickle_trace(const std::string& path,
                                                const trace_options& options) {
  return std::make_unique<replay_source>(convert_snapshot(path, options.device).plan);
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

std::string snapshot_format::releases() const {
  if (newest == pytorch_release::newest()) return oldest.to_string() + " or later";
  if (oldest == newest) return oldest.to_string();
  return oldest.to_string() + "-" + newest.to_string();
}

chosen_release choose_release(std::optional<pytorch_release> asked, const std::string& asked_by,
                              const torch_snapshot_facts* facts) {
  if (asked) return {*asked, asked_by};
  if (facts != nullptr && facts->format)
    return {facts->format->newest, fmt::format("the snapshot's format: PyTorch {} ({})",
                                               facts->format->releases(), facts->format->evidence)};
  return {pytorch_release::newest(), "the newest release modelled"};
}

bool is_torch_snapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return in.get() == 0x80;  // a pickle starts with its PROTO opcode
}

torch_snapshot_facts read_torch_snapshot_facts(const std::string& path, int device) {
  return convert_snapshot(path, device).facts;
}

std::vector<torch_snapshot_facts> read_torch_snapshot_devices(const std::string& path) {
  const pickle_document doc = read_snapshot(path);
  snapshot_converter converter(doc, path);
  std::vector<torch_snapshot_facts> out;
  const std::size_t n = converter.devices();
  for (std::size_t d = 0; d < n; ++d) out.push_back(converter.convert(static_cast<int>(d)).facts);
  return out;
}

}  // namespace pinbench::alloc
