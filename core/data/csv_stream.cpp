// CsvStream (csv_stream.hpp): the header through index_csv's checks, the rows through
// load_shard's CSV loader.

#include "core/data/csv_stream.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/hashed_csv.hpp"

namespace dt::data {

CsvStream::CsvStream(std::unique_ptr<PeekedSource> source, const std::filesystem::path& name)
    : source_(std::move(source)) {
  header_.path = name;
  header_.delimiter = detail::detect_delimiter_in(source_->head(detail::kDelimiterHead), name);
  reader_ = std::make_unique<detail::RecordReader>(name, *source_, header_.delimiter);
  detail::read_header(header_, *reader_);
}

CsvStream::~CsvStream() = default;

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
