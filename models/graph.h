// The network description: a small graph IR of CNN training ops, shape
// inference, parameter and FLOP counts. Host code only; no device, no I/O.
//
// Tensors are 4-D and described by logical NCHW dimensions (Shape); the memory
// layout (NHWC or NCHW) is a backend decision and never appears here. Fully
// connected layers and the loss see [N, C, 1, 1] tensors.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace cnnbench::models {

/// Logical dimensions of an activation tensor, always in N, C, H, W order.
struct Shape {
  int n = 0;
  int c = 0;
  int h = 0;
  int w = 0;

  /// Elements of one image (C·H·W).
  [[nodiscard]] int64_t per_image() const { return int64_t{c} * h * w; }
  /// Elements of the whole tensor (N·C·H·W).
  [[nodiscard]] int64_t elements() const { return per_image() * n; }
  friend bool operator==(const Shape&, const Shape&) = default;
};

/// How a parameter tensor is initialised; mirrors torch.nn.init as torchvision
/// uses it for each model (see the model builders in zoo.cpp for which applies).
struct Init {
  enum class Kind {
    Zeros,
    Ones,
    /// kaiming_normal_(mode='fan_out', nonlinearity='relu'): N(0, 2 / fan_out),
    /// fan_out = out_channels · kh · kw / groups (ResNet, VGG conv, MobileNetV2).
    KaimingNormalFanOut,
    /// PyTorch's default Conv2d/Linear weight init, kaiming_uniform_(a=√5):
    /// U(−1/√fan_in, 1/√fan_in), fan_in = in_channels/groups · kh · kw.
    DefaultUniform,
    /// PyTorch's default bias init: U(−1/√fan_in, 1/√fan_in) with the weight's fan_in.
    DefaultBiasUniform,
    /// N(0, std²) (VGG, MobileNetV2 classifiers: std = 0.01).
    Normal,
    /// trunc_normal_(std, a=−2, b=2): N(0, std²) truncated to [−2, 2]
    /// (GoogLeNet std = 0.01, Inception3 std = 0.1, as in torchvision).
    TruncatedNormal,
  };
  Kind kind = Kind::Zeros;
  float std = 0.0F;  ///< for Normal and TruncatedNormal
};

/// 2-D convolution (cross-correlation), as torch.nn.Conv2d. Weight [K, C/groups, R, S].
struct ConvAttrs {
  int out_channels = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int groups = 1;
  bool bias = false;
  Init weight_init{Init::Kind::KaimingNormalFanOut};
  Init bias_init{Init::Kind::Zeros};
};

/// Batch normalisation over N, H, W per channel, as torch.nn.BatchNorm2d:
/// scale (gamma) and shift (beta) parameters, running mean and variance buffers
/// updated as running = (1 − momentum)·running + momentum·batch_stat
/// (the unbiased batch variance goes into running_var, as PyTorch does).
struct BatchNormAttrs {
  float eps = 1e-5F;       ///< torchvision: 1e-5; GoogLeNet and Inception3: 1e-3
  float momentum = 0.1F;   ///< PyTorch's convention (weight of the new statistic)
};

/// Element-wise activation: relu = max(x, 0); relu6 = min(max(x, 0), 6).
struct ActivationAttrs {
  enum class Kind { Relu, Relu6 };
  Kind kind = Kind::Relu;
};

/// Max or average pooling with a fixed window, as torch.nn.MaxPool2d / AvgPool2d.
/// Output size: floor((H + 2·pad − k) / stride) + 1, or ceil(...) with ceil_mode,
/// where (as in PyTorch) the last window must start inside the input or its left
/// padding: (out − 1)·stride < H + pad, else out is one less. As in PyTorch,
/// pad may be at most kernel / 2 (rounded down).
struct PoolAttrs {
  enum class Kind { Max, Avg };
  Kind kind = Kind::Max;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  bool ceil_mode = false;
  /// Avg only: divide by the whole window (PyTorch's default) rather than by the
  /// number of non-padding elements.
  bool count_include_pad = true;
};

/// Adaptive average pooling to a fixed output size, as torch.nn.AdaptiveAvgPool2d:
/// output cell (i, j) averages rows [floor(i·H/oh), ceil((i+1)·H/oh)) and the same
/// for columns. out_h = out_w = 1 is global average pooling.
struct AdaptiveAvgPoolAttrs {
  int out_h = 1, out_w = 1;
};

