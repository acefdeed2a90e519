/* libFuzzer target for the JSON request decoders of api/json.c. Input: a selector byte
 * that picks the decoder (its index in decoders[]), then the request body. Invariants:
 *   - what json_parse accepts prints back to JSON that parses again to the same print;
 *   - a refusal says why, and the error document built from the reason is valid JSON;
 *   - what a decoder accepts encodes into the wire message the API then sends (so a body
 *     the API takes is never one the launcher cannot receive): RUN and EXEC after the
 *     same inline-or-memfd split as api/stubs.c. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "json.h"
#include "ops.h"
#include "proto.h"
#include "stubs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t pkt[PROTO_MSG_MAX];

/* the wire message must take it: a packet, or a refusal of the whole packet's size that
 * the API turns into 413 (never a field over its limit, which would be a 500) */
static void check_encodes(uint32_t type, bool with_fd, const void *msg)
{
	int n = proto_encode(type, 1, with_fd, msg, pkt, sizeof(pkt));
	FUZZ_CHECK(n > 0 || n == -EMSGSIZE);
}

static int dec_none(yajl_val v, char *why, size_t whysz)
{
	return 0;
}

static int spec_common(yajl_val v, const char *extra, char *why, size_t whysz)
{
	struct msg_SBX_UPDATE u = { 0 };
	struct msg_SBX_CREATE c = { 0 };
	int r = json_parse_sbx_fields(v, extra, &u, why, whysz);
	if (r == 0) {
#define COPY_SPEC(S, KIND, NAME, LIMIT) c.NAME = u.NAME;
		SBX_SPEC_FIELDS(COPY_SPEC, x)
#undef COPY_SPEC
		check_encodes(MSG_SBX_CREATE, false, &c);
		u.id = strdup("sbx_1");
		check_encodes(MSG_SBX_UPDATE, false, &u);
	}
	proto_msg_clear(MSG_SBX_UPDATE, &u);
	return r;
}

static int dec_sbx_spec(yajl_val v, char *why, size_t whysz)
{
	return spec_common(v, NULL, why, whysz);
}

static int dec_sbx_tool(yajl_val v, char *why, size_t whysz)
{
	return spec_common(v, "sandboxId", why, whysz);
}

/* the split of api/stubs.c send_run: inline when both fit, else "" and a memfd */
static bool split_inline(char **code, char **stdin_data, uint64_t *code_len, uint64_t *stdin_len)
{
	size_t clen = *code ? strlen(*code) : 0, slen = *stdin_data ? strlen(*stdin_data) : 0;
	if (clen + slen <= STUB_RUN_INLINE_MAX)
		return false;
	free(*code);
	free(*stdin_data);
	*code = strdup("");
	*stdin_data = strdup("");
	*code_len = clen;
	*stdin_len = slen;
	return true;
}

static int dec_run(yajl_val v, char *why, size_t whysz)
{
	struct msg_RUN m = { 0 };
	int r = json_parse_run(v, &m, why, whysz);
	if (r == 0) {
		bool fd = split_inline(&m.code, &m.stdin_data, &m.code_len, &m.stdin_len);
		m.sandbox_id = strdup("sbx_1");
		check_encodes(MSG_RUN, fd, &m);
	}
	proto_msg_clear(MSG_RUN, &m);
	return r;
}

static int dec_exec(yajl_val v, char *why, size_t whysz)
{
	struct msg_EXEC m = { 0 };
	int r = json_parse_exec(v, &m, why, whysz);
	if (r == 0) {
		char *no_stdin = NULL;
		uint64_t no_len = 0;
		bool fd = split_inline(&m.code, &no_stdin, &m.code_len, &no_len);
		free(no_stdin);
		check_encodes(MSG_EXEC, fd, &m);
	}
	proto_msg_clear(MSG_EXEC, &m);
	return r;
}

static int dec_policy(yajl_val v, char *why, size_t whysz)
{
	struct msg_POLICY_SET p = { 0 };
	int r = json_parse_policy(v, &p, why, whysz);
	if (r == 0)
		check_encodes(MSG_POLICY_SET, false, &p);
	return r;
}

static int (*const decoders[])(yajl_val, char *, size_t) = {
	dec_none, dec_sbx_spec, dec_sbx_tool, dec_run, dec_exec, dec_policy,
};
#define DECODERS_N (sizeof(decoders) / sizeof(decoders[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[OP_WHY_MAX] = "", err[256];
	yajl_val v = NULL;
	size_t len;
	int r;

	if (size < 1)
		return 0;
	r = json_parse((const char *)data + 1, size - 1, &v, err, sizeof(err));
	if (r < 0) {
		FUZZ_CHECK(r == -EINVAL || r == -E2BIG || r == -ENOMEM);
		FUZZ_CHECK(err[0]);
		return 0;
	}
	free(fuzz_check_roundtrip(v, &len));
	r = decoders[data[0] % DECODERS_N](v, why, sizeof(why));
	if (r < 0) {
		FUZZ_CHECK(r == -EINVAL || r == -E2BIG);
		FUZZ_CHECK(why[0]);
		char *doc = json_error_doc(PERR_INVALID_ARGUMENT, why, &len);
		yajl_tree_free(fuzz_check_doc(doc, len));
		free(doc);
	}
	yajl_tree_free(v);
	return 0;
}
