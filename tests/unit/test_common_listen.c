/* The one listen parser sbxd and sbx-api share. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "listen.h"

TestSuite(listen, .timeout = 10);

Test(listen, loopback_forms)
{
	char host[LISTEN_HOST_MAX];
	uint16_t port;
	cr_assert_eq(listen_parse("127.0.0.1:7420", false, host, sizeof(host), &port), 0);
	cr_assert_str_eq(host, "127.0.0.1");
	cr_assert_eq(port, 7420);
	cr_assert_eq(listen_parse("[::1]:1", false, host, sizeof(host), &port), 0);
	cr_assert_str_eq(host, "::1", "brackets stripped for bind");
	cr_assert_eq(listen_parse("localhost:65535", false, host, sizeof(host), &port), 0);
	cr_assert_str_eq(host, "127.0.0.1", "a number, not a name");
	cr_assert_eq(port, 65535);
	cr_assert_eq(listen_parse("127.255.255.254:80", false, host, sizeof(host), &port), 0);
}

Test(listen, remote_needs_allow_remote)
{
	char host[LISTEN_HOST_MAX] = "untouched";
	uint16_t port = 1;
	cr_assert_eq(listen_parse("0.0.0.0:7420", false, host, sizeof(host), &port), -EPERM);
	cr_assert_str_eq(host, "untouched", "nothing written on failure");
	cr_assert_eq(port, 1);
	cr_assert_eq(listen_parse("128.0.0.1:7420", false, host, sizeof(host), &port), -EPERM);
	cr_assert_eq(listen_parse("[::]:7420", false, host, sizeof(host), &port), -EPERM);
	cr_assert_eq(listen_parse("0.0.0.0:7420", true, host, sizeof(host), &port), 0);
	cr_assert_str_eq(host, "0.0.0.0");
	cr_assert(listen_host_is_wildcard(host));
	cr_assert_not(listen_host_is_loopback(host));
	cr_assert_eq(listen_parse("[::]:7420", true, host, sizeof(host), &port), 0);
	cr_assert(listen_host_is_wildcard(host));
	cr_assert_not(listen_host_is_wildcard("127.0.0.1"));
}

Test(listen, malformed)
{
	static const char *const bad[] = { "127.0.0.1",       "127.0.0.1:",   "127.0.0.1:0",
		                           "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+80",
		                           "127.0.0.1:80x",   "::1:7420",     "[::1]7420",
		                           ":7420",           "example.com:80", "[::1:80",
		                           "[127.0.0.1]:80",  "" };
	char host[LISTEN_HOST_MAX];
	uint16_t port;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(listen_parse(bad[i], true, host, sizeof(host), &port), -EINVAL, "%s",
		             bad[i]);
}

Test(listen, host_buffer_at_and_past)
{
	char host[10]; /* "127.0.0.1" is 9 bytes + NUL */
	uint16_t port;
	cr_assert_eq(listen_parse("127.0.0.1:80", false, host, sizeof(host), &port), 0);
	cr_assert_eq(listen_parse("127.0.0.1:80", false, host, sizeof(host) - 1, &port), -EINVAL);
}
