// libFuzzer harness: a checkpoint file as `run --resume` reads it (checkpoint::decode, which
// load_latest calls with each file's bytes).
//
// Each input is decoded twice: as it is (the magic, the version, the end marker, the checksum),
// and with a valid trailer put in its place (the FNV-1a checksum the format defines over the
// body, then the end marker), so that mutations also reach the manifest and the arrays behind
// the checksum, as a file written by something else than disttrain would. For an accepted
// checkpoint: encode gives bytes that decode to the same manifest and arrays.
//
// What --resume reads of the manifest and arrays afterwards is fuzz_resume's.

#include "core/coordinator/checkpoint.hpp"
#include "tests/fuzz/checkpoint_bytes.hpp"
#include "tests/fuzz/harness.hpp"

#include <cstring>

namespace {

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void one(std::string_view bytes) {
  const auto ck = dt::checkpoint::decode(bytes, "step-000000000001.ckpt", dt::fuzz::kMaxSparseSize);
  (void)ck.step();
  if (ck.has("parameters")) (void)ck.array("parameters");
  const auto again = dt::checkpoint::decode(dt::checkpoint::encode(ck), "re-encoded");
  dt::fuzz::expect(again.manifest == ck.manifest, "the manifest survives encode and decode");
  dt::fuzz::expect(again.arrays.size() == ck.arrays.size(), "every array survives");
  // Written again through put(), which stores a long array of mostly zeros sparse (format
  // version 3): the same bits again.
  dt::checkpoint::Checkpoint put_back;
  put_back.manifest = ck.manifest;
  for (const auto& [name, values] : ck.arrays) dt::checkpoint::put(put_back, name, values);
  const auto sparse_again =
      dt::checkpoint::decode(dt::checkpoint::encode(put_back), "re-encoded", dt::fuzz::kMaxSparseSize);
  for (const auto& [name, values] : ck.arrays) {
    dt::fuzz::expect(sparse_again.has(name) && same_bits(sparse_again.array(name), values),
                     "the arrays survive a sparse encoding bit for bit");
  }
  for (const auto& [name, values] : ck.arrays) {
    dt::fuzz::expect(again.has(name) && same_bits(again.array(name), values),
                     "the arrays survive bit for bit");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = dt::fuzz::text_of(data, size);
  dt::fuzz::refusal_is_fine([&] { one(input); });
  dt::fuzz::refusal_is_fine([&] { one(dt::fuzz::with_valid_trailer(input)); });
  return 0;
}
