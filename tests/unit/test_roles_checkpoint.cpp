// Checkpoint files (core/coordinator/checkpoint.hpp): exact round trips, damage detected with a clear
// message, the newest usable file found, the last two kept.

#include "core/coordinator/checkpoint.hpp"
#include "core/coordinator/checkpoint_writer.hpp"
#include "base/error.hpp"
#include "base/files.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>
#include <algorithm>

namespace {

namespace ck = dt::checkpoint;

ck::Checkpoint checkpoint_sample(std::uint64_t step) {
  ck::Checkpoint c;
  c.manifest = {{"step", step}, {"mode", "gradients"}, {"log", {{{"step", 10}, {"loss", 0.5}}}}};
  c.arrays["parameters"] = {0.1, -0.0, 1e-310, std::numeric_limits<double>::max(),
                            std::numeric_limits<double>::infinity(), 3.0 + static_cast<double>(step)};
  c.arrays["optimizer.slot0"] = {};
  c.arrays["optimizer.slot1"] = {2.5, -7.25};
  return c;
}

bool same_array_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string decode_error_of_limited(const std::string& bytes, std::uint64_t max_sparse_size) {
  try {
    (void)ck::decode(bytes, "ck/step-1.ckpt", max_sparse_size);
  } catch (const dt::DataError& e) {
    return e.what();
  }
  return "";
}

std::string decode_error_of(const std::string& bytes) {
  return decode_error_of_limited(bytes, ck::kMaxSparseSize);
}

}  // namespace

TEST_CASE("checkpoint: encode/decode round trip is bit-exact, NaN and -0 included") {
  auto c = checkpoint_sample(40);
  c.arrays["parameters"].push_back(std::numeric_limits<double>::quiet_NaN());
  const auto back = ck::decode(ck::encode(c), "x");
  CHECK(back.step() == 40);
  CHECK(back.manifest == c.manifest);
  REQUIRE(back.arrays.size() == c.arrays.size());
  for (const auto& [name, values] : c.arrays) CHECK(same_array_bits(back.array(name), values));
  CHECK(std::signbit(back.array("parameters")[1]));
  CHECK_THROWS_WITH_AS((void)back.array("missing"), "the checkpoint holds no 'missing' array",
                       dt::DataError);
}

TEST_CASE("checkpoint: a truncated or corrupted file is refused with a clear message") {
  const auto bytes = ck::encode(checkpoint_sample(7));
  // Cut at every length: never accepted, always named.
  for (std::size_t n = 0; n < bytes.size(); n += 3) {
    const auto err = decode_error_of(bytes.substr(0, n));
    CHECK_MESSAGE(err.starts_with("ck/step-1.ckpt: "), n);
  }
  CHECK(decode_error_of(bytes.substr(0, bytes.size() - 1)).find("truncated checkpoint") !=
        std::string::npos);
  CHECK(decode_error_of("hello") == "ck/step-1.ckpt: not a disttrain checkpoint (the file does not "
                             "start with the checkpoint magic bytes)");
  // One flipped bit in the middle of the parameters.
  auto flipped = bytes;
  flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 0x10);
  CHECK(decode_error_of(flipped) ==
        "ck/step-1.ckpt: corrupt checkpoint: the checksum does not match its contents");
  auto longer = bytes + "x";
  CHECK(decode_error_of(longer).find("end marker") != std::string::npos);
  auto version = bytes;
  version[8] = 9;
  CHECK(decode_error_of(version) == "ck/step-1.ckpt: checkpoint format version 9, this disttrain reads "
                             "versions 1 to 3; resume it with the disttrain that wrote it");
}

