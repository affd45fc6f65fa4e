#include "models/graph.h"

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

namespace cnnbench::models {

namespace {

// Dimensions of 0 in a Shape mean "not known yet": the same rules serve
// infer_shapes (everything known) and the static pass done as nodes are added
// (image size unknown).
constexpr int kUnknown = 0;

[[noreturn]] void fail(std::string_view node, const std::string& what) {
  throw std::invalid_argument(std::string(node) + ": " + what);
}

std::string hw(int h, int w) { return std::to_string(h) + "x" + std::to_string(w); }

// "padding 1" when symmetric in H and W, "padding 3x0" otherwise.
std::string padding_text(int pad_h, int pad_w) {
  return "padding " + (pad_h == pad_w ? std::to_string(pad_h) : hw(pad_h, pad_w));
}

void require_at_least(std::string_view node, const char* attr, int64_t value, int64_t least) {
  if (value < least) {
    fail(node, std::string(attr) + " must be >= " + std::to_string(least) + ", got " +
                   std::to_string(value));
  }
}

/// The window attributes convolutions and pools share: kernel and stride >= 1,
/// padding >= 0.
template <typename WindowAttrs>
void require_valid_window(std::string_view node, const WindowAttrs& a) {
  require_at_least(node, "kernel_h", a.kernel_h, 1);
  require_at_least(node, "kernel_w", a.kernel_w, 1);
  require_at_least(node, "stride_h", a.stride_h, 1);
  require_at_least(node, "stride_w", a.stride_w, 1);
  require_at_least(node, "pad_h", a.pad_h, 0);
  require_at_least(node, "pad_w", a.pad_w, 0);
}

void validate_init(std::string_view node, const char* what, const Init& init) {
  const bool has_std = init.kind == Init::Kind::Normal || init.kind == Init::Kind::TruncatedNormal;
  if (has_std && !(init.std > 0.0F)) {
    fail(node, std::string(what) + " init needs std > 0, got " + std::to_string(init.std));
  }
}

// Floor division rounding toward negative infinity (C++ '/' truncates toward 0).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// One spatial dimension of a pooling output, as PyTorch's pooling_output_shape
// (aten/src/ATen/native/Pool.h) computes it with dilation 1: in ceil mode a last
// window that would start beyond the input and its left padding is dropped.
int64_t pooled_size(int64_t in, int kernel, int stride, int pad, bool ceil_mode) {
  const int64_t ceil_extra = ceil_mode ? int64_t{stride} - 1 : 0;
  int64_t out = floor_div(in + 2 * int64_t{pad} - kernel + ceil_extra, stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) {
    --out;
  }
  return out;
}

// Shape holds int dimensions; padding, concatenation and flattening can make
// one larger than any input dimension.
int checked_size(const Node& node, int64_t size) {
  if (size > std::numeric_limits<int>::max()) {
    fail(node.name, "output dimension " + std::to_string(size) +
                        " exceeds the largest supported (" +
                        std::to_string(std::numeric_limits<int>::max()) + ")");
  }
  return static_cast<int>(size);
}

// The image-size hint is only useful when the failing size came from the image.
const char* image_hint(bool from_image) { return from_image ? "; use a larger --image_size" : ""; }

Shape conv_output(const Node& node, const ConvAttrs& a, const Shape& in, bool from_image) {
  if (in.c != kUnknown && in.c % a.groups != 0) {
    fail(node.name, "groups " + std::to_string(a.groups) + " does not divide the " +
                        std::to_string(in.c) + " input channels");
  }
  Shape out{in.n, a.out_channels, kUnknown, kUnknown};
  if (in.h == kUnknown || in.w == kUnknown) {
    return out;
  }
  // 64-bit so that no attribute value can overflow the arithmetic.
  const int64_t span_h = int64_t{in.h} + 2 * int64_t{a.pad_h} - a.kernel_h;
  const int64_t span_w = int64_t{in.w} + 2 * int64_t{a.pad_w} - a.kernel_w;
  if (span_h < 0 || span_w < 0) {
    fail(node.name, "input " + hw(in.h, in.w) + " is smaller than the " +
                        hw(a.kernel_h, a.kernel_w) + " kernel with " +
                        padding_text(a.pad_h, a.pad_w) + image_hint(from_image));
  }
  out.h = checked_size(node, span_h / a.stride_h + 1);
  out.w = checked_size(node, span_w / a.stride_w + 1);
  return out;
}

Shape pool_output(const Node& node, const PoolAttrs& a, const Shape& in, bool from_image) {
  Shape out{in.n, in.c, kUnknown, kUnknown};
  if (in.h == kUnknown || in.w == kUnknown) {
    return out;
  }
  const int64_t oh = pooled_size(in.h, a.kernel_h, a.stride_h, a.pad_h, a.ceil_mode);
  const int64_t ow = pooled_size(in.w, a.kernel_w, a.stride_w, a.pad_w, a.ceil_mode);
  if (oh < 1 || ow < 1) {
    fail(node.name, "input " + hw(in.h, in.w) + " is smaller than the " +
                        hw(a.kernel_h, a.kernel_w) + " pooling window with " +
                        padding_text(a.pad_h, a.pad_w) + image_hint(from_image));
  }
  out.h = checked_size(node, oh);
  out.w = checked_size(node, ow);
  return out;
}

// Merges one dimension of inputs that must agree; unknown (0) agrees with all.
bool merge_dim(int& into, int value) {
  if (value == kUnknown) {
    return true;
  }
  if (into == kUnknown) {
    into = value;
    return true;
  }
  return into == value;
}

std::string shape_text(const Shape& s) {
  std::string text = "[";
  for (int v : {s.n, s.c, s.h, s.w}) {
    text += text.size() > 1 ? ", " : "";
    text += v == kUnknown ? std::string("?") : std::to_string(v);
  }
  return text + "]";
}

Shape add_output(const Node& node, const std::vector<Shape>& in) {
  Shape out = in.front();
  for (const Shape& s : in) {
    if (!merge_dim(out.n, s.n) || !merge_dim(out.c, s.c) || !merge_dim(out.h, s.h) ||
        !merge_dim(out.w, s.w)) {
      std::string all;
      for (const Shape& t : in) {
        all += (all.empty() ? "" : ", ") + shape_text(t);
      }
      fail(node.name, "inputs of an add must have equal shapes (N, C, H, W), got " + all);
    }
  }
  return out;
}

Shape concat_output(const Node& node, const std::vector<Shape>& in) {
  Shape out = in.front();
  int64_t channels = 0;
  bool channels_known = true;
  for (const Shape& s : in) {
    if (!merge_dim(out.n, s.n) || !merge_dim(out.h, s.h) || !merge_dim(out.w, s.w)) {
      std::string all;
      for (const Shape& t : in) {
        all += (all.empty() ? "" : ", ") + shape_text(t);
      }
      fail(node.name, "inputs of a concat must agree in N, H and W, got " + all);
    }
    channels_known = channels_known && s.c != kUnknown;
    channels += s.c;
  }
  out.c = channels_known ? checked_size(node, channels) : kUnknown;
  return out;
}

Shape flatten_output(const Node& node, const Shape& in) {
  const bool known = in.c != kUnknown && in.h != kUnknown && in.w != kUnknown;
  return Shape{in.n, known ? checked_size(node, in.per_image()) : kUnknown, 1, 1};
}

// The output of `node` from its inputs' outputs. Dimensions may be unknown (0)
// in the static pass; errors name the node and the sizes.
Shape node_output(const Node& node, const std::vector<Shape>& in, bool from_image) {
  return std::visit(
      [&](const auto& a) -> Shape {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, InputAttrs>) {
          return Shape{};  // set by the caller: the batch and image size
        } else if constexpr (std::is_same_v<A, ConvAttrs>) {
          return conv_output(node, a, in.front(), from_image);
        } else if constexpr (std::is_same_v<A, PoolAttrs>) {
          return pool_output(node, a, in.front(), from_image);
        } else if constexpr (std::is_same_v<A, AdaptiveAvgPoolAttrs>) {
          return Shape{in.front().n, in.front().c, a.out_h, a.out_w};
        } else if constexpr (std::is_same_v<A, FullyConnectedAttrs>) {
          return Shape{in.front().n, a.out_features, 1, 1};
        } else if constexpr (std::is_same_v<A, AddAttrs>) {
          return add_output(node, in);
        } else if constexpr (std::is_same_v<A, ConcatAttrs>) {
          return concat_output(node, in);
        } else if constexpr (std::is_same_v<A, FlattenAttrs>) {
          return flatten_output(node, in.front());
        } else if constexpr (std::is_same_v<A, SoftmaxCrossEntropyAttrs>) {
          const Shape& logits = in.front();
          if ((logits.h != kUnknown && logits.h != 1) || (logits.w != kUnknown && logits.w != 1)) {
            fail(node.name, "logits must be [N, classes, 1, 1], got " + shape_text(logits) +
                                "; put a flatten or fully connected layer before the loss");
          }
          return Shape{1, 1, 1, 1};
        } else {
          // BatchNorm, Activation, Dropout: element-wise, shape preserved.
          return in.front();
        }
      },
      node.attrs);
}

// Parameter tensors of one node, in the order they sit in the flat buffer.
void append_params(NodeId id, const Node& node, const Shape& in, std::vector<ParamSlot>& out) {
  auto slot = [&](ParamRole role, std::vector<int64_t> dims, const Init& init, int64_t fan_in,
                  int64_t fan_out) {
    ParamSlot s;
    s.node = id;
    s.role = role;
    s.count = 1;
    for (int64_t d : dims) {
      s.count *= d;
    }
    s.dims = std::move(dims);
    s.init = init;
    s.fan_in = fan_in;
    s.fan_out = fan_out;
    out.push_back(std::move(s));
  };
  if (const auto* conv = std::get_if<ConvAttrs>(&node.attrs)) {
    const int64_t c_per_group = in.c / conv->groups;
    const int64_t window = int64_t{conv->kernel_h} * conv->kernel_w;
    const int64_t fan_in = c_per_group * window;
    const int64_t fan_out = conv->out_channels * window / conv->groups;
    slot(ParamRole::Weight, {conv->out_channels, c_per_group, conv->kernel_h, conv->kernel_w},
         conv->weight_init, fan_in, fan_out);
    if (conv->bias) {
      slot(ParamRole::Bias, {conv->out_channels}, conv->bias_init, fan_in, fan_out);
    }
  } else if (const auto* fc = std::get_if<FullyConnectedAttrs>(&node.attrs)) {
    const int64_t in_features = in.per_image();
    slot(ParamRole::Weight, {fc->out_features, in_features}, fc->weight_init, in_features,
         fc->out_features);
    if (fc->bias) {
      slot(ParamRole::Bias, {fc->out_features}, fc->bias_init, in_features, fc->out_features);
    }
  } else if (std::holds_alternative<BatchNormAttrs>(node.attrs)) {
    // torch.nn.BatchNorm2d's reset_parameters: weight (scale) 1, bias (shift) 0.
    slot(ParamRole::Scale, {in.c}, Init{Init::Kind::Ones}, 0, 0);
    slot(ParamRole::Shift, {in.c}, Init{Init::Kind::Zeros}, 0, 0);
  }
}

}  // namespace

