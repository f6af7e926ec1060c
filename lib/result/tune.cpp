// The `tune` block of a result, written in a fixed order and read back strictly typed.
#include "result/tune.hpp"

#include <cmath>

#include "core/error.hpp"

namespace pinbench::result {

namespace {

// Each enumeration's names, the one place they are written: the result file and every
// message read them from here.
template <class E>
struct named_value {
  E value;
  std::string_view name;
};
constexpr named_value<tune_question> question_names[] = {{tune_question::allocator, "allocator"},
                                                         {tune_question::loader, "loader"}};
constexpr named_value<trial_phase> phase_names[] = {{trial_phase::search, "search"},
                                                    {trial_phase::confirm, "confirm"}};
constexpr named_value<search_stop> stop_names[] = {{search_stop::none, ""},
                                                   {search_stop::budget, "budget"},
                                                   {search_stop::interrupted, "interrupted"}};

template <class E, std::size_t N>
std::string_view name_in(const named_value<E> (&table)[N], E value) noexcept {
  for (const auto& n : table)
    if (n.value == value) return n.name;
  return "?";
}

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

ojson tune_number(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? ojson(*v) : ojson(nullptr);
}
ojson tune_index(const std::optional<std::size_t>& i) {
  return i ? ojson(*i) : ojson(nullptr);
}

// Reading: every member optional but, when present, of its type.
class tune_reader {
 public:
  explicit tune_reader(const std::string& source) : source_(source) {}

  template <typename T>
  void get(const ojson& j, const std::string& path, const char* key, T& out,
           const char* expected) const {
    if (!j.contains(key) || j[key].is_null()) return;
    try {
      out = j[key].get<T>();
    } catch (const ojson::exception&) {
      throw input_error(source_, path + "." + key, std::string("expected ") + expected);
    }
  }
  void number(const ojson& j, const std::string& path, const char* key,
              std::optional<double>& out) const {
    if (!j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_number()) throw input_error(source_, path + "." + key, "expected a number");
    out = j[key].get<double>();
  }
  void index(const ojson& j, const std::string& path, const char* key, std::size_t count,
             std::optional<std::size_t>& out) const {
    if (!j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_number_unsigned() || j[key].get<std::size_t>() >= count)
      throw input_error(source_, path + "." + key,
                        "expected the index of one of the " + std::to_string(count) + " trials");
    out = j[key].get<std::size_t>();
  }
  // "a, b, c": a table's names, for a message.
  template <class E, std::size_t N>
  static std::string names_of(const named_value<E> (&table)[N]) {
    std::string out;
    for (const auto& n : table)
      if (!n.name.empty()) out += (out.empty() ? "" : ", ") + std::string(n.name);
    return out;
  }
  // One of a table's names, as its value; `required`: absent is refused too (what a block
  // means depends on it).
  template <class E, std::size_t N>
  void named(const ojson& j, const std::string& path, const char* key, E& out,
             const named_value<E> (&table)[N], bool required = false) const {
    std::string text;
    get(j, path, key, text, "a string");
    if (!j.contains(key) || j[key].is_null()) {
      if (required)
        throw input_error(source_, path + "." + key, "missing; expected " + names_of(table));
      return;
    }
    for (const auto& n : table)
      if (n.name == text) {
        out = n.value;
        return;
      }
    throw input_error(source_, path + "." + key,
                      "expected one of " + names_of(table) + ", got \"" + text + "\"");
  }
  void object(const ojson& j, const std::string& path) const {
    if (!j.is_object()) throw input_error(source_, path, "expected an object");
  }

 private:
  const std::string& source_;
};

}  // namespace

std::string_view to_string(tune_question q) noexcept {
  return name_in(question_names, q);
}
std::string_view to_string(trial_phase p) noexcept {
  return name_in(phase_names, p);
}
std::string_view to_string(search_stop s) noexcept {
  return name_in(stop_names, s);
}

ojson to_json(const tune_block& t) {
  ojson trials = ojson::array();
  for (const auto& trial : t.trials) {
    ojson cells = ojson::object();
    for (const auto& [column, text] : trial.cells) cells[column] = text;
    trials.push_back({{"label", trial.label},
                      {"phase", to_string(trial.phase)},
                      {"scenario", trial.scenario},
                      {"case", trial.case_id},
                      {"value", tune_number(trial.value)},
                      {"meets_goal", trial.meets_goal},
                      {"note", trial.note},
                      {"cells", std::move(cells)}});
  }
  ojson out{{"question", to_string(t.question)},
            {"answer", t.answer},
            {"verdict", t.verdict},
            {"goal_met", t.goal_met},
            {"chosen", tune_index(t.chosen)},
            {"baseline", tune_index(t.baseline)},
            {"inputs", t.inputs},
            {"chart",
             {{"metric", t.chart_metric},
              {"unit", t.chart_unit},
              {"target", tune_number(t.chart_target)}}},
            {"elapsed_s", t.elapsed_s}};
  if (t.stopped_by != search_stop::none) out["stopped_by"] = to_string(t.stopped_by);
  if (!t.self_check.empty()) out["self_check"] = t.self_check;
  out["trials"] = std::move(trials);
  return out;
}

tune_block tune_from_json(const ojson& j, const std::string& source) {
  const tune_reader r(source);
  r.object(j, "tune");
  tune_block t;
  r.named(j, "tune", "question", t.question, question_names, true);
  r.get(j, "tune", "answer", t.answer, "a string");
  r.get(j, "tune", "verdict", t.verdict, "a string");
  r.get(j, "tune", "self_check", t.self_check, "a string");
  r.get(j, "tune", "goal_met", t.goal_met, "true or false");
  r.named(j, "tune", "stopped_by", t.stopped_by, stop_names);
  r.get(j, "tune", "elapsed_s", t.elapsed_s, "a number");
  if (j.contains("inputs")) {
    r.object(j["inputs"], "tune.inputs");
    t.inputs = json(j["inputs"]);
  }
  if (j.contains("chart")) {
    const ojson& c = j["chart"];
    r.object(c, "tune.chart");
    r.get(c, "tune.chart", "metric", t.chart_metric, "a string");
    r.get(c, "tune.chart", "unit", t.chart_unit, "a string");
    r.number(c, "tune.chart", "target", t.chart_target);
  }
  if (j.contains("trials")) {
    if (!j["trials"].is_array()) throw input_error(source, "tune.trials", "expected an array");
    for (std::size_t i = 0; i < j["trials"].size(); ++i) {
      const ojson& e = j["trials"][i];
      const std::string path = "tune.trials[" + std::to_string(i) + "]";
      r.object(e, path);
      tune_trial trial;
      r.get(e, path, "label", trial.label, "a string");
      r.named(e, path, "phase", trial.phase, phase_names, true);
      r.get(e, path, "scenario", trial.scenario, "a string");
      r.get(e, path, "case", trial.case_id, "a string");
      r.number(e, path, "value", trial.value);
      r.get(e, path, "meets_goal", trial.meets_goal, "true or false");
      r.get(e, path, "note", trial.note, "a string");
      if (e.contains("cells")) {
        r.object(e["cells"], path + ".cells");
        for (const auto& [column, text] : e["cells"].items()) {
          if (!text.is_string())
            throw input_error(source, path + ".cells." + column, "expected a string");
          trial.cells.emplace_back(column, text.get<std::string>());
        }
      }
      t.trials.push_back(std::move(trial));
    }
  }
  r.index(j, "tune", "chosen", t.trials.size(), t.chosen);
  r.index(j, "tune", "baseline", t.trials.size(), t.baseline);
  return t;
}

}  // namespace pinbench::result