TEST_CASE("checkpoint: a long array mostly of zeros is stored as its nonzero entries") {
  ck::Checkpoint c = checkpoint_sample(5);
  std::vector<double> wide(100000, 0.0);
  wide[0] = 1.5;
  wide[77] = -0.0;  // nonzero bits: kept, sign and all
  wide[4096] = std::numeric_limits<double>::quiet_NaN();
  wide[99999] = -2.0;
  ck::put(c, "optimizer.slot0", wide);  // replaces the dense one of the sample
  REQUIRE(c.sparse.count("optimizer.slot0") == 1);
  CHECK(c.arrays.count("optimizer.slot0") == 0);
  CHECK(c.sparse.at("optimizer.slot0").indices == std::vector<std::uint32_t>{0, 77, 4096, 99999});
  // A third of the entries or more nonzero, or a short array: dense.
  std::vector<double> dense_enough(90000, 0.0);
  for (std::size_t i = 0; i < dense_enough.size(); i += 2) dense_enough[i] = 1.0;
  ck::put(c, "dense", dense_enough);
  ck::put(c, "short", std::vector<double>(1000, 0.0));
  CHECK(c.arrays.count("dense") == 1);
  CHECK(c.arrays.count("short") == 1);
  // Pieces are one array: the second's indices follow the first's length.
  const std::vector<double> a(70000, 0.0);
  std::vector<double> b(70000, 0.0);
  b[3] = 4.0;
  const std::span<const double> pieces[] = {a, b};
  ck::put(c, "parameters", pieces);
  CHECK(c.sparse.at("parameters").indices == std::vector<std::uint32_t>{70003});
  // A dense piece after a sparse one: dense from there, the first piece's entries in place.
  const std::vector<double> ones(70000, 1.0);
  ck::ArrayBuilder builder("mixed", 140000);
  builder.add(b);
  builder.add(ones);
  builder.finish(c);
  REQUIRE(c.arrays.count("mixed") == 1);
  std::vector<double> mixed(b);
  mixed.insert(mixed.end(), ones.begin(), ones.end());
  CHECK(same_array_bits(c.arrays.at("mixed"), mixed));
  c.arrays.erase("mixed");
  ck::ArrayBuilder short_of("short", 140000);
  short_of.add(b);
  CHECK_THROWS_WITH_AS(short_of.finish(c), "checkpoint array 'short' has 70000 of its 140000 entries",
                       dt::TrainingError);

  const auto bytes = ck::encode(c);
  CHECK(bytes[8] == 3);
  CHECK(bytes.size() < 8 * (90000 + 1000) + 4096);  // the wide arrays add a few bytes
  const auto back = ck::decode(bytes, "x");
  CHECK(back.sparse.empty());  // read back dense
  CHECK(same_array_bits(back.array("optimizer.slot0"), wide));
  CHECK(std::signbit(back.array("optimizer.slot0")[77]));
  CHECK(same_array_bits(back.array("dense"), dense_enough));
  std::vector<double> whole(a);
  whole.insert(whole.end(), b.begin(), b.end());
  CHECK(same_array_bits(back.array("parameters"), whole));
  CHECK(same_array_bits(back.array("optimizer.slot1"), c.arrays.at("optimizer.slot1")));
  // A length past what the reader accepts, and indices out of order or past the end.
  CHECK(decode_error_of_limited(bytes, 1000).find("claims 100000 entries") != std::string::npos);
  auto& s = c.sparse.at("optimizer.slot0");
  s.indices = {0, 4096, 77, 99999};
  CHECK(decode_error_of(ck::encode(c)).find("lists index 77 after 4096") != std::string::npos);
  s.indices = {0, 77, 4096, 100000};
  CHECK(decode_error_of(ck::encode(c)).find("lists index 100000 after 4096") != std::string::npos);
}