bool has_parameters(const Node& node) {
  return std::holds_alternative<ConvAttrs>(node.attrs) ||
         std::holds_alternative<FullyConnectedAttrs>(node.attrs) ||
         std::holds_alternative<BatchNormAttrs>(node.attrs);
}

const char* op_name(OpKind kind) {
  switch (kind) {
    case OpKind::Input: return "input";
    case OpKind::Conv2d: return "conv2d";
    case OpKind::BatchNorm: return "batchnorm";
    case OpKind::Activation: return "activation";
    case OpKind::Pool: return "pool";
    case OpKind::AdaptiveAvgPool: return "adaptive_avg_pool";
    case OpKind::FullyConnected: return "fully_connected";
    case OpKind::Dropout: return "dropout";
    case OpKind::Add: return "add";
    case OpKind::Concat: return "concat";
    case OpKind::Flatten: return "flatten";
    case OpKind::SoftmaxCrossEntropy: return "softmax_cross_entropy";
  }
  return "unknown";
}

Graph::Graph(std::string name, int channels) : name_(std::move(name)) {
  if (channels < 1) {
    throw std::invalid_argument(name_ + ": input channels must be >= 1, got " +
                                std::to_string(channels));
  }
  nodes_.push_back(Node{InputAttrs{channels}, {}, "input", Shape{}});
  static_shapes_.push_back(Shape{kUnknown, channels, kUnknown, kUnknown});
}

