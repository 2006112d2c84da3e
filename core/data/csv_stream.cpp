// CsvStream (csv_stream.hpp): the header through index_csv's checks, the rows through
// load_shard's CSV loader.

#include "core/data/csv_stream.hpp"
#include "core/data/csv.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/hashed_csv.hpp"

#include <optional>

#include <string>

namespace dt::data {
namespace detail {

// The bytes the record reader reads, fed to a StreamIndexer on the way once the header is read
// (kept until then: the indexer starts where the header ends, which the reader finds).
class IndexingTee final : public ByteSource {
 public:
  explicit IndexingTee(ByteSource& in) : in_(in) {}
  [[nodiscard]] std::size_t read(char* out, std::size_t n) override {
    const std::size_t k = in_.read(out, n);
    if (k == 0) {
      ended_ = true;
      finish();
    } else if (indexer_) {
      indexer_->feed(out, k);
    } else {
      kept_.append(out, k);
    }
    return k;
  }
  void start(CsvIndex& index, std::uint64_t offset, std::uint64_t line) {
    indexer_.emplace(index, offset, line);
    if (offset < kept_.size()) indexer_->feed(kept_.data() + offset, kept_.size() - offset);
    std::string().swap(kept_);
    if (ended_) finish();
  }
  [[nodiscard]] bool finished() const noexcept { return finished_; }

 private:
  void finish() {
    if (!indexer_ || finished_) return;
    finished_ = true;
    indexer_->finish();
  }

  ByteSource& in_;
  std::string kept_;
  std::optional<StreamIndexer> indexer_;
  bool ended_ = false, finished_ = false;
};

}  // namespace detail

CsvStream::CsvStream(std::unique_ptr<PeekedSource> source, const std::filesystem::path& name,
                     char delimiter, bool index)
    : source_(std::move(source)) {
  header_.path = name;
  header_.delimiter = delimiter != 0 ? delimiter
                                     : detail::detect_delimiter_in(
                                           source_->head(detail::kDelimiterHead), name);
  if (index) tee_ = std::make_unique<detail::IndexingTee>(*source_);
  reader_ = std::make_unique<detail::RecordReader>(
      name, tee_ ? static_cast<ByteSource&>(*tee_) : *source_, header_.delimiter);
  detail::read_header(header_, *reader_);
  if (tee_) tee_->start(header_, reader_->offset(), reader_->line());
}

CsvStream::~CsvStream() = default;

bool CsvStream::indexed() const noexcept { return tee_ && tee_->finished(); }

Shard CsvStream::next(const SourceInfo& source, std::uint64_t max_rows, LabelKind kind,
                      config::Missing missing) {
  Shard shard;
  const auto rows = static_cast<Eigen::Index>(max_rows);
  if (source.sparse) {  // hashed columns (data.hash) into keys, as load_sparse_shard reads them
    shard.x.resize(rows, 0);
    shard.y = Eigen::VectorXd::Zero(rows);
    shard.sparse.emplace();
    shard.sparse->width = source.sparse->width;
    (void)load_sparse_csv(reader_->path(), nullptr, source, {{0, max_rows, 0, 1}}, shard, kind,
                          missing, /*fast_path=*/true, reader_.get());
    const auto got = static_cast<Eigen::Index>(shard.sparse->rows());
    shard.x.resize(got, 0);
    shard.y.conservativeResize(got);
    return shard;
  }
  shard.x.resize(rows, static_cast<Eigen::Index>(source.features.size()));
  shard.y = Eigen::VectorXd::Zero(rows);
  const auto got = static_cast<Eigen::Index>(detail::load_stream_rows(*reader_, source, shard, kind, missing));
  if (got < rows) {
    shard.x.conservativeResize(got, Eigen::NoChange);
    shard.y.conservativeResize(got);
  }
  return shard;
}

}  // namespace dt::data
