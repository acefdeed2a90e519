/* libFuzzer target for the decoder: any bytes, with or without an fd, must decode cleanly
 * or be rejected, never crash or leak. Input: a flag byte (FUZZ_FLAG_FD), then one packet
 * as it arrives on the channel (header + body). Seeds: tests/fuzz/seeds (hand-made) and
 * the corpus gen_seeds writes from proto_msgs.h (one full message of every type). */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	union {
		uint64_t align;
		uint8_t bytes[FUZZ_MSG_STORAGE];
	} out;
	struct proto_hdr h;
	bool with_fd = size > 0 && (data[0] & FUZZ_FLAG_FD);
	static uint8_t re[PROTO_MSG_MAX];

	if (size < 1)
		return 0;
	data++;
	size--;
	if (proto_decode(data, size, with_fd, &h, out.bytes, sizeof(out)) == 0) {
		/* what decodes must encode back to the same bytes */
		int n = proto_encode(h.type, h.id, with_fd, out.bytes, re, sizeof(re));
		if (n != (int)size || memcmp(re, data, size) != 0)
			__builtin_trap();
		proto_msg_clear(h.type, out.bytes);
	}
	return 0;
}
