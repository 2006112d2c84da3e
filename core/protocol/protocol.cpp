#include "core/protocol/protocol.hpp"

#include "base/error.hpp"
#include "base/kill_points.hpp"
#include "transports/collectives/peer_links.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace dt::protocol {

using nlohmann::json;

static_assert(static_cast<std::uint16_t>(Type::kPeerChunk) == collectives::kPeerChunkType,
              "peer messages and coordinator messages must not share a type number");

const char* name_of(Type type) {
  switch (type) {
    case Type::kHello: return "hello";
    case Type::kSetup: return "setup";
    case Type::kLoaded: return "loaded";
    case Type::kFinalize: return "finalize";
    case Type::kReady: return "ready";
    case Type::kStep: return "step";
    case Type::kGradient: return "gradient";
    case Type::kEvaluate: return "evaluate";
    case Type::kEvaluation: return "evaluation";
    case Type::kStop: return "stop";
    case Type::kReport: return "report";
    case Type::kError: return "error";
    case Type::kPing: return "ping";
    case Type::kPong: return "pong";
    case Type::kRound: return "round";
    case Type::kRoundResult: return "round result";
    case Type::kPeers: return "peers";
    case Type::kPeerChunk: return "peer chunk";
    case Type::kRingLoss: return "ring loss";
    case Type::kRingFinish: return "ring finish";
    case Type::kRingResult: return "ring result";
    case Type::kTensorSetup: return "tensor setup";
    case Type::kTensorReady: return "tensor ready";
    case Type::kReassign: return "reassign";
    case Type::kReassigned: return "reassigned";
    case Type::kLeave: return "leave";
    case Type::kRingReform: return "ring reform";
    case Type::kKeyRequest: return "key request";
    case Type::kKeys: return "keys";
    case Type::kServers: return "servers";
    case Type::kPull: return "pull";
    case Type::kPush: return "push";
    case Type::kSlice: return "slice";
    case Type::kDone: return "done";
    case Type::kResumeState: return "resume state";
    case Type::kStateRequest: return "state request";
    case Type::kServerMoved: return "server moved";
    case Type::kEnd: return "end";
  }
  return "unknown";
}

bool answers(Type reply, Type request) {
  switch (request) {
    case Type::kStep: return reply == Type::kGradient || reply == Type::kRingLoss;
    case Type::kRound: return reply == Type::kRoundResult;
    case Type::kEvaluate: return reply == Type::kEvaluation;
    case Type::kStop: return reply == Type::kReport;
    case Type::kReassign: return reply == Type::kReassigned;
    case Type::kKeyRequest: return reply == Type::kKeys;
    case Type::kRingFinish: return reply == Type::kRingResult;
    case Type::kServers: return reply == Type::kDone;  // async: after the worker's last step
    default: return false;
  }
}

std::string peer_name(std::uint32_t rank) { return fmt::format("w{}", rank); }

wire::Message encode(Envelope envelope, std::uint64_t job_id) {
  kill_points::reach("send", name_of(envelope.type));
  wire::Message m;
  m.payload.reserve(envelope.arrays.size() + 1);
  // Text from data files may not be UTF-8; replacing such bytes keeps encoding total.
  m.payload.push_back(wire::to_bytes(
      envelope.fields.dump(-1, ' ', false, json::error_handler_t::replace)));
  for (auto& a : envelope.arrays) m.payload.push_back(std::move(a));
  // Lent arrays (views the sender keeps unchanged while `lease` lives) go out as they are: the
  // transport copies them during the send, as it copies owned frames.
  if (!envelope.views.empty()) {
    if (envelope.views.size() > envelope.arrays.size()) {
      fail<ProtocolError>("{} message: {} lent arrays but {} arrays", name_of(envelope.type),
                          envelope.views.size(), envelope.arrays.size());
    }
    m.views.resize(m.payload.size());
    std::copy(envelope.views.begin(), envelope.views.end(), m.views.begin() + 1);
    m.lease = std::move(envelope.lease);
  }
  const std::uint64_t size = wire::payload_total(m);
  m.header.type = static_cast<std::uint16_t>(envelope.type);
  m.header.job_id = job_id;
  m.header.rank = envelope.rank;
  m.header.step = envelope.step;
  m.header.generation = envelope.generation;
  m.header.payload_size = size;
  return m;
}