NodeId Graph::add_node(Attrs attrs, std::vector<NodeId> inputs, std::string name) {
  const auto kind = static_cast<OpKind>(attrs.index());
  if (name.empty()) {
    throw std::invalid_argument(name_ + ": a " + std::string(op_name(kind)) +
                                " node needs a non-empty name");
  }
  for (const Node& n : nodes_) {
    if (n.name == name) {
      fail(name, "duplicate node name in graph " + name_);
    }
  }
  if (std::holds_alternative<SoftmaxCrossEntropyAttrs>(nodes_.back().attrs)) {
    fail(name, "the graph already ends with the loss '" + nodes_.back().name +
                   "'; no node may follow it");
  }
  if (inputs.empty()) {
    fail(name, std::string("a ") + op_name(kind) + " node needs at least one input");
  }
  const auto size = static_cast<NodeId>(nodes_.size());
  std::vector<Shape> in;
  for (NodeId i : inputs) {
    if (i < 0 || i >= size) {
      fail(name, "input id " + std::to_string(i) + " does not exist (ids 0.." +
                     std::to_string(size - 1) + ")");
    }
    in.push_back(static_shapes_[static_cast<size_t>(i)]);
  }
  Node node{std::move(attrs), std::move(inputs), std::move(name), Shape{}};
  const Shape static_shape = node_output(node, in, /*from_image=*/false);
  nodes_.push_back(std::move(node));
  static_shapes_.push_back(static_shape);
  inferred_ = false;
  return size;
}

