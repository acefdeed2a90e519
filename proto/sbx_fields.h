/* The settings of a sandbox (DESIGN.md §5), defined once.
 *
 * SBX_FIELDS(X, G, A, B) lists the top-level members of the sandbox object in the order
 * they are sent and printed; a nested JSON object ("ports", "limits") is one G line whose
 * members are their own list. From this file derive:
 *   proto_msgs.h  SBX_SPEC_FIELDS (the wire fields of create / update / reply), SBXF_* bits
 *   launcher.h    the settings members of struct sandbox (by kind, see SBX_SMEMBER_*)
 *   store.c       the columns of the sandboxes table: insert, update and select loops
 *   sandbox.c     check (limits, lengths), apply, clear, the reply
 *   api/json.c    the parse of create/PATCH bodies (unknown fields refused) and the print
 *   api/schema.h  SCHEMA_SBX_SPEC_PROPS, the MCP / OpenAPI input schema
 * Adding a plain field: one line here, a column in launcher/schema.sql and a migration in
 * launcher/store.c.
 *
 * X(A, B, sep, cname, smember, kind, json, jkind, column, limit, max, dflt, schema, bit)
 *   A, B     passed through for the caller (proto passes F and S)
 *   sep      "" for the first line of a list, "," after: the schema concatenates to JSON
 *   cname    the member in the wire messages and in struct sandbox_spec
 *   smember  the member of struct sandbox holding the stored value (fs_mode keeps its raw
 *            string in fs_mode_raw; the parsed mode is fs_mode)
 *   kind     the proto kind (proto_msgs.h), plus MNTV: a list of mounts
 *   json     the JSON key inside its object
 *   jkind    the JSON shape (enum sbx_jkind)
 *   column   the column of the sandboxes table; MNTV lives in its own table (mounts)
 *   limit    the wire limit: bytes of a string, entries of a list, largest enum value
 *   max      integers: the largest value the launcher accepts (0: no rule beyond the type)
 *   dflt     integers: the value that 0 (= not given) stands for
 *   schema   the JSON Schema of the value
 *   bit      the SBXF_<bit> saying an update carries it; a G line's members share its bit
 * G(X, A, B, sep, json, MEMBERS, bit): the nested object json, MEMBERS(X, A, B) its lines.
 *
 * max and dflt name launcher constants (launcher.h); only the launcher expands them. */
#ifndef SBX_FIELDS_H
#define SBX_FIELDS_H

/* The JSON shape of a field; the API parses and prints by it. */
enum sbx_jkind {
	SBXJ_STR,     /* string */
	SBXJ_BACKEND, /* "direct" | "docker" */
	SBXJ_BOOL,
	SBXJ_UINT,    /* non-negative integer */
	SBXJ_TRACING, /* false | true | "syscalls" as 0, 1, 2 */
	SBXJ_PORTS,   /* (this one and the ones below are containers) */   /* array of 1..65535 */
	SBXJ_STRV,    /* array of strings */
	SBXJ_ENV,     /* object of strings, "KEY=value" on the wire */
	SBXJ_MOUNTS,  /* array of {source, target, readOnly} */
};

/* tracing: off, the language hooks (launcher/trace.h), or seccomp user notification of
 * the file, exec and socket system calls (launcher/sysnotify.h) */
enum sbx_tracing { SBX_TRACING_OFF = 0, SBX_TRACING_LANG, SBX_TRACING_SYSCALLS,
	           SBX_TRACING_MAX_ = SBX_TRACING_SYSCALLS };

#define SBX_MOUNTS_MAX    32u   /* mounts per sandbox (launcher/fence/mounts.h MOUNTS_MAX) */
#define SBX_MOUNT_STR_MAX 4096u /* bytes of a mount's source or target */

#define SBX_JS_STR   "{\"type\":\"string\"}"
#define SBX_JS_UINT  "{\"type\":\"integer\",\"minimum\":0}"
#define SBX_JS_BOOL  "{\"type\":\"boolean\"}"
#define SBX_JS_PORTS "{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535}}"
#define SBX_JS_MOUNTS                                                                              \
	"{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"source\":" SBX_JS_STR \
	",\"target\":" SBX_JS_STR ",\"readOnly\":" SBX_JS_BOOL "},\"required\":[\"source\","      \
	"\"target\"],\"additionalProperties\":false}}"

