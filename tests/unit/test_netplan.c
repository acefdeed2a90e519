/* The network fence as data: which mechanisms each configuration gets (fence/netplan.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "fence/netplan.h"

TestSuite(netplan, .timeout = 10);

static const struct net_machine all = { .pasta = true, .jail_init = true, .net_proc = true,
	                                .landlock_abi = 7 };

static bool has(const struct proto_strv *v, const char *a, const char *b)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i], a) == 0 && (!b || (i + 1 < v->n && strcmp(v->v[i + 1], b) == 0)))
			return true;
	return false;
}

static bool has_flag(const struct proto_strv *v, const char *a) { return has(v, a, NULL); }

Test(netplan, modes)
{
	uint32_t p[] = { 8080 };
	char *allow[] = { "pypi.org:443" };
	struct sandbox s = { 0 };
	cr_assert_eq(net_mode_of(&s), NET_NONE);
	s.ports_loopback = (struct proto_u32v){ 1, p };
	cr_assert_eq(net_mode_of(&s), NET_PORTS);
	s.network = true;
	cr_assert_eq(net_mode_of(&s), NET_ANY);
	s = (struct sandbox){ .proxy_allow = { 1, allow } };
	cr_assert_eq(net_mode_of(&s), NET_PROXY);
	cr_assert_str_eq(net_mode_name(NET_ANY), "network");
}

/* pasta's defaults expose the host's loopback: every one of them is turned off, and each
 * port named comes back one by one */
Test(netplan, pasta_keeps_the_host_loopback_out)
{
	uint32_t listen[] = { 18771, 18772 }, lo[] = { 5432 };
	struct sandbox s = { .ports_listen = { 2, listen }, .ports_loopback = { 1, lo } };
	struct proto_strv a = { 0 };

	cr_assert_eq(net_plan_pasta_args(&s, &a), 0);
	cr_assert(has_flag(&a, "--config-net"));
	cr_assert(has_flag(&a, "--no-map-gw"), "the gateway must not map to the host");
	cr_assert(!has(&a, "-T", "none"), "pasta refuses none together with a port");
	cr_assert(has(&a, "-U", "none"));
	cr_assert(has(&a, "-u", "none"));
	cr_assert(has(&a, "-t", "127.0.0.1/18771"));
	cr_assert(has(&a, "-t", "127.0.0.1/18772"));
	cr_assert(!has(&a, "-t", "none"), "listen ports given: no -t none");
	cr_assert(has(&a, "-T", "5432"));
	cr_assert(has_flag(&a, "--no-udp"), "ports only: no UDP through pasta");
	cr_assert(has_flag(&a, "--no-icmp"));
	/* no -T at all would be pasta's "auto": every host loopback port the host listens on */
	int nT = 0;
	for (uint32_t i = 0; i + 1 < a.n; i++)
		nT += strcmp(a.v[i], "-T") == 0;
	cr_assert_eq(nT, 1, "exactly the one loopback port given back");
	proto_strv_clear(&a);

	s = (struct sandbox){ .network = true };
	cr_assert_eq(net_plan_pasta_args(&s, &a), 0);
	cr_assert(has(&a, "-t", "none"), "no listen ports: nothing forwarded in");
	cr_assert(has(&a, "-T", "none"));
	cr_assert(!has_flag(&a, "--no-udp"), "network: true keeps UDP (DNS)");
	proto_strv_clear(&a);

	s = (struct sandbox){ 0 };
	cr_assert_eq(net_plan_pasta_args(&s, &a), -EINVAL, "no pasta without ports or network");
}

