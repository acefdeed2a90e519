/* proxy.allow entries: the one syntax (common/netallow.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "netallow.h"

TestSuite(netallow, .timeout = 10);

Test(netallow, well_formed_entries)
{
	static const char *const good[] = { "pypi.org:443", "*.pythonhosted.org:443", "a:1",
		                            "x-y.z9.example:65535", "site.test:18790" };
	static const char *const bad[] = {
		"pypi.org", "pypi.org:", "pypi.org:0", "pypi.org:65536", "pypi.org:443x", "pypi.org:+443",
		"pypi.org:-1", "PyPI.org:443", "*.:443", "*:443", "**.x:443", "a b:443", "-x.org:443",
		"x-.org:443", "x..org:443", ".x.org:443", "x.org.:443", ":443", "*.x.org", "x.org:0443443",
		"x.*.org:443", "é.org:443", "x_y.org:443",
	};
	char label64[80], long_name[300];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_expect_eq(netallow_check(good[i]), 0, "%s refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(netallow_check(bad[i]), -EINVAL, "%s accepted", bad[i]);
	/* a label of 63 is fine, 64 is not */
	memset(label64, 'a', 63);
	strcpy(label64 + 63, ".org:443");
	cr_expect_eq(netallow_check(label64), 0);
	memset(label64, 'a', 64);
	strcpy(label64 + 64, ".org:443");
	cr_expect_eq(netallow_check(label64), -EINVAL);
	/* a name of 253 is fine, 254 is not */
	size_t n = 0;
	while (n < 253) {
		size_t k = 253 - n >= 61 ? 60 : 253 - n;
		memset(long_name + n, 'b', k);
		n += k;
		if (n < 253)
			long_name[n++] = '.';
	}
	strcpy(long_name + 253, ":443");
	cr_expect_eq(netallow_check(long_name), 0, "253 bytes");
	memmove(long_name + 1, long_name, strlen(long_name) + 1);
	long_name[0] = 'c';
	cr_expect_eq(netallow_check(long_name), -EINVAL, "254 bytes");
}

Test(netallow, matching)
{
	cr_assert(netallow_match("pypi.org:443", "pypi.org", 443));
	cr_assert(netallow_match("pypi.org:443", "PyPI.org", 443));
	cr_assert(netallow_match("pypi.org:443", "pypi.org.", 443));
	cr_assert(!netallow_match("pypi.org:443", "pypi.org", 80));
	cr_assert(!netallow_match("pypi.org:443", "evilpypi.org", 443));
	cr_assert(!netallow_match("pypi.org:443", "pypi.org.evil", 443));
	cr_assert(netallow_match("*.x.org:443", "a.x.org", 443));
	cr_assert(netallow_match("*.x.org:443", "a.b.x.org", 443));
	cr_assert(!netallow_match("*.x.org:443", "x.org", 443));
	cr_assert(!netallow_match("*.x.org:443", "ax.org", 443));
	cr_assert(netallow_match_name("*.x.org:443", "files.x.org"));
	cr_assert(!netallow_match_name("pypi.org:443", ""));
}
