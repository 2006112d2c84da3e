// model.json -> ONNX, built with ONNX's own protobuf classes (Debian's libonnx) and checked with
// its checker. The graph is the one predict runs: (x - shift) / scale, then per layer
// MatMul + Add (+ the hidden activation), then the head (Sigmoid, Softmax or nothing).

#include "core/export/export.hpp"

#include "base/error.hpp"
#include "core/config/names.hpp"
#include "core/models/model.hpp"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <span>

namespace dt::exporting {
namespace {

constexpr int kOpset = 13;

class Graph {
 public:
  Graph(onnx::GraphProto& graph, Precision precision)
      : graph_(graph),
        type_(precision == Precision::kFloat32 ? onnx::TensorProto::FLOAT
                                               : onnx::TensorProto::DOUBLE) {}

  [[nodiscard]] int element_type() const { return type_; }

  // A constant of the model's element type, from doubles (rounded once for float32).
  std::string constant(const std::string& name, std::span<const double> values,
                       const std::vector<std::int64_t>& dims) {
    auto* t = graph_.add_initializer();
    t->set_name(name);
    t->set_data_type(type_);
    for (const auto d : dims) t->add_dims(d);
    std::string raw;
    if (type_ == onnx::TensorProto::FLOAT) {
      raw.resize(values.size() * sizeof(float));
      for (std::size_t i = 0; i < values.size(); ++i) {
        const auto f = static_cast<float>(values[i]);
        std::memcpy(raw.data() + i * sizeof(float), &f, sizeof f);
      }
    } else {
      raw.assign(reinterpret_cast<const char*>(values.data()), values.size_bytes());
    }
    t->set_raw_data(std::move(raw));  // little-endian, as ONNX wants: every target we build for
    return name;
  }

  std::string strings(const std::string& name, const std::vector<std::string>& values) {
    auto* t = graph_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::STRING);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (const auto& v : values) t->add_string_data(v);
    return name;
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::string& output) {
    auto* n = graph_.add_node();
    n->set_op_type(op);
    n->set_name(fmt::format("{}_{}", op, ++nodes_));
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(output);
    return *n;
  }

  static void int_attribute(onnx::NodeProto& n, const char* name, std::int64_t value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }

  void tensor(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
              const std::string& name, int element_type, std::vector<std::int64_t> dims) {
    auto* v = list->Add();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(element_type);
    auto* shape = t->mutable_shape();
    for (const auto d : dims) {
      if (d < 0) {
        shape->add_dim()->set_dim_param("N");
      } else {
        shape->add_dim()->set_dim_value(d);
      }
    }
  }

 private:
  onnx::GraphProto& graph_;
  int type_;
  int nodes_ = 0;
};

const char* activation_op(config::Activation a) {
  switch (a) {
    case config::Activation::kRelu: return "Relu";
    case config::Activation::kTanh: return "Tanh";
    case config::Activation::kSigmoid: return "Sigmoid";
  }
  fail<DataError>("an activation that ONNX export does not know ({})", static_cast<int>(a));
}

}  // namespace

