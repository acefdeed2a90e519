/* Privilege drop and self-confinement (DESIGN.md §1). */
#ifndef SBX_CONFINE_H
#define SBX_CONFINE_H

#include <stdbool.h>
#include <sys/types.h>

/* What actually took effect, for the health route. */
struct confine_report {
	bool chroot;        /* chrooted into an empty directory */
	bool uid_dropped;   /* no longer uid 0 */
	uid_t uid;
	gid_t gid;
	bool no_new_privs;
	int landlock_abi;   /* 0 = not applied */
	bool landlock;      /* ruleset granting no filesystem access is in force */
	bool landlock_net;  /* TCP bind/connect also denied (ABI >= 4) */
	bool seccomp;       /* allow-list loaded */
	int seccomp_syscalls; /* how many system calls the allow-list keeps */
	char detail[256];   /* why something did not take effect */
};

/* OpenBSD proc_run order: chroot, chdir("/"), setgroups, setresgid, setresuid. Only
 * when running as root; otherwise a no-op that records why. */
int confine_drop_privs(const char *chroot_dir, uid_t uid, gid_t gid, struct confine_report *rep);
int confine_no_new_privs(struct confine_report *rep);
/* The Landlock ABI of the running kernel, 0 if none. */
int confine_landlock_abi(void);
/* A ruleset that handles every filesystem access right (and TCP bind/connect at ABI>=4)
 * and grants none. */
int confine_landlock_deny_all(struct confine_report *rep);
/* The same, but TCP connect is left allowed (sbx-net connects out; it binds nothing). */
int confine_landlock_no_files(struct confine_report *rep, bool connect);
/* The API process's allow-list: what an event loop serving sockets it already holds
 * needs; execve, open, ptrace and the rest fail. */
int confine_seccomp_api(struct confine_report *rep);
/* The API's allow-list plus the system calls named in extra (NULL-terminated, or NULL). */
int confine_seccomp_allow(struct confine_report *rep, const char *const *extra);
/* The names of the system calls the API allow-list keeps (NULL-terminated). */
const char *const *confine_api_syscalls(void);

#endif
