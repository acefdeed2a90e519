/* The macOS Seatbelt profile of a sandbox (DESIGN.md §5), generated on every run. Plain C
 * so it is built and tested everywhere; only sandbox-exec itself is macOS-only. */
#ifndef SBX_SEATBELT_H
#define SBX_SEATBELT_H

#include "launcher.h"

/* System roots a strict/allowlist jail may read on macOS. */
extern const char *const seatbelt_system_roots[];

/* Generate the profile. home: the daemon user's home; data_dir: the engine's data dir.
 * Returns 0 with *ret (malloc'd text) or -errno (-EINVAL: a path with a control char). */
int seatbelt_profile(const struct sandbox *s, const char *home, const char *data_dir,
                     char **ret);

#endif
