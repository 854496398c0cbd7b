#include "test.h"

int test_failed_checks;
const char *test_skip_reason;

/* With an argument, runs only the tests whose names contain it. */
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
  return failed ? 1 : 0;
}
