/* JSON Schemas (as string literals, so tables can concatenate them at compile time)
 * shared by MCP tools/list and openapi.json: the sandbox's settings, a sandbox, a run. */
#ifndef SBX_API_SCHEMA_H
#define SBX_API_SCHEMA_H

#define S_STR  "{\"type\":\"string\"}"
#define S_INT  "{\"type\":\"integer\",\"minimum\":0}"
#define S_BOOL "{\"type\":\"boolean\"}"
#define S_PORTS "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}"
#define SCHEMA_SBX_SPEC_PROPS                                                                                 \
	"\"name\":" S_STR ",\"backend\":{\"type\":\"string\",\"enum\":[\"direct\",\"docker\"]},"   \
	"\"fsMode\":{\"type\":\"string\",\"enum\":[\"strict\",\"allowlist\",\"open\"]},"             \
	"\"readPaths\":{\"type\":\"array\",\"items\":" S_STR "},\"network\":" S_BOOL ","           \
	"\"ports\":{\"type\":\"object\",\"properties\":{\"listen\":" S_PORTS ",\"connect\":" S_PORTS \
	",\"loopback\":" S_PORTS "}},"                                                             \
	"\"env\":{\"type\":\"object\",\"additionalProperties\":" S_STR "},"                        \
	"\"limits\":{\"type\":\"object\",\"properties\":{\"timeoutMs\":" S_INT ",\"memoryMb\":" S_INT \
	",\"pids\":" S_INT ",\"outputBytes\":" S_INT "}},\"tracing\":" S_BOOL ",\"image\":" S_STR
#define SCHEMA_SANDBOX                                                                                \
	"{\"type\":\"object\",\"properties\":{\"id\":" S_STR ",\"name\":" S_STR                    \
	",\"fsMode\":" S_STR ",\"network\":" S_BOOL ",\"workdir\":" S_STR ",\"createdAt\":" S_STR \
	"},\"required\":[\"id\",\"name\"]}"
#define SCHEMA_RUN                                                                                    \
	"{\"type\":\"object\",\"properties\":{\"id\":" S_STR ",\"sandboxId\":" S_STR               \
	",\"exitCode\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":[\"integer\",\"null\"]}," \
	"\"timedOut\":" S_BOOL ",\"stdout\":" S_STR ",\"stderr\":" S_STR                           \
	",\"stdoutTruncated\":" S_BOOL ",\"stderrTruncated\":" S_BOOL ",\"durationMs\":" S_INT    \
	",\"isolation\":" S_STR ",\"entrance\":" S_STR "},"                                        \
	"\"required\":[\"id\",\"stdout\",\"stderr\",\"timedOut\",\"isolation\"]}"

#endif