/// Fully connected layer y = x·Wᵀ + b on the flattened input, as torch.nn.Linear.
/// Weight [out_features, in_features] with in_features = C·H·W of the input.
struct FullyConnectedAttrs {
  int out_features = 0;
  bool bias = true;
  Init weight_init{Init::Kind::DefaultUniform};
  Init bias_init{Init::Kind::DefaultBiasUniform};
};

/// Inverted dropout, as torch.nn.Dropout: in training each element is zeroed with
/// probability p and the survivors scaled by 1/(1 − p); identity in forward-only runs.
struct DropoutAttrs {
  float p = 0.5F;
};

/// Element-wise sum of two or more inputs of equal shape (residual connections).
struct AddAttrs {};
/// Concatenation of the inputs along channels (Inception branches).
struct ConcatAttrs {};
/// Flatten to [N, C·H·W, 1, 1] (torch.flatten(x, 1)).
struct FlattenAttrs {};
/// The graph's input: a batch of images [N, channels, H, W].
struct InputAttrs {
  int channels = 3;
};
/// Softmax cross-entropy against integer labels, averaged over the batch
/// (torch.nn.CrossEntropyLoss, reduction='mean'). Input: logits [N, classes, 1, 1];
/// output: the scalar loss, shape [1, 1, 1, 1].
struct SoftmaxCrossEntropyAttrs {};

/// The kinds of node; the index of each alternative in `Attrs` matches.
enum class OpKind {
  Input,
  Conv2d,
  BatchNorm,
  Activation,
  Pool,
  AdaptiveAvgPool,
  FullyConnected,
  Dropout,
  Add,
  Concat,
  Flatten,
  SoftmaxCrossEntropy,
};

using Attrs = std::variant<InputAttrs, ConvAttrs, BatchNormAttrs, ActivationAttrs, PoolAttrs,
                           AdaptiveAvgPoolAttrs, FullyConnectedAttrs, DropoutAttrs, AddAttrs,
                           ConcatAttrs, FlattenAttrs, SoftmaxCrossEntropyAttrs>;

/// Short lower-case name of an op kind ("conv2d", "batchnorm", ...), for messages.
const char* op_name(OpKind kind);

/// Identifies a node: its index in Graph::nodes().
using NodeId = int;

/// One operation. Nodes are stored in topological order: every input id is
/// smaller than the node's own id.
struct Node {
  Attrs attrs;
  std::vector<NodeId> inputs;
  std::string name;  ///< unique within the graph, e.g. "layer1.0.conv2"
  Shape output;      ///< filled by Graph::infer_shapes; zero before

  [[nodiscard]] OpKind op() const { return static_cast<OpKind>(attrs.index()); }
};

/// Whether a node holds trainable parameters (convolution, fully connected,
/// batch norm).
bool has_parameters(const Node& node);

/// What a parameter tensor is to its node.
enum class ParamRole { Weight, Bias, Scale, Shift };

/// One trainable parameter tensor's place in the flat parameter/gradient buffer.
struct ParamSlot {
  NodeId node = 0;
  ParamRole role = ParamRole::Weight;
  /// Logical dims: conv weight {K, C/groups, R, S}; FC weight {out, in};
  /// bias, BN scale and shift {C}.
  std::vector<int64_t> dims;
  int64_t count = 0;   ///< elements
  int64_t offset = 0;  ///< elements from the start of the flat buffer
  Init init;
  /// fan_in of the owning layer (C/groups·R·S for conv, in_features for FC), for
  /// DefaultUniform/DefaultBiasUniform; fan_out (K·R·S/groups) for KaimingNormalFanOut.
  int64_t fan_in = 0;
  int64_t fan_out = 0;
};

class Graph;
/// torchvision's name of a parameter tensor: "<node>.weight" for conv and FC
/// weights and BatchNorm scales, "<node>.bias" for biases and BatchNorm shifts
/// (e.g. "layer1.0.bn1.weight").
std::string param_name(const Graph& graph, const ParamSlot& slot);