NodeId Graph::add_conv(NodeId in, const ConvAttrs& a, std::string name) {
  require_at_least(name, "out_channels", a.out_channels, 1);
  require_valid_window(name, a);
  require_at_least(name, "groups", a.groups, 1);
  if (a.out_channels % a.groups != 0) {
    fail(name, "groups " + std::to_string(a.groups) + " does not divide out_channels " +
                   std::to_string(a.out_channels));
  }
  validate_init(name, "weight", a.weight_init);
  if (a.bias) {
    validate_init(name, "bias", a.bias_init);
  }
  return add_node(a, {in}, std::move(name));
}

NodeId Graph::add_batchnorm(NodeId in, const BatchNormAttrs& a, std::string name) {
  if (!(a.eps > 0.0F)) {
    fail(name, "eps must be > 0, got " + std::to_string(a.eps));
  }
  if (!(a.momentum >= 0.0F && a.momentum <= 1.0F)) {
    fail(name, "momentum must be in [0, 1], got " + std::to_string(a.momentum));
  }
  return add_node(a, {in}, std::move(name));
}

NodeId Graph::add_relu(NodeId in, std::string name) {
  return add_node(ActivationAttrs{ActivationAttrs::Kind::Relu}, {in}, std::move(name));
}

NodeId Graph::add_relu6(NodeId in, std::string name) {
  return add_node(ActivationAttrs{ActivationAttrs::Kind::Relu6}, {in}, std::move(name));
}

NodeId Graph::add_pool(NodeId in, const PoolAttrs& a, std::string name) {
  require_valid_window(name, a);
  // PyTorch rejects larger padding ("pad should be at most half of effective
  // kernel size"): a window could then lie wholly in the padding.
  if (a.pad_h > a.kernel_h / 2 || a.pad_w > a.kernel_w / 2) {
    fail(name, padding_text(a.pad_h, a.pad_w) + " exceeds half the " +
                   hw(a.kernel_h, a.kernel_w) + " pooling window");
  }
  return add_node(a, {in}, std::move(name));
}

NodeId Graph::add_adaptive_avg_pool(NodeId in, int out_h, int out_w, std::string name) {
  require_at_least(name, "out_h", out_h, 1);
  require_at_least(name, "out_w", out_w, 1);
  return add_node(AdaptiveAvgPoolAttrs{out_h, out_w}, {in}, std::move(name));
}

NodeId Graph::add_global_avg_pool(NodeId in, std::string name) {
  return add_adaptive_avg_pool(in, 1, 1, std::move(name));
}

NodeId Graph::add_fc(NodeId in, const FullyConnectedAttrs& a, std::string name) {
  require_at_least(name, "out_features", a.out_features, 1);
  validate_init(name, "weight", a.weight_init);
  if (a.bias) {
    validate_init(name, "bias", a.bias_init);
  }
  return add_node(a, {in}, std::move(name));
}

NodeId Graph::add_dropout(NodeId in, float p, std::string name) {
  if (!(p >= 0.0F && p < 1.0F)) {
    fail(name, "dropout probability must be in [0, 1), got " + std::to_string(p));
  }
  return add_node(DropoutAttrs{p}, {in}, std::move(name));
}

NodeId Graph::add_add(std::vector<NodeId> in, std::string name) {
  if (in.size() < 2) {
    fail(name, "an add needs at least 2 inputs, got " + std::to_string(in.size()));
  }
  return add_node(AddAttrs{}, std::move(in), std::move(name));
}