/* clang-format off */
#define SBX_FIELDS(X, G, A, B)                                                                                                                           \
	X(A, B, "",  name,       name,        STR,  "name",      SBXJ_STR,     name,       PROTO_NAME_MAX,  0, 0, SBX_JS_STR, NAME)                       \
	X(A, B, ",", backend,    backend,     ENUM, "backend",   SBXJ_BACKEND, backend,    BACKEND_MAX_,    0, 0,                                         \
	  "{\"type\":\"string\",\"enum\":[\"direct\",\"docker\"]}", BACKEND)                                                                            \
	X(A, B, ",", fs_mode,    fs_mode_raw, STR,  "fsMode",    SBXJ_STR,     fs_mode,    PROTO_NAME_MAX,  0, 0,                                         \
	  "{\"type\":\"string\",\"enum\":[\"strict\",\"allowlist\",\"open\"]}", FS_MODE)                                                                \
	X(A, B, ",", read_paths, read_paths,  STRV, "readPaths", SBXJ_STRV,    read_paths, PROTO_LIST_MAX,  0, 0,                                         \
	  "{\"type\":\"array\",\"items\":" SBX_JS_STR "}", READ_PATHS)                                                                                  \
	X(A, B, ",", network,    network,     BOOL, "network",   SBXJ_BOOL,    network,    0,               0, 0, SBX_JS_BOOL, NETWORK)                   \
	G(X, A, B, ",", "ports", SBX_FIELDS_PORTS, PORTS)                                                                                                \
	G(X, A, B, ",", "proxy", SBX_FIELDS_PROXY, PROXY)                                                                                                \
	X(A, B, ",", mounts,     mount,       MNTV, "mounts",    SBXJ_MOUNTS,  none,       SBX_MOUNTS_MAX,  0, 0, SBX_JS_MOUNTS, MOUNTS)                  \
	X(A, B, ",", env,        env,         STRV, "env",       SBXJ_ENV,     env,        PROTO_LIST_MAX,  0, 0,                                         \
	  "{\"type\":\"object\",\"additionalProperties\":" SBX_JS_STR "}", ENV)                                                                         \
	G(X, A, B, ",", "limits", SBX_FIELDS_LIMITS, LIMITS)                                                                                             \
	X(A, B, ",", tracing,    tracing,     ENUM, "tracing",   SBXJ_TRACING, tracing,    SBX_TRACING_MAX_, 0, 0,                                        \
	  "{\"type\":[\"boolean\",\"string\"],\"enum\":[false,true,\"syscalls\"]}", TRACING)                                                                                           \
	X(A, B, ",", image,      image,       STR,  "image",     SBXJ_STR,     image,      PROTO_NAME_MAX,  0, 0, SBX_JS_STR, IMAGE)

/* ports: an update that names "ports" replaces all three lists (an absent one is empty) */
#define SBX_FIELDS_PORTS(X, A, B)                                                                                                                        \
	X(A, B, "",  ports_listen,   ports_listen,   U32V, "listen",   SBXJ_PORTS, ports_listen,   PROTO_LIST_MAX, 0, 0, SBX_JS_PORTS, PORTS)          \
	X(A, B, ",", ports_connect,  ports_connect,  U32V, "connect",  SBXJ_PORTS, ports_connect,  PROTO_LIST_MAX, 0, 0, SBX_JS_PORTS, PORTS)          \
	X(A, B, ",", ports_loopback, ports_loopback, U32V, "loopback", SBXJ_PORTS, ports_loopback, PROTO_LIST_MAX, 0, 0, SBX_JS_PORTS, PORTS)

/* proxy: "only these websites" (DESIGN.md §9); entries "name:port" or "*.suffix:port".
 * An update that names "proxy" replaces both members (an absent one is empty / false). */
#define SBX_PROXY_ALLOW_MAX 64u /* entries of proxy.allow (common/netallow.h) */
#define SBX_FIELDS_PROXY(X, A, B)                                                                                                                        \
	X(A, B, "",  proxy_allow,   proxy_allow,   STRV, "allow",        SBXJ_STRV, proxy_allow,   SBX_PROXY_ALLOW_MAX, 0, 0,                           \
	  "{\"type\":\"array\",\"items\":" SBX_JS_STR "}", PROXY)                                                                                        \
	X(A, B, ",", proxy_private, proxy_private, BOOL, "allowPrivate", SBXJ_BOOL, proxy_private, 0,                   0, 0, SBX_JS_BOOL, PROXY)

