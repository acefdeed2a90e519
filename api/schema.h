/* JSON Schemas (as string literals, so tables can concatenate them at compile time)
 * shared by MCP tools/list and openapi.json: the sandbox's settings, a sandbox, a run. */
#ifndef SBX_API_SCHEMA_H
#define SBX_API_SCHEMA_H

#include "proto.h"

#define S_STR  "{\"type\":\"string\"}"
#define S_INT  "{\"type\":\"integer\",\"minimum\":0}"
#define S_BOOL "{\"type\":\"boolean\"}"
/* The settings, one property per top-level member of the sandbox object: generated from
 * SBX_FIELDS (proto/sbx_fields.h) by string-literal concatenation, so it stays a literal. */
#define SCHEMA_SBX_SPEC_PROPS SBX_SCHEMA_PROPS
#define SCHEMA_SANDBOX                                                                                \
	"{\"type\":\"object\",\"properties\":{\"id\":" S_STR "," SCHEMA_SBX_SPEC_PROPS                \
	",\"workdir\":" S_STR ",\"createdAt\":" S_STR ",\"note\":" S_STR "},"                        \
	"\"required\":[\"id\",\"name\"]}"
#define SCHEMA_RUN                                                                                    \
	"{\"type\":\"object\",\"properties\":{\"id\":" S_STR ",\"sandboxId\":" S_STR               \
	",\"exitCode\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":[\"integer\",\"null\"]}," \
	"\"timedOut\":" S_BOOL ",\"stdout\":" S_STR ",\"stderr\":" S_STR                           \
	",\"stdoutTruncated\":" S_BOOL ",\"stderrTruncated\":" S_BOOL ",\"durationMs\":" S_INT    \
	",\"isolation\":" S_STR ",\"entrance\":" S_STR "},"                                        \
	"\"required\":[\"id\",\"stdout\",\"stderr\",\"timedOut\",\"isolation\"]}"

#endif