NodeId Graph::add_concat(std::vector<NodeId> in, std::string name) {
  if (in.size() < 2) {
    fail(name, "a concat needs at least 2 inputs, got " + std::to_string(in.size()));
  }
  return add_node(ConcatAttrs{}, std::move(in), std::move(name));
}

NodeId Graph::add_flatten(NodeId in, std::string name) {
  return add_node(FlattenAttrs{}, {in}, std::move(name));
}

NodeId Graph::add_softmax_cross_entropy(NodeId logits, std::string name) {
  return add_node(SoftmaxCrossEntropyAttrs{}, {logits}, std::move(name));
}

void Graph::infer_shapes(int batch, int image_h, int image_w) {
  inferred_ = false;
  if (batch < 1) {
    throw std::invalid_argument(name_ + ": batch must be >= 1 image, got " + std::to_string(batch));
  }
  if (image_h < 1 || image_w < 1) {
    throw std::invalid_argument(name_ + ": image size must be >= 1x1 pixels, got " +
                                hw(image_h, image_w));
  }
  const auto& input = std::get<InputAttrs>(nodes_.front().attrs);
  nodes_.front().output = Shape{batch, input.channels, image_h, image_w};
  std::vector<Shape> in;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    in.clear();
    for (NodeId j : node.inputs) {
      in.push_back(nodes_[static_cast<size_t>(j)].output);
    }
    node.output = node_output(node, in, /*from_image=*/true);
  }
  inferred_ = true;
}

std::vector<ParamSlot> Graph::param_layout() const {
  std::vector<ParamSlot> slots;
  for (auto id = static_cast<NodeId>(nodes_.size()) - 1; id >= 0; --id) {
    const Node& node = nodes_[static_cast<size_t>(id)];
    if (!has_parameters(node)) {
      continue;
    }
    const auto in_id = static_cast<size_t>(node.inputs.front());
    const Shape& in = inferred_ ? nodes_[in_id].output : static_shapes_[in_id];
    const bool fc = std::holds_alternative<FullyConnectedAttrs>(node.attrs);
    if (in.c == kUnknown || (fc && (in.h == kUnknown || in.w == kUnknown))) {
      throw std::logic_error(name_ + ": " + node.name +
                             ": parameter size depends on the image size; call infer_shapes first");
    }
    append_params(id, node, in, slots);
  }
  int64_t offset = 0;
  for (ParamSlot& s : slots) {
    s.offset = offset;
    offset += s.count;
  }
  return slots;
}

int64_t Graph::param_count() const {
  int64_t total = 0;
  for (const ParamSlot& s : param_layout()) {
    total += s.count;
  }
  return total;
}

double Graph::flops_per_image() const {
  if (!inferred_) {
    throw std::logic_error(name_ + ": flops_per_image needs infer_shapes first");
  }
  double flops = 0.0;
  for (const Node& node : nodes_) {
    const NodeId in_id = node.inputs.empty() ? input() : node.inputs.front();
    const Shape& in = nodes_[static_cast<size_t>(in_id)].output;
    if (const auto* conv = std::get_if<ConvAttrs>(&node.attrs)) {
      // 2·K·(C/groups)·R·S·P·Q: one multiply-add per weight per output pixel.
      flops += 2.0 * conv->out_channels * (in.c / conv->groups) * conv->kernel_h * conv->kernel_w *
               node.output.h * node.output.w;
    } else if (const auto* fc = std::get_if<FullyConnectedAttrs>(&node.attrs)) {
      flops += 2.0 * static_cast<double>(in.per_image()) * fc->out_features;
    }
  }
  return flops;
}

Graph Graph::without_dropout() const {
  Graph copy = *this;
  for (Node& n : copy.nodes_) {
    if (auto* d = std::get_if<DropoutAttrs>(&n.attrs)) d->p = 0.0F;
  }
  return copy;
}

std::string param_name(const Graph& graph, const ParamSlot& slot) {
  const bool weight = slot.role == ParamRole::Weight || slot.role == ParamRole::Scale;
  return graph.node(slot.node).name + (weight ? ".weight" : ".bias");
}

int Graph::num_classes() const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    if (const auto* fc = std::get_if<FullyConnectedAttrs>(&it->attrs)) {
      return fc->out_features;
    }
  }
  return 0;
}

}  // namespace cnnbench::models