/* limits: 0 (or absent) keeps the current value, or the default for a new sandbox */
#define SBX_FIELDS_LIMITS(X, A, B)                                                                                                                                             \
	X(A, B, "",  timeout_ms,   timeout_ms,   U32, "timeoutMs",   SBXJ_UINT, timeout_ms,   0, SBX_TIMEOUT_MS_MAX,   SBX_TIMEOUT_MS_DEFAULT,   SBX_JS_UINT, LIMITS)    \
	X(A, B, ",", memory_mb,    memory_mb,    U32, "memoryMb",    SBXJ_UINT, memory_mb,    0, SBX_MEMORY_MB_MAX,    SBX_MEMORY_MB_DEFAULT,    SBX_JS_UINT, LIMITS)    \
	X(A, B, ",", pids,         pids,         U32, "pids",        SBXJ_UINT, pids,         0, SBX_PIDS_MAX,         SBX_PIDS_DEFAULT,         SBX_JS_UINT, LIMITS)    \
	X(A, B, ",", output_bytes, output_bytes, U64, "outputBytes", SBXJ_UINT, output_bytes, 0, SBX_OUTPUT_BYTES_MAX, SBX_OUTPUT_BYTES_DEFAULT, SBX_JS_UINT, LIMITS)    \
	X(A, B, ",", disk_mb,      disk_mb,      U32, "diskMb",      SBXJ_UINT, disk_mb,      0, SBX_DISK_MB_MAX,      SBX_DISK_MB_DEFAULT,      SBX_JS_UINT, LIMITS)
/* clang-format on */

/* Read-only members of the sandbox object: a body naming one is refused. */
#define SBX_READONLY_JSON_KEYS { "id", "workdir", "createdAt", "note" }

/* ---- derivations used on both sides ------------------------------------------------- */

/* The proto fields: F(S, kind, cname, limit) for every member, nested ones flattened. */
#define SBX_SPEC_LEAF_(F, S, sep, cname, smember, kind, json, jkind, column, limit, max, dflt,    \
                       schema, bit)                                                                \
	F(S, kind, cname, limit)
#define SBX_SPEC_GROUP_(X, F, S, sep, json, MEMBERS, bit) MEMBERS(X, F, S)
#define SBX_SPEC_FIELDS(F, S) SBX_FIELDS(SBX_SPEC_LEAF_, SBX_SPEC_GROUP_, F, S)

/* One bit per top-level member: SBXF_NAME, ..., SBXF_PORTS (all of ports), SBXF_ALL_. */
#define SBX_BIT_IDX_LEAF_(A, B, sep, cname, smember, kind, json, jkind, column, limit, max, dflt,  \
                          schema, bit)                                                             \
	SBXF_IDX_##bit,
#define SBX_BIT_IDX_GROUP_(X, A, B, sep, json, MEMBERS, bit) SBXF_IDX_##bit,
enum sbx_field_idx { SBX_FIELDS(SBX_BIT_IDX_LEAF_, SBX_BIT_IDX_GROUP_, _, _) SBXF_COUNT_ };
#define SBX_BIT_LEAF_(A, B, sep, cname, smember, kind, json, jkind, column, limit, max, dflt,      \
                      schema, bit)                                                                 \
	SBXF_##bit = 1u << SBXF_IDX_##bit,
#define SBX_BIT_GROUP_(X, A, B, sep, json, MEMBERS, bit) SBXF_##bit = 1u << SBXF_IDX_##bit,
/* Bits of SBX_UPDATE.set_mask: which members the update carries. */
enum sbx_field_bit {
	SBX_FIELDS(SBX_BIT_LEAF_, SBX_BIT_GROUP_, _, _) SBXF_ALL_ = (1u << SBXF_COUNT_) - 1
};

/* The JSON Schema "properties" of the settings, one per top-level member. */
#define SBX_SCHEMA_LEAF_(A, B, sep, cname, smember, kind, json, jkind, column, limit, max, dflt,   \
                         schema, bit)                                                              \
	sep "\"" json "\":" schema
#define SBX_SCHEMA_GROUP_(X, A, B, sep, json, MEMBERS, bit)                                       \
	sep "\"" json "\":{\"type\":\"object\",\"properties\":{" MEMBERS(X, A, B)                  \
	    "},\"additionalProperties\":false}"
#define SBX_SCHEMA_PROPS SBX_FIELDS(SBX_SCHEMA_LEAF_, SBX_SCHEMA_GROUP_, _, _)

#endif