Envelope decode(const wire::Message& message, std::uint64_t job_id) {
  wire::Message copy{message.header, {}, {}, {}};
  for (std::size_t i = 0; i < message.payload.size(); ++i) {  // views become copies
    const auto frame = wire::frame(message, i);
    copy.payload.emplace_back(frame.begin(), frame.end());
  }
  return decode(std::move(copy), job_id);
}

Envelope decode(wire::Message&& message, std::uint64_t job_id) {
  const auto type = static_cast<Type>(message.header.type);
  if (std::strcmp(name_of(type), "unknown") == 0) {
    fail<ProtocolError>("unknown message type {}", message.header.type);
  }
  if (message.header.job_id != job_id) {
    fail<ProtocolError>("{} message from rank {} belongs to job {:016x}, not this job {:016x}",
                        name_of(type), message.header.rank, message.header.job_id, job_id);
  }
  if (message.payload.empty()) fail<ProtocolError>("{} message has no fields frame", name_of(type));
  kill_points::reach("receive", name_of(type));
  Envelope e;
  e.type = type;
  e.rank = message.header.rank;
  e.step = message.header.step;
  e.generation = message.header.generation;
  e.fields = json::parse(wire::as_text(wire::frame(message, 0)), nullptr,
                         /*allow_exceptions=*/false);
  if (!e.fields.is_object()) {
    fail<ProtocolError>("{} message from rank {}: fields frame is not a JSON object",
                        name_of(type), e.rank);
  }
  e.arrays.reserve(message.payload.size() - 1);
  for (auto it = message.payload.begin() + 1; it != message.payload.end(); ++it) {
    e.arrays.push_back(std::move(*it));
  }
  if (message.views.size() == message.payload.size()) {
    e.views.assign(message.views.begin() + 1, message.views.end());
    e.lease = std::move(message.lease);
  }
  return e;
}

const json& field(const Envelope& e, const char* name) {
  const auto it = e.fields.find(name);
  if (it == e.fields.end()) {
    fail<ProtocolError>("{} message from rank {} lacks field '{}'", name_of(e.type), e.rank, name);
  }
  return *it;
}

double number(const Envelope& e, const char* name) {
  const json& j = field(e, name);
  if (j.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!j.is_number()) {
    fail<ProtocolError>("{} message from rank {}: field '{}' is not a number", name_of(e.type),
                        e.rank, name);
  }
  return j.get<double>();
}

std::uint64_t count(const Envelope& e, const char* name) {
  const json& j = field(e, name);
  if (!j.is_number_unsigned()) {
    fail<ProtocolError>("{} message from rank {}: field '{}' is not a non-negative integer",
                        name_of(e.type), e.rank, name);
  }
  return j.get<std::uint64_t>();
}

namespace {

// Reads a JSON field as T, turning nlohmann's type errors into ProtocolError. An integer T
// takes only a whole number in its range: nlohmann converts any number with a static_cast, so
// 1e30 as a count was undefined behaviour and -1 wrapped to 2^64 - 1.
template <class T>
T get(const Envelope& e, const char* name) {
  const json& j = field(e, name);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (j.is_number_unsigned() ? std::in_range<T>(j.get<std::uint64_t>())
                               : j.is_number_integer() && std::in_range<T>(j.get<std::int64_t>())) {
      return j.is_number_unsigned() ? static_cast<T>(j.get<std::uint64_t>())
                                    : static_cast<T>(j.get<std::int64_t>());
    }
    fail<ProtocolError>("{} message from rank {}: field '{}' is not a whole number from {} to {}",
                        name_of(e.type), e.rank, name, std::numeric_limits<T>::min(),
                        std::numeric_limits<T>::max());
  }
  try {
    return j.get<T>();
  } catch (const json::exception&) {
    fail<ProtocolError>("{} message from rank {}: field '{}' has the wrong type", name_of(e.type),
                        e.rank, name);
  }
}

}  // namespace

std::span<const std::byte> frame_of(const Envelope& e, std::size_t index) {
  if (index >= e.arrays.size()) {
    fail<ProtocolError>("{} message from rank {} has {} arrays, expected at least {}",
                        name_of(e.type), e.rank, e.arrays.size(), index + 1);
  }
  if (index < e.views.size() && e.views[index].data() != nullptr) return e.views[index];
  return e.arrays[index];
}

