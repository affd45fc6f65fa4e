#include "bench/micro/shapes.h"

#include <array>
#include <map>
#include <stdexcept>
#include <utility>

#include "models/analysis.h"
#include "models/zoo.h"

namespace cnnbench::bench::micro {

namespace {

void require_inferred(const models::Graph& graph) {
  if (!graph.shapes_inferred()) {
    throw std::logic_error("micro-benchmark problems of graph '" + graph.name() +
                           "' need inferred shapes (call infer_shapes first)");
  }
}

bool is_relu(const models::Node& node) {
  return node.op() == models::OpKind::Activation &&
         std::get<models::ActivationAttrs>(node.attrs).kind == models::ActivationAttrs::Kind::Relu;
}

/// Deduplicates problems by key, keeping the first node's entry and counting
/// later ones.
template <typename Key, typename Problem>
class Distinct {
 public:
  /// The problem for `key`, and whether it was just created.
  std::pair<Problem*, bool> find_or_add(const Key& key) {
    auto [it, added] = index_.try_emplace(key, problems_.size());
    if (added) problems_.emplace_back();
    Problem* p = &problems_[it->second];
    ++p->occurrences;
    return {p, added};
  }
  std::vector<Problem> take() { return std::move(problems_); }

 private:
  std::map<Key, size_t> index_;
  std::vector<Problem> problems_;
};

}  // namespace

std::string format_shape(const models::Shape& s) {
  std::string out = "[";  // not "[" + ...: GCC 12 warns falsely (-Wrestrict) at -O3
  out += std::to_string(s.n) + "," + std::to_string(s.c) + "," + std::to_string(s.h) + "," +
         std::to_string(s.w) + "]";
  return out;
}

std::string ConvProblem::describe() const {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on
  // "literal" + std::string temporaries at -O3.
  auto append = [](std::string& s, const char* text, int value) {
    s += text;
    s += std::to_string(value);
  };
  std::string s = "x";
  s += format_shape(input);
  append(s, " w[", attrs.out_channels);
  append(s, ",", input.c / attrs.groups);
  append(s, ",", attrs.kernel_h);
  append(s, ",", attrs.kernel_w);
  s += "] y";
  s += format_shape(output);
  append(s, " s", attrs.stride_h);
  if (attrs.stride_w != attrs.stride_h) append(s, "x", attrs.stride_w);
  append(s, " p", attrs.pad_h);
  if (attrs.pad_w != attrs.pad_h) append(s, "x", attrs.pad_w);
  append(s, " g", attrs.groups);
  if (attrs.bias) s += " bias";
  append(s, " x", occurrences);
  return s;
}

const char* to_string(BatchNormEpilogue e) {
  switch (e) {
    case BatchNormEpilogue::None: return "bn";
    case BatchNormEpilogue::Relu: return "bn_relu";
    case BatchNormEpilogue::AddRelu: return "bn_add_relu";
  }
  return "?";
}

const char* to_string(PoolProblem::Kind k) {
  switch (k) {
    case PoolProblem::Kind::Max: return "maxpool";
    case PoolProblem::Kind::Avg: return "avgpool";
    case PoolProblem::Kind::AdaptiveAvg: return "adaptive_avgpool";
  }
  return "?";
}

std::vector<ConvProblem> conv_problems(const models::Graph& graph) {
  require_inferred(graph);
  // Input shape, output channels, kernel, stride, padding, groups, bias.
  using Key = std::array<int64_t, 13>;
  Distinct<Key, ConvProblem> distinct;
  for (const models::Node& node : graph.nodes()) {
    if (node.op() != models::OpKind::Conv2d) continue;
    const auto& a = std::get<models::ConvAttrs>(node.attrs);
    const models::Shape& in = graph.node(node.inputs.at(0)).output;
    const Key key{in.n,       in.c,       in.h,     in.w,     a.out_channels,
                  a.kernel_h, a.kernel_w, a.stride_h, a.stride_w, a.pad_h,
                  a.pad_w,    a.groups,   a.bias ? 1 : 0};
    const bool reads_images = node.inputs.at(0) == graph.input();
    auto [p, added] = distinct.find_or_add(key);
    if (added) {
      p->model = graph.name();
      p->layer = node.name;
      p->reads_images = reads_images;
      p->input = in;
      p->attrs = a;
      p->output = node.output;
    } else {
      p->reads_images = p->reads_images && reads_images;
    }
  }
  return distinct.take();
}

std::vector<BatchNormProblem> batchnorm_problems(const models::Graph& graph) {
  require_inferred(graph);
  const auto readers = models::consumers(graph);
  using Key = std::array<int64_t, 5>;
  Distinct<Key, BatchNormProblem> distinct;
  for (size_t id = 0; id < graph.nodes().size(); ++id) {
    const models::Node& node = graph.nodes()[id];
    if (node.op() != models::OpKind::BatchNorm) continue;
    BatchNormEpilogue epilogue = BatchNormEpilogue::None;
    const auto& next = readers[id];
    if (next.size() == 1) {
      const models::Node& c = graph.node(next[0]);
      const auto& after = readers[static_cast<size_t>(next[0])];
      if (is_relu(c)) {
        epilogue = BatchNormEpilogue::Relu;
      } else if (c.op() == models::OpKind::Add && c.inputs.size() == 2 &&
                 c.inputs[0] == static_cast<models::NodeId>(id) && after.size() == 1 &&
                 is_relu(graph.node(after[0]))) {
        epilogue = BatchNormEpilogue::AddRelu;
      }
    }
    const models::Shape& s = node.output;
    const Key key{s.n, s.c, s.h, s.w, static_cast<int64_t>(epilogue)};
    auto [p, added] = distinct.find_or_add(key);
    if (added) {
      p->model = graph.name();
      p->layer = node.name;
      p->shape = s;
      p->epilogue = epilogue;
    }
  }
  return distinct.take();
}

std::vector<PoolProblem> pool_problems(const models::Graph& graph) {
  require_inferred(graph);
  // Kind, input shape, output shape, window (kernel, stride, pad, ceil, count_include_pad).
  using Key = std::array<int64_t, 17>;
  Distinct<Key, PoolProblem> distinct;
  for (const models::Node& node : graph.nodes()) {
    PoolProblem candidate;
    if (node.op() == models::OpKind::Pool) {
      candidate.window = std::get<models::PoolAttrs>(node.attrs);
      candidate.kind = candidate.window.kind == models::PoolAttrs::Kind::Max
                           ? PoolProblem::Kind::Max
                           : PoolProblem::Kind::Avg;
    } else if (node.op() == models::OpKind::AdaptiveAvgPool) {
      candidate.adaptive = std::get<models::AdaptiveAvgPoolAttrs>(node.attrs);
      candidate.kind = PoolProblem::Kind::AdaptiveAvg;
    } else {
      continue;
    }
    const models::Shape& in = graph.node(node.inputs.at(0)).output;
    const models::Shape& out = node.output;
    const auto& w = candidate.window;
    const Key key{static_cast<int64_t>(candidate.kind),
                  in.n, in.c, in.h, in.w, out.h, out.w,
                  w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.pad_h, w.pad_w,
                  w.ceil_mode ? 1 : 0, w.count_include_pad ? 1 : 0,
                  candidate.adaptive.out_h, candidate.adaptive.out_w};
    auto [p, added] = distinct.find_or_add(key);
    if (added) {
      const int occurrences = p->occurrences;
      *p = candidate;
      p->occurrences = occurrences;
      p->model = graph.name();
      p->layer = node.name;
      p->input = in;
      p->output = out;
    }
  }
  return distinct.take();
}

std::optional<LossProblem> loss_problem(const models::Graph& graph) {
  require_inferred(graph);
  for (const models::Node& node : graph.nodes()) {
    if (node.op() != models::OpKind::SoftmaxCrossEntropy) continue;
    const models::Shape& logits = graph.node(node.inputs.at(0)).output;
    return LossProblem{.model = graph.name(),
                       .layer = node.name,
                       .n = logits.n,
                       .classes = static_cast<int>(logits.per_image())};
  }
  return std::nullopt;
}

models::Graph inferred_model(std::string_view model, int batch, int image_size) {
  if (batch < 1) {
    throw std::invalid_argument("batch " + std::to_string(batch) + " for model " +
                                std::string(model) + ": expected at least 1");
  }
  const int size = image_size > 0 ? image_size : models::model_info(model).default_image_size;
  models::Graph graph = models::build_model(model);
  graph.infer_shapes(batch, size, size);
  return graph;
}

std::vector<std::string> resolve_models(const std::vector<std::string>& names) {
  if (names.size() == 1 && names[0] == "all") {
    std::vector<std::string> all;
    for (const models::ModelInfo& info : models::zoo()) all.push_back(info.name);
    return all;
  }
  for (const std::string& name : names) (void)models::model_info(name);
  return names;
}

}  // namespace cnnbench::bench::micro
