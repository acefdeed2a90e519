#include "fuzz_common.h"

#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "json.h"

/* main.c's, which the library does not contain; left NULL: nothing fuzzed may reach the
 * launcher, and a path that did would crash here */
struct api *API;

static void gen_tree(yajl_gen g, yajl_val v)
{
	if (YAJL_IS_OBJECT(v)) {
		yajl_gen_map_open(g);
		for (size_t i = 0; i < v->u.object.len; i++) {
			json_gen_key(g, v->u.object.keys[i]);
			gen_tree(g, v->u.object.values[i]);
		}
		yajl_gen_map_close(g);
	} else if (YAJL_IS_ARRAY(v)) {
		yajl_gen_array_open(g);
		for (size_t i = 0; i < v->u.array.len; i++)
			gen_tree(g, v->u.array.values[i]);
		yajl_gen_array_close(g);
	} else if (YAJL_IS_STRING(v)) {
		json_gen_str(g, YAJL_GET_STRING(v));
	} else if (YAJL_IS_NUMBER(v)) {
		yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
	} else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
		yajl_gen_bool(g, YAJL_IS_TRUE(v));
	} else {
		yajl_gen_null(g);
	}
}

char *fuzz_print(yajl_val v, size_t *ret_len)
{
	yajl_gen g = json_gen_new();
	char *s;
	FUZZ_CHECK(g);
	gen_tree(g, v);
	s = json_gen_dup(g, ret_len);
	yajl_gen_free(g);
	FUZZ_CHECK(s);
	return s;
}

yajl_val fuzz_check_doc(const char *doc, size_t len)
{
	yajl_val v = NULL;
	char err[256];
	FUZZ_CHECK(doc);
	FUZZ_CHECK(json_parse(doc, len, &v, err, sizeof(err)) == 0);
	return v;
}

void fuzz_check_json(const char *doc, size_t len)
{
	char err[256];
	yajl_val v;
	FUZZ_CHECK(doc && strlen(doc) == len); /* NUL travels escaped */
	FUZZ_CHECK(v = yajl_tree_parse(doc, err, sizeof(err)));
	yajl_tree_free(v);
}

char *fuzz_check_roundtrip(yajl_val v, size_t *ret_len)
{
	size_t len1, len2;
	char *p1 = fuzz_print(v, &len1), *p2;
	yajl_val again = fuzz_check_doc(p1, len1);
	p2 = fuzz_print(again, &len2);
	yajl_tree_free(again);
	FUZZ_CHECK(len1 == len2 && memcmp(p1, p2, len1) == 0);
	free(p2);
	*ret_len = len1;
	return p1;
}