TEST_CASE("checkpoint: the nonzero entries of pieces of any length, at the right indices") {
  // ArrayBuilder tests eight values at a time: pieces whose lengths are not multiples of
  // eight, nonzeros at a block's first and last place, a lone -0.0 and runs of zeros.
  ck::Checkpoint c;
  const std::size_t lengths[] = {7, 70001, 13, 64, 69915};
  std::vector<double> whole;
  std::vector<std::uint32_t> want;
  std::uint64_t draw = 12345;
  for (const std::size_t n : lengths) {
    for (std::size_t i = 0; i < n; ++i) {
      draw = draw * 6364136223846793005ULL + 1442695040888963407ULL;
      double v = (draw >> 60) == 0 ? static_cast<double>(draw >> 40) : 0.0;  // 1 in 16
      if (whole.size() % 8 == 0 && whole.size() % 1000 == 0) v = -0.0;
      if (whole.size() % 8 == 7 && whole.size() % 999 == 0) v = 3.0;
      if (std::bit_cast<std::uint64_t>(v) != 0) want.push_back(static_cast<std::uint32_t>(whole.size()));
      whole.push_back(v);
    }
  }
  ck::ArrayBuilder builder("pieces", whole.size());
  std::size_t at = 0;
  for (const std::size_t n : lengths) {
    builder.add(std::span<const double>(whole).subspan(at, n));
    at += n;
  }
  builder.finish(c);
  REQUIRE(c.sparse.count("pieces") == 1);
  CHECK(c.sparse.at("pieces").indices == want);
  REQUIRE(c.sparse.at("pieces").values.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CHECK(std::bit_cast<std::uint64_t>(c.sparse.at("pieces").values[i]) ==
          std::bit_cast<std::uint64_t>(whole[want[i]]));
  }
}

TEST_CASE("checkpoint: a file of format version 1 (FNV-1a checksum) is still read") {
  const auto c = checkpoint_sample(12);
  auto bytes = ck::encode(c);
  CHECK(bytes[8] == 2);  // what this build writes with no sparse array: a CRC-32 checksum
  // The same file as format version 1 wrote it: version 1 and FNV-1a 64 of the bytes before.
  bytes[8] = 1;
  const std::size_t body = bytes.size() - 16;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < body; ++i) {
    h ^= static_cast<unsigned char>(bytes[i]);
    h *= 0x100000001b3ULL;
  }
  std::memcpy(bytes.data() + body, &h, sizeof h);
  const auto back = ck::decode(bytes, "old");
  CHECK(back.manifest == c.manifest);
  for (const auto& [name, values] : c.arrays) CHECK(same_array_bits(back.array(name), values));
  // A version 1 file whose bytes changed is still caught.
  bytes[body / 2] = static_cast<char>(bytes[body / 2] ^ 0x01);
  CHECK(decode_error_of(bytes) ==
        "ck/step-1.ckpt: corrupt checkpoint: the checksum does not match its contents");
}

TEST_CASE("checkpoint: files are named by step, the last two kept, no temp file left") {
  const dt::files::TempDir tmp("dt-test-ckpt");
  const auto dir = tmp.path() / "checkpoint";
  CHECK(ck::file_for(dir, 120).filename() == "step-000000000120.ckpt");
  CHECK_FALSE(ck::load_latest(dir).has_value());
  std::filesystem::create_directories(dir);
  write_bytes(dir / ".step-000000000050.ckpt.tmp.AbC123", "half a checkpoint");  // a torn write
  for (const std::uint64_t step : {100, 200, 300, 1000}) (void)ck::write(dir, checkpoint_sample(step));
  const auto files = ck::list(dir);
  REQUIRE(files.size() == 2);
  CHECK(files[0].filename() == "step-000000000300.ckpt");
  CHECK(files[1].filename() == "step-000000001000.ckpt");
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries += e.exists() ? 1 : 0;
  CHECK(entries == 2);  // no temp file beside them (the torn one swept)
  const auto found = ck::load_latest(dir);
  REQUIRE(found);
  CHECK(found->checkpoint.step() == 1000);
  CHECK(found->skipped.empty());
  CHECK(same_array_bits(found->checkpoint.array("parameters"), checkpoint_sample(1000).arrays["parameters"]));
}