std::string to_onnx(const output::SavedModel& saved, Precision precision) {
  refuse_sparse(saved, "ONNX");
  const auto model = models::make_model(saved.spec);
  const auto& layout = model->layout();
  const auto inputs = static_cast<std::int64_t>(saved.spec.inputs);
  const auto task = model->task();
  // One protobuf message holds at most 2 GiB; larger models would need ONNX's external data.
  const std::uint64_t bytes_per_value = precision == Precision::kFloat32 ? 4 : 8;
  if (saved.params.size() * bytes_per_value > (std::uint64_t{1} << 31) - (std::uint64_t{16} << 20)) {
    fail<DataError>("a model of {} parameters is {} MB as {}, more than one ONNX file holds "
                    "(protobuf's 2 GiB); export it with --format npz",
                    saved.params.size(), saved.params.size() * bytes_per_value >> 20,
                    precision == Precision::kFloat32 ? "float32" : "float64");
  }

  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("disttrain");
  proto.set_producer_version(DT_VERSION_TEXT);
  proto.set_doc_string(fmt::format("{} trained by disttrain", config::name_of(saved.spec.config.type)));
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  const auto meta = [&proto](const std::string& key, const std::string& value) {
    auto* p = proto.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
  };
  meta("features", nlohmann::json(saved.features).dump());
  meta("label", saved.label);
  meta("task", config::name_of(task));
  if (task != config::Task::kRegression) meta("classes", nlohmann::json(saved.classes).dump());
  meta("missing", config::name_of(saved.normalization.missing));
  if (!saved.categorical.empty()) {  // the graph takes the encoded features (export.hpp)
    meta("categorical", output::categorical_json(saved.categorical).dump());
  }

  auto& g = *proto.mutable_graph();
  g.set_name("disttrain");
  Graph graph(g, precision);
  graph.tensor(g.mutable_input(), "input", graph.element_type(), {-1, inputs});

  std::string x = "input";
  if (!saved.normalization.fill.empty()) {  // data.missing: a NaN input gets the model's fill
    const auto fill = graph.constant("missing.fill", saved.normalization.fill, {inputs});
    graph.node("IsNaN", {x}, "is_missing");
    graph.node("Where", {"is_missing", fill, x}, "filled");
    x = "filled";
  }
  if (saved.normalization.kind != config::Normalize::kNone) {
    const auto& n = saved.normalization;
    const auto shift = graph.constant("normalization.shift", n.shift, {inputs});
    const auto scale = graph.constant("normalization.scale", n.scale, {inputs});
    graph.node("Sub", {x, shift}, "shifted");
    graph.node("Div", {"shifted", scale}, "normalized");
    x = "normalized";
  }

  // Blocks come in (weight, bias) pairs, layer by layer: [inputs, outputs] (a single-output
  // model's weights are [inputs]) and [outputs] (or [] for one output).
  if (layout.size() % 2 != 0) {
    fail<DataError>("{} has {} parameter blocks, ONNX export expects weight and bias pairs",
                    config::name_of(saved.spec.config.type), layout.size());
  }
  const std::size_t layers = layout.size() / 2;
  for (std::size_t l = 0; l < layers; ++l) {
    const auto& w = layout[2 * l];
    const auto& b = layout[2 * l + 1];
    const std::int64_t rows = w.shape.at(0);
    const std::int64_t cols = w.shape.size() > 1 ? w.shape[1] : 1;
    const std::span<const double> all(saved.params);
    const auto weight = graph.constant(w.name, all.subspan(w.offset, w.size), {rows, cols});
    const auto bias = graph.constant(b.name, all.subspan(b.offset, b.size), {cols});
    const auto product = fmt::format("layer{}.product", l);
    const auto sum = fmt::format("layer{}.output", l);
    graph.node("MatMul", {x, weight}, product);
    graph.node("Add", {product, bias}, sum);
    x = sum;
    if (l + 1 < layers) {
      const auto act = fmt::format("layer{}.activation", l);
      graph.node(activation_op(saved.spec.config.activation), {x}, act);
      x = act;
    }
  }

  const auto outputs = static_cast<std::int64_t>(layout.back().size);  // the last bias
  switch (task) {
    case config::Task::kRegression:
      graph.node("Identity", {x}, "prediction");
      graph.tensor(g.mutable_output(), "prediction", graph.element_type(), {-1, 1});
      break;
    case config::Task::kBinary: {
      graph.node("Sigmoid", {x}, "probability");
      const double half[1] = {0.5};
      const auto threshold = graph.constant("threshold", half, {});
      graph.node("GreaterOrEqual", {"probability", threshold}, "is_second");
      const std::int64_t flat[1] = {-1};
      auto* shape = g.add_initializer();
      shape->set_name("flat");
      shape->set_data_type(onnx::TensorProto::INT64);
      shape->add_dims(1);
      shape->add_int64_data(flat[0]);
      graph.node("Reshape", {"is_second", "flat"}, "is_second_flat");
      auto& cast = graph.node("Cast", {"is_second_flat"}, "class_index");
      Graph::int_attribute(cast, "to", onnx::TensorProto::INT64);
      graph.strings("classes", saved.classes);
      graph.node("Gather", {"classes", "class_index"}, "label");
      graph.tensor(g.mutable_output(), "label", onnx::TensorProto::STRING, {-1});
      graph.tensor(g.mutable_output(), "probability", graph.element_type(), {-1, 1});
      break;
    }
    case config::Task::kMulticlass: {
      auto& softmax = graph.node("Softmax", {x}, "probabilities");
      Graph::int_attribute(softmax, "axis", 1);
      auto& argmax = graph.node("ArgMax", {"probabilities"}, "class_index");
      Graph::int_attribute(argmax, "axis", 1);
      Graph::int_attribute(argmax, "keepdims", 0);
      Graph::int_attribute(argmax, "select_last_index", 0);
      graph.strings("classes", saved.classes);
      graph.node("Gather", {"classes", "class_index"}, "label");
      graph.tensor(g.mutable_output(), "label", onnx::TensorProto::STRING, {-1});
      graph.tensor(g.mutable_output(), "probabilities", graph.element_type(), {-1, outputs});
      break;
    }
  }

  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    fail<TrainingError>("internal error: the ONNX model built from {} does not pass ONNX's "
                        "checker: {}", config::name_of(saved.spec.config.type), e.what());
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    fail<TrainingError>("internal error: protobuf could not serialize the ONNX model");
  }
  return bytes;
}

}  // namespace dt::exporting