std::span<const double> doubles(const Envelope& e, std::size_t index, std::size_t expected_count) {
  return wire::as_doubles(frame_of(e, index), expected_count);
}

std::span<const double> doubles(const Envelope& e, std::size_t index) {
  return wire::as_doubles(frame_of(e, index));
}

wire::Bytes u64_bytes(std::span<const std::uint64_t> values) {
  wire::Bytes out(values.size_bytes());
  if (!values.empty()) std::memcpy(out.data(), values.data(), values.size_bytes());
  return out;
}

std::vector<std::uint64_t> u64s(const Envelope& e, std::size_t index) {
  const auto a = frame_of(e, index);
  if (a.size() % sizeof(std::uint64_t) != 0) {
    fail<ProtocolError>("{} message from rank {}: array {} has {} bytes, not a whole number of "
                        "64-bit integers", name_of(e.type), e.rank, index, a.size());
  }
  std::vector<std::uint64_t> out(a.size() / sizeof(std::uint64_t));
  if (!out.empty()) std::memcpy(out.data(), a.data(), a.size());
  return out;
}

namespace {
wire::Bytes doubles_bytes(const std::vector<double>& v) { return wire::to_bytes(std::span(v)); }
std::vector<double> to_vector(std::span<const double> s) { return {s.begin(), s.end()}; }
}  // namespace

Envelope make_hello(const Hello& hello) {
  Envelope e{.type = Type::kHello, .rank = hello.rank};
  e.fields = {{"rank", hello.rank}, {"pid", hello.pid}, {"host", hello.host}};
  if (!hello.config_hash.empty()) e.fields["config_hash"] = hello.config_hash;
  if (hello.join) e.fields["join"] = true;
  return e;
}

Hello read_hello(const Envelope& e) {
  Hello h{get<std::uint32_t>(e, "rank"), get<std::int64_t>(e, "pid"), get<std::string>(e, "host"),
          {}};
  if (e.fields.contains("config_hash")) h.config_hash = get<std::string>(e, "config_hash");
  h.join = e.fields.contains("join") && e.fields["join"] == true;
  return h;
}

Envelope make_setup(const Setup& s) {
  Envelope e{.type = Type::kSetup};
  e.fields = {{"config", s.config_yaml},
              {"heartbeat", s.heartbeat_endpoint},
              {"columns", s.source.columns},
              {"features", s.source.features},
              {"label", s.source.label},
              {"label_index", s.source.label_index},
              {"rows", s.source.rows}};
  if (!s.source.file.empty()) e.fields["file"] = s.source.file.string();
  if (s.source.delimiter != ',') e.fields["delimiter"] = std::string(1, s.source.delimiter);
  if (!s.peer_secret_key.empty()) e.fields["peer_key"] = s.peer_secret_key;
  for (const auto& c : s.source.categorical) {  // data.categorical: sent only when set
    e.fields["categorical"].push_back(
        {{"column", c.column}, {"buckets", c.buckets}, {"categories", c.categories}});
  }
  if (const auto& sp = s.source.sparse) {  // sparse data: the key layout (dataset.hpp)
    e.fields["sparse"] = {{"width", sp->width},       {"index_base", sp->index_base},
                          {"hash_bits", sp->hash_bits}, {"hashed", sp->hashed},
                          {"crosses", sp->crosses},   {"numeric", sp->numeric}};
  }
  std::vector<std::uint64_t> flat;
  flat.reserve(s.segments.size() * 4);
  for (const auto& seg : s.segments) {
    flat.insert(flat.end(), {seg.first_row, seg.count, seg.byte_offset, seg.line});
  }
  e.arrays.push_back(u64_bytes(flat));
  return e;
}

