/* The harness behind test.h: runs the cases, prints their lines and the closing count, and tells
 * ctest whether anything was tested. */
#include "test.h"

int test_failed_checks;
const char *test_skip_reason;

/* With an argument, runs only the tests whose names contain it. Returns 1 when a case failed, and
 * TEST_SKIPPED_EXIT when none failed and none passed (every case that ran skipped, as device tests
 * do without a GPU): ctest then reports the program as skipped instead of passed, since it
 * verified nothing. */
int test_main(int argc, char **argv, const test_case *tests, int count) {
  int passed = 0, failed = 0, skipped = 0;
  for (int i = 0; i < count; i++) {
    if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
    test_failed_checks = 0;
    test_skip_reason = NULL;
    tests[i].fn();
    if (test_failed_checks) {
      printf("FAIL %s (%d checks failed)\n", tests[i].name, test_failed_checks);
      failed++;
    } else if (test_skip_reason) {
      printf("SKIP %s: %s\n", tests[i].name, test_skip_reason);
      skipped++;
    } else {
      printf("PASS %s\n", tests[i].name);
      passed++;
    }
    fflush(stdout);
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  if (failed) return 1;
  if (passed + skipped == 0) {
    /* A filter that matches no case is a typo, not a skip: say so and fail. */
    fprintf(stderr, "no test name contains \"%s\"\n", argc > 1 ? argv[1] : "");
    return 1;
  }
  return passed ? 0 : TEST_SKIPPED_EXIT;
}
