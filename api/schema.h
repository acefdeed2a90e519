/* JSON Schemas (as string literals, so the operation table in ops.c can concatenate them
 * at compile time), shared by MCP tools/list and openapi.json. A *_PROPS macro is the
 * inside of a "properties" object: a request body's fields, to which MCP adds sandboxId. */
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
	",\"status\":{\"type\":\"string\",\"enum\":[\"running\",\"done\"]}"                        \
	",\"exitCode\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":[\"integer\",\"null\"]}," \
	"\"timedOut\":" S_BOOL ",\"stdout\":" S_STR ",\"stderr\":" S_STR                           \
	",\"stdoutTruncated\":" S_BOOL ",\"stderrTruncated\":" S_BOOL ",\"durationMs\":" S_INT    \
	",\"isolation\":" S_STR ",\"entrance\":" S_STR "},"                                        \
	"\"required\":[\"id\",\"stdout\",\"stderr\",\"timedOut\",\"isolation\"]}"

#define S_OBJ "{\"type\":\"object\"}"

/* ---- request bodies (properties only) ---- */
#define SCHEMA_RUN_PROPS                                                                              \
	"\"language\":{\"type\":\"string\",\"enum\":[\"sh\",\"python\",\"node\"]},\"code\":" S_STR      \
	",\"stdin\":" S_STR ",\"timeoutMs\":" S_INT ",\"detach\":" S_BOOL
#define SCHEMA_EXEC_PROPS "\"code\":" S_STR ",\"sandboxId\":" S_STR ",\"timeoutMs\":" S_INT
#define SCHEMA_MOUNT_PROPS "\"source\":" S_STR ",\"target\":" S_STR ",\"readOnly\":" S_BOOL
#define SCHEMA_KILL_PROPS                                                                             \
	"\"pid\":{\"type\":\"integer\",\"minimum\":1},\"pgid\":{\"type\":\"integer\",\"minimum\":1}," \
	"\"run\":" S_STR ",\"signal\":{\"type\":[\"string\",\"integer\"]}"
#define SCHEMA_FILE_PATH_PROPS "\"path\":" S_STR
#define SCHEMA_FILE_DELETE_PROPS SCHEMA_FILE_PATH_PROPS ",\"recursive\":" S_BOOL
#define SCHEMA_MKDIR_PROPS SCHEMA_FILE_PATH_PROPS ",\"parents\":" S_BOOL
#define SCHEMA_FILE_ENC "{\"type\":\"string\",\"enum\":[\"text\",\"base64\"]}"
#define SCHEMA_FILE_READ_PROPS                                                                        \
	SCHEMA_FILE_PATH_PROPS ",\"offset\":" S_INT ",\"length\":" S_INT ",\"encoding\":" SCHEMA_FILE_ENC
#define SCHEMA_FILE_WRITE_PROPS                                                                       \
	SCHEMA_FILE_PATH_PROPS ",\"content\":" S_STR ",\"encoding\":" SCHEMA_FILE_ENC ",\"parents\":" S_BOOL
#define SCHEMA_TRACE_PROPS "\"run\":" S_STR ",\"since\":" S_INT
#define SCHEMA_UNMOUNT_PROPS "\"target\":" S_STR
#define SCHEMA_POLICY_PROPS                                                                           \
	"\"execShell\":" S_BOOL ",\"schedulerScript\":" S_BOOL ",\"runPython\":" S_BOOL            \
	",\"runNode\":" S_BOOL

#define SCHEMA_APP_OWN_PROPS                                                                          \
	"\"command\":" S_STR ",\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535}," \
	"\"autostart\":" S_BOOL ",\"autorestart\":{\"type\":[\"boolean\",\"string\"],"       \
	"\"enum\":[false,true,\"unexpected\"]},\"startsecs\":" S_INT ",\"startretries\":" S_INT  \
	",\"exitcodes\":{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":0,"  \
	"\"maximum\":255}},\"stopsignal\":{\"type\":[\"string\",\"integer\"]},"              \
	"\"stopwaitsecs\":" S_INT
#define SCHEMA_APP_PROPS SCHEMA_SBX_SPEC_PROPS "," SCHEMA_APP_OWN_PROPS
#define SCHEMA_APP_PATCH_PROPS SCHEMA_APP_OWN_PROPS
#define SCHEMA_APP_LOG_PROPS                                                                          \
	"\"stream\":{\"type\":\"string\",\"enum\":[\"stdout\",\"stderr\"]},\"tail\":" S_INT
#define SCHEMA_SCHEDULE_PROPS                                                                         \
	"\"sandboxId\":" S_STR ",\"language\":{\"type\":\"string\",\"enum\":[\"sh\",\"python\","   \
	"\"node\"]},\"code\":" S_STR ",\"every\":{\"type\":\"integer\",\"minimum\":1},"          \
	"\"cron\":" S_STR
#define SCHEMA_APPS_TOOL_PROPS                                                                        \
	"\"action\":{\"type\":\"string\",\"enum\":[\"list\",\"status\",\"start\",\"stop\","   \
	"\"restart\",\"log\"]},\"name\":" S_STR "," SCHEMA_APP_LOG_PROPS

/* ---- response bodies ---- */
#define SCHEMA_ERROR                                                                                  \
	"{\"type\":\"object\",\"properties\":{\"error\":{\"type\":\"object\",\"properties\":{\"code\":" S_STR \
	",\"message\":" S_STR "},\"required\":[\"code\",\"message\"]}},\"required\":[\"error\"]}"
#define SCHEMA_HEALTH                                                                                 \
	"{\"type\":\"object\",\"properties\":{\"status\":" S_STR ",\"version\":" S_STR             \
	",\"protocol\":" S_INT ",\"isolation\":" S_STR ",\"processes\":" S_OBJ ",\"confinement\":" S_OBJ \
	",\"launcher\":" S_OBJ ",\"auth\":" S_BOOL "},\"required\":[\"status\"]}"
#define SCHEMA_CAPS                                                                                   \
	"{\"type\":\"object\",\"properties\":{\"direct\":" S_OBJ ",\"docker\":" S_OBJ "}}"
#define SCHEMA_POLICY "{\"type\":\"object\",\"properties\":{" SCHEMA_POLICY_PROPS "}}"
#define SCHEMA_SANDBOX_LIST                                                                           \
	"{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\"},\"count\":" S_INT    \
	"},\"required\":[\"sandboxes\"]}"
#define SCHEMA_RUN_LIST                                                                               \
	"{\"type\":\"object\",\"properties\":{\"runs\":{\"type\":\"array\"},\"count\":" S_INT         \
	"},\"required\":[\"runs\"]}"
#define SCHEMA_PROC_LIST                                                                              \
	"{\"type\":\"object\",\"properties\":{\"processes\":{\"type\":\"array\"},\"count\":" S_INT  \
	"},\"required\":[\"processes\"]}"
#define SCHEMA_KILL                                                                                   \
	"{\"type\":\"object\",\"properties\":{\"signal\":" S_STR ",\"signaled\":{\"type\":\"array\"," \
	"\"items\":" S_INT "},\"runs\":{\"type\":\"array\",\"items\":" S_STR "}},"                   \
	"\"required\":[\"signaled\",\"runs\"]}"
#define SCHEMA_FILE_ENTRY                                                                             \
	"{\"type\":\"object\",\"properties\":{\"path\":" S_STR ",\"name\":" S_STR ",\"type\":" S_STR \
	",\"size\":" S_INT ",\"mode\":" S_STR ",\"mtime\":" S_STR "},\"required\":[\"path\",\"type\"]}"
#define SCHEMA_FILE_LIST                                                                              \
	"{\"type\":\"object\",\"properties\":{\"path\":" S_STR ",\"entries\":{\"type\":\"array\"},"     \
	"\"count\":" S_INT ",\"truncated\":" S_BOOL "},\"required\":[\"entries\"]}"
#define SCHEMA_FILE_CONTENT                                                                           \
	"{\"type\":\"object\",\"properties\":{\"path\":" S_STR ",\"size\":" S_INT ",\"offset\":" S_INT  \
	",\"length\":" S_INT ",\"encoding\":" SCHEMA_FILE_ENC ",\"content\":" S_STR "},"              \
	"\"required\":[\"content\",\"encoding\"]}"
#define SCHEMA_TRACE                                                                                  \
	"{\"type\":\"object\",\"properties\":{\"tracing\":" S_BOOL ",\"events\":{\"type\":\"array\"},"  \
	"\"count\":" S_INT ",\"truncated\":" S_BOOL "},\"required\":[\"events\"]}"
#define SCHEMA_METRICS "{\"type\":\"string\"}"
#define SCHEMA_APP                                                                                    \
	"{\"type\":\"object\",\"properties\":{\"name\":" S_STR ",\"state\":{\"type\":\"string\"," \
	"\"enum\":[\"STOPPED\",\"STARTING\",\"RUNNING\",\"BACKOFF\",\"STOPPING\",\"EXITED\","   \
	"\"FATAL\"]},\"sandboxId\":" S_STR ",\"dir\":" S_STR ",\"pid\":{\"type\":[\"integer\","  \
	"\"null\"]},\"confined\":{\"type\":[\"boolean\",\"null\"]},\"process\":{\"type\":"     \
	"\"object\"},\"spawnerr\":" S_STR "},\"required\":[\"name\",\"state\"]}"
#define SCHEMA_SCHEDULE                                                                               \
	"{\"type\":\"object\",\"properties\":{\"id\":" S_STR ",\"sandboxId\":" S_STR           \
	",\"code\":" S_STR ",\"every\":{\"type\":[\"integer\",\"null\"]},\"cron\":{\"type\":"  \
	"[\"string\",\"null\"]},\"nextAt\":{\"type\":[\"string\",\"null\"]},\"lastRunId\":"    \
	"{\"type\":[\"string\",\"null\"]},\"lastStatus\":" S_STR ",\"runs\":" S_INT "},"          \
	"\"required\":[\"id\",\"sandboxId\"]}"
#define SCHEMA_SCHEDULE_LIST                                                                          \
	"{\"type\":\"object\",\"properties\":{\"schedules\":{\"type\":\"array\"},\"count\":"  \
	S_INT "},\"required\":[\"schedules\"]}"
#define SCHEMA_APPS_OUT                                                                               \
	"{\"type\":\"object\",\"properties\":{\"apps\":{\"type\":\"array\"},\"count\":" S_INT   \
	",\"name\":" S_STR ",\"state\":" S_STR ",\"text\":" S_STR ",\"size\":" S_INT "}}"
#define SCHEMA_APP_LOG                                                                                \
	"{\"type\":\"object\",\"properties\":{\"text\":" S_STR ",\"size\":" S_INT ",\"length\":" \
	S_INT "}}"
#define SCHEMA_DELETED "{\"type\":\"object\",\"properties\":{\"id\":" S_STR ",\"deleted\":" S_BOOL "}}"
#define SCHEMA_MOUNTS                                                                                 \
	"{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR ",\"mounts\":{\"type\":\"array\"},\"note\":" S_STR "}," \
	"\"required\":[\"mounts\"]}"
#define SCHEMA_PROFILE                                                                                \
	"{\"type\":\"object\",\"properties\":{\"kind\":" S_STR ",\"argv\":{\"type\":\"array\",\"items\":" \
	S_STR "},\"text\":" S_STR ",\"note\":" S_STR "},\"required\":[\"kind\",\"argv\"]}"
#define SCHEMA_OPENAPI                                                                                \
	"{\"type\":\"object\",\"properties\":{\"openapi\":" S_STR ",\"info\":" S_OBJ                \
	",\"paths\":" S_OBJ "},\"required\":[\"openapi\",\"paths\"]}"

#endif
