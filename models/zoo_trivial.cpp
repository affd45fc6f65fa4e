// The "trivial" model of tf_cnn_benchmarks (models/trivial_model.py): as little
// compute as possible, so that a run measures the harness (input, step loop,
// all-reduce, reporting) rather than the network. Here: the image flattened into
// one fully connected layer to the classes.
#include "models/zoo_builders.h"

namespace cnnbench::models::zoo_detail {

Graph build_trivial(int num_classes) {
  Graph g("trivial");
  const NodeId flat = g.add_flatten(g.input(), "flatten");
  // PyTorch's default nn.Linear init; in_features = 3·H·W follows the image size.
  const NodeId fc = g.add_fc(flat, FullyConnectedAttrs{.out_features = num_classes}, "fc");
  g.add_softmax_cross_entropy(fc, "loss");
  return g;
}

}  // namespace cnnbench::models::zoo_detail
