/* Helpers the JSON-facing fuzz targets share. */
#ifndef SBX_FUZZ_COMMON_H
#define SBX_FUZZ_COMMON_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

/* Abort the run (libFuzzer saves the input) when an invariant does not hold. */
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			__builtin_trap();                                                          \
	} while (0)

/* A parsed tree printed back as JSON (malloc'd); the caller frees. */
char *fuzz_print(yajl_val v, size_t *ret_len);
/* Checks the round trip of a document json_parse accepted: its print parses again and
 * prints to the same bytes. Returns the reparsed tree's print (malloc'd). */
char *fuzz_check_roundtrip(yajl_val v, size_t *ret_len);
/* A document built only from what sbx's strict parser accepted (errors, JSON-RPC answers)
 * must pass that parser again; returns the tree. */
yajl_val fuzz_check_doc(const char *doc, size_t len);
/* A document that may carry a program's bytes (run output: \u0000 is valid JSON there, but
 * json_parse refuses it in requests) must be RFC 8259 JSON with valid UTF-8. */
void fuzz_check_json(const char *doc, size_t len);

#endif