/// A network: nodes in topological order, built with the add_* methods, with
/// exactly one Input node (id 0) and at most one SoftmaxCrossEntropy node (last).
///
/// Errors: the add_* methods throw std::invalid_argument for an unknown input id,
/// a duplicate name or an attribute out of range (e.g. kernel 0, groups not
/// dividing the channels); infer_shapes throws std::invalid_argument naming the
/// node when a shape does not work out (image too small, channel mismatch).
class Graph {
 public:
  /// Starts a graph whose input has `channels` channels (3 for RGB images).
  explicit Graph(std::string name, int channels = 3);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }
  [[nodiscard]] const Node& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  [[nodiscard]] NodeId input() const { return 0; }
  /// The node whose output is the network's result: the loss when there is one,
  /// else the last node.
  [[nodiscard]] NodeId output() const { return static_cast<NodeId>(nodes_.size()) - 1; }

  NodeId add_conv(NodeId in, const ConvAttrs& a, std::string name);
  NodeId add_batchnorm(NodeId in, const BatchNormAttrs& a, std::string name);
  NodeId add_relu(NodeId in, std::string name);
  NodeId add_relu6(NodeId in, std::string name);
  NodeId add_pool(NodeId in, const PoolAttrs& a, std::string name);
  NodeId add_adaptive_avg_pool(NodeId in, int out_h, int out_w, std::string name);
  NodeId add_global_avg_pool(NodeId in, std::string name);  ///< adaptive to 1×1
  NodeId add_fc(NodeId in, const FullyConnectedAttrs& a, std::string name);
  NodeId add_dropout(NodeId in, float p, std::string name);
  NodeId add_add(std::vector<NodeId> in, std::string name);
  NodeId add_concat(std::vector<NodeId> in, std::string name);
  NodeId add_flatten(NodeId in, std::string name);
  NodeId add_softmax_cross_entropy(NodeId logits, std::string name);

  /// Fills every node's output shape for a batch of `batch` images of
  /// image_h × image_w. Throws std::invalid_argument (naming the node and the
  /// sizes) when any output would be empty or inputs disagree.
  void infer_shapes(int batch, int image_h, int image_w);
  [[nodiscard]] bool shapes_inferred() const { return inferred_; }
  /// Whether the shapes are inferred for exactly these sizes, so that a caller
  /// given an inferred graph (a backend compiling the run's model) need not
  /// infer them again.
  [[nodiscard]] bool shapes_inferred_for(int batch, int image_h, int image_w) const {
    const Shape& in = nodes_.front().output;
    return inferred_ && in.n == batch && in.h == image_h && in.w == image_w;
  }

  /// The trainable parameters in backward order: the last layer's parameters
  /// first, so that a gradient bucket covering the start of the flat buffer is
  /// complete earliest in the backward pass. Offsets are contiguous from 0.
  /// Independent of batch and image size, except for an FC layer whose input is
  /// not brought to a fixed size by adaptive pooling (the trivial model): its
  /// in_features = C·H·W follows the inferred shapes. Throws std::logic_error for
  /// such a graph when infer_shapes has not been called.
  [[nodiscard]] std::vector<ParamSlot> param_layout() const;
  /// Number of trainable parameters (conv/FC weights and biases, BN scale and
  /// shift; not the BN running statistics), as torchvision's
  /// sum(p.numel() for p in model.parameters()). Same precondition as param_layout.
  [[nodiscard]] int64_t param_count() const;
  /// Forward FLOPs per image at the inferred shapes: convolutions and fully
  /// connected layers only, one multiply-add counted as 2 FLOPs (the convention
  /// behind "ResNet-50: 4.1 GMACs = 8.2 GFLOPs"). Element-wise ops, pooling and
  /// normalisation are not counted. Requires infer_shapes (std::logic_error otherwise).
  [[nodiscard]] double flops_per_image() const;
  /// Number of classes of the final FC layer (0 if there is none).
  [[nodiscard]] int num_classes() const;
  /// A copy whose dropouts have probability 0 (the identity), for comparing
  /// backends whose dropout masks come from different generators.
  [[nodiscard]] Graph without_dropout() const;

 private:
  NodeId add_node(Attrs attrs, std::vector<NodeId> inputs, std::string name);

  std::string name_;
  std::vector<Node> nodes_;
  /// Per node, the dimensions known without an image size (0 where they depend
  /// on it; n is always 0): channels everywhere but after flattening an
  /// un-pooled tensor, H and W after adaptive pooling and FC layers. They let
  /// add_* reject impossible graphs early and param_layout work before
  /// infer_shapes.
  std::vector<Shape> static_shapes_;
  bool inferred_ = false;
};

}  // namespace cnnbench::models
