// The Einsum equation parser and the Einsum schema.
#include "graph/schemas/einsum_equation.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace ember {

namespace {

// One operand's term: letters, with kEllipsis where "..." stands.
constexpr char kEllipsis = '.';

std::vector<char> parse_term(const std::string& term, const InferContext& ctx) {
  std::vector<char> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (term.compare(i, 3, "...") != 0 || ellipsis) ctx.fail("malformed ellipsis in equation term '" + term + "'");
      ellipsis = true;
      out.push_back(kEllipsis);
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      out.push_back(c);
    } else {
      ctx.fail(std::string("unexpected character '") + c + "' in equation");
    }
  }
  return out;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == ',') parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

}  // namespace

EinsumSpec parse_einsum(const std::string& equation, const std::vector<Shape>& shapes, const InferContext& ctx) {
  const size_t arrow = equation.find("->");
  std::vector<std::vector<char>> terms;
  for (const std::string& t : split_commas(equation.substr(0, arrow))) terms.push_back(parse_term(t, ctx));
  if (terms.size() != shapes.size())
    ctx.fail("equation has " + std::to_string(terms.size()) + " operands, the node " + std::to_string(shapes.size()));

  EinsumSpec spec;
  std::vector<int64_t> ellipsis_ranks(terms.size(), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t letters = std::count_if(terms[k].begin(), terms[k].end(), [](char c) { return c != kEllipsis; });
    const bool has_ellipsis = static_cast<int64_t>(terms[k].size()) != letters;
    const int64_t rank = static_cast<int64_t>(shapes[k].size());
    if (has_ellipsis ? rank < letters : rank != letters)
      ctx.fail("operand " + std::to_string(k) + " has rank " + std::to_string(rank) + ", the equation says " +
               std::to_string(letters) + (has_ellipsis ? " or more" : ""));
    ellipsis_ranks[k] = has_ellipsis ? rank - letters : 0;
    spec.ellipsis_rank = std::max(spec.ellipsis_rank, ellipsis_ranks[k]);
  }
  spec.label_dims.assign(spec.ellipsis_rank, 1);
  std::map<char, int64_t> letter_ids;
  std::map<char, int> letter_uses;
  auto bind = [&](int64_t label, int64_t dim, size_t k) {
    int64_t& known = spec.label_dims[label];
    const bool ellipsis_dim = label < spec.ellipsis_rank;
    if (known == dim || (ellipsis_dim && dim == 1)) return;
    if (ellipsis_dim && known == 1) known = dim;
    else ctx.fail("operand " + std::to_string(k) + " disagrees on the size of a label (" + std::to_string(dim) +
                  " vs " + std::to_string(known) + ")");
  };
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int64_t> labels;
    for (char c : terms[k]) {
      if (c == kEllipsis) {
        for (int64_t e = spec.ellipsis_rank - ellipsis_ranks[k]; e < spec.ellipsis_rank; ++e) labels.push_back(e);
        continue;
      }
      auto [it, fresh] = letter_ids.emplace(c, static_cast<int64_t>(spec.label_dims.size()));
      if (fresh) spec.label_dims.push_back(-1);
      ++letter_uses[c];
      labels.push_back(it->second);
    }
    for (size_t a = 0; a < labels.size(); ++a) {
      const int64_t dim = shapes[k][a];
      if (spec.label_dims[labels[a]] < 0) spec.label_dims[labels[a]] = dim;
      else bind(labels[a], dim, k);
    }
    spec.input_labels.push_back(std::move(labels));
  }

  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis dims, then the letters used once, alphabetically.
    for (int64_t e = 0; e < spec.ellipsis_rank; ++e) spec.output_labels.push_back(e);
    for (const auto& [c, uses] : letter_uses)
      if (uses == 1) spec.output_labels.push_back(letter_ids[c]);
    return spec;
  }
  for (char c : parse_term(equation.substr(arrow + 2), ctx)) {
    if (c == kEllipsis) {
      for (int64_t e = 0; e < spec.ellipsis_rank; ++e) spec.output_labels.push_back(e);
      continue;
    }
    auto it = letter_ids.find(c);
    if (it == letter_ids.end()) ctx.fail(std::string("output label '") + c + "' is not in any operand");
    if (std::count(spec.output_labels.begin(), spec.output_labels.end(), it->second))
      ctx.fail(std::string("output label '") + c + "' appears twice");
    spec.output_labels.push_back(it->second);
  }
  return spec;
}

namespace {

std::vector<TensorType> infer_einsum(const InferContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).dtype != ctx.input(0).dtype) ctx.fail("all inputs must have the same dtype");
    shapes.push_back(ctx.input(i).shape);
  }
  const EinsumSpec spec = parse_einsum(ctx.node.attributes.get_string("equation"), shapes, ctx);
  Shape out;
  for (int64_t label : spec.output_labels) out.push_back(spec.label_dims[label]);
  return {{ctx.input(0).dtype, out}};
}

}  // namespace

EMBER_SCHEMA("Einsum", "", infer_einsum);

}  // namespace ember
