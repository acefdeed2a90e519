/* Keeps the harness library non-empty before any harness source exists. */
void sbx_harness_dummy(void);
void sbx_harness_dummy(void) {}