namespace {

// The setup message's data.categorical encodings (a tensor rank's features are a share of them).
void read_setup_categorical(const Envelope& e, data::SourceInfo& source) {
  const auto& list = e.fields.at("categorical");
  try {
    for (const auto& c : list) {
      source.categorical.push_back({c.at("column").get<std::string>(),
                                    c.at("categories").get<std::vector<std::string>>(),
                                    c.at("buckets").get<std::uint64_t>()});
    }
  } catch (const nlohmann::json::exception&) {
    fail<ProtocolError>("setup message: field 'categorical' is malformed");
  }
  if (const auto problem = data::encoding_problem(source.categorical, {})) {
    fail<ProtocolError>("setup message: {}", *problem);
  }
}

void read_setup_sparse(const Envelope& e, data::SourceInfo& source) {
  const auto& j = e.fields.at("sparse");
  try {
    source.sparse = data::SparseSource{
        j.at("width").get<std::uint64_t>(), j.at("index_base").get<std::uint64_t>(),
        j.at("hash_bits").get<int>(), j.at("hashed").get<std::vector<std::string>>(),
        j.at("crosses").get<std::vector<std::pair<std::string, std::string>>>(),
        j.at("numeric").get<std::vector<std::string>>()};
  } catch (const nlohmann::json::exception&) {
    fail<ProtocolError>("setup message: field 'sparse' is malformed");
  }
  if (source.sparse->hash_bits < 0 || source.sparse->hash_bits > 30) {
    fail<ProtocolError>("setup message: sparse hash_bits {} is outside 0..30",
                        source.sparse->hash_bits);
  }
}

}  // namespace

Setup read_setup(const Envelope& e) {
  Setup s;
  s.config_yaml = get<std::string>(e, "config");
  s.heartbeat_endpoint = get<std::string>(e, "heartbeat");
  s.source.columns = get<std::vector<std::string>>(e, "columns");
  s.source.features = get<std::vector<std::string>>(e, "features");
  s.source.label = get<std::string>(e, "label");
  s.source.label_index = get<std::size_t>(e, "label_index");
  s.source.rows = get<std::uint64_t>(e, "rows");
  if (e.fields.contains("file")) s.source.file = get<std::string>(e, "file");
  if (e.fields.contains("delimiter")) {
    const auto sep = get<std::string>(e, "delimiter");
    if (sep != "\t" && sep != ";" && sep != "|") {
      fail<ProtocolError>("setup message: delimiter must be a tab, ';' or '|'");
    }
    s.source.delimiter = sep.front();
  }
  if (e.fields.contains("peer_key")) s.peer_secret_key = get<std::string>(e, "peer_key");
  if (e.fields.contains("categorical")) read_setup_categorical(e, s.source);
  if (e.fields.contains("sparse")) read_setup_sparse(e, s.source);
  const auto flat = u64s(e, 0);
  if (flat.size() % 4 != 0) fail<ProtocolError>("setup message: segment array is malformed");
  for (std::size_t i = 0; i < flat.size(); i += 4) {
    s.segments.push_back({flat[i], flat[i + 1], flat[i + 2], flat[i + 3]});
  }
  return s;
}

Envelope make_loaded(const Loaded& l) {
  Envelope e{.type = Type::kLoaded};
  e.fields = {{"rows", l.rows}, {"stats_count", l.stats.count}, {"labels", l.labels}};
  for (const auto* v : {&l.stats.mean, &l.stats.m2, &l.stats.min, &l.stats.max}) {
    e.arrays.push_back(doubles_bytes(*v));
  }
  // Per-column counts only when a missing value left a column short (data.missing: mean).
  if (!l.stats.present.empty()) e.arrays.push_back(u64_bytes(l.stats.present));
  return e;
}

Loaded read_loaded(const Envelope& e, std::size_t features) {
  Loaded l;
  l.rows = get<std::uint64_t>(e, "rows");
  l.stats.count = get<std::uint64_t>(e, "stats_count");
  l.labels = get<std::vector<std::string>>(e, "labels");
  l.stats.mean = to_vector(doubles(e, 0, features));
  l.stats.m2 = to_vector(doubles(e, 1, features));
  l.stats.min = to_vector(doubles(e, 2, features));
  l.stats.max = to_vector(doubles(e, 3, features));
  if (e.arrays.size() > 4) {
    l.stats.present = u64s(e, 4);
    if (l.stats.present.size() != features) {
      fail<ProtocolError>("loaded message: {} present counts for {} features",
                          l.stats.present.size(), features);
    }
  }
  return l;
}

