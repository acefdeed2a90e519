/* See privdrop.h. Async-signal-safe calls only: it runs in forked children. */
#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <unistd.h>

int privdrop_to(uid_t uid, gid_t gid)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return -errno;
	if (ru != uid || eu != uid || su != uid || rg != gid || eg != gid || sg != gid)
		return -EPERM;
	if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0))
		return -EPERM;
	return 0;
}