Test(netplan, landlock_rules_per_mode)
{
	uint32_t listen[] = { 18771 }, conn[] = { 443 }, lo[] = { 5432 };
	char *allow[] = { "pypi.org:443" };
	struct sandbox s = { .ports_listen = { 1, listen }, .ports_connect = { 1, conn },
		             .ports_loopback = { 1, lo } };
	struct proto_strv a = { 0 };

	cr_assert_eq(net_plan_init_args(&s, 7, 6, &a), 0);
	cr_assert(has(&a, "--ready-fd", "6"));
	cr_assert(has(&a, "--net-bind", "18771"));
	cr_assert(has(&a, "--net-connect", "443"));
	cr_assert(has(&a, "--net-connect", "5432"), "a loopback port is a connect rule too");
	cr_assert(!has_flag(&a, "--net-connect-any"));
	cr_assert(!has(&a, "--net-connect", "18771"));
	proto_strv_clear(&a);

	s.network = true;
	cr_assert_eq(net_plan_init_args(&s, 7, 6, &a), 0);
	cr_assert(has_flag(&a, "--net-connect-any"));
	cr_assert(has(&a, "--net-bind", "18771"), "binding stays limited with network on");
	proto_strv_clear(&a);

	s = (struct sandbox){ 0 };
	cr_assert_eq(net_plan_init_args(&s, 7, 6, &a), 0);
	cr_assert_eq(a.n, 0, "no network: no bind, no connect, no ready wait");
	proto_strv_clear(&a);

	s = (struct sandbox){ .proxy_allow = { 1, allow } };
	cr_assert_eq(net_plan_init_args(&s, 7, 6, &a), 0);
	cr_assert(has_flag(&a, "--net-connect-any"));
	cr_assert(!has_flag(&a, "--net-bind"));
	proto_strv_clear(&a);

	/* a kernel without port rules: nothing is asked that it cannot do */
	s = (struct sandbox){ .ports_listen = { 1, listen } };
	cr_assert_eq(net_plan_init_args(&s, 3, 6, &a), 0);
	cr_assert(has_flag(&a, "--net-off"));
	cr_assert(!has_flag(&a, "--net-bind"));
	proto_strv_clear(&a);
}

Test(netplan, missing_mechanisms_refuse_and_say_so)
{
	struct net_machine m = all;
	char *allow[] = { "pypi.org:443" };
	struct sandbox s = { .network = true };
	char note[NET_PLAN_NOTE_MAX];

	cr_assert_null(net_plan_missing(&s, &m));
	m.pasta = false;
	cr_assert(strstr(net_plan_missing(&s, &m), "pasta"));
	m = all;
	m.jail_init = false;
	cr_assert(strstr(net_plan_missing(&s, &m), "sbx-jail-init"));
	s = (struct sandbox){ .proxy_allow = { 1, allow } };
	m = all;
	m.pasta = false;
	cr_assert_null(net_plan_missing(&s, &m), "the proxy does not need pasta");
	m.net_proc = false;
	cr_assert(strstr(net_plan_missing(&s, &m), "sbx-net"));

	s = (struct sandbox){ 0 };
	cr_assert_null(net_plan_missing(&s, &(struct net_machine){ 0 }), "no network needs nothing");

	/* old Landlock: ports run, and the note says what is not restricted */
	m = all;
	m.landlock_abi = 3;
	uint32_t conn[] = { 443 };
	s = (struct sandbox){ .ports_connect = { 1, conn } };
	net_plan_note(&s, &m, note, sizeof(note));
	cr_assert(strstr(note, "ABI 3"), "%s", note);
	net_plan_note(&s, &all, note, sizeof(note));
	cr_assert(strstr(note, "every remote host"), "%s", note);
}

Test(netplan, fences_follow_the_machine)
{
	struct proto_strv f = { 0 };
	struct net_machine m = all;
	cr_assert_eq(net_plan_fences(&m, &f), 0);
	cr_assert(has_flag(&f, "none") && has_flag(&f, "ports") && has_flag(&f, "network") &&
	          has_flag(&f, "proxy"));
	proto_strv_clear(&f);
	m.pasta = false;
	m.landlock_abi = 3;
	cr_assert_eq(net_plan_fences(&m, &f), 0);
	cr_assert(!has_flag(&f, "network") && !has_flag(&f, "ports"));
	cr_assert(has_flag(&f, "proxy"));
	proto_strv_clear(&f);
	m.pasta = true;
	cr_assert_eq(net_plan_fences(&m, &f), 0);
	cr_assert(has_flag(&f, "ports-unrestricted"));
	proto_strv_clear(&f);
}