TEST_CASE("checkpoint: a torn newest file falls back to the previous one, naming why") {
  const dt::files::TempDir tmp("dt-test-ckpt");
  const auto dir = tmp.path();
  (void)ck::write(dir, checkpoint_sample(10));
  (void)ck::write(dir, checkpoint_sample(20));
  const auto newest = ck::file_for(dir, 20);
  const auto bytes = dt::files::read_all(newest);
  write_bytes(newest, bytes.substr(0, bytes.size() / 2));
  const auto found = ck::load_latest(dir);
  REQUIRE(found);
  CHECK(found->checkpoint.step() == 10);
  REQUIRE(found->skipped.size() == 1);
  CHECK(found->skipped[0].find("step-000000000020.ckpt: truncated checkpoint") != std::string::npos);

  // A file renamed to another step is not trusted either.
  std::filesystem::rename(ck::file_for(dir, 10), ck::file_for(dir, 30));
  std::vector<std::string> rejected;
  CHECK_FALSE(ck::load_latest(dir, &rejected).has_value());
  REQUIRE(rejected.size() == 2);
  CHECK(rejected[0].find("the file name says step 30 but it holds step 10") != std::string::npos);
}

TEST_CASE("checkpoint writer: writes on its own thread, keeps the newest, reports every outcome") {
  const dt::files::TempDir tmp("dt-test-ckpt-writer");
  const auto dir = tmp.path() / "checkpoint";
  std::vector<dt::roles::CheckpointWriter::Outcome> outcomes;
  {
    dt::roles::CheckpointWriter writer(dir);
    for (std::uint64_t step = 100; step <= 2000; step += 100) writer.submit(checkpoint_sample(step));
    outcomes = writer.take_outcomes(true);  // every one handed over is done
    CHECK(writer.take_outcomes(false).empty());
  }
  // Each of the 20 either written or replaced by a newer one before its turn; the newest always
  // written, and the files on disk are the last two written.
  REQUIRE(outcomes.size() == 20);
  std::vector<std::uint64_t> written;
  for (const auto& o : outcomes) {
    if (o.error) {
      CHECK(*o.error == "a newer checkpoint came before it was written");
      CHECK(o.replaced);
    } else {
      written.push_back(o.step);
    }
  }
  REQUIRE_FALSE(written.empty());
  CHECK(written.back() == 2000);
  const auto files = ck::list(dir);
  REQUIRE(files.size() == std::min<std::size_t>(2, written.size()));
  CHECK(files.back() == ck::file_for(dir, 2000));
  const auto found = ck::load_latest(dir);
  REQUIRE(found);
  CHECK(same_array_bits(found->checkpoint.array("parameters"), checkpoint_sample(2000).arrays["parameters"]));

  // A folder that cannot be made: the outcome says why; the writer goes on.
  write_bytes(tmp.path() / "file", "in the way");
  dt::roles::CheckpointWriter blocked(tmp.path() / "file" / "checkpoint");
  blocked.submit(checkpoint_sample(100));
  const auto failed = blocked.take_outcomes(true);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].step == 100);
  REQUIRE(failed[0].error);
  CHECK(failed[0].error->find("cannot create the checkpoint folder") != std::string::npos);
  CHECK_FALSE(failed[0].replaced);
}

TEST_CASE("checkpoint: add_at (the keys a run touched) makes the bytes add makes, sparse or dense") {
  // Two pieces whose nonzeros lie within `at`, which also holds keys that are zero again (a
  // key touched, then back to 0, or -0.0, whose bits are not zero). Once with few nonzeros
  // (sparse), once with more than a third (the array turns dense in the second piece).
  for (const std::size_t every : {std::size_t{50}, std::size_t{2}}) {
    const std::size_t n = 80000;
    std::vector<double> first(n, 0.0), second(n, 0.0);
    std::vector<std::uint32_t> at;
    for (std::size_t i = 0; i < n; i += every) {
      at.push_back(static_cast<std::uint32_t>(i));
      const double v = i % (3 * every) == 0 ? 0.0 : (i % (7 * every) == 0 ? -0.0 : 0.5 + i);
      first[i] = v;
      second[i] = -v;
    }
    ck::Checkpoint whole_scan, marked;
    ck::ArrayBuilder a("p", 2 * n), b("p", 2 * n);
    a.add(first);
    a.add(second);
    b.add_at(first, at);
    b.add_at(second, at);
    a.finish(whole_scan);
    b.finish(marked);
    CHECK(whole_scan.sparse.count("p") == (every == 50 ? 1U : 0U));
    CHECK(ck::encode(whole_scan) == ck::encode(marked));
  }
}
