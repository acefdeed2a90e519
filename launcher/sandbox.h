/* Sandbox settings: validation (the API is hostile), creation of the workdir and jail uid. */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include "launcher.h"

/* Parse a fsMode string: known values map to themselves, anything else (or NULL) to
 * FS_STRICT with *ret_unknown set, so the caller can report it. Never FS_OPEN by accident. */
enum fs_mode sandbox_fs_mode_parse(const char *s, bool *ret_unknown);
const char *sandbox_fs_mode_name(enum fs_mode m);

/* The default sandbox for the execShell entrance: the one named "shell", created on first
 * use (strict, no network). */
int sandbox_ensure_default(struct launcher *L, struct sandbox *ret);

/* Fill a SBX_REP from a sandbox (strings are borrowed from s, do not clear the rep). */
void sandbox_to_rep(const struct sandbox *s, struct msg_SBX_REP *rep);

#endif
