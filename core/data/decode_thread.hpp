#pragma once
// Internal to core/data: a byte source read on a thread of its own (a decompressor), handed to
// the calling thread in large blocks, so that decoding overlaps with what the caller does with
// the bytes (decompress() writes them to a file; validate parses them: issue 15).

#include "core/data/byte_stream.hpp"

#include <filesystem>
#include <memory>
#include <string_view>
#include <thread>

namespace dt::data::detail {

class BlockRing;

// Threading: the constructor starts the reading thread; next() and read() are for one other
// thread (the owner). The reading thread has ended when the object is destroyed, whatever
// happened (the end, an error, Ctrl-C), and before `in` goes.
class DecodeThread final : public ByteSource {
 public:
  // `name` names the data in the Ctrl-C message ("interrupted while decompressing NAME").
  DecodeThread(std::unique_ptr<ByteSource> in, std::filesystem::path name);
  ~DecodeThread() override;
  DecodeThread(const DecodeThread&) = delete;
  DecodeThread& operator=(const DecodeThread&) = delete;
  // The next block of bytes (up to 1 MiB), valid until the next call; empty at the end. The
  // reading thread's error (corrupt data, a read error) is thrown here, in order, after the
  // blocks before it; InterruptedError after Ctrl-C.
  [[nodiscard]] std::string_view next();
  // The same bytes copied out, as a ByteSource (a CSV stream reads them so).
  [[nodiscard]] std::size_t read(char* out, std::size_t n) override;

 private:
  void stop() noexcept;

  std::unique_ptr<ByteSource> in_;
  std::filesystem::path name_;
  std::unique_ptr<BlockRing> ring_;
  std::exception_ptr failure_;
  std::jthread thread_;
  void* held_ = nullptr;  // the block next() returned last, given back on the next call
  std::string_view left_;  // what read() has not copied out of it yet
  bool ended_ = false;
};

}  // namespace dt::data::detail
