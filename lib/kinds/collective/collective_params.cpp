// Kind `collective`'s params: read once per case, with the rules across them.
#include "kinds/collective/collective_params.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::kinds::collective {

namespace cl = pinbench::collective;

std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& p,
                                                         const std::string& source) {
  auto c = std::make_shared<collective_params>();
  c->op = op_choice.parse(p, source);
  c->type = dtype_choice.parse(p, source);
  c->bytes = p.at("bytes").get<std::uint64_t>();
  c->ranks = p.at("ranks").get<int>();
  c->in_place = p.at("in_place").get<bool>();
  c->iterations = p.at("iterations").get<int>();
  c->root = p.at("root").get<int>();
  c->verify = p.at("verify").get<bool>();

  const std::size_t elem = cl::size_of(c->type);
  if (c->bytes < elem)
    throw input_error(source, "params.bytes",
                      fmt::format("expected at least one {} element ({} bytes), got {}",
                                  cl::to_string(c->type), elem, c->bytes));
  if (c->op == cl::op::broadcast && c->ranks > 0 && c->root >= c->ranks)
    throw input_error(source, "params.root",
                      fmt::format("expected a rank below ranks={}, got {}", c->ranks, c->root));
  return c;
}

}  // namespace pinbench::kinds::collective
