// Checkpoint files (RUN_DIR/checkpoints/ckpt_*.pb, read by `umlos run
// --resume`, replay and report; docs/checkpoint.md): the protobuf decoding
// and field checks of decode_checkpoint, then the embedded manifest's
// canonical CBOR.
#include "checkpoint.hpp"
#include "cbor.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  umlos_fuzz::guarded([&] {
    const umlos::CheckpointData ck = umlos::decode_checkpoint(bytes, "fuzz.pb");
    (void)umlos::cbor::decode(ck.manifest_cbor);
  });
  return 0;
}
