// main() of the test executables labelled gpu (cmake/CnnbenchAddTest.cmake):
// one process runs every case, and the exit status tells ctest how it went —
// 1 when a case failed, 77 (ctest's SKIP_RETURN_CODE: reported as skipped,
// never as passed) when a case skipped and none failed, 0 when all passed.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  if (rc != 0 || unit.failed_test_count() > 0) return 1;
  if (unit.skipped_test_count() > 0) {
    std::printf("%d of %d test cases skipped (reasons above): reported as skipped\n",
                unit.skipped_test_count(), unit.test_to_run_count());
    return 77;
  }
  return 0;
}