Envelope make_finalize(const Finalize& f) {
  Envelope e{.type = Type::kFinalize};
  e.fields = {{"normalize", config::name_of(f.normalization.kind)},
              {"classes", f.classes},
              {"constant_columns", f.normalization.constant_columns},
              {"train_rows", f.train_rows},
              {"steps_per_epoch", f.steps_per_epoch}};
  e.arrays.push_back(doubles_bytes(f.normalization.shift));
  e.arrays.push_back(doubles_bytes(f.normalization.scale));
  if (f.normalization.missing != config::Missing::kError) {  // data.missing's fill values
    e.fields["missing"] = config::name_of(f.normalization.missing);
    e.arrays.push_back(doubles_bytes(f.normalization.fill));
  }
  return e;
}

Finalize read_finalize(const Envelope& e, std::size_t features) {
  Finalize f;
  const auto kind = get<std::string>(e, "normalize");
  if (kind == "none") f.normalization.kind = config::Normalize::kNone;
  else if (kind == "standard") f.normalization.kind = config::Normalize::kStandard;
  else if (kind == "minmax") f.normalization.kind = config::Normalize::kMinmax;
  else fail<ProtocolError>("finalize message: unknown normalization '{}'", kind);
  f.classes = get<std::vector<std::string>>(e, "classes");
  f.normalization.constant_columns = get<std::vector<std::string>>(e, "constant_columns");
  f.train_rows = get<std::uint64_t>(e, "train_rows");
  f.steps_per_epoch = get<std::uint64_t>(e, "steps_per_epoch");
  f.normalization.shift = to_vector(doubles(e, 0, features));
  f.normalization.scale = to_vector(doubles(e, 1, features));
  if (e.fields.contains("missing")) {
    const auto missing = get<std::string>(e, "missing");
    if (missing == "mean") f.normalization.missing = config::Missing::kMean;
    else if (missing == "zero") f.normalization.missing = config::Missing::kZero;
    else fail<ProtocolError>("finalize message: unknown data.missing '{}'", missing);
    f.normalization.fill = to_vector(doubles(e, 2, features));
  }
  return f;
}

Envelope make_peers(const std::vector<std::string>& endpoints) {
  Envelope e{.type = Type::kPeers};
  e.fields = {{"endpoints", endpoints}};
  return e;
}

std::vector<std::string> read_peers(const Envelope& e) {
  return get<std::vector<std::string>>(e, "endpoints");
}

Envelope make_error(const WorkerError& w) {
  Envelope e{.type = Type::kError};
  e.fields = {{"kind", w.kind}, {"message", w.message}, {"exit_code", w.exit_code}};
  return e;
}

WorkerError read_error(const Envelope& e) {
  return {get<std::string>(e, "kind"), get<std::string>(e, "message"), get<int>(e, "exit_code")};
}

Envelope make_report(const Report& r) {
  Envelope e{.type = Type::kReport};
  e.fields = {{"steps", r.steps},
              {"compute_seconds", r.compute_seconds},
              {"comm_seconds", r.comm_seconds},
              {"bytes_sent", r.bytes_sent},
              {"bytes_received", r.bytes_received},
              {"step_seconds_percentiles", r.step_seconds_percentiles},
              {"max_rss_bytes", r.max_rss_bytes},
              {"load_seconds", r.load_seconds}};
  if (!r.timeline.empty()) {  // output.timeline: one frame more, only when recorded
    e.fields["clock_ns"] = r.clock_ns;
    e.arrays.push_back(r.timeline);
  }
  return e;
}

Report read_report(const Envelope& e) {
  Report r;
  r.steps = get<std::uint64_t>(e, "steps");
  r.compute_seconds = get<double>(e, "compute_seconds");
  r.comm_seconds = get<double>(e, "comm_seconds");
  r.bytes_sent = get<std::uint64_t>(e, "bytes_sent");
  r.bytes_received = get<std::uint64_t>(e, "bytes_received");
  r.step_seconds_percentiles = get<std::vector<double>>(e, "step_seconds_percentiles");
  // Optional: a report without it (from a build before it) reads as 0, "not known".
  if (e.fields.contains("max_rss_bytes")) r.max_rss_bytes = get<std::uint64_t>(e, "max_rss_bytes");
  if (e.fields.contains("load_seconds")) r.load_seconds = get<double>(e, "load_seconds");
  if (e.fields.contains("clock_ns") && !e.arrays.empty()) {
    r.clock_ns = get<std::int64_t>(e, "clock_ns");
    r.timeline = e.arrays.front();
  }
  return r;
}

}  // namespace dt::protocol
