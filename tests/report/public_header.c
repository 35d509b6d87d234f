/* public_header.c: report/report.h and the public header in one
 * translation unit, in the order a library file that writes reports
 * without running anything would include them: the shared enums
 * (DrVerified) must be defined once. */
#include "report/report.h"

#include "include/dagrun/dagrun.h"

int dr_test_report_verified_fail(void);
int dr_test_report_verified_fail(void) { return (int)DR_VERIFIED_FAIL; }
